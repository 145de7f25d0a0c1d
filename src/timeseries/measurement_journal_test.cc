// MeasurementJournal on a real WiredTiger engine on disk: entries come back in append order until
// marked written, a mark in a rolled-back transaction keeps the entry, a reopened journal numbers
// new entries after every one it knows, Prune removes the log's segments whose entries are all
// written (and then their marks), entries an earlier version kept in a table are read and
// removed, and the records of entries' bucket shares written ahead of their marks are kept, read
// and forgotten.
#include "timeseries/measurement_journal.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
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
                         std::vector<uint64_t>* keys = nullptr) {
  std::vector<int> out;
  Status st = j.ForEach(s, [&](uint64_t key, std::shared_ptr<const std::string> e) {
    out.push_back(bson::BsonObj(e->data())["n"].Int32());
    if (keys != nullptr) keys->push_back(key);
    return Status::OK();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

std::unique_ptr<MeasurementJournal> OpenJournal(storage::KvEngine* engine,
                                                uint64_t segment_bytes = 1 << 20) {
  auto j = MeasurementJournal::Open(engine, segment_bytes);
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  return j.ok() ? std::move(j).value() : nullptr;
}

Status MarkWritten(MeasurementJournal& j, storage::Session& s, const std::vector<uint64_t>& ns) {
  storage::WriteUnit wu(s);
  HG_RETURN_IF_ERROR(wu.begin_status());
  for (uint64_t n : ns) HG_RETURN_IF_ERROR(j.MarkWritten(s, n));
  HG_RETURN_IF_ERROR(wu.Commit());
  j.Written(ns);
  return Status::OK();
}

size_t LogSegments(const std::string& dbpath) {
  size_t n = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(dbpath + "/" + std::string(kMeasurementJournalLog))) {
    n += e.path().extension() == ".log" ? 1 : 0;
  }
  return n;
}

TEST(MeasurementJournalTest, KeepsAppendOrderUntilWrittenAndAcrossReopening) {
  storage::testing::TempDir dir;
  std::vector<uint64_t> keys;
  {
    auto engine = storage::testing::OpenOrDie(storage::testing::DiskOptions(dir.path()));
    auto j = OpenJournal(engine.get());
    auto s = engine->NewSession();
    for (int n = 0; n < 300; ++n) {
      auto k = j->Append(Entry(n));
      ASSERT_TRUE(k.ok()) << k.status().ToString();
      keys.push_back(k.value());
    }
    {
      // Marked in a transaction that rolls back: still there.
      storage::WriteUnit wu(*s);
      ASSERT_TRUE(j->MarkWritten(*s, keys[0]).ok());
    }
    ASSERT_TRUE(MarkWritten(*j, *s, std::vector<uint64_t>(keys.begin() + 1, keys.end() - 1)).ok());
  }
  auto engine = storage::testing::OpenOrDie(storage::testing::DiskOptions(dir.path()));
  auto j = OpenJournal(engine.get());
  auto s = engine->NewSession();
  std::vector<uint64_t> seen;
  EXPECT_EQ(Numbers(*j, *s, &seen), (std::vector<int>{0, 299}));
  EXPECT_EQ(seen, (std::vector<uint64_t>{keys.front(), keys.back()}));
  auto k = j->Append(Entry(300));
  ASSERT_TRUE(k.ok());
  EXPECT_GT(k.value(), keys.back());
}

TEST(MeasurementJournalTest, PruneRemovesSegmentsOnceEveryEntryInThemIsWritten) {
  storage::testing::TempDir dir;
  auto engine = storage::testing::OpenOrDie(storage::testing::DiskOptions(dir.path()));
  auto j = OpenJournal(engine.get(), 32);  // one entry per segment
  auto s = engine->NewSession();
  std::vector<uint64_t> keys;
  for (int n = 0; n < 10; ++n) keys.push_back(j->Append(Entry(n)).value());
  ASSERT_EQ(LogSegments(dir.path()), 10u);
  // Entries 1..9 written, 0 not: no segment may go, the first holds entry 0.
  ASSERT_TRUE(MarkWritten(*j, *s, std::vector<uint64_t>(keys.begin() + 1, keys.end())).ok());
  ASSERT_TRUE(j->Prune(*s).ok());
  EXPECT_EQ(LogSegments(dir.path()), 10u);
  // Now every one is: all but the segment being appended to go, with their marks.
  ASSERT_TRUE(MarkWritten(*j, *s, {keys[0]}).ok());
  ASSERT_TRUE(j->Prune(*s).ok());
  EXPECT_EQ(LogSegments(dir.path()), 1u);
  size_t marks = 0;
  {
    auto c = s->OpenCursorOrError(kMeasurementJournalWrittenTable);
    ASSERT_TRUE(c.ok());
    for (bool more = c.value()->SeekFirst().value(); more; more = c.value()->Next().value()) {
      ++marks;
    }
  }
  EXPECT_EQ(marks, 1u);  // the last entry's, whose segment stays
  j.reset();
  s.reset();
  engine.reset();
  engine = storage::testing::OpenOrDie(storage::testing::DiskOptions(dir.path()));
  j = OpenJournal(engine.get(), 32);
  s = engine->NewSession();
  EXPECT_TRUE(Numbers(*j, *s).empty());
  EXPECT_GT(j->Append(Entry(10)).value(), keys.back());
}

TEST(MeasurementJournalTest, EntriesAnEarlierVersionKeptInATableAreReadAndRemoved) {
  storage::testing::TempDir dir;
  {
    auto engine = storage::testing::OpenOrDie(storage::testing::DiskOptions(dir.path()));
    ASSERT_TRUE(engine->CreateTable(kMeasurementJournalTable).ok());
    auto s = engine->NewSession();
    storage::WriteUnit wu(*s);
    const std::string key("\0\0\0\0\0\0\0\x07", 8);  // entry 7, big-endian
    ASSERT_TRUE(s->Insert(kMeasurementJournalTable, key, Entry(70)).ok());
    ASSERT_TRUE(wu.Commit().ok());
  }
  const auto opts = storage::testing::DiskOptions(dir.path());
  {
    auto engine = storage::testing::OpenOrDie(opts);
    auto k = OpenJournal(engine.get())->Append(Entry(80));
    ASSERT_TRUE(k.ok());
    EXPECT_EQ(k.value(), 8u);  // numbered after the table's
  }
  {
    auto engine = storage::testing::OpenOrDie(opts);
    auto j = OpenJournal(engine.get());
    auto s = engine->NewSession();
    std::vector<uint64_t> keys;
    EXPECT_EQ(Numbers(*j, *s, &keys), (std::vector<int>{70, 80}));
    EXPECT_EQ(keys, (std::vector<uint64_t>{7, 8}));
    ASSERT_TRUE(MarkWritten(*j, *s, keys).ok());
    EXPECT_TRUE(Numbers(*j, *s).empty());
  }
  // Emptied, the table goes at the next open.
  auto engine = storage::testing::OpenOrDie(opts);
  auto j = OpenJournal(engine.get());
  EXPECT_FALSE(engine->TableExists(kMeasurementJournalTable));
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

bson::ObjectId Id(uint8_t n) {
  bson::ObjectId id{};
  id.bytes[11] = n;
  return id;
}

Status InTransaction(storage::Session& s, const std::function<Status()>& fn) {
  storage::WriteUnit wu(s);
  HG_RETURN_IF_ERROR(wu.begin_status());
  HG_RETURN_IF_ERROR(fn());
  return wu.Commit();
}

TEST(MeasurementJournalTest, PartlyWrittenSharesAreKeptAcrossReopeningUntilForgotten) {
  storage::testing::TempDir dir;
  std::string first;
  {
    auto engine = storage::testing::OpenOrDie(storage::testing::DiskOptions(dir.path()));
    auto j = OpenJournal(engine.get());
    auto s = engine->NewSession();
    ASSERT_TRUE(InTransaction(*s, [&]() -> Status {
                  HG_ASSIGN_OR_RETURN(first, j->MarkPartlyWritten(*s, {7, 3}, {Id(1), Id(2)}));
                  return Status::OK();
                }).ok());
    ASSERT_TRUE(
        InTransaction(*s, [&] { return j->MarkPartlyWritten(*s, {9}, {Id(3)}).status(); }).ok());
    {
      // Recorded in a transaction that rolls back: not recorded.
      storage::WriteUnit wu(*s);
      ASSERT_TRUE(j->MarkPartlyWritten(*s, {11}, {Id(4)}).ok());
    }
  }
  auto engine = storage::testing::OpenOrDie(storage::testing::DiskOptions(dir.path()));
  auto j = OpenJournal(engine.get());
  auto s = engine->NewSession();
  auto shares = j->PartlyWritten(*s);
  ASSERT_TRUE(shares.ok()) << shares.status().ToString();
  // A share is held only as recorded: its entry and its bucket in the same record.
  EXPECT_TRUE(shares.value().Holds(3, Id(1)));
  EXPECT_TRUE(shares.value().Holds(7, Id(2)));
  EXPECT_TRUE(shares.value().Holds(9, Id(3)));
  EXPECT_FALSE(shares.value().Holds(9, Id(1)));
  EXPECT_FALSE(shares.value().Holds(3, Id(3)));
  EXPECT_FALSE(shares.value().Holds(11, Id(4)));
  EXPECT_FALSE(shares.value().Holds(5, Id(1)));
  // A reopened journal numbers new records after those it holds.
  std::string third;
  ASSERT_TRUE(InTransaction(*s, [&]() -> Status {
                HG_ASSIGN_OR_RETURN(third, j->MarkPartlyWritten(*s, {12}, {Id(5)}));
                return Status::OK();
              }).ok());
  EXPECT_GT(third, first);
  std::vector<std::string> forget = {first};
  ASSERT_TRUE(InTransaction(*s, [&] { return j->ForgetPartlyWritten(*s, &forget); }).ok());
  shares = j->PartlyWritten(*s);
  ASSERT_TRUE(shares.ok());
  EXPECT_FALSE(shares.value().Holds(3, Id(1)));
  EXPECT_TRUE(shares.value().Holds(9, Id(3)));
  EXPECT_TRUE(shares.value().Holds(12, Id(5)));
  ASSERT_TRUE(InTransaction(*s, [&] { return j->ForgetPartlyWritten(*s, nullptr); }).ok());
  shares = j->PartlyWritten(*s);
  ASSERT_TRUE(shares.ok());
  EXPECT_TRUE(shares.value().empty());
}

TEST(MeasurementJournalTest, AMalformedPartlyWrittenRecordIsAnError) {
  storage::testing::TempDir dir;
  auto engine = storage::testing::OpenOrDie(storage::testing::DiskOptions(dir.path()));
  auto j = OpenJournal(engine.get());
  auto s = engine->NewSession();
  // Says two entries, holds one and a half.
  ASSERT_TRUE(s->Insert(kMeasurementJournalPartlyWrittenTable, std::string(8, '\x01'),
                        std::string("\x02\0\0\0", 4) + std::string(12, 'x'))
                  .ok());
  auto shares = j->PartlyWritten(*s);
  ASSERT_FALSE(shares.ok());
  EXPECT_EQ(shares.status().code(), ErrorCode::kInternalError);
}

}  // namespace
}  // namespace hourglass::timeseries
