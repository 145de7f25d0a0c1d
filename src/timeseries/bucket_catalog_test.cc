// BucketCatalog against a real (in-memory) WiredTiger engine and catalog: bucket selection by
// normalized meta, the rollover rules, archiving and reopening, commit rights under concurrent
// writers, clearing and restarting, and the serverStatus section. Expected values follow
// docs timeseries.md sections 3.1, 3.3, 3.4 and 4.1-4.7.
#include "timeseries/bucket_catalog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "base/server_parameters.h"
#include "bsoncolumn/bson_column_decoder.h"
#include "catalog/catalog.h"
#include "catalog/record_store.h"
#include "storage/storage_test_util.h"
#include "storage/write_conflict.h"
#include "timeseries/bucket_compression.h"
#include "timeseries/bucket_unpacker.h"

namespace hourglass::timeseries {
namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

constexpr int64_t kCacheBytes = int64_t{1} << 30;
// 2023-11-14T22:13:20Z: not on a minute boundary (its minute starts 20 s earlier).
constexpr int64_t kT0 = 1700000000000;
constexpr int64_t kT0Minute = 1699999980000;
constexpr int64_t kMinute = 60 * 1000;
constexpr int64_t kHour = 60 * kMinute;

BsonObj J(std::string_view json) {
  auto r = bson::FromJson(json);
  EXPECT_TRUE(r.ok()) << json << ": " << r.status().ToString();
  return r.ok() ? r.value() : BsonObj();
}

// {t: Date(t), [tag: <meta>], v: <v>}
BsonObj M(int64_t t, int v, const BsonObj& meta = BsonObj(), std::string_view meta_name = "m") {
  BsonBuilder b;
  b.AppendDate("t", t);
  if (!meta.IsEmpty()) b.AppendElementAs(meta[meta_name], "tag");
  b.AppendInt32("v", v);
  return b.Obj();
}

// Sets a server parameter for the life of the object.
class ParamGuard {
 public:
  ParamGuard(const char* name, int64_t v) {
    RegisterTimeseriesParameters();
    p_ = ServerParameterRegistry::Get().Find(name);
    EXPECT_NE(p_, nullptr) << name;
    if (!p_) return;
    old_ = p_->GetInt();
    Status st = p_->Set(int64_t{v});
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  ~ParamGuard() {
    if (p_) (void)p_->Set(int64_t{old_});
  }

 private:
  ServerParameter* p_ = nullptr;
  int64_t old_ = 0;
};

// Sets a boolean server parameter for the life of the object.
class BoolParamGuard {
 public:
  BoolParamGuard(const char* name, bool v) {
    RegisterTimeseriesParameters();
    p_ = ServerParameterRegistry::Get().Find(name);
    EXPECT_NE(p_, nullptr) << name;
    if (!p_) return;
    old_ = p_->GetBool();
    EXPECT_TRUE(p_->Set(v).ok());
  }
  ~BoolParamGuard() {
    if (p_) (void)p_->Set(old_);
  }

 private:
  ServerParameter* p_ = nullptr;
  bool old_ = false;
};

// Most tests read the buckets' version-1 layout, the easiest to inspect: the catalog's rules do
// not depend on the layout. CompressedBucketCatalogTest covers the compressed one (the default).
class BucketCatalogTest : public ::testing::Test {
 protected:
  explicit BucketCatalogTest(bool compressed = false)
      : layout_("hourglassTimeseriesAlwaysCompressBuckets", compressed) {}
  void SetUp() override {
    storage::EngineOptions opts;
    opts.dbpath = dir_.path();
    opts.in_memory = true;
    opts.cache_size_mb = 512;
    engine_ = storage::testing::OpenOrDie(opts);
    ASSERT_NE(engine_, nullptr);
    auto cat = catalog::Catalog::Open(engine_.get());
    ASSERT_TRUE(cat.ok()) << cat.status().ToString();
    catalog_ = std::move(cat).value();
    bc_ = std::make_unique<BucketCatalog>(kCacheBytes);
    coll_ = Create("c", "tag");
  }
  void TearDown() override {
    bc_.reset();
    coll_ = {};
    catalog_.reset();
    engine_.reset();
  }

  TimeseriesCollection Create(const std::string& name, std::optional<std::string> meta,
                              std::optional<int64_t> custom_span = std::nullopt,
                              std::string granularity = "seconds") {
    TimeseriesOptions o;
    o.time_field = "t";
    o.meta_field = std::move(meta);
    if (custom_span) {
      o.bucket_max_span_seconds = *custom_span;
      o.bucket_rounding_seconds = *custom_span;
    } else {
      o.granularity = granularity;
      o.bucket_max_span_seconds = granularity == "seconds"   ? 3600
                                  : granularity == "minutes" ? 86400
                                                             : 2592000;
    }
    BsonBuilder vb;
    vb.AppendObject("timeseries", o.ToBson());
    BsonObj view_options = vb.Obj();
    BsonBuilder bb;
    bb.AppendBool("clusteredIndex", true);
    bb.AppendObject("timeseries", o.ToBson());
    BsonObj buckets_options = bb.Obj();
    catalog::NamespaceString view{"db", name}, buckets{"db", "system.buckets." + name};
    Status st = catalog_->CreateTimeseries(view, view_options, buckets, buckets_options);
    EXPECT_TRUE(st.ok()) << st.ToString();
    auto coll = catalog_->Lookup(buckets);
    EXPECT_NE(coll, nullptr);
    if (coll) {
      EXPECT_TRUE(coll->IsClustered());
    }
    return TimeseriesCollection{coll ? coll->entry().uuid : "", o, coll};
  }

  Status InsertOne(const TimeseriesCollection& coll, const BsonObj& m,
                   BucketCatalog* bc = nullptr) {
    if (!bc) bc = bc_.get();
    auto s = engine_->NewSession();
    auto batch = bc->Insert(coll, *s, m);
    if (!batch.ok()) return batch.status();
    return bc->Commit(coll, *s, batch.value());
  }
  void InsertAll(const TimeseriesCollection& coll, const std::vector<BsonObj>& ms) {
    for (const auto& m : ms) {
      Status st = InsertOne(coll, m);
      ASSERT_TRUE(st.ok()) << st.ToString() << " inserting " << m.ToJson();
    }
  }

  // Every stored bucket, in clustered (_id, i.e. start time) order.
  std::vector<BsonObj> Buckets(const TimeseriesCollection& coll) {
    std::vector<BsonObj> out;
    auto s = engine_->NewSession();
    auto cursor = catalog::RecordCursor::Open(*s, *coll.buckets);
    EXPECT_TRUE(cursor.ok());
    if (!cursor.ok()) return out;
    for (auto more = cursor.value().Next(); more.ok() && more.value();
         more = cursor.value().Next()) {
      EXPECT_TRUE(bson::ValidateBson(cursor.value().data()).ok());
      out.push_back(BsonObj::CopyOf(cursor.value().data()));
    }
    return out;
  }

  static std::vector<BsonObj> Unpack(const TimeseriesCollection& coll, const BsonObj& bucket) {
    UnpackSpec spec;
    spec.time_field = coll.options.time_field;
    spec.meta_field = coll.options.meta_field;
    BucketUnpacker u(spec);
    std::vector<BsonObj> out;
    Status st = u.Unpack(bucket, [&](BsonObj m) {
      out.push_back(m.Owned());
      return true;
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return out;
  }
  static int Rows(const BsonObj& bucket) { return bucket["data"].Obj()["t"].Obj().NumFields(); }
  // The `v` values of each bucket, bucket by bucket in stored order.
  std::vector<std::vector<int>> Values(const TimeseriesCollection& coll) {
    std::vector<std::vector<int>> out;
    for (const auto& b : Buckets(coll)) {
      out.emplace_back();
      for (const auto& m : Unpack(coll, b)) out.back().push_back(m["v"].Int32());
    }
    return out;
  }

  int64_t Get(Stat s) const { return bc_->global_stats().Get(s); }
  // Measurement v of series v % series (its meta `tag`), for v in [0, total): each is stored
  // exactly once, in a bucket of its own series.
  void ExpectEachValueOnceInItsSeries(const std::vector<BsonObj>& buckets, int series, int total) {
    std::vector<int> seen;
    for (const auto& b : buckets) {
      for (const auto& m : Unpack(coll_, b)) {
        EXPECT_EQ(m["tag"].Int32(), m["v"].Int32() % series) << "measurement in the wrong series";
        seen.push_back(m["v"].Int32());
      }
    }
    std::sort(seen.begin(), seen.end());
    ASSERT_EQ(seen.size(), static_cast<size_t>(total));
    for (int i = 0; i < total; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)], i);
  }

  BoolParamGuard layout_;
  storage::testing::TempDir dir_;
  std::unique_ptr<storage::KvEngine> engine_;
  std::unique_ptr<catalog::Catalog> catalog_;
  std::unique_ptr<BucketCatalog> bc_;
  TimeseriesCollection coll_;
};

// The default layout: buckets compressed from their first write (MongoDB 8.0).
class CompressedBucketCatalogTest : public BucketCatalogTest {
 protected:
  CompressedBucketCatalogTest() : BucketCatalogTest(/*compressed=*/true) {}
  // The `v` values of the one stored bucket, checked as a compressed bucket of `version`.
  std::vector<int> OnlyBucket(int version) {
    std::vector<BsonObj> buckets = Buckets(coll_);
    EXPECT_EQ(buckets.size(), 1u);
    if (buckets.size() != 1) return {};
    const BsonObj& b = buckets[0];
    EXPECT_EQ(b["control"].Obj()["version"].Int32(), version) << b.ToJson();
    Status st = CheckCompressedBucket(b, "t");
    EXPECT_TRUE(st.ok()) << st.ToString();
    std::vector<int> out;
    for (const auto& m : Unpack(coll_, b)) out.push_back(m["v"].Int32());
    EXPECT_EQ(b["control"].Obj()["count"].Int32(), static_cast<int>(out.size()));
    return out;
  }
};

TEST_F(CompressedBucketCatalogTest, FirstCommitWritesACompressedBucketLaterOnesAppend) {
  InsertAll(coll_, {M(kT0, 1)});
  EXPECT_EQ(OnlyBucket(2), (std::vector<int>{1}));
  InsertAll(coll_, {M(kT0 + 1000, 2), M(kT0 + 1000, 3)});
  EXPECT_EQ(OnlyBucket(2), (std::vector<int>{1, 2, 3}));
  // Out of time order: the bucket keeps its rows in arrival order, as version 3.
  InsertAll(coll_, {M(kT0 + 500, 4), M(kT0 + 2000, 5)});
  EXPECT_EQ(OnlyBucket(3), (std::vector<int>{1, 2, 3, 4, 5}));
  const BsonObj bucket = Buckets(coll_)[0];
  const BsonObj control = bucket["control"].Obj();
  EXPECT_EQ(control["min"].Obj()["t"].DateMillis(), kT0Minute);
  EXPECT_EQ(control["max"].Obj()["t"].DateMillis(), kT0 + 2000);
  EXPECT_EQ(control["min"].Obj()["v"].Int32(), 1);
  EXPECT_EQ(control["max"].Obj()["v"].Int32(), 5);
  EXPECT_EQ(Get(Stat::kNumBucketInserts), 1);
  EXPECT_EQ(Get(Stat::kNumBucketUpdates), 4);
  EXPECT_EQ(coll_.buckets->DataSize(), Buckets(coll_)[0].size());
}

TEST_F(CompressedBucketCatalogTest, WholeRewritesBetweenEditsKeepEveryMeasurement) {
  // Every other write rewrites the stored bucket whole (a plain storage update), the others
  // edit it: the bucket holds every measurement either way.
  ParamGuard rewrite("hourglassTimeseriesBucketEditsBeforeRewrite", 1);
  std::vector<int> want;
  for (int i = 0; i < 7; ++i) {
    InsertAll(coll_, {M(kT0 + i * 1000, i)});
    want.push_back(i);
    ASSERT_EQ(OnlyBucket(2), want) << "after write " << i;
  }
  EXPECT_EQ(coll_.buckets->DataSize(), Buckets(coll_)[0].size());
}

TEST_F(CompressedBucketCatalogTest, BucketLeftBehindByTimeIsReopenedByALateMeasurement) {
  // The second measurement closes the first bucket (time forward); the third belongs to it. A
  // compressed bucket needs no compression when it closes and stays open to reopening.
  InsertAll(coll_, {M(kT0, 1), M(kT0 + 2 * kHour, 2), M(kT0 + kMinute, 3)});
  EXPECT_EQ(Values(coll_), (std::vector<std::vector<int>>{{1, 3}, {2}}));
  EXPECT_EQ(Get(Stat::kNumBucketsReopened), 1);
  for (const auto& b : Buckets(coll_)) EXPECT_TRUE(CheckCompressedBucket(b, "t").ok());
}

TEST_F(CompressedBucketCatalogTest, ClosedBucketLastWrittenByEditsIsStoredAgainUnchanged) {
  // An insert, then two edits; the fourth measurement closes the bucket (time forward) and the
  // closed one is stored again whole: the same bytes, still open to a late measurement.
  InsertAll(coll_, {M(kT0, 1), M(kT0 + 1000, 2), M(kT0 + 2000, 3), M(kT0 + 2 * kHour, 4)});
  const std::vector<BsonObj> before = Buckets(coll_);
  auto s = engine_->NewSession();
  ASSERT_TRUE(bc_->CompressClosedBuckets(coll_, *s).ok());
  const std::vector<BsonObj> after = Buckets(coll_);
  ASSERT_EQ(after.size(), 2u);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(std::string_view(after[i].data(), after[i].size()),
              std::string_view(before[i].data(), before[i].size()));
  }
  ASSERT_TRUE(bc_->CompressClosedBuckets(coll_, *s).ok());  // nothing left to do
  InsertAll(coll_, {M(kT0 + 3000, 5)});
  EXPECT_EQ(Values(coll_), (std::vector<std::vector<int>>{{1, 2, 3, 5}, {4}}));
  EXPECT_EQ(coll_.buckets->DataSize(), Buckets(coll_)[0].size() + Buckets(coll_)[1].size());
  for (const auto& b : Buckets(coll_)) EXPECT_TRUE(CheckCompressedBucket(b, "t").ok());
}

TEST_F(CompressedBucketCatalogTest, StoredCompressedBucketIsReopenedAfterRestart) {
  InsertAll(coll_, {M(kT0, 1), M(kT0 + 1000, 2)});
  BucketCatalog restarted(kCacheBytes);
  restarted.MarkMayHaveStoredBuckets(coll_.uuid);
  ASSERT_TRUE(InsertOne(coll_, M(kT0 + 2000, 3), &restarted).ok());
  ASSERT_TRUE(InsertOne(coll_, M(kT0 + 3000, 4), &restarted).ok());
  EXPECT_EQ(OnlyBucket(2), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(restarted.global_stats().Get(Stat::kNumBucketsReopened), 1);
}

TEST_F(CompressedBucketCatalogTest, MeasurementAColumnCannotHoldIsRefused) {
  BsonBuilder b;
  b.AppendDate("t", kT0);
  b.AppendInt32("v", 1);
  b.AppendElementAs(J(R"js({"c": {"$code": "f()", "$scope": {"x": 1}}})js")["c"], "code");
  auto s = engine_->NewSession();
  auto batch = bc_->Insert(coll_, *s, b.Obj());
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), ErrorCode::kBadValue);
  // Nothing was staged: the series' next measurement commits alone.
  InsertAll(coll_, {M(kT0 + 1, 2)});
  EXPECT_EQ(OnlyBucket(2), (std::vector<int>{2}));
}

// --- bucket layout (3.1, 3.3, 3.4) -------------------------------------------------------------

TEST_F(BucketCatalogTest, MeasurementsOfOneSeriesShareOneBucket) {
  BsonObj meta = J(R"({"m": {"sensor": "a"}})");
  InsertAll(coll_, {M(kT0, 5, meta), M(kT0 + 2000, 3, meta), M(kT0 + 1000, 9, meta)});
  auto buckets = Buckets(coll_);
  ASSERT_EQ(buckets.size(), 1u);
  const BsonObj& b = buckets[0];
  // Spec 3.1: {_id, control: {version: 1, min, max}, meta, data: {t: {...}, v: {...}}}, min.t the
  // rounded start, max.t the largest time, rows in insertion order.
  BsonBuilder want;
  want.AppendElement(b["_id"]);
  BsonObj rest = J(R"({
    "control": {"version": 1,
                "min": {"t": {"$date": {"$numberLong": "1699999980000"}}, "v": 3},
                "max": {"t": {"$date": {"$numberLong": "1700000002000"}}, "v": 9}},
    "meta": {"sensor": "a"},
    "data": {"t": {"0": {"$date": {"$numberLong": "1700000000000"}},
                   "1": {"$date": {"$numberLong": "1700000002000"}},
                   "2": {"$date": {"$numberLong": "1700000001000"}}},
             "v": {"0": 5, "1": 3, "2": 9}}})");
  want.AppendElementsOf(rest);
  BsonObj w = want.Obj();
  EXPECT_TRUE(b.BinaryEqual(w)) << b.ToJson() << "\nwant " << w.ToJson();

  EXPECT_EQ(Get(Stat::kNumBucketInserts), 1);
  EXPECT_EQ(Get(Stat::kNumBucketUpdates), 2);
  EXPECT_EQ(Get(Stat::kNumCommits), 3);
  EXPECT_EQ(Get(Stat::kNumMeasurementsCommitted), 3);
  EXPECT_EQ(Get(Stat::kNumBucketsOpenedDueToMetadata), 1);
  EXPECT_EQ(coll_.buckets->NumRecords(), 1);
  EXPECT_EQ(coll_.buckets->DataSize(), b.size());
}

TEST_F(BucketCatalogTest, MeasurementsWithoutMetaGetBucketWithoutMetaField) {
  auto nometa = Create("nometa", std::nullopt);
  InsertAll(nometa, {M(kT0, 1), M(kT0 + 1, 2)});
  auto buckets = Buckets(nometa);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_TRUE(buckets[0]["meta"].eoo());
  EXPECT_EQ(Rows(buckets[0]), 2);
}

TEST_F(BucketCatalogTest, ControlMinTimeIsRoundedDownAndIdTimestampIsItsSeconds) {
  struct Case {
    int64_t t;
    int64_t want_min;
  };
  // Rounding toward -infinity (spec 1.2), also before 1970.
  const Case cases[] = {
      {kT0, kT0Minute},
      {kT0Minute, kT0Minute},
      {0, 0},
      {1, 0},
      {-1, -kMinute},
      {-kMinute, -kMinute},
      {-kMinute - 1, -2 * kMinute},
      {-86400000LL * 365 * 10 + 123, -86400000LL * 365 * 10},
      {-86400000LL * 365 * 10 - 123, -86400000LL * 365 * 10 - kMinute},
  };
  int i = 0;
  for (const Case& c : cases) {
    auto coll = Create("round" + std::to_string(i++), "tag");
    ASSERT_TRUE(InsertOne(coll, M(c.t, 1)).ok());
    auto buckets = Buckets(coll);
    ASSERT_EQ(buckets.size(), 1u);
    BsonObj control = buckets[0]["control"].Obj();
    EXPECT_EQ(control["min"].Obj()["t"].type(), BsonType::kDate);
    EXPECT_EQ(control["min"].Obj()["t"].DateMillis(), c.want_min) << c.t;
    EXPECT_EQ(control["max"].Obj()["t"].DateMillis(), c.t);
    // Spec 3.4: bytes 0-3 of _id = big-endian uint32(rounded seconds), modulo 2^32 before 1970.
    uint32_t want_ts = static_cast<uint32_t>(static_cast<uint64_t>(c.want_min / 1000));
    EXPECT_EQ(buckets[0]["_id"].Oid().Timestamp(), want_ts) << c.t;
  }
}

TEST_F(BucketCatalogTest, RoundingFollowsGranularityAndCustomSpan) {
  auto minutes = Create("minutes", "tag", std::nullopt, "minutes");
  auto custom = Create("custom", "tag", 7200);
  ASSERT_TRUE(InsertOne(minutes, M(kT0, 1)).ok());
  ASSERT_TRUE(InsertOne(custom, M(kT0, 1)).ok());
  const int64_t hour_start = kT0 - kT0 % kHour;
  const int64_t two_hour_start = kT0 - kT0 % (2 * kHour);
  auto b1 = Buckets(minutes), b2 = Buckets(custom);
  ASSERT_EQ(b1.size(), 1u);
  ASSERT_EQ(b2.size(), 1u);
  EXPECT_EQ(b1[0]["control"].Obj()["min"].Obj()["t"].DateMillis(), hour_start);
  EXPECT_EQ(b2[0]["control"].Obj()["min"].Obj()["t"].DateMillis(), two_hour_start);
  EXPECT_EQ(b2[0]["_id"].Oid().Timestamp(), static_cast<uint32_t>(two_hour_start / 1000));
}

// --- series keys (4.1) -------------------------------------------------------------------------

TEST_F(BucketCatalogTest, MetaFieldOrderIsNormalizedAway) {
  InsertAll(coll_, {M(kT0, 1, J(R"({"m": {"a": 1, "b": {"y": 1, "x": 2}}})")),
                    M(kT0 + 1, 2, J(R"({"m": {"b": {"x": 2, "y": 1}, "a": 1}})"))});
  auto buckets = Buckets(coll_);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(Rows(buckets[0]), 2);
  // The bucket stores the normalized meta: fields sorted, recursively.
  EXPECT_TRUE(buckets[0]["meta"].Obj().BinaryEqual(J(R"({"a": 1, "b": {"x": 2, "y": 1}})")))
      << buckets[0]["meta"].Obj().ToJson();
}

TEST_F(BucketCatalogTest, NumericTypesOfMetaAreDifferentSeries) {
  InsertAll(coll_, {M(kT0, 1, J(R"({"m": 1})")), M(kT0 + 1, 2, J(R"({"m": {"$numberLong": "1"}})")),
                    M(kT0 + 2, 3, J(R"({"m": 1})"))});
  auto buckets = Buckets(coll_);
  ASSERT_EQ(buckets.size(), 2u);
  std::map<BsonType, int> rows;
  for (const auto& b : buckets) rows[b["meta"].type()] = Rows(b);
  EXPECT_EQ(rows[BsonType::kInt32], 2);
  EXPECT_EQ(rows[BsonType::kInt64], 1);
  EXPECT_EQ(Get(Stat::kNumBucketsOpenedDueToMetadata), 2);
}

TEST_F(BucketCatalogTest, NullMetaAndMissingMetaAreDifferentSeries) {
  InsertAll(coll_, {M(kT0, 1), M(kT0 + 1, 2, J(R"({"m": null})")), M(kT0 + 2, 3)});
  auto buckets = Buckets(coll_);
  ASSERT_EQ(buckets.size(), 2u);
  int with_null = 0, without = 0;
  for (const auto& b : buckets) {
    if (b["meta"].eoo()) {
      without = Rows(b);
    } else {
      EXPECT_EQ(b["meta"].type(), BsonType::kNull);
      with_null = Rows(b);
    }
  }
  EXPECT_EQ(without, 2);
  EXPECT_EQ(with_null, 1);
}

// --- rollover (4.2) ----------------------------------------------------------------------------

TEST_F(BucketCatalogTest, CountRolloverAtMaxCount) {
  ParamGuard max_count("timeseriesBucketMaxCount", 3);
  std::vector<BsonObj> ms;
  for (int i = 0; i < 7; ++i) ms.push_back(M(kT0 + i, i));
  InsertAll(coll_, ms);
  EXPECT_EQ(Values(coll_), (std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5}, {6}}));
  EXPECT_EQ(Get(Stat::kNumBucketsClosedDueToCount), 2);
  EXPECT_EQ(Get(Stat::kNumBucketsOpenedDueToMetadata), 3);
  EXPECT_EQ(Get(Stat::kNumBucketInserts), 3);
  EXPECT_EQ(Get(Stat::kNumBucketUpdates), 4);
}

// Sets hourglassTimeseriesCompressClosedBuckets for the life of the object.
class CompressGuard {
 public:
  explicit CompressGuard(bool on) {
    RegisterTimeseriesParameters();
    p_ = ServerParameterRegistry::Get().Find("hourglassTimeseriesCompressClosedBuckets");
    EXPECT_NE(p_, nullptr);
    if (p_) {
      EXPECT_TRUE(p_->Set(on).ok());
    }
  }
  ~CompressGuard() {
    if (p_) (void)p_->Set(false);
  }

 private:
  ServerParameter* p_ = nullptr;
};

// The `v` cells of a compressed bucket's column, decoded.
std::vector<int> CompressedValues(const BsonObj& bucket) {
  auto cells = bsoncolumn::DecodeBsonColumn(bucket["data"].Obj()["v"].BinData());
  EXPECT_TRUE(cells.ok()) << cells.status().ToString();
  std::vector<int> out;
  if (cells.ok()) {
    for (const auto& c : cells.value()) out.push_back(c.element().Int32());
  }
  return out;
}

TEST_F(BucketCatalogTest, BucketsClosedForGoodAreCompressedAfterTheirLastCommit) {
  ParamGuard max_count("timeseriesBucketMaxCount", 3);
  CompressGuard compress(true);
  // Times go backward inside each bucket of three: the compressed rows are sorted by time.
  std::vector<BsonObj> ms;
  for (int i = 0; i < 7; ++i) ms.push_back(M(kT0 + (i / 3) * 10 + (2 - i % 3), i));
  InsertAll(coll_, ms);
  auto s = engine_->NewSession();
  ASSERT_TRUE(bc_->CompressClosedBuckets(coll_, *s).ok());
  std::vector<BsonObj> buckets = Buckets(coll_);
  ASSERT_EQ(buckets.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    BsonObj control = buckets[i]["control"].Obj();
    EXPECT_EQ(control["version"].Int32(), 2) << buckets[i].ToJson();
    EXPECT_EQ(control["count"].Int32(), 3);
  }
  EXPECT_EQ(CompressedValues(buckets[0]), (std::vector<int>{2, 1, 0}));
  // MongoDB's compression statistics count the two buckets, before and after.
  EXPECT_EQ(Get(Stat::kNumCompressedBuckets), 2);
  EXPECT_EQ(Get(Stat::kNumUncompressedBuckets), 0);
  EXPECT_EQ(Get(Stat::kNumBytesCompressed), buckets[0].size() + buckets[1].size());
  EXPECT_GT(Get(Stat::kNumBytesUncompressed), Get(Stat::kNumBytesCompressed));
  EXPECT_EQ(CompressedValues(buckets[1]), (std::vector<int>{5, 4, 3}));
  // The open bucket is not touched.
  EXPECT_EQ(buckets[2]["control"].Obj()["version"].Int32(), 1);
  // The collection's data size follows the smaller documents.
  int64_t bytes = 0;
  for (const auto& b : buckets) bytes += b.size();
  EXPECT_EQ(coll_.buckets->DataSize(), bytes);
  // Nothing is left to do: a second call changes nothing.
  ASSERT_TRUE(bc_->CompressClosedBuckets(coll_, *s).ok());
  std::vector<BsonObj> again = Buckets(coll_);
  for (size_t i = 0; i < buckets.size(); ++i) EXPECT_TRUE(again[i].BinaryEqual(buckets[i]));
  // A later measurement in the first bucket's time range never goes into a compressed bucket.
  InsertAll(coll_, {M(kT0 + 1, 100)});
  std::vector<BsonObj> after = Buckets(coll_);
  EXPECT_TRUE(after[0].BinaryEqual(buckets[0]));
  EXPECT_TRUE(after[1].BinaryEqual(buckets[1]));
  int measurements = 0;
  for (const auto& b : after) {
    BsonObj control = b["control"].Obj();
    measurements += control["version"].Int32() == 1 ? Rows(b) : control["count"].Int32();
  }
  EXPECT_EQ(measurements, 8);
}

TEST_F(BucketCatalogTest, TimeForwardClosesForGoodWhenCompressingButTimeBackwardArchives) {
  CompressGuard compress(true);
  // One hour span (granularity seconds): the second measurement starts a new bucket and closes
  // the first; the third goes back in time, archiving the second.
  InsertAll(coll_, {M(kT0, 1), M(kT0 + 2 * kHour, 2), M(kT0 + kHour / 2, 3)});
  auto s = engine_->NewSession();
  ASSERT_TRUE(bc_->CompressClosedBuckets(coll_, *s).ok());
  std::map<int, int> version_of_value;
  for (const auto& b : Buckets(coll_)) {
    const int version = b["control"].Obj()["version"].Int32();
    std::vector<int> values = version == 1 ? std::vector<int>{} : CompressedValues(b);
    if (version == 1) {
      for (const auto& m : Unpack(coll_, b)) values.push_back(m["v"].Int32());
    }
    for (int v : values) version_of_value[v] = version;
  }
  // Value 3 could not go back into the compressed first bucket: it opened its own.
  EXPECT_EQ(version_of_value, (std::map<int, int>{{1, 2}, {2, 1}, {3, 1}}));
  EXPECT_EQ(Buckets(coll_).size(), 3u);
}

TEST_F(BucketCatalogTest, ClosedBucketsStayUncompressedByDefault) {
  ParamGuard max_count("timeseriesBucketMaxCount", 3);
  std::vector<BsonObj> ms;
  for (int i = 0; i < 7; ++i) ms.push_back(M(kT0 + i, i));
  InsertAll(coll_, ms);
  auto s = engine_->NewSession();
  ASSERT_TRUE(bc_->CompressClosedBuckets(coll_, *s).ok());
  for (const auto& b : Buckets(coll_)) EXPECT_EQ(b["control"].Obj()["version"].Int32(), 1);
}

TEST_F(BucketCatalogTest, TimeForwardRolloverAtMaxSpanFromRoundedStart) {
  // The span is measured from the rounded control.min.t: t fits iff min.t <= t < min.t + 3600 s.
  InsertAll(coll_, {M(kT0, 0), M(kT0Minute + kHour - 1, 1), M(kT0Minute + kHour, 2)});
  auto buckets = Buckets(coll_);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(Values(coll_), (std::vector<std::vector<int>>{{0, 1}, {2}}));
  EXPECT_EQ(buckets[1]["control"].Obj()["min"].Obj()["t"].DateMillis(), kT0Minute + kHour);
  EXPECT_EQ(Get(Stat::kNumBucketsClosedDueToTimeForward), 1);
  EXPECT_EQ(Get(Stat::kNumBucketsArchivedDueToTimeBackward), 0);
}

TEST_F(BucketCatalogTest, TimeBackwardArchivesAndALaterMeasurementReopens) {
  // m0 opens A; m1 (2 h earlier) archives A and opens B; m2 (back in A's range) is too far ahead
  // of B, which closes, and goes to the archived A.
  InsertAll(coll_, {M(kT0, 0), M(kT0 - 2 * kHour, 1), M(kT0 + kMinute, 2)});
  EXPECT_EQ(Get(Stat::kNumBucketsArchivedDueToTimeBackward), 1);
  EXPECT_EQ(Get(Stat::kNumBucketsClosedDueToTimeForward), 1);
  EXPECT_EQ(Get(Stat::kNumBucketsReopened), 1);
  EXPECT_EQ(Get(Stat::kNumBucketsOpenedDueToMetadata), 2);
  // Stored order is by start time: B first.
  EXPECT_EQ(Values(coll_), (std::vector<std::vector<int>>{{1}, {0, 2}}));
  auto buckets = Buckets(coll_);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[1]["control"].Obj()["min"].Obj()["t"].DateMillis(), kT0Minute);
  EXPECT_EQ(buckets[1]["control"].Obj()["max"].Obj()["t"].DateMillis(), kT0 + kMinute);
  // B is archived in turn and can come back too.
  ASSERT_TRUE(InsertOne(coll_, M(kT0 - 2 * kHour + 5, 3)).ok());
  EXPECT_EQ(Get(Stat::kNumBucketsReopened), 2);
  EXPECT_EQ(Values(coll_), (std::vector<std::vector<int>>{{1, 3}, {0, 2}}));
}

TEST_F(BucketCatalogTest, ArchivedBucketIsReopenedOnlyIfItHasRoom) {
  ParamGuard max_count("timeseriesBucketMaxCount", 2);
  // A fills up (2 measurements); m2 goes back in time (A archived, B opened); m3 is in A's range
  // but A is full, so it gets a new bucket C.
  InsertAll(coll_, {M(kT0, 0), M(kT0 + 1, 1), M(kT0 - 2 * kHour, 2), M(kT0 + 2, 3)});
  EXPECT_EQ(Get(Stat::kNumBucketsReopened), 0);
  EXPECT_EQ(Get(Stat::kNumBucketsOpenedDueToMetadata), 3);
  std::multiset<std::vector<int>> got;
  for (const auto& v : Values(coll_)) got.insert(v);
  EXPECT_EQ(got, (std::multiset<std::vector<int>>{{0, 1}, {2}, {3}}));
}

TEST_F(BucketCatalogTest, ArchivedBucketIsNotReopenedForIncompatibleSchema) {
  InsertAll(coll_, {M(kT0, 0), M(kT0 - 2 * kHour, 1),
                    J(R"({"t": {"$date": {"$numberLong": "1700000000001"}}, "v": "text"})")});
  EXPECT_EQ(Get(Stat::kNumBucketsReopened), 0);
  EXPECT_EQ(Buckets(coll_).size(), 3u);
  int rows = 0;
  for (const auto& b : Buckets(coll_)) rows += Rows(b);
  EXPECT_EQ(rows, 3);
}

TEST_F(BucketCatalogTest, LargeMeasurementsKeepBucketOpenUntilMinCount) {
  // 20 KB strings: past timeseriesBucketMaxSize (128000) after a few, but fewer than
  // timeseriesBucketMinCount (10) measurements keep the bucket open; the 11th closes it (Size).
  const std::string big(20000, 'x');
  std::vector<BsonObj> ms;
  for (int i = 0; i < 11; ++i) {
    BsonBuilder b;
    b.AppendDate("t", kT0 + i);
    b.AppendString("s", big);
    b.AppendInt32("v", i);
    ms.push_back(b.Obj());
  }
  InsertAll(coll_, ms);
  EXPECT_EQ(Values(coll_), (std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {10}}));
  EXPECT_EQ(Get(Stat::kNumBucketsKeptOpenDueToLargeMeasurements), 1);
  EXPECT_EQ(Get(Stat::kNumBucketsClosedDueToSize), 1);
  EXPECT_EQ(Get(Stat::kNumBucketsClosedDueToCachePressure), 0);
}

TEST_F(BucketCatalogTest, LargeMeasurementsStopAtAbsoluteMax) {
  // 1.5 MB strings: ten of them exceed the absolute maximum (12 MiB), so the bucket closes for
  // Size with fewer than timeseriesBucketMinCount measurements, and no document passes 16 MB.
  const std::string big(1500000, 'y');
  std::vector<BsonObj> ms;
  for (int i = 0; i < 10; ++i) {
    BsonBuilder b;
    b.AppendDate("t", kT0 + i);
    b.AppendString("s", big);
    b.AppendInt32("v", i);
    ms.push_back(b.Obj());
  }
  InsertAll(coll_, ms);
  auto buckets = Buckets(coll_);
  ASSERT_GE(buckets.size(), 2u);
  EXPECT_GT(Rows(buckets[0]), 1);
  EXPECT_LT(Rows(buckets[0]), 10);
  int total = 0;
  for (const auto& b : buckets) {
    total += Rows(b);
    EXPECT_LE(b.size(), 16 * 1024 * 1024);
  }
  EXPECT_EQ(total, 10);
  EXPECT_EQ(Get(Stat::kNumBucketsKeptOpenDueToLargeMeasurements),
            static_cast<int64_t>(buckets.size()) - (Rows(buckets.back()) == 1 ? 1 : 0));
  EXPECT_EQ(Get(Stat::kNumBucketsClosedDueToSize), static_cast<int64_t>(buckets.size()) - 1);
  EXPECT_EQ(Get(Stat::kNumBucketsClosedDueToCachePressure), 0);
}

TEST_F(BucketCatalogTest, SmallCacheClosesForCachePressure) {
  // cacheDerived = max(cache / (2 * open buckets), timeseriesBucketMinSize): with a 40000-byte
  // cache and one bucket that is 20000, below timeseriesBucketMaxSize, so the close reason is
  // CachePressure.
  BucketCatalog small(40000);
  std::vector<BsonObj> ms;
  for (int i = 0; i < 30; ++i) {
    BsonBuilder b;
    b.AppendDate("t", kT0 + i);
    b.AppendString("s", std::string(1000, 'z'));
    b.AppendInt32("v", i);
    ms.push_back(b.Obj());
  }
  for (const auto& m : ms) ASSERT_TRUE(InsertOne(coll_, m, &small).ok());
  auto buckets = Buckets(coll_);
  EXPECT_GE(buckets.size(), 2u);
  EXPECT_GE(small.global_stats().Get(Stat::kNumBucketsClosedDueToCachePressure), 1);
  EXPECT_EQ(small.global_stats().Get(Stat::kNumBucketsClosedDueToSize), 0);
  for (const auto& b : buckets) EXPECT_LT(b.size(), 40000);
}

TEST_F(BucketCatalogTest, SchemaChangeClosesBucket) {
  // int -> double is the same class (numbers); int -> string is not; absent fields are fine.
  InsertAll(coll_, {M(kT0, 0), J(R"({"t": {"$date": {"$numberLong": "1700000000001"}},
                                      "v": 1, "x": {"$numberDouble": "1.5"}})"),
                    J(R"({"t": {"$date": {"$numberLong": "1700000000002"}}, "v": 2})"),
                    J(R"({"t": {"$date": {"$numberLong": "1700000000003"}}, "v": 3, "x": "s"})"),
                    J(R"({"t": {"$date": {"$numberLong": "1700000000004"}}, "v": 4,
                          "x": {"a": 1}})")});
  EXPECT_EQ(Values(coll_).size(), 3u);
  EXPECT_EQ(Get(Stat::kNumBucketsClosedDueToSchemaChange), 2);
  int rows = 0;
  std::multiset<int> sizes;
  for (const auto& b : Buckets(coll_)) {
    sizes.insert(Rows(b));
    rows += Rows(b);
  }
  EXPECT_EQ(rows, 5);
  EXPECT_EQ(sizes, (std::multiset<int>{3, 1, 1}));
}

TEST_F(BucketCatalogTest, BucketOpenedByRolloverRecordsTheSchemaOfItsFirstRow) {
  // Each row is committed alone, so the bucket left behind by time moving forward is freed
  // before its successor is made: the successor must still learn its schema from its first row.
  InsertAll(coll_, {M(kT0, 0)});
  InsertAll(coll_, {M(kT0 + 2 * kHour, 1)});
  InsertAll(coll_, {J(R"({"t": {"$date": {"$numberLong": "1700007200001"}}, "v": "s"})")});
  EXPECT_EQ(Get(Stat::kNumBucketsClosedDueToSchemaChange), 1);
  EXPECT_EQ(Buckets(coll_).size(), 3u);
}

// --- write batches and commit rights (4.6) -----------------------------------------------------

TEST_F(BucketCatalogTest, MeasurementsStagedTogetherCommitOnce) {
  auto s = engine_->NewSession();
  std::vector<BsonObj> ms = {M(kT0, 0), M(kT0 + 1, 1), M(kT0 + 2, 2)};
  std::vector<std::shared_ptr<WriteBatch>> batches;
  for (const auto& m : ms) {
    auto b = bc_->Insert(coll_, *s, m);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    batches.push_back(b.value());
  }
  EXPECT_EQ(batches[0], batches[1]);
  EXPECT_EQ(batches[1], batches[2]);
  for (const auto& b : batches) EXPECT_TRUE(bc_->Commit(coll_, *s, b).ok());
  EXPECT_EQ(Get(Stat::kNumCommits), 1);
  EXPECT_EQ(Get(Stat::kNumMeasurementsCommitted), 3);
  EXPECT_EQ(Get(Stat::kNumBucketInserts), 1);
  EXPECT_EQ(Values(coll_), (std::vector<std::vector<int>>{{0, 1, 2}}));
  // The next measurement starts a new batch of the same bucket.
  auto next = bc_->Insert(coll_, *s, M(kT0 + 3, 3));
  ASSERT_TRUE(next.ok());
  EXPECT_NE(next.value(), batches[0]);
  EXPECT_TRUE(bc_->Commit(coll_, *s, next.value()).ok());
  EXPECT_EQ(Get(Stat::kNumBucketUpdates), 1);
  EXPECT_EQ(Values(coll_), (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
}

TEST_F(BucketCatalogTest, ConcurrentWritersCommitEveryMeasurementExactlyOnce) {
  constexpr int kThreads = 8, kPerThread = 150;
  BsonObj meta = J(R"({"m": "shared"})");
  int64_t total = 0;
  // Waits depend on scheduling: repeat (on fresh series) until one was seen, a few times at most.
  for (int round = 0; round < 5 && Get(Stat::kNumWaits) == 0; ++round) {
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int th = 0; th < kThreads; ++th) {
      threads.emplace_back([&, th] {
        auto s = engine_->NewSession();
        for (int i = 0; i < kPerThread; ++i) {
          int v = (round * kThreads + th) * kPerThread + i;
          BsonObj m = M(kT0 + v, v, meta);
          auto batch = bc_->Insert(coll_, *s, m);
          if (!batch.ok() || !bc_->Commit(coll_, *s, batch.value()).ok()) ++failures;
        }
      });
    }
    for (auto& t : threads) t.join();
    ASSERT_EQ(failures.load(), 0);
    total += kThreads * kPerThread;
  }
  std::vector<int> seen;
  for (const auto& vals : Values(coll_)) seen.insert(seen.end(), vals.begin(), vals.end());
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(static_cast<int64_t>(seen.size()), total);
  for (int64_t i = 0; i < total; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)], i);
  // Spec 1000 measurements per bucket at most.
  for (const auto& b : Buckets(coll_)) EXPECT_LE(Rows(b), 1000);
  EXPECT_EQ(Get(Stat::kNumMeasurementsCommitted), total);
  EXPECT_LE(Get(Stat::kNumCommits), total);
  EXPECT_GE(Get(Stat::kNumCommits), static_cast<int64_t>(Buckets(coll_).size()));
  EXPECT_EQ(Get(Stat::kNumCommits), Get(Stat::kNumBucketInserts) + Get(Stat::kNumBucketUpdates));
  // A Commit call waits (for another writer of its bucket) at most once.
  EXPECT_LE(Get(Stat::kNumWaits), total);
  EXPECT_GT(Get(Stat::kNumWaits), 0);
}

TEST_F(BucketCatalogTest, ConcurrentWritersAcrossSeriesWithCountRollover) {
  ParamGuard max_count("timeseriesBucketMaxCount", 7);
  constexpr int kThreads = 6, kPerThread = 120, kSeries = 3;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      auto s = engine_->NewSession();
      for (int i = 0; i < kPerThread; ++i) {
        int v = th * kPerThread + i;
        BsonBuilder mb;
        mb.AppendInt32("m", v % kSeries);
        BsonObj m = M(kT0 + v, v, mb.Obj());
        auto batch = bc_->Insert(coll_, *s, m);
        if (!batch.ok() || !bc_->Commit(coll_, *s, batch.value()).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  for (const auto& b : Buckets(coll_)) EXPECT_LE(Rows(b), 7);
  ExpectEachValueOnceInItsSeries(Buckets(coll_), kSeries, kThreads * kPerThread);
  // Every series' buckets except its last are full.
  EXPECT_EQ(Get(Stat::kNumBucketsClosedDueToCount) + kSeries,
            static_cast<int64_t>(Buckets(coll_).size()));
}

TEST_F(BucketCatalogTest, IdleBucketsAreArchivedAboveMemoryThreshold) {
  // Threshold 1 byte: before opening a bucket, idle buckets of the stripe leave memory.
  ParamGuard threshold("timeseriesIdleBucketExpiryMemoryUsageThreshold", 1);
  constexpr int kSeries = 100;  // more than the stripes, so some share one
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < kSeries; ++i) {
      BsonBuilder mb;
      mb.AppendInt32("m", i);
      ASSERT_TRUE(InsertOne(coll_, M(kT0 + round, round * kSeries + i, mb.Obj())).ok());
    }
  }
  EXPECT_GT(Get(Stat::kNumBucketsArchivedDueToMemoryThreshold), 0);
  std::vector<int> seen;
  for (const auto& vals : Values(coll_)) seen.insert(seen.end(), vals.begin(), vals.end());
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), 2u * kSeries);
  for (int i = 0; i < 2 * kSeries; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], i);
  BsonBuilder b;
  bc_->AppendServerStatus(b);
  BsonObj status = b.Obj();
  BsonObj section = status["bucketCatalog"].Obj();
  EXPECT_LT(section["numOpenBuckets"].Int32(), kSeries);
  EXPECT_EQ(section["numArchivedBuckets"].Int32(),
            section["numBuckets"].Int32() - section["numOpenBuckets"].Int32());
  EXPECT_GE(section["numArchivedBuckets"].Int32(), 0);
}

// Memory pressure as MongoDB meets it: archived buckets are reopened by their next measurements
// rather than forgotten all at once, so series that take turns keep filling their buckets, and
// the catalog's memory stays near its threshold.
TEST_F(BucketCatalogTest, SeriesTakingTurnsAboveTheMemoryThresholdKeepFillingTheirBuckets) {
  constexpr int kSeries = 200, kRounds = 12;
  auto status = [&] {
    BsonBuilder b;
    bc_->AppendServerStatus(b);
    return b.Obj()["bucketCatalog"].Obj().Owned();
  };
  auto insert_round = [&](int round) {
    for (int i = 0; i < kSeries; ++i) {
      BsonBuilder mb;
      mb.AppendInt32("m", i);
      ASSERT_TRUE(InsertOne(coll_, M(kT0 + round * 1000, round * kSeries + i, mb.Obj())).ok());
    }
  };
  insert_round(0);
  insert_round(1);
  // Room for about a quarter of the series' buckets.
  const int64_t threshold = status()["memoryUsage"].NumberLong() / 4;
  ParamGuard guard("timeseriesIdleBucketExpiryMemoryUsageThreshold", threshold);
  for (int round = 2; round < kRounds; ++round) insert_round(round);

  BsonObj st = status();
  EXPECT_GT(Get(Stat::kNumBucketsArchivedDueToMemoryThreshold), 0);
  EXPECT_GT(Get(Stat::kNumBucketsFetched), 0) << "archived buckets were never reopened";
  EXPECT_LE(st["memoryUsage"].NumberLong(), threshold + threshold / 4) << st.ToJson();
  EXPECT_LT(st["numOpenBuckets"].Int32(), kSeries / 2) << st.ToJson();
  // Buckets go on filling: fewer buckets than half the measurements (with few open buckets per
  // stripe, some archived records are forgotten, as in MongoDB), every one of a single series.
  const auto buckets = Buckets(coll_);
  EXPECT_LE(buckets.size(), static_cast<size_t>(kSeries * kRounds / 2)) << st.ToJson();
  ExpectEachValueOnceInItsSeries(buckets, kSeries, kSeries * kRounds);
}

// A measurement staged into a bucket that is then archived (time forward) and reopened from disk
// before the staged batch commits: both commits must land in the one stored document, which must
// stay valid BSON with distinct row keys (spec 3.1).
// DISABLED: BUG in bucket_catalog.cc (see the report). BucketFor archives a bucket on time
// forward/backward rollover even while it has an uncommitted batch, and the archive path re-reads
// the stored document (FindRecord + Reopen) into a second in-memory Bucket for the same _id. Both
// instances then compute byte-range edits from their own (different) layouts of one document: the
// second write corrupts it (ValidateBson fails; unpacking reports "column 'data.' is not an
// object").
TEST_F(BucketCatalogTest, ReopeningABucketWithAnUncommittedBatchKeepsEveryMeasurement) {
  auto s = engine_->NewSession();
  ASSERT_TRUE(InsertOne(coll_, M(kT0, 0)).ok());
  auto pending = bc_->Insert(coll_, *s, M(kT0 + 1, 1));  // A, not committed yet
  ASSERT_TRUE(pending.ok());
  auto later = bc_->Insert(coll_, *s, M(kT0 + 2 * kHour, 2));  // closes A (time forward): B
  ASSERT_TRUE(later.ok());
  auto back = bc_->Insert(coll_, *s, M(kT0 + 2, 3));  // archives B, back to A's range
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(bc_->Commit(coll_, *s, pending.value()).ok());
  EXPECT_TRUE(bc_->Commit(coll_, *s, later.value()).ok());
  EXPECT_TRUE(bc_->Commit(coll_, *s, back.value()).ok());
  std::vector<int> seen;
  for (const auto& b : Buckets(coll_)) {
    if (!bson::ValidateBson(b.bytes()).ok()) {
      ADD_FAILURE() << "corrupt bucket document";
      continue;
    }
    auto rows = Unpack(coll_, b);
    EXPECT_EQ(static_cast<int>(rows.size()), Rows(b));
    for (const auto& m : rows) seen.push_back(m["v"].Int32());
    for (BsonElement col : b["data"].Obj()) {
      std::set<std::string> keys;
      for (BsonElement cell : col.Obj()) {
        EXPECT_TRUE(keys.insert(std::string(cell.FieldName())).second)
            << "duplicate row key " << cell.FieldName() << " in " << b.ToJson();
      }
    }
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3}));
}

// --- clearing, restarting (4.3, 4.6) -----------------------------------------------------------

TEST_F(BucketCatalogTest, ClearCollectionAfterDirectDeleteOpensNewBucket) {
  ASSERT_TRUE(InsertOne(coll_, M(kT0, 0)).ok());
  auto buckets = Buckets(coll_);
  ASSERT_EQ(buckets.size(), 1u);
  {
    // A direct delete of the bucket document, as a delete on system.buckets would do.
    auto s = engine_->NewSession();
    storage::WriteUnit wu(*s);
    int64_t rid = catalog::ClusteredRecordId(buckets[0]["_id"].Oid());
    ASSERT_TRUE(coll_.buckets->Remove(*s, rid, buckets[0]).ok());
    ASSERT_TRUE(wu.Commit().ok());
  }
  bc_->ClearCollection(coll_.uuid);
  ASSERT_TRUE(InsertOne(coll_, M(kT0 + 1, 1)).ok());
  EXPECT_EQ(Values(coll_), (std::vector<std::vector<int>>{{1}}));
  EXPECT_EQ(Get(Stat::kNumBucketsOpenedDueToMetadata), 2);
}

TEST_F(BucketCatalogTest, ClearCollectionDropsInMemoryStateAndReopensByQuery) {
  ASSERT_TRUE(InsertOne(coll_, M(kT0, 0)).ok());
  auto before = Buckets(coll_);
  ASSERT_EQ(before.size(), 1u);
  {
    // A direct update: the bucket gets a different layout (an extra column) behind the catalog's
    // back; an append computed from the old layout would corrupt it.
    BsonObj replaced = J(std::string(R"({"_id": {"$oid": ")") + before[0]["_id"].Oid().ToHex() +
                         R"("}, "control": {"version": 1,
                "min": {"t": {"$date": {"$numberLong": "1699999980000"}}, "v": 0, "w": "a"},
                "max": {"t": {"$date": {"$numberLong": "1700000000000"}}, "v": 0, "w": "a"}},
              "data": {"w": {"0": "a"}, "t": {"0": {"$date": {"$numberLong": "1700000000000"}}},
                       "v": {"0": 0}}})");
    auto s = engine_->NewSession();
    storage::WriteUnit wu(*s);
    ASSERT_TRUE(
        coll_.buckets
            ->Update(*s, catalog::ClusteredRecordId(before[0]["_id"].Oid()), before[0], replaced)
            .ok());
    ASSERT_TRUE(wu.Commit().ok());
  }
  bc_->ClearCollection(coll_.uuid);
  ASSERT_TRUE(InsertOne(coll_, M(kT0 + 1, 1)).ok());
  auto after = Buckets(coll_);
  int rows = 0;
  for (const auto& b : after) rows += static_cast<int>(Unpack(coll_, b).size());
  EXPECT_EQ(rows, 2);
  if (after.size() == 1) {
    // Reopened by query: the new row was appended to the updated layout.
    EXPECT_EQ(Get(Stat::kNumBucketsReopened), 1);
    EXPECT_EQ(after[0]["data"].Obj()["w"].Obj().NumFields(), 1);
    EXPECT_EQ(Rows(after[0]), 2);
  } else {
    EXPECT_EQ(after.size(), 2u);
  }
}

TEST_F(BucketCatalogTest, BatchStagedBeforeClearCollectionStillCommits) {
  auto s = engine_->NewSession();
  auto staged = bc_->Insert(coll_, *s, M(kT0, 0));
  ASSERT_TRUE(staged.ok());
  bc_->ClearCollection(coll_.uuid);
  EXPECT_TRUE(bc_->Commit(coll_, *s, staged.value()).ok());
  ASSERT_TRUE(InsertOne(coll_, M(kT0 + 1, 1)).ok());
  int rows = 0;
  for (const auto& b : Buckets(coll_)) rows += static_cast<int>(Unpack(coll_, b).size());
  EXPECT_EQ(rows, 2);
}

// The same hazard as ReopeningABucketWithAnUncommittedBatchKeepsEveryMeasurement, through
// ClearCollection and query-based reopening: the old in-memory bucket still has a batch to write
// when the stored document is reopened into a second instance.
// DISABLED: BUG in bucket_catalog.cc (see the report): the stored document is corrupted.
TEST_F(BucketCatalogTest, ReopenByQueryWhileOldInstanceHasStagedBatch) {
  auto s = engine_->NewSession();
  ASSERT_TRUE(InsertOne(coll_, M(kT0, 0)).ok());
  auto staged = bc_->Insert(coll_, *s, M(kT0 + 1, 1));
  ASSERT_TRUE(staged.ok());
  bc_->ClearCollection(coll_.uuid);
  auto other = bc_->Insert(coll_, *s, M(kT0 + 2, 2));
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(bc_->Commit(coll_, *s, staged.value()).ok());
  EXPECT_TRUE(bc_->Commit(coll_, *s, other.value()).ok());
  std::vector<int> seen;
  for (const auto& b : Buckets(coll_)) {
    if (!bson::ValidateBson(b.bytes()).ok()) {
      ADD_FAILURE() << "corrupt bucket document";
      continue;
    }
    for (const auto& m : Unpack(coll_, b)) seen.push_back(m["v"].Int32());
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2}));
}

TEST_F(BucketCatalogTest, NewCatalogReopensStoredBucketWhenMarked) {
  BsonObj meta = J(R"({"m": {"site": 1}})");
  ASSERT_TRUE(InsertOne(coll_, M(kT0, 0, meta)).ok());
  // A restart: a new BucketCatalog on the same engine, told the collection may have buckets.
  auto restarted = std::make_unique<BucketCatalog>(kCacheBytes);
  restarted->MarkMayHaveStoredBuckets(coll_.uuid);
  ASSERT_TRUE(InsertOne(coll_, M(kT0 + 1000, 1, meta), restarted.get()).ok());
  EXPECT_EQ(Values(coll_), (std::vector<std::vector<int>>{{0, 1}}));
  EXPECT_EQ(restarted->global_stats().Get(Stat::kNumBucketsReopened), 1);
  EXPECT_EQ(restarted->global_stats().Get(Stat::kNumBucketsQueried), 1);
  EXPECT_EQ(restarted->global_stats().Get(Stat::kNumBucketsOpenedDueToMetadata), 0);
  EXPECT_EQ(restarted->global_stats().Get(Stat::kNumBucketUpdates), 1);
  // Another series, and a time outside the stored bucket's span, get new buckets.
  ASSERT_TRUE(InsertOne(coll_, M(kT0 + 2000, 2, J(R"({"m": {"site": 2}})")), restarted.get()).ok());
  ASSERT_TRUE(InsertOne(coll_, M(kT0 + 3 * kHour, 3, meta), restarted.get()).ok());
  EXPECT_EQ(Buckets(coll_).size(), 3u);
  EXPECT_EQ(restarted->global_stats().Get(Stat::kNumBucketsReopened), 1);
}

TEST_F(BucketCatalogTest, NewCatalogOpensNewBucketWhenNotMarked) {
  ASSERT_TRUE(InsertOne(coll_, M(kT0, 0)).ok());
  BucketCatalog restarted(kCacheBytes);
  ASSERT_TRUE(InsertOne(coll_, M(kT0 + 1000, 1), &restarted).ok());
  EXPECT_EQ(Buckets(coll_).size(), 2u);
  EXPECT_EQ(restarted.global_stats().Get(Stat::kNumBucketsReopened), 0);
  EXPECT_EQ(restarted.global_stats().Get(Stat::kNumBucketsQueried), 0);
}

TEST_F(BucketCatalogTest, QueryReopeningSkipsFullAndClosedBuckets) {
  ParamGuard max_count("timeseriesBucketMaxCount", 2);
  BsonObj full = J(R"({"m": "full"})"), closed = J(R"({"m": "closed"})");
  InsertAll(coll_, {M(kT0, 0, full), M(kT0 + 1, 1, full), M(kT0, 2, closed)});
  {
    // control.closed: true excludes a bucket from reopening for good (spec 4.3).
    BsonObj b;
    for (const auto& x : Buckets(coll_)) {
      if (x["meta"].Str() == "closed") b = x;
    }
    ASSERT_FALSE(b.IsEmpty());
    BsonBuilder nb;
    for (BsonElement e : b) {
      if (e.FieldName() == "control") {
        size_t c = nb.OpenObject("control");
        nb.AppendElementsOf(e.Obj());
        nb.AppendBool("closed", true);
        nb.Close(c);
      } else {
        nb.AppendElement(e);
      }
    }
    auto s = engine_->NewSession();
    storage::WriteUnit wu(*s);
    ASSERT_TRUE(
        coll_.buckets->Update(*s, catalog::ClusteredRecordId(b["_id"].Oid()), b, nb.Obj()).ok());
    ASSERT_TRUE(wu.Commit().ok());
  }
  BucketCatalog restarted(kCacheBytes);
  restarted.MarkMayHaveStoredBuckets(coll_.uuid);
  ASSERT_TRUE(InsertOne(coll_, M(kT0 + 2, 3, full), &restarted).ok());
  ASSERT_TRUE(InsertOne(coll_, M(kT0 + 3, 4, closed), &restarted).ok());
  EXPECT_EQ(Buckets(coll_).size(), 4u);
  EXPECT_EQ(restarted.global_stats().Get(Stat::kNumBucketsReopened), 0);
  EXPECT_EQ(restarted.global_stats().Get(Stat::kNumBucketsOpenedDueToMetadata), 2);
}

// --- serverStatus (4.7) ------------------------------------------------------------------------

TEST_F(BucketCatalogTest, ServerStatusIsEmptyBeforeAnyWrite) {
  BsonBuilder b;
  bc_->AppendServerStatus(b);
  EXPECT_TRUE(b.Obj().IsEmpty());
}

TEST_F(BucketCatalogTest, ServerStatusFieldNamesAndOrder) {
  {
    // Staged but not committed: avgNumMeasurementsPerCommit is absent without commits.
    auto s = engine_->NewSession();
    auto batch = bc_->Insert(coll_, *s, M(kT0, 0));
    ASSERT_TRUE(batch.ok());
    BsonBuilder b;
    bc_->AppendServerStatus(b);
    BsonObj status = b.Obj();
    BsonObj section = status["bucketCatalog"].Obj();
    EXPECT_TRUE(section["avgNumMeasurementsPerCommit"].eoo()) << section.ToJson();
    EXPECT_EQ(section["numOpenBuckets"].Int32(), 1);
    EXPECT_EQ(section["numIdleBuckets"].Int32(), 0);  // it has an uncommitted measurement
    ASSERT_TRUE(bc_->Commit(coll_, *s, batch.value()).ok());
  }
  InsertAll(coll_, {M(kT0 + 1, 1), M(kT0 - 2 * kHour, 2)});  // archives the first bucket
  BsonBuilder b;
  bc_->AppendServerStatus(b);
  BsonObj out = b.Obj();
  ASSERT_EQ(out.NumFields(), 1);
  BsonObj section = out["bucketCatalog"].Obj();
  const std::vector<std::string> want = {
      "numBuckets",
      "numOpenBuckets",
      "numIdleBuckets",
      "numArchivedBuckets",
      "memoryUsage",
      "numActiveBuckets",
      "numBucketInserts",
      "numBucketUpdates",
      "numBucketsOpenedDueToMetadata",
      "numBucketsClosedDueToCount",
      "numBucketsClosedDueToSchemaChange",
      "numBucketsClosedDueToSize",
      "numBucketsClosedDueToTimeForward",
      "numBucketsClosedDueToMemoryThreshold",
      "numCommits",
      "numWaits",
      "numMeasurementsCommitted",
      "avgNumMeasurementsPerCommit",
      "numBucketsClosedDueToReopening",
      "numBucketsArchivedDueToMemoryThreshold",
      "numBucketsArchivedDueToTimeBackward",
      "numBucketsReopened",
      "numBucketsKeptOpenDueToLargeMeasurements",
      "numBucketsClosedDueToCachePressure",
      "numBucketsFrozen",
      "numCompressedBucketsConvertedToUnsorted",
      "numBucketsFetched",
      "numBucketsQueried",
      "numBucketFetchesFailed",
      "numBucketQueriesFailed",
      "numBucketReopeningsFailed",
      "numDuplicateBucketsReopened",
      "numBytesUncompressed",
      "numBytesCompressed",
      "numSubObjCompressionRestart",
      "numCompressedBuckets",
      "numUncompressedBuckets",
      "numFailedDecompressBuckets",
      "numBucketDocumentsTooLargeInsert",
      "numBucketDocumentsTooLargeUpdate",
      "stateManagement",
  };
  std::vector<std::string> got;
  for (BsonElement e : section) got.emplace_back(e.FieldName());
  EXPECT_EQ(got, want);
  for (BsonElement e : section) {
    if (e.FieldName() != "stateManagement") {
      EXPECT_EQ(e.type(), BsonType::kInt32) << e.FieldName();  // appendNumber of small values
    }
  }
  std::vector<std::string> sm;
  for (BsonElement e : section["stateManagement"].Obj()) sm.emplace_back(e.FieldName());
  EXPECT_EQ(sm, (std::vector<std::string>{"bucketsManaged", "currentEra",
                                          "erasWithRemainingBuckets", "trackedClearOperations"}));

  EXPECT_EQ(section["numOpenBuckets"].Int32(), 1);
  EXPECT_EQ(section["numArchivedBuckets"].Int32(), 1);
  EXPECT_EQ(section["numBuckets"].Int32(), 2);
  EXPECT_EQ(section["numArchivedBuckets"].Int32(),
            section["numBuckets"].Int32() - section["numOpenBuckets"].Int32());
  EXPECT_EQ(section["numIdleBuckets"].Int32(), 1);
  EXPECT_GT(section["memoryUsage"].Int32(), 0);
  EXPECT_EQ(section["numBucketInserts"].Int32(), 2);
  EXPECT_EQ(section["numBucketUpdates"].Int32(), 1);
  EXPECT_EQ(section["numCommits"].Int32(), 3);
  EXPECT_EQ(section["numMeasurementsCommitted"].Int32(), 3);
  EXPECT_EQ(section["avgNumMeasurementsPerCommit"].Int32(), 1);
  EXPECT_EQ(section["numBucketsArchivedDueToTimeBackward"].Int32(), 1);
  EXPECT_EQ(section["numBucketsOpenedDueToMetadata"].Int32(), 2);

  // Per-collection statistics: the execution stats only.
  BsonBuilder cb;
  bc_->AppendCollectionStats(coll_.uuid, cb);
  BsonObj cs = cb.Obj();
  EXPECT_EQ(cs.FirstElement().FieldName(), "numBucketInserts");
  EXPECT_EQ(cs["numBucketInserts"].Int32(), 2);
  EXPECT_EQ(cs["numCommits"].Int32(), 3);
}

// Buckets written compressed, as MongoDB 8.0 writes them: serverStatus and collStats leave out
// the statistics of compression at close, as 8.0 does.
TEST_F(CompressedBucketCatalogTest, StatisticsLeaveOutCompressionAtClose) {
  InsertAll(coll_, {M(kT0, 0), M(kT0 + 1, 1)});
  BsonBuilder b;
  bc_->AppendServerStatus(b);
  BsonObj status = b.Obj();
  BsonObj section = status["bucketCatalog"].Obj();
  BsonBuilder cb;
  bc_->AppendCollectionStats(coll_.uuid, cb);
  BsonObj coll = cb.Obj();
  for (const BsonObj& stats : {section, coll}) {
    EXPECT_EQ(stats["numCommits"].Int32(), 2) << stats.ToJson();
    EXPECT_EQ(stats["numBucketsFrozen"].Int32(), 0) << stats.ToJson();
    for (const char* name :
         {"numBytesUncompressed", "numBytesCompressed", "numSubObjCompressionRestart",
          "numCompressedBuckets", "numUncompressedBuckets", "numFailedDecompressBuckets"}) {
      EXPECT_TRUE(stats[name].eoo()) << name << " in " << stats.ToJson();
    }
  }
}

TEST_F(BucketCatalogTest, ServerStatusCountsOpenBucketsPerSeries) {
  InsertAll(coll_, {M(kT0, 0, J(R"({"m": 1})")), M(kT0, 1, J(R"({"m": 2})")),
                    M(kT0, 2, J(R"({"m": 3})"))});
  BsonBuilder b;
  bc_->AppendServerStatus(b);
  BsonObj status = b.Obj();
  BsonObj section = status["bucketCatalog"].Obj();
  EXPECT_EQ(section["numOpenBuckets"].Int32(), 3);
  EXPECT_EQ(section["numIdleBuckets"].Int32(), 3);
  EXPECT_EQ(section["numArchivedBuckets"].Int32(), 0);
  EXPECT_EQ(section["numBuckets"].Int32(), 3);
}

TEST(BucketCatalogStatTest, NamesComeFromTheDefWithTheFirstLetterLowercased) {
  EXPECT_EQ(StatName(Stat::kNumBucketInserts), "numBucketInserts");
  EXPECT_EQ(StatName(Stat::kNumCommits), "numCommits");
  EXPECT_EQ(StatName(Stat::kNumBucketDocumentsTooLargeUpdate), "numBucketDocumentsTooLargeUpdate");
  ExecutionStats stats;
  stats.Add(Stat::kNumBucketsFrozen, 4);
  BsonBuilder b;
  stats.AppendTo(b, /*with_close_compression=*/true);
  BsonObj out = b.Obj();
  // Every statistic once, in enum order (avgNumMeasurementsPerCommit only once there are commits).
  ASSERT_EQ(out.NumFields(), static_cast<int>(Stat::kCount));
  int i = 0;
  for (BsonElement e : out) EXPECT_EQ(e.FieldName(), StatName(static_cast<Stat>(i++)));
  EXPECT_EQ(out[StatName(Stat::kNumBucketsFrozen)].Int32(), 4);

  // Without the compression at close: the same but its six.
  BsonBuilder c;
  stats.AppendTo(c, /*with_close_compression=*/false);
  std::vector<std::string> got, want;
  for (BsonElement e : c.Obj()) got.emplace_back(e.FieldName());
  for (BsonElement e : out) want.emplace_back(e.FieldName());
  std::erase_if(want, [](const std::string& n) {
    return n == "numBytesUncompressed" || n == "numBytesCompressed" ||
           n == "numSubObjCompressionRestart" || n == "numCompressedBuckets" ||
           n == "numUncompressedBuckets" || n == "numFailedDecompressBuckets";
  });
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.size(), static_cast<size_t>(Stat::kCount) - 6);
}

}  // namespace
}  // namespace hourglass::timeseries
