// Incremental use of BsonColumnBuilder: Intermediate() diffs applied to a stored copy, their cost,
// and builders continued from a stored binary (FromBinary).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "bsoncolumn/bson_column_builder.h"
#include "bsoncolumn/bson_column_decoder.h"
#include "bsoncolumn/bson_column_test_columns.h"
#include "bsoncolumn/bson_column_test_util.h"

namespace hourglass::bsoncolumn {
namespace {

using bson::BsonBuilder;
using testutil::Column;
using testutil::ExpectDecodesTo;
using testutil::Hex;
using testutil::RandomColumn;
using testutil::ToHex;

// What a caller keeps: the column as stored, edited by each diff.
void Apply(const BsonColumnBuilder::Diff& diff, std::string& stored) {
  ASSERT_LE(diff.offset, stored.size());
  if (diff.head) {
    ASSERT_LT(diff.head_offset, diff.offset);
    stored[diff.head_offset] = *diff.head;
  }
  stored.resize(diff.offset);
  stored.append(diff.data);
}

Column Prefix(const Column& col, size_t n) {
  Column out;
  out.docs.assign(col.docs.begin(), col.docs.begin() + static_cast<ptrdiff_t>(n));
  return out;
}

// `binary` decodes to the first `n` cells of `col`.
void ExpectDecodesToPrefix(const std::string& binary, const Column& col, size_t n) {
  auto decoded = DecodeBsonColumn(binary);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded.value().size(), n);
  for (size_t i = 0; i < n; ++i) {
    const bson::BsonElement want = col.docs[i].FirstElement();
    const bson::BsonElement got = decoded.value()[i].element();
    ASSERT_EQ(got.type(), want.type()) << "row " << i;
    if (want.eoo()) continue;
    ASSERT_EQ(std::string_view(got.value(), got.ValueSize()),
              std::string_view(want.value(), want.ValueSize()))
        << "row " << i;
  }
}

// Long numeric columns: doubles whose scale changes in runs (re-scaling, blocks at several
// scales), counters, runs of repeats (RLE) and skips.
Column LongNumericColumn(std::mt19937_64& rng, size_t n) {
  Column col;
  static const double kScales[] = {1, 10, 100, 10000, 1e8};
  int scale = 0;
  int64_t counter = static_cast<int64_t>(rng() % 1000);
  const bool doubles = rng() % 3 != 0;
  while (col.docs.size() < n) {
    if (rng() % 50 == 0) scale = static_cast<int>(rng() % 5);
    if (rng() % 40 == 0) {
      col.Missing();
      continue;
    }
    if (rng() % 60 == 0 && !col.docs.empty()) {
      const size_t run = rng() % 500;
      for (size_t r = 0; r < run && col.docs.size() < n; ++r) col.docs.push_back(col.docs.back());
      continue;
    }
    counter += static_cast<int64_t>(rng() % 100);
    if (doubles) {
      const double d = rng() % 200 == 0 ? 1.0 / 3 : static_cast<double>(counter) / kScales[scale];
      col.Double(d);
    } else {
      col.Int64(counter);
    }
  }
  return col;
}

// Appends `col` in chunks of random size (1..max_chunk, sometimes none), calling Intermediate()
// after each and applying it to a stored copy, which must equal the finished column and decode to
// every cell so far.
void CheckIntermediate(const Column& col, std::mt19937_64& rng, size_t max_chunk,
                       bool decode_each) {
  BsonColumnBuilder b;
  std::string stored;
  size_t i = 0;
  while (true) {
    const size_t chunk = rng() % 8 == 0 ? 0 : 1 + rng() % max_chunk;
    for (size_t k = 0; k < chunk && i < col.docs.size(); ++k, ++i) {
      EXPECT_TRUE(b.Append(col.docs[i].FirstElement()).ok());
    }
    const BsonColumnBuilder::Diff diff = b.Intermediate();
    Apply(diff, stored);
    const std::string finished = b.Finish();
    if (stored != finished) {
      FAIL() << "after " << i << " cells\n" << ToHex(stored) << "\n" << ToHex(finished);
    }
    // Release() finishes a copy of the builder itself, not a scratch copy of its pending part.
    if (rng() % 8 == 0) {
      ASSERT_EQ(stored, BsonColumnBuilder(b).Release());
    }
    if (decode_each || i == col.docs.size() || rng() % 16 == 0)
      ExpectDecodesToPrefix(stored, col, i);
    if (testing::Test::HasFailure() || i == col.docs.size()) break;
  }
  EXPECT_EQ(stored, col.Encode());
}

TEST(BsonColumnIncrementalTest, IntermediateOnRandomColumns) {
  std::mt19937_64 rng(testutil::EnvOr("HG_BSONCOLUMN_SEED", 11));
  const uint64_t iters = testutil::EnvOr("HG_BSONCOLUMN_ITERS", 30);
  for (uint64_t iter = 0; iter < iters; ++iter) {
    SCOPED_TRACE(iter);
    const Column col = RandomColumn(rng);
    CheckIntermediate(col, rng, 1 + rng() % 60, iter % 15 == 0);
    if (HasFailure()) return;
  }
}

TEST(BsonColumnIncrementalTest, IntermediateOnLongNumericColumns) {
  std::mt19937_64 rng(5);
  for (int iter = 0; iter < 6; ++iter) {
    SCOPED_TRACE(iter);
    CheckIntermediate(LongNumericColumn(rng, 3000), rng, 1 + rng() % 100, false);
    if (HasFailure()) return;
  }
}

TEST(BsonColumnIncrementalTest, FirstIntermediateIsTheWholeColumn) {
  BsonColumnBuilder b;
  BsonColumnBuilder::Diff d = b.Intermediate();
  EXPECT_EQ(d.offset, 0u);
  EXPECT_EQ(ToHex(d.data), "00");
  BsonBuilder one;
  one.AppendInt32("", 1);
  ASSERT_TRUE(b.Append(one.Obj().FirstElement()).ok());
  d = b.Intermediate();
  EXPECT_EQ(d.offset, 0u);  // the old 0x00 became the literal's type byte
  EXPECT_EQ(ToHex(d.data), "10 00 01 00 00 00 00");
  // Nothing appended: nothing changes.
  d = b.Intermediate();
  EXPECT_EQ(d.offset, 7u);
  EXPECT_EQ(d.data, "");
  // A repeat: the literal stays, a Simple-8b block replaces the old end.
  ASSERT_TRUE(b.Append(one.Obj().FirstElement()).ok());
  d = b.Intermediate();
  EXPECT_EQ(d.offset, 6u);
  EXPECT_EQ(d.data.size(), 1u + 8u + 1u);
}

// The cost claim: appending one row (or a chunk) at a time to a long column, each diff stays
// bounded by the open control block (at most 16 words), the pending values and the chunk, while
// the column grows; the edit starts near the end of the column.
TEST(BsonColumnIncrementalTest, DiffsDoNotGrowWithTheColumn) {
  std::mt19937_64 rng(3);
  for (const size_t chunk : {size_t{1}, size_t{10}, size_t{100}}) {
    for (int kind = 0; kind < 3; ++kind) {
      SCOPED_TRACE(testing::Message() << "chunk " << chunk << " kind " << kind);
      BsonColumnBuilder b;
      std::string stored;
      size_t largest = 0;
      int64_t counter = 0;
      for (int row = 0; row < 6000; ++row) {
        BsonBuilder doc;
        counter += static_cast<int64_t>(rng() % 1000);
        if (kind == 0) {
          doc.AppendDouble("", static_cast<double>(counter) / 100);
        } else if (kind == 1) {
          doc.AppendInt64("", row % 3000 < 1500 ? 7 : counter);  // runs and changes
        } else {
          // Interleaved: {t, v, m: {a}}, every leaf its own stream. (A leaf in a run as long as the
          // column, a constant or a regular time step, would hold back the other leaves' blocks:
          // see README.md.)
          const size_t sub = doc.OpenObject("");
          doc.AppendDate("t", 1700000000000 + row * 1000 + static_cast<int64_t>(rng() % 10));
          doc.AppendDouble("v", static_cast<double>(counter % 10000) / 10);
          const size_t m = doc.OpenObject("m");
          doc.AppendInt32("a", static_cast<int32_t>(row % 7));
          doc.Close(m);
          doc.Close(sub);
        }
        ASSERT_TRUE(b.Append(doc.Obj().FirstElement()).ok());
        if ((row + 1) % chunk != 0) continue;
        const BsonColumnBuilder::Diff d = b.Intermediate();
        if (row > 1000) largest = std::max(largest, d.data.size());
        Apply(d, stored);
      }
      EXPECT_EQ(stored, b.Finish());
      // Per leaf: an open block of up to 16 words and about a word per value added.
      const size_t leaves = kind == 2 ? 3 : 1;
      EXPECT_LT(largest, leaves * (250 + chunk * 12)) << "column " << stored.size() << " bytes";
      EXPECT_GT(stored.size(), 10 * largest);
    }
  }
}

// Intermediate() against Finish() on a double column appended one row at a time (1,000 rows;
// HG_BSONCOLUMN_ROWS for more): the bytes each hands back in total, and the time per call beyond
// the appends (printed, not asserted: the build may be sanitized).
TEST(BsonColumnIncrementalTest, IntermediateCostAgainstFinish) {
  const size_t n = testutil::EnvOr("HG_BSONCOLUMN_ROWS", 1000);
  std::vector<bson::BsonObj> rows;
  std::mt19937_64 rng(1);
  double v = 20;
  for (size_t i = 0; i < n; ++i) {
    v += static_cast<double>(static_cast<int>(rng() % 201) - 100) / 100;
    BsonBuilder b;
    b.AppendDouble("", v);
    rows.push_back(b.Obj());
  }
  using Clock = std::chrono::steady_clock;
  enum class Call { kNone, kIntermediate, kFinish, kCopyRelease };
  size_t sink = 0;
  auto run = [&](Call call, size_t* bytes) {
    BsonColumnBuilder b;
    *bytes = 0;
    const auto start = Clock::now();
    for (const auto& r : rows) {
      EXPECT_TRUE(b.Append(r.FirstElement()).ok());
      if (call == Call::kIntermediate) *bytes += b.Intermediate().data.size();
      if (call == Call::kFinish) *bytes += b.Finish().size();
      // What Finish() did before Intermediate() existed: finish a copy of the whole builder.
      if (call == Call::kCopyRelease) *bytes += BsonColumnBuilder(b).Release().size();
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    sink += b.size();
    return us;
  };
  auto best = [&](Call call, size_t* bytes) {
    double us = run(call, bytes);
    for (int rep = 0; rep < 4; ++rep) us = std::min(us, run(call, bytes));
    return us;
  };
  size_t none_bytes = 0, inter_bytes = 0, finish_bytes = 0;
  const double none_us = best(Call::kNone, &none_bytes);
  const double inter_us = best(Call::kIntermediate, &inter_bytes);
  const double finish_us = best(Call::kFinish, &finish_bytes);
  const double copy_us = best(Call::kCopyRelease, &finish_bytes);
  std::printf(
      "%zu doubles appended one at a time: appends alone %.0f us; with Intermediate() after each "
      "%.0f us (%.3f us/call beyond the append, %zu bytes returned in all); with Finish() after "
      "each %.0f us (%.3f us/call, %zu bytes); with a copy of the builder released after each %.0f "
      "us (%.3f us/call)\n",
      n, none_us, inter_us, (inter_us - none_us) / static_cast<double>(n), inter_bytes, finish_us,
      (finish_us - none_us) / static_cast<double>(n), finish_bytes, copy_us,
      (copy_us - none_us) / static_cast<double>(n));
  EXPECT_EQ(sink, 20 * n);  // 4 kinds of run, 5 times each
  EXPECT_LT(inter_bytes * 5, finish_bytes);
}

// A builder continued from a stored binary writes what a builder fed every cell writes, and its
// diffs apply to the stored binary.
TEST(BsonColumnIncrementalTest, FromBinaryEqualsBuildingFromTheStart) {
  std::mt19937_64 rng(testutil::EnvOr("HG_BSONCOLUMN_SEED", 23));
  const uint64_t iters = testutil::EnvOr("HG_BSONCOLUMN_ITERS", 60);
  for (uint64_t iter = 0; iter < iters; ++iter) {
    SCOPED_TRACE(iter);
    const Column col = iter % 5 == 4 ? LongNumericColumn(rng, 2000) : RandomColumn(rng);
    const size_t split = col.docs.empty() ? 0 : rng() % (col.docs.size() + 1);
    const std::string stored_then = Prefix(col, split).Encode();
    auto reopened = BsonColumnBuilder::FromBinary(stored_then);
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    BsonColumnBuilder b = std::move(reopened).value();
    ASSERT_EQ(b.size(), split);
    std::string stored = stored_then;
    const BsonColumnBuilder::Diff nothing = b.Intermediate();
    EXPECT_EQ(nothing.offset, stored.size());
    EXPECT_EQ(nothing.data, "");
    for (size_t i = split; i < col.docs.size(); ++i) {
      ASSERT_TRUE(b.Append(col.docs[i].FirstElement()).ok());
      if (rng() % 16 == 0) Apply(b.Intermediate(), stored);
    }
    Apply(b.Intermediate(), stored);
    const std::string full = col.Encode();
    ASSERT_EQ(ToHex(b.Finish()), ToHex(full));
    ASSERT_EQ(ToHex(stored), ToHex(full));
  }
}

// Words appended behind the words an open block already counts change only its count byte
// before them: the diff patches that byte (head) and starts after the unchanged words, instead
// of carrying them again (a bucket's commit logs each column's diff).
TEST(BsonColumnIncrementalTest, CountByteChangesAloneWhenWordsAreAdded) {
  std::mt19937_64 rng(9);
  BsonColumnBuilder b;
  std::string stored;
  double v = 20.0;
  int with_head = 0;
  for (int commit = 0; commit < 200; ++commit) {
    for (int k = 0; k < 5; ++k) {
      v += std::ldexp(static_cast<double>(rng() % 1000000), -20) - 0.4;  // full precision
      BsonBuilder one;
      one.AppendDouble("", v);
      ASSERT_TRUE(b.Append(one.Obj().FirstElement()).ok());
    }
    const BsonColumnBuilder::Diff d = b.Intermediate();
    if (commit > 0) {
      // Five values are five words (one pending, flushed at the end), the EOO byte, at most the
      // word the previous diff flushed early, and a new block's count byte.
      EXPECT_LE(d.data.size(), 6u * 8u + 1u + 8u + 1u) << commit;
      if (d.head) {
        ++with_head;
        EXPECT_EQ(static_cast<uint8_t>(*d.head) & 0xF0, 0x80) << commit;  // a count byte
        EXPECT_GE(d.offset, d.head_offset + 1 + 24);
      }
    }
    Apply(d, stored);
    ASSERT_EQ(ToHex(stored), ToHex(b.Finish())) << commit;
  }
  // Blocks of 16 words take three commits of five: two of them add to an open block.
  EXPECT_GT(with_head, 100);
}

TEST(BsonColumnIncrementalTest, FromBinaryOfAnotherEncodersBytes) {
  // int32 1 repeated twice, each zero delta in its own one-word block: valid, but this encoder
  // would put both in one word.
  const std::string other =
      Hex("10 00 01 00 00 00"
          "80 0e 00 00 00 00 00 00 00"
          "80 0e 00 00 00 00 00 00 00"
          "00");
  auto reopened = BsonColumnBuilder::FromBinary(other);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  BsonColumnBuilder b = std::move(reopened).value();
  EXPECT_EQ(b.size(), 3u);
  BsonBuilder one;
  one.AppendInt32("", 1);
  ASSERT_TRUE(b.Append(one.Obj().FirstElement()).ok());
  std::string stored = other;
  const BsonColumnBuilder::Diff d = b.Intermediate();
  EXPECT_EQ(d.offset, 7u);  // literal and the first control byte are unchanged
  Apply(d, stored);
  EXPECT_EQ(ToHex(stored), ToHex(b.Finish()));
  Column col;
  for (int i = 0; i < 4; ++i) col.Int32(1);
  ExpectDecodesTo(stored, col);
}

TEST(BsonColumnIncrementalTest, FromBinaryRefusesInvalidColumns) {
  auto r = BsonColumnBuilder::FromBinary(Hex("10 00 01 00"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidBSON);
}

}  // namespace
}  // namespace hourglass::bsoncolumn
