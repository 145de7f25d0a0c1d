#include "timeseries/bucket_compression.h"

#include <gtest/gtest.h>

#include "bsoncolumn/bson_column_decoder.h"
#include "timeseries/bucket_unpacker.h"
#include "timeseries/bucket_validator.h"
#include "timeseries/mongo_bucket_test_data.h"

namespace hourglass::timeseries {
namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using testing::kMongoV2Bucket;

BsonObj J(std::string_view json) {
  auto r = bson::FromJson(json);
  EXPECT_TRUE(r.ok()) << json << ": " << r.status().ToString();
  return r.ok() ? r.value() : BsonObj();
}

// Its version-1 form, as MongoDB's decompressBucket lays it out.
constexpr const char* kMongoV2Decompressed = R"({
  "_id": {"$oid": "65a6eb806ffc9fa4280ecac4"},
  "control": {"version": 1,
              "min": {"_id": {"$oid": "65a6eba7e6d2e848e08c3750"},
                      "t": {"$date": "2024-01-16T20:48:00Z"}, "a": 1},
              "max": {"_id": {"$oid": "65a6eba7e6d2e848e08c3751"},
                      "t": {"$date": "2024-01-16T20:48:39.448Z"}, "a": 1}},
  "meta": 0,
  "data": {"t": {"0": {"$date": "2024-01-16T20:48:39.448Z"},
                 "1": {"$date": "2024-01-16T20:48:39.448Z"}},
           "a": {"0": 0.0, "1": 1.0},
           "_id": {"0": {"$oid": "65a6eba7e6d2e848e08c3750"},
                   "1": {"$oid": "65a6eba7e6d2e848e08c3751"}}}})";

// A version-1 bucket with rows out of time order and gaps.
constexpr const char* kV1Bucket = R"({
  "_id": {"$oid": "64b7f0000000000000000001"},
  "control": {"version": 1,
              "min": {"t": {"$date": "2023-07-19T14:00:00Z"}, "v": 1, "s": "a"},
              "max": {"t": {"$date": "2023-07-19T14:20:00Z"}, "v": 9, "s": "b"}},
  "meta": {"site": "x"},
  "data": {"v": {"0": 9, "2": 1, "3": {"$numberLong": "4"}},
           "t": {"0": {"$date": "2023-07-19T14:20:00Z"}, "1": {"$date": "2023-07-19T14:05:00Z"},
                 "2": {"$date": "2023-07-19T14:10:00Z"}, "3": {"$date": "2023-07-19T14:05:00Z"}},
           "s": {"1": "a", "3": "b"}}})";

std::vector<BsonObj> Rows(const BsonObj& bucket) {
  UnpackSpec spec;
  spec.time_field = "t";
  spec.meta_field = "m";
  std::vector<BsonObj> out;
  Status st = BucketUnpacker(spec).Unpack(bucket, [&](BsonObj m) {
    out.push_back(m.Owned());
    return true;
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

TEST(BucketCompressionTest, DecompressesMongoBucketAsMongoDoes) {
  BsonObj bucket = J(kMongoV2Bucket);
  EXPECT_TRUE(IsCompressedBucket(bucket));
  auto v1 = DecompressBucket(bucket, "t");
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  EXPECT_TRUE(v1.value().BinaryEqual(J(kMongoV2Decompressed))) << v1.value().ToJson();
  EXPECT_FALSE(IsCompressedBucket(v1.value()));
  // Only the columns asked for (and the time column) are decoded and kept.
  auto only_a = DecompressBucket(bucket, "t", [](std::string_view n) { return n == "a"; });
  ASSERT_TRUE(only_a.ok());
  BsonObj data = only_a.value()["data"].Obj();
  EXPECT_FALSE(data["t"].eoo());
  EXPECT_FALSE(data["a"].eoo());
  EXPECT_TRUE(data["_id"].eoo());
}

TEST(BucketCompressionTest, MongoBucketsPassTheChecks) {
  EXPECT_TRUE(CheckCompressedBucket(J(kMongoV2Bucket), "t").ok());
  EXPECT_TRUE(ValidateBucketDocument(J(kMongoV2Bucket), "t", 2).ok());
  // Named after another time field, the bucket has no time column.
  Status st = CheckCompressedBucket(J(kMongoV2Bucket), "time");
  EXPECT_EQ(st.code(), ErrorCode::kBadValue);
  EXPECT_NE(st.reason().find("must hold the time column 'data.time'"), std::string::npos)
      << st.reason();
}

TEST(BucketCompressionTest, CompressedRoundTripKeepsEveryMeasurement) {
  BsonObj v1 = J(kV1Bucket);
  const std::vector<BsonObj> want = Rows(v1);
  for (int version : {2, 3}) {
    auto c = CompressBucket(v1, "t", version);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    const BsonObj& bucket = c.value();
    // MongoDB's layout: control gets version and count; data last, the time column first.
    BsonObj control = bucket["control"].Obj();
    EXPECT_EQ(control["version"].Int32(), version);
    EXPECT_EQ(control["count"].Int32(), 4);
    EXPECT_TRUE(control["min"].Obj().BinaryEqual(v1["control"].Obj()["min"].Obj()));
    std::vector<std::string> top, cols;
    for (auto e : bucket) top.emplace_back(e.FieldName());
    for (auto e : bucket["data"].Obj()) {
      cols.emplace_back(e.FieldName());
      EXPECT_EQ(e.type(), bson::BsonType::kBinData);
      EXPECT_EQ(e.BinSubtype(), 7);
    }
    EXPECT_EQ(top, (std::vector<std::string>{"_id", "control", "meta", "data"}));
    EXPECT_EQ(cols, (std::vector<std::string>{"t", "v", "s"}));
    EXPECT_TRUE(ValidateBucketDocument(bucket, "t", 2).ok());
    std::vector<BsonObj> got = Rows(bucket);
    ASSERT_EQ(got.size(), want.size());
    if (version == 3) {
      // Unsorted: the rows as they were, fields in the stored column order (time first).
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_TRUE(got[i].BinaryEqual(want[i])) << got[i].ToJson() << " vs " << want[i].ToJson();
      }
    } else {
      // Sorted by time, ties in their order: rows 1, 3, 2, 0.
      const int order[] = {1, 3, 2, 0};
      for (int i = 0; i < 4; ++i) {
        const BsonObj& w = want[order[i]];
        EXPECT_EQ(got[i]["t"].DateMillis(), w["t"].DateMillis()) << i;
        EXPECT_EQ(got[i]["v"].eoo(), w["v"].eoo()) << i;
        EXPECT_EQ(got[i]["v"].NumberLong(), w["v"].NumberLong()) << i;
        EXPECT_EQ(got[i]["v"].type(), w["v"].type()) << i;
        EXPECT_EQ(got[i]["s"].Str(), w["s"].Str()) << i;
      }
    }
    // Compressing again from the decompressed form gives the same bytes.
    auto again = DecompressBucket(bucket, "t");
    ASSERT_TRUE(again.ok());
    auto recompressed = CompressBucket(again.value(), "t", version);
    ASSERT_TRUE(recompressed.ok());
    EXPECT_TRUE(recompressed.value().BinaryEqual(bucket));
  }
  EXPECT_EQ(CompressBucket(v1, "t", 1).status().code(), ErrorCode::kBadValue);
}

// The refusals a direct write meets: DocumentValidationFailure (121) with the rule in errInfo.
TEST(BucketCompressionTest, ValidatorRefusesInconsistentCompressedBuckets) {
  // Schema version 1: the compressed rules alone (version 2's control rules come first there).
  auto refused = [](const BsonObj& bucket, const std::string& why, int schema = 1) {
    Status st = ValidateBucketDocument(bucket, "t", schema);
    EXPECT_EQ(st.code(), ErrorCode::kDocumentValidationFailure) << bucket.ToJson();
    EXPECT_EQ(st.reason(), "Document failed validation");
    const std::string details =
        st.extra_info().empty() ? std::string() : BsonObj(st.extra_info().data()).ToJson();
    EXPECT_NE(details.find(why), std::string::npos) << details;
  };
  auto with = [](std::string json, const std::string& from, const std::string& to) {
    size_t at = json.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    json.replace(at, from.size(), to);
    return J(json);
  };
  const std::string base = kMongoV2Bucket;
  refused(with(base, "\"count\": 2", "\"count\": 3"),
          "column 'data.t' holds 2 measurements but 'control.count' is 3");
  refused(with(base, "\"count\": 2", "\"other\": 2"), "'control.count' is required");
  refused(with(base, "\"count\": 2", "\"count\": 2.5"), "whole number");
  refused(with(base, "\"count\": 2", "\"count\": -1"), "whole number");
  refused(with(base, "AQAAAAAAAAAAAJAuAAAAAAAAAAA=", "AQAAAAAAAAABAJAuAAAAAAAAAAA="),
          "column 'data.a' is not a valid BSONColumn");
  // Version 3 is a claim that rows may be unsorted, not that they are: sorted rows are accepted.
  EXPECT_TRUE(ValidateBucketDocument(with(base, "\"version\": 2", "\"version\": 3"), "t", 2).ok());
  refused(with(base, R"("a": {"$binary")", R"("a": {"x": 1}, "b": {"$binary")"),
          "column 'data.a' of a compressed bucket must be a BinData of subtype 7");
  // A time column of the wrong type.
  refused(with(base, "CQAYhggUjQEAAIAOAAAAAAAAAAA=", "AQAAAAAAAAAAAJAuAAAAAAAAAAA="),
          "the time column 'data.t' holds a double at measurement 0, not a date");
  // Version 1 buckets are not held to the compressed rules (a count is not required).
  EXPECT_TRUE(ValidateBucketDocument(J(kV1Bucket), "t", 2).ok());
  // Schema version 2 (MongoDB 7.1+): no other control field, a count of at least 1.
  refused(with(base, "\"count\": 2", "\"count\": 2, \"other\": 2"),
          "additional field 'control.other'", 2);
  refused(with(base, "\"count\": 2", "\"count\": 0"),
          "'control.count' must be a number of at least 1", 2);
  // Collections made before keep schema version 1, which lets another control field by.
  EXPECT_TRUE(
      ValidateBucketDocument(with(base, "\"count\": 2", "\"count\": 2, \"other\": 2"), "t", 1)
          .ok());
}

// --- CompressBucket of a closed version-1 bucket (the bucket catalog's path) ---

// The cells of compressed column `name` as relaxed JSON values ("-" for a missing cell).
std::vector<std::string> CellsAsJson(const BsonObj& bucket, std::string_view name) {
  BsonElement col = bucket["data"].Obj()[name];
  EXPECT_EQ(col.type(), bson::BsonType::kBinData) << name;
  EXPECT_EQ(col.BinSubtype(), 7) << name;
  auto cells = bsoncolumn::DecodeBsonColumn(col.BinData());
  EXPECT_TRUE(cells.ok()) << cells.status().ToString();
  std::vector<std::string> out;
  if (!cells.ok()) return out;
  for (const auto& c : cells.value()) {
    if (c.missing()) {
      out.push_back("-");
      continue;
    }
    bson::BsonBuilder b;
    b.AppendElementAs(c.element(), "v");
    std::string json = b.Obj().ToJson();  // { "v" : <value> }
    out.push_back(json.substr(8, json.size() - 10));
  }
  return out;
}

std::vector<std::string> FieldNames(const BsonObj& obj) {
  std::vector<std::string> out;
  for (BsonElement e : obj) out.emplace_back(e.FieldName());
  return out;
}

TEST(BucketCompressionTest, SortsRowsByTimeAndWritesOneColumnPerField) {
  // Rows arrive out of time order; `b` is missing in row 1; `s` is first seen in row 2.
  BsonObj v1 = J(R"({
    "_id": {"$oid": "65a0000000000000000000aa"},
    "control": {"version": 1,
                "min": {"_id": 1, "t": {"$date": "2024-01-01T00:00:00Z"}, "b": 1.5, "s": "x"},
                "max": {"_id": 3, "t": {"$date": "2024-01-01T00:00:30Z"}, "b": 4.5, "s": "x"},
                "closed": false},
    "meta": {"host": "a"},
    "data": {"_id": {"0": 1, "1": 2, "2": 3},
             "b": {"0": 4.5, "2": 1.5},
             "t": {"0": {"$date": "2024-01-01T00:00:30Z"},
                   "1": {"$date": "2024-01-01T00:00:10Z"},
                   "2": {"$date": "2024-01-01T00:00:20Z"}},
             "s": {"2": "x"}}})");
  int64_t restarts = -1;
  auto v2 = CompressBucket(v1, "t", 2, &restarts);
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  const BsonObj& b = v2.value();
  EXPECT_EQ(restarts, 0);
  // _id, control, meta as they were (data last); version 2 in place, count appended.
  EXPECT_EQ(FieldNames(b), (std::vector<std::string>{"_id", "control", "meta", "data"}));
  EXPECT_EQ(b["_id"].Oid(), v1["_id"].Oid());
  EXPECT_EQ(b["meta"].Obj().ToJson(), v1["meta"].Obj().ToJson());
  BsonObj control = b["control"].Obj();
  EXPECT_EQ(FieldNames(control),
            (std::vector<std::string>{"version", "min", "max", "closed", "count"}));
  EXPECT_EQ(control["version"].Int32(), 2);
  EXPECT_EQ(control["count"].Int32(), 3);
  EXPECT_EQ(control["min"].Obj().ToJson(), v1["control"].Obj()["min"].Obj().ToJson());
  EXPECT_EQ(control["max"].Obj().ToJson(), v1["control"].Obj()["max"].Obj().ToJson());
  // The time column first, the others in their order; rows sorted by time (1, 2, 0).
  EXPECT_EQ(FieldNames(b["data"].Obj()), (std::vector<std::string>{"t", "_id", "b", "s"}));
  EXPECT_EQ(CellsAsJson(b, "t"),
            (std::vector<std::string>{R"({ "$date" : "2024-01-01T00:00:10Z" })",
                                      R"({ "$date" : "2024-01-01T00:00:20Z" })",
                                      R"({ "$date" : "2024-01-01T00:00:30Z" })"}));
  EXPECT_EQ(CellsAsJson(b, "_id"), (std::vector<std::string>{"2", "3", "1"}));
  EXPECT_EQ(CellsAsJson(b, "b"), (std::vector<std::string>{"-", "1.5", "4.5"}));
  EXPECT_EQ(CellsAsJson(b, "s"), (std::vector<std::string>{"-", "\"x\"", "-"}));
}

TEST(BucketCompressionTest, EqualTimesKeepTheirOrderAndObjectsRoundTrip) {
  BsonObj v1 = J(R"({
    "_id": {"$oid": "65a0000000000000000000ab"},
    "control": {"version": 1, "min": {"t": {"$date": "2024-01-01T00:00:00Z"}},
                "max": {"t": {"$date": "2024-01-01T00:00:00Z"}}},
    "data": {"t": {"0": {"$date": "2024-01-01T00:00:00Z"}, "1": {"$date": "2024-01-01T00:00:00Z"},
                   "2": {"$date": "2024-01-01T00:00:00Z"}},
             "o": {"0": {"a": 1, "b": "p"}, "1": {"a": 2, "b": "q"}, "2": {"a": 3}}}})");
  auto v2 = CompressBucket(v1, "t", 2);
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(CellsAsJson(v2.value(), "o"),
            (std::vector<std::string>{R"({ "a" : 1, "b" : "p" })", R"({ "a" : 2, "b" : "q" })",
                                      R"({ "a" : 3 })"}));
  // No metaField: no meta in, none out.
  EXPECT_FALSE(v2.value().HasField("meta"));
}

TEST(BucketCompressionTest, RefusesWhatIsNotABucket) {
  auto code = [](std::string_view json) { return CompressBucket(J(json), "t", 2).status().code(); };
  EXPECT_EQ(code(R"({"data": {"t": {}}})"), ErrorCode::kBadValue);
  EXPECT_EQ(code(R"({"control": {"version": 1}})"), ErrorCode::kBadValue);
  // A cell beyond the time column's rows, a cell not named by a row: the unpacker's
  // DataCorruptionDetected.
  EXPECT_EQ(code(R"({"control": {"version": 1}, "data": {"t": {"0": {"$date": 0}},
                                                         "v": {"1": 5}}})"),
            ErrorCode::kDataCorruptionDetected);
  EXPECT_EQ(code(R"({"control": {"version": 1}, "data": {"t": {"0": {"$date": 0}},
                                                         "v": {"x": 5}}})"),
            ErrorCode::kDataCorruptionDetected);
}

}  // namespace
}  // namespace hourglass::timeseries
