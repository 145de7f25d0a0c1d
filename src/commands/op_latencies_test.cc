// serverStatus.opLatencies' buckets are MongoDB's: powers of two to 1024 microseconds, halves of
// each power of two from 2^11 to 2^20, powers of two again to 2^40; and the kinds of commands.
#include "commands/op_latencies.h"

#include <gtest/gtest.h>

namespace hourglass::commands {
namespace {

TEST(OpLatenciesTest, MongoDbsBucketBounds) {
  const auto& b = LatencyBucketBounds();
  ASSERT_EQ(b.size(), 51u);
  EXPECT_EQ(b[0], 0u);
  EXPECT_EQ(b[1], 2u);
  EXPECT_EQ(b[10], 1024u);
  EXPECT_EQ(b[11], 2048u);
  EXPECT_EQ(b[12], 3072u);
  EXPECT_EQ(b[13], 4096u);
  EXPECT_EQ(b[29], 1048576u);
  EXPECT_EQ(b[30], 1572864u);
  EXPECT_EQ(b[31], 2097152u);
  EXPECT_EQ(b[50], uint64_t{1} << 40);
  for (size_t i = 1; i < b.size(); ++i) EXPECT_LT(b[i - 1], b[i]);
}

TEST(OpLatenciesTest, EachLatencyFallsInTheBucketOfItsLowerBound) {
  EXPECT_EQ(LatencyBucketOf(0), 0u);
  EXPECT_EQ(LatencyBucketOf(1), 0u);
  EXPECT_EQ(LatencyBucketOf(2), 1u);
  EXPECT_EQ(LatencyBucketOf(1023), 9u);
  EXPECT_EQ(LatencyBucketOf(1024), 10u);
  EXPECT_EQ(LatencyBucketOf(2047), 10u);
  EXPECT_EQ(LatencyBucketOf(2048), 11u);
  EXPECT_EQ(LatencyBucketOf(3071), 11u);
  EXPECT_EQ(LatencyBucketOf(3072), 12u);
  EXPECT_EQ(LatencyBucketOf(~uint64_t{0}), 50u);
}

TEST(OpLatenciesTest, RecordsByKind) {
  OpLatencies& l = OpLatencies::Get();
  const OpLatencies::Totals before = l.Read(LatencyKind::kWrites);
  l.Record(LatencyKind::kWrites, 3000);
  l.Record(LatencyKind::kWrites, 5);
  const OpLatencies::Totals after = l.Read(LatencyKind::kWrites);
  EXPECT_EQ(after.ops - before.ops, 2u);
  EXPECT_EQ(after.latency - before.latency, 3005u);
  EXPECT_EQ(after.buckets[11] - before.buckets[11], 1u);
  EXPECT_EQ(after.buckets[2] - before.buckets[2], 1u);
  EXPECT_EQ(LatencyKindOf("insert", OpCounter::kNone), LatencyKind::kWrites);
  EXPECT_EQ(LatencyKindOf("findAndModify", OpCounter::kCommand), LatencyKind::kWrites);
  EXPECT_EQ(LatencyKindOf("aggregate", OpCounter::kCommand), LatencyKind::kReads);
  EXPECT_EQ(LatencyKindOf("getMore", OpCounter::kGetMore), LatencyKind::kReads);
  EXPECT_EQ(LatencyKindOf("hello", OpCounter::kCommand), LatencyKind::kCommands);
}

}  // namespace
}  // namespace hourglass::commands
