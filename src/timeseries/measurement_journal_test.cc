// MeasurementJournal on a real WiredTiger engine on disk: entries come back in append order, a
// removal in a rolled-back transaction keeps the entry, and a reopened journal numbers new entries
// after the ones it holds.
#include "timeseries/measurement_journal.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "storage/storage_test_util.h"

namespace hourglass::timeseries {
namespace {

std::string Entry(int n) {
  bson::BsonBuilder b;
  b.AppendInt32("n", n);
  return b.Release();
}

std::vector<int> Numbers(MeasurementJournal& j, storage::Session& s,
                         std::vector<std::string>* keys = nullptr) {
  std::vector<int> out;
  Status st = j.ForEach(s, [&](std::string_view key, const bson::BsonObj& e) {
    out.push_back(e["n"].Int32());
    if (keys != nullptr) keys->emplace_back(key);
    return Status::OK();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

Status Append(MeasurementJournal& j, storage::Session& s, int n) {
  storage::WriteUnit wu(s);
  HG_RETURN_IF_ERROR(wu.begin_status());
  HG_RETURN_IF_ERROR(j.Append(s, Entry(n)).status());
  return wu.Commit();
}

TEST(MeasurementJournalTest, KeepsAppendOrderAcrossRemovalsAndReopening) {
  storage::testing::TempDir dir;
  {
    auto engine = storage::testing::OpenOrDie(storage::testing::DiskOptions(dir.path()));
    auto j = MeasurementJournal::Open(engine.get());
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    auto s = engine->NewSession();
    EXPECT_TRUE(Numbers(*j.value(), *s).empty());
    // Numbered past 255 so that the big-endian keys' order is checked beyond one byte.
    for (int n = 0; n < 300; ++n) ASSERT_TRUE(Append(*j.value(), *s, n).ok());
    std::vector<std::string> keys;
    std::vector<int> got = Numbers(*j.value(), *s, &keys);
    ASSERT_EQ(got.size(), 300u);
    for (int n = 0; n < 300; ++n) EXPECT_EQ(got[n], n);
    {
      // Removed in a transaction that rolls back: still there.
      storage::WriteUnit wu(*s);
      ASSERT_TRUE(j.value()->Remove(*s, keys[0]).ok());
    }
    {
      storage::WriteUnit wu(*s);
      for (int n = 0; n < 299; ++n) ASSERT_TRUE(j.value()->Remove(*s, keys[n]).ok());
      ASSERT_TRUE(wu.Commit().ok());
    }
    EXPECT_EQ(Numbers(*j.value(), *s), std::vector<int>{299});
  }
  auto engine = storage::testing::OpenOrDie(storage::testing::DiskOptions(dir.path()));
  auto j = MeasurementJournal::Open(engine.get());
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto s = engine->NewSession();
  ASSERT_TRUE(Append(*j.value(), *s, 300).ok());
  EXPECT_EQ(Numbers(*j.value(), *s), (std::vector<int>{299, 300}));
}

}  // namespace
}  // namespace hourglass::timeseries
