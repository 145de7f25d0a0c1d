// Record and index cursors against a real WiredTiger engine: ranges in both directions, resuming
// in a later session past writes committed meanwhile, exact seeks, and each index table format
// (`_id_`, unique and non-unique user indexes, the series index of a bucket collection).
#include "catalog/record_store.h"

#include <gtest/gtest.h>

#include "bson/key_string.h"
#include "catalog/catalog.h"
#include "storage/record_id.h"
#include "storage/storage_test_util.h"

namespace hourglass::catalog {
namespace {

using bson::BsonObj;

class RecordStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    storage::EngineOptions opts = storage::testing::DiskOptions(dir_.path());
    opts.checkpoint_interval_secs = 0;
    engine_ = storage::testing::OpenOrDie(opts);
    ASSERT_NE(engine_, nullptr);
    catalog_ = std::move(Catalog::Open(engine_.get())).value();
  }
  void TearDown() override {
    catalog_.reset();
    engine_.reset();
  }

  std::shared_ptr<Collection> Create(const std::string& name) {
    return catalog_->CreateCollection({"db", name}, BsonObj()).value();
  }
  // Inserts `json` (autocommit), with an `_id` of its own if it has none; returns its RecordId.
  int64_t Insert(Collection& coll, const std::string& json) {
    BsonObj doc = bson::FromJson(json).value();
    if (doc["_id"].eoo()) {
      bson::BsonBuilder b;
      b.AppendInt64("_id", next_id_++);
      for (bson::BsonElement e : doc) b.AppendElement(e);
      doc = b.Obj();
    }
    auto session = engine_->NewSession();
    auto rid = coll.Insert(*session, doc);
    EXPECT_TRUE(rid.ok()) << rid.status().ToString();
    return rid.ok() ? rid.value() : -1;
  }
  // The `x` field of every record a cursor over `range` returns.
  std::vector<int> ReadX(const Collection& coll, RecordRange range) {
    auto session = engine_->NewSession();
    auto cursor = RecordCursor::Open(*session, coll, range);
    EXPECT_TRUE(cursor.ok());
    std::vector<int> out;
    for (auto more = cursor.value().Next(); more.ok() && more.value();
         more = cursor.value().Next()) {
      out.push_back(cursor.value().doc()["x"].Int32());
    }
    return out;
  }
  // The entries of `idx` within `bounds`: (decoded key, RecordId).
  std::vector<std::pair<BsonObj, int64_t>> ReadIndex(const SecondaryIndex& idx,
                                                     IndexBounds bounds) {
    auto session = engine_->NewSession();
    auto cursor = IndexCursor::Open(*session, idx);
    EXPECT_TRUE(cursor.ok());
    cursor.value().SetBounds(std::move(bounds));
    std::vector<std::pair<BsonObj, int64_t>> out;
    for (auto more = cursor.value().Next(); more.ok() && more.value();
         more = cursor.value().Next()) {
      out.emplace_back(bson::DecodeIndexKey(cursor.value().key(), idx.desc.key).value(),
                       cursor.value().record_id());
    }
    return out;
  }
  static std::string KeyOf(int v) {
    bson::BsonBuilder b;
    b.AppendInt32("", v);
    bson::KeyStringBuilder k;
    k.AppendElement(b.Obj().FirstElement());
    return k.Release();
  }

  storage::testing::TempDir dir_;
  std::unique_ptr<storage::KvEngine> engine_;
  std::unique_ptr<Catalog> catalog_;
  int64_t next_id_ = 1000;
};

TEST_F(RecordStoreTest, ReadsRangesInBothDirections) {
  auto coll = Create("c");
  std::vector<int64_t> rids;
  for (int x = 0; x < 6; ++x) rids.push_back(Insert(*coll, "{\"x\": " + std::to_string(x) + "}"));
  EXPECT_EQ(ReadX(*coll, RecordRange::All(true)), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(ReadX(*coll, RecordRange::All(false)), (std::vector<int>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(ReadX(*coll, RecordRange{rids[1], rids[3], true}), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(ReadX(*coll, RecordRange{rids[1], rids[3], false}), (std::vector<int>{3, 2, 1}));
  EXPECT_EQ(ReadX(*coll, RecordRange{rids[4], std::nullopt, true}), (std::vector<int>{4, 5}));
  EXPECT_EQ(ReadX(*coll, RecordRange{std::nullopt, rids[0], false}), (std::vector<int>{0}));
  EXPECT_TRUE(ReadX(*coll, RecordRange{rids[5] + 1, std::nullopt, true}).empty());
}

TEST_F(RecordStoreTest, ResumesInALaterSessionPastCommittedWrites) {
  auto coll = Create("c");
  std::vector<int64_t> rids;
  for (int x = 0; x < 4; ++x) rids.push_back(Insert(*coll, "{\"x\": " + std::to_string(x) + "}"));
  int64_t last;
  {
    auto session = engine_->NewSession();
    auto cursor = std::move(RecordCursor::Open(*session, *coll)).value();
    ASSERT_TRUE(cursor.Next().value());
    ASSERT_TRUE(cursor.Next().value());
    last = cursor.id();
    EXPECT_EQ(last, rids[1]);
  }
  // Between the two sessions: the record after the resume point goes, a new one comes.
  {
    auto session = engine_->NewSession();
    BsonObj doc = coll->FindRecord(*session, rids[2]).value()->doc;
    ASSERT_TRUE(coll->Remove(*session, rids[2], doc).ok());
  }
  Insert(*coll, "{\"x\": 9}");
  auto session = engine_->NewSession();
  auto cursor = std::move(RecordCursor::Open(*session, *coll)).value();
  cursor.ResumeAfter(last);
  std::vector<int> rest;
  while (cursor.Next().value()) rest.push_back(cursor.doc()["x"].Int32());
  EXPECT_EQ(rest, (std::vector<int>{3, 9}));
  // Exhausted until told where to go: a resume, or an exact seek.
  EXPECT_FALSE(cursor.Next().value());
  ASSERT_TRUE(cursor.SeekExact(rids[0]).value());
  EXPECT_EQ(cursor.doc()["x"].Int32(), 0);
  ASSERT_TRUE(cursor.Next().value());
  EXPECT_EQ(cursor.id(), rids[1]);
  EXPECT_FALSE(cursor.SeekExact(rids[2]).value());  // removed
}

TEST_F(RecordStoreTest, OpenFailsOnADroppedCollection) {
  auto coll = Create("c");
  Insert(*coll, "{\"x\": 1}");
  ASSERT_TRUE(catalog_->DropCollection({"db", "c"}).ok());
  auto session = engine_->NewSession();
  EXPECT_EQ(RecordCursor::Open(*session, *coll).status().code(), ErrorCode::kNamespaceNotFound);
}

TEST_F(RecordStoreTest, IndexCursorOpenFailsOnADroppedIndex) {
  auto coll = Create("d");
  ASSERT_TRUE(
      catalog_
          ->CreateIndexes({"db", "d"},
                          {bson::FromJson(R"({"v": 2, "key": {"a": 1}, "name": "a_1"})").value()})
          .ok());
  coll = catalog_->Lookup({"db", "d"});
  const SecondaryIndex* a = coll->FindIndex("a_1");
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(catalog_->DropIndexes({"db", "d"}, {"a_1"}).ok());
  auto session = engine_->NewSession();
  // `coll` is the handle a scan started with; the index's table is gone.
  EXPECT_EQ(IndexCursor::Open(*session, *a).status().code(), ErrorCode::kNamespaceNotFound);
}

TEST_F(RecordStoreTest, ClusteredTimeRangeSelectsObjectIdTimestamps) {
  BsonObj options = bson::FromJson("{\"clusteredIndex\": true}").value();
  auto coll = catalog_->CreateCollection({"db", "k"}, options).value();
  // ObjectIds with timestamps 100, 200, 300 (big-endian in their first 4 bytes).
  for (int ts : {100, 200, 300}) {
    char hex[25];
    snprintf(hex, sizeof hex, "%08x0000000000000001", ts);
    Insert(*coll, "{\"_id\": {\"$oid\": \"" + std::string(hex) +
                      "\"}, \"x\": " + std::to_string(ts) + "}");
  }
  EXPECT_EQ(ReadX(*coll, ClusteredTimeRange(150, 300)), (std::vector<int>{200, 300}));
  EXPECT_EQ(ReadX(*coll, ClusteredTimeRange(100, 200, false)), (std::vector<int>{200, 100}));
  EXPECT_TRUE(ReadX(*coll, ClusteredTimeRange(201, 299)).empty());
}

TEST_F(RecordStoreTest, IndexCursorReadsEachTableFormat) {
  auto coll = Create("c");
  ASSERT_TRUE(
      catalog_
          ->CreateIndexes({"db", "c"}, {bson::FromJson("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": "
                                                       "\"a_1\"}")
                                            .value(),
                                        bson::FromJson("{\"v\": 2, \"key\": {\"u\": 1}, \"name\": "
                                                       "\"u_1\", \"unique\": true}")
                                            .value()})
          .ok());
  coll = catalog_->Lookup({"db", "c"});
  std::vector<int64_t> rids;
  for (int i = 0; i < 4; ++i) {
    // a: 1, 1, 2, 2 (non-unique: entries are ordered by RecordId within a value); u: 10..13.
    rids.push_back(Insert(*coll, "{\"_id\": " + std::to_string(i) +
                                     ", \"a\": " + std::to_string(1 + i / 2) +
                                     ", \"u\": " + std::to_string(10 + i) + "}"));
  }
  const SecondaryIndex* a = coll->FindIndex("a_1");
  const SecondaryIndex* u = coll->FindIndex("u_1");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(u, nullptr);
  ASSERT_NE(coll->IdIndex(), nullptr);

  auto all_a = ReadIndex(*a, {});
  ASSERT_EQ(all_a.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(all_a[i].first.FirstElement().NumberLong(), 1 + static_cast<int64_t>(i) / 2);
    EXPECT_EQ(all_a[i].second, rids[i]);
  }
  // [2, 3): both entries of 2, though each table key carries a RecordId after the value.
  auto twos = ReadIndex(*a, {KeyOf(2), KeyOf(3)});
  ASSERT_EQ(twos.size(), 2u);
  EXPECT_EQ(twos[0].second, rids[2]);
  // Backward over [1, 2): the entries of 1, last first.
  auto ones_back = ReadIndex(*a, {KeyOf(1), KeyOf(2), false});
  ASSERT_EQ(ones_back.size(), 2u);
  EXPECT_EQ(ones_back[0].second, rids[1]);
  EXPECT_EQ(ones_back[1].second, rids[0]);

  auto us = ReadIndex(*u, {KeyOf(11), std::nullopt});
  ASSERT_EQ(us.size(), 3u);
  EXPECT_EQ(us[0].first.FirstElement().NumberLong(), 11);
  EXPECT_EQ(us[0].second, rids[1]);
  auto ids = ReadIndex(*coll->IdIndex(), {KeyOf(3), std::nullopt});
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(ids[0].second, rids[3]);

  // Resuming after a position, and skipping to the next value.
  auto session = engine_->NewSession();
  auto cursor = std::move(IndexCursor::Open(*session, *a)).value();
  cursor.SetBounds({});
  ASSERT_TRUE(cursor.Next().value());
  std::string first(cursor.position());
  cursor.SkipTo(KeyOf(2));
  ASSERT_TRUE(cursor.Next().value());
  EXPECT_EQ(cursor.record_id(), rids[2]);
  cursor.ResumeAfter(first);
  ASSERT_TRUE(cursor.Next().value());
  EXPECT_EQ(cursor.record_id(), rids[1]);
}

TEST_F(RecordStoreTest, SeriesIndexEntriesGiveMetaPrefixAndRecordId) {
  BsonObj ts = bson::FromJson(
                   "{\"timeseries\": {\"timeField\": \"t\", \"metaField\": \"m\", "
                   "\"granularity\": \"seconds\", \"bucketMaxSpanSeconds\": 3600}}")
                   .value();
  BsonObj bucket_opts =
      bson::FromJson(
          "{\"clusteredIndex\": true, \"timeseries\": {\"timeField\": \"t\", \"metaField\": \"m\", "
          "\"granularity\": \"seconds\", \"bucketMaxSpanSeconds\": 3600}}")
          .value();
  ASSERT_TRUE(
      catalog_->CreateTimeseries({"db", "s"}, ts, {"db", "system.buckets.s"}, bucket_opts).ok());
  auto buckets = catalog_->Lookup({"db", "system.buckets.s"});
  const SecondaryIndex* series = buckets->SeriesIndex();
  ASSERT_NE(series, nullptr);
  EXPECT_TRUE(buckets->Indexes().empty());
  // Two buckets of series "a" (starts 1000 s and 5000 s), one of "b" and one without meta. The
  // RecordId is the first 8 bytes of the `_id`.
  auto bucket = [](const char* oid, const char* meta, int64_t start_ms) {
    std::string json = std::string("{\"_id\": {\"$oid\": \"") + oid +
                       "\"}, \"control\": {\"version\": 1, \"min\": {\"t\": {\"$date\": " +
                       std::to_string(start_ms) +
                       "}}, \"max\": {\"t\": {\"$date\": " + std::to_string(start_ms) + "}}}" +
                       (meta ? std::string(", \"meta\": \"") + meta + "\"" : std::string()) +
                       ", \"data\": {}}";
    return json;
  };
  int64_t a1 = Insert(*buckets, bucket("000003e80000000000000001", "a", 1000000));
  int64_t a2 = Insert(*buckets, bucket("000013880000000000000001", "a", 5000000));
  int64_t b1 = Insert(*buckets, bucket("000003e80000000200000000", "b", 1000000));
  int64_t none = Insert(*buckets, bucket("000003e80000000300000000", nullptr, 1000000));

  auto session = engine_->NewSession();
  auto cursor = std::move(IndexCursor::Open(*session, *series)).value();
  cursor.SetBounds({});
  std::vector<std::pair<std::string, int64_t>> seen;
  for (auto more = cursor.Next(); more.ok() && more.value(); more = cursor.Next()) {
    bson::BsonElement meta = cursor.meta();
    seen.emplace_back(meta.eoo() ? "<none>" : std::string(meta.Str()), cursor.record_id());
    // The prefix sliced from the key is the one built from the meta.
    EXPECT_EQ(cursor.SeriesPrefix(), BucketIndexSeriesPrefix(meta));
  }
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, int64_t>>{
                      {"<none>", none}, {"a", a1}, {"a", a2}, {"b", b1}}));

  // One series' buckets starting in [2000 s, 9000 s]; then backward over the whole series.
  bson::BsonBuilder mb;
  mb.AppendString("meta", "a");
  BsonObj meta_a = mb.Obj();
  const std::string prefix = BucketIndexSeriesPrefix(meta_a.FirstElement());
  cursor.SetBounds(
      {prefix + BucketIndexStartKey(2000000), prefix + BucketIndexStartKey(9000000) + "\xff"});
  ASSERT_TRUE(cursor.Next().value());
  EXPECT_EQ(cursor.record_id(), a2);
  EXPECT_FALSE(cursor.Next().value());
  cursor.SetBounds({prefix, prefix + "\xff", false});
  ASSERT_TRUE(cursor.Next().value());
  EXPECT_EQ(cursor.record_id(), a2);
  ASSERT_TRUE(cursor.Next().value());
  EXPECT_EQ(cursor.record_id(), a1);
  EXPECT_FALSE(cursor.Next().value());
}

// The read barrier's hook runs at every read outside an operation, once per operation inside
// one (nested scopes are one operation), again after RunAgainInThisOperation, and again after it
// failed.
TEST(ReadBarrierTest, RunsOncePerOperationUnlessTheOperationWroteOrItFailed) {
  ReadBarrier barrier, other;
  int runs = 0, other_runs = 0;
  Status result = Status::OK();
  barrier.Set([&] {
    ++runs;
    return result;
  });
  other.Set([&] {
    ++other_runs;
    return Status::OK();
  });
  ASSERT_TRUE(barrier.Run().ok());
  ASSERT_TRUE(barrier.Run().ok());
  EXPECT_EQ(runs, 2);
  {
    ReadBarrier::OperationScope op;
    ASSERT_TRUE(barrier.Run().ok());
    ASSERT_TRUE(barrier.Run().ok());
    {
      ReadBarrier::OperationScope nested;
      ASSERT_TRUE(barrier.Run().ok());
    }
    ASSERT_TRUE(barrier.Run().ok());
    EXPECT_EQ(runs, 3);
    ASSERT_TRUE(other.Run().ok());  // each barrier once
    ASSERT_TRUE(other.Run().ok());
    EXPECT_EQ(other_runs, 1);
    barrier.RunAgainInThisOperation();
    ASSERT_TRUE(barrier.Run().ok());
    ASSERT_TRUE(barrier.Run().ok());
    EXPECT_EQ(runs, 4);
    ASSERT_TRUE(other.Run().ok());
    EXPECT_EQ(other_runs, 1);  // not the other one's
  }
  {
    ReadBarrier::OperationScope op;  // a new operation
    result = Status(ErrorCode::kInternalError, "flush failed");
    EXPECT_EQ(barrier.Run().code(), ErrorCode::kInternalError);
    result = Status::OK();
    ASSERT_TRUE(barrier.Run().ok());  // a failure is not remembered as a run
    ASSERT_TRUE(barrier.Run().ok());
    EXPECT_EQ(runs, 6);
  }
  barrier.RunAgainInThisOperation();  // outside an operation: nothing to undo
  ASSERT_TRUE(barrier.Run().ok());
  EXPECT_EQ(runs, 7);
}

}  // namespace
}  // namespace hourglass::catalog
