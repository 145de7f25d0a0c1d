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
  Status st = j.ForEach(s, [&](std::string_view key, std::shared_ptr<const std::string> e) {
    out.push_back(bson::BsonObj(e->data())["n"].Int32());
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

bson::BsonObj Row(int64_t t, int v) {
  bson::BsonBuilder b;
  b.AppendDate("time", t);
  b.AppendString("tag", "host-" + std::to_string(v % 3));
  b.AppendInt32("v", v);
  return b.Obj();
}

// Bucket k of an entry: `n` rows from `start`, whose "v" are k * 10, k * 10 + 1, ...
JournalBucket Bucket(int k, int64_t start, int n) {
  JournalBucket b;
  b.id = bson::ObjectId::FromSeconds(1700000000u + k);
  b.id.bytes[11] = static_cast<uint8_t>(k);
  b.start = start;
  for (int i = 0; i < n; ++i) b.rows.push_back(Row(b.start + i, k * 10 + i));
  return b;
}

TEST(MeasurementJournalTest, EntriesRoundTripAndMalformedOnesAreRefused) {
  JournalEntry e{"0123456789abcdef", "time", "tag", {}};
  for (int k = 0; k < 3; ++k) {
    e.buckets.push_back(Bucket(k, -5000 + k * 1000000000000, k * 2));  // before and after 1970
  }
  std::vector<size_t> row_at;
  auto bytes = std::make_shared<const std::string>(EncodeJournalEntry(e, &row_at));
  ASSERT_EQ(row_at.size(), 6u);
  EXPECT_EQ(bson::BsonObj(bytes->data() + row_at[5])["v"].Int32(), 23);  // bucket 2, row 3
  auto got = DecodeJournalEntry(bytes);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got.value().uuid, e.uuid);
  EXPECT_EQ(got.value().time_field, "time");
  EXPECT_EQ(got.value().meta_field, "tag");
  ASSERT_EQ(got.value().buckets.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    const JournalBucket& b = got.value().buckets[k];
    EXPECT_TRUE(b.id == e.buckets[k].id);
    EXPECT_EQ(b.start, e.buckets[k].start);
    ASSERT_EQ(b.rows.size(), e.buckets[k].rows.size());
    for (size_t i = 0; i < b.rows.size(); ++i) {
      EXPECT_EQ(b.rows[i].bytes(), e.buckets[k].rows[i].bytes());
    }
  }
  // No metaField: no "m".
  e.meta_field.clear();
  auto plain = DecodeJournalEntry(std::make_shared<const std::string>(EncodeJournalEntry(e)));
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain.value().meta_field.empty());

  // A row count that runs past the rows, and rows left over, are refused (bucket 2 has 4 rows).
  e.meta_field = "tag";
  std::string tampered = EncodeJournalEntry(e);
  const size_t table =
      tampered.find(std::string(reinterpret_cast<const char*>(e.buckets[0].id.bytes), 12));
  ASSERT_NE(table, std::string::npos);
  std::string more = tampered, fewer = tampered;
  more[table + 2 * 24 + 20] = 9;   // bucket 2 claims 9 rows
  fewer[table + 2 * 24 + 20] = 3;  // bucket 2 claims 3 of its 4 rows
  for (const std::string& bad : {more, fewer}) {
    auto r = DecodeJournalEntry(std::make_shared<const std::string>(bad));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kInternalError);
  }
}

TEST(MeasurementJournalTest, RowsOfABucketWhoseMetaIsJournaledLeaveItOut) {
  JournalEntry e{"0123456789abcdef", "time", "tag", {Bucket(0, 0, 3), Bucket(1, 1000, 3)}};
  e.buckets[1].meta_omitted = true;
  // A row without the metaField at all is written as it is.
  bson::BsonBuilder bare;
  bare.AppendDate("time", 1003);
  bare.AppendInt32("v", 99);
  const bson::BsonObj bare_row = bare.Obj();
  e.buckets[1].rows.push_back(bare_row);
  std::vector<size_t> row_at;
  auto bytes = std::make_shared<const std::string>(EncodeJournalEntry(e, &row_at));
  const bson::BsonObj tag_row = e.buckets[1].rows[0];
  EXPECT_EQ(bytes->size() - EncodeJournalEntry(JournalEntry{e.uuid, "time", "tag", {}}).size(),
            2 * 24 + 3 * static_cast<size_t>(e.buckets[0].rows[0].size()) +
                4 * static_cast<size_t>(tag_row.size()) - 3 * tag_row["tag"].size() -
                (static_cast<size_t>(tag_row.size()) - bare_row.size()));
  auto got = DecodeJournalEntry(bytes);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got.value().buckets.size(), 2u);
  const JournalBucket& full = got.value().buckets[0];
  const JournalBucket& lean = got.value().buckets[1];
  EXPECT_FALSE(full.meta_omitted);
  EXPECT_TRUE(lean.meta_omitted);
  ASSERT_EQ(full.rows.size(), 3u);
  ASSERT_EQ(lean.rows.size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(full.rows[i].bytes(), e.buckets[0].rows[i].bytes());
    // The same fields in the same order, the metaField left out.
    bson::BsonBuilder want;
    want.AppendDate("time", 1000 + static_cast<int64_t>(i));
    want.AppendInt32("v", 10 + static_cast<int>(i));
    const bson::BsonObj want_row = want.Obj();
    EXPECT_EQ(lean.rows[i].bytes(), want_row.bytes());
    EXPECT_EQ(bson::BsonObj(bytes->data() + row_at[3 + i]).bytes(), want_row.bytes());
  }
  EXPECT_EQ(lean.rows[3].bytes(), bare_row.bytes());
}

}  // namespace
}  // namespace hourglass::timeseries
