#include "timeseries/bucket_unpacker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <tuple>

#include "bson/bson_compare.h"
#include "bsoncolumn/bson_column_builder.h"
#include "timeseries/bucket_compression.h"
#include "timeseries/mongo_bucket_test_data.h"

namespace hourglass::timeseries {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;
using testing::kMongoV2Bucket;
using testing::kMongoV3Bucket;

BsonObj J(std::string_view json) {
  auto r = bson::FromJson(json);
  EXPECT_TRUE(r.ok()) << json << ": " << r.status().ToString();
  return r.ok() ? r.value() : BsonObj();
}

std::vector<BsonObj> UnpackAll(const BucketUnpacker& u, const BsonObj& bucket) {
  std::vector<BsonObj> out;
  Status st = u.Unpack(bucket, [&](BsonObj m) {
    out.push_back(m.Owned());
    return true;
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

void ExpectDocs(const std::vector<BsonObj>& got, const std::vector<std::string>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    BsonObj w = J(want[i]);
    EXPECT_TRUE(got[i].BinaryEqual(w))
        << "row " << i << ": got " << got[i].ToJson() << " want " << w.ToJson();
  }
}

UnpackSpec Spec(std::optional<std::string> meta = "tag") {
  UnpackSpec s;
  s.time_field = "t";
  s.meta_field = std::move(meta);
  return s;
}

// Two rows; the time column is not first in `data` and `_id` precedes `temp`; row 1 lacks temp.
constexpr const char* kBucket = R"({
  "_id": {"$oid": "64b7f0000000000000000001"},
  "control": {"version": 1,
              "min": {"_id": {"$oid": "650000000000000000000001"},
                      "t": {"$date": {"$numberLong": "1689776100000"}}, "temp": 20},
              "max": {"_id": {"$oid": "650000000000000000000003"},
                      "t": {"$date": {"$numberLong": "1689776160000"}}, "temp": 22}},
  "meta": {"site": "a", "rack": 7},
  "data": {"_id": {"0": {"$oid": "650000000000000000000001"},
                   "1": {"$oid": "650000000000000000000002"},
                   "2": {"$oid": "650000000000000000000003"}},
           "t": {"0": {"$date": {"$numberLong": "1689776100000"}},
                 "1": {"$date": {"$numberLong": "1689776130000"}},
                 "2": {"$date": {"$numberLong": "1689776160000"}}},
           "temp": {"0": 20, "2": {"$numberDouble": "22.5"}}}})";

TEST(BucketUnpackerTest, FieldOrderIsTimeThenMetaThenDataColumns) {
  BucketUnpacker u(Spec());
  ExpectDocs(UnpackAll(u, J(kBucket)), {R"({"t": {"$date": {"$numberLong": "1689776100000"}},
                  "tag": {"site": "a", "rack": 7},
                  "_id": {"$oid": "650000000000000000000001"}, "temp": 20})",
                                        R"({"t": {"$date": {"$numberLong": "1689776130000"}},
                  "tag": {"site": "a", "rack": 7},
                  "_id": {"$oid": "650000000000000000000002"}})",
                                        R"({"t": {"$date": {"$numberLong": "1689776160000"}},
                  "tag": {"site": "a", "rack": 7},
                  "_id": {"$oid": "650000000000000000000003"},
                  "temp": {"$numberDouble": "22.5"}})"});
}

TEST(BucketUnpackerTest, IncludeProducesOnlyNamedFields) {
  UnpackSpec s = Spec();
  s.mode = UnpackSpec::Mode::kInclude;
  s.fields = {"temp", "t"};
  ExpectDocs(UnpackAll(BucketUnpacker(s), J(kBucket)),
             {R"({"t": {"$date": {"$numberLong": "1689776100000"}}, "temp": 20})",
              R"({"t": {"$date": {"$numberLong": "1689776130000"}}})",
              R"({"t": {"$date": {"$numberLong": "1689776160000"}},
                  "temp": {"$numberDouble": "22.5"}})"});

  // Only the meta field: every row still comes out (rows are defined by the time column).
  s.fields = {"tag"};
  auto rows = UnpackAll(BucketUnpacker(s), J(kBucket));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[1].BinaryEqual(J(R"({"tag": {"site": "a", "rack": 7}})")));

  // include: [] — the shape count-only pipelines use.
  s.fields = {};
  ExpectDocs(UnpackAll(BucketUnpacker(s), J(kBucket)), {"{}", "{}", "{}"});
}

TEST(BucketUnpackerTest, ExcludeDropsNamedFields) {
  UnpackSpec s = Spec();
  s.mode = UnpackSpec::Mode::kExclude;
  s.fields = {"_id", "tag"};
  ExpectDocs(UnpackAll(BucketUnpacker(s), J(kBucket)),
             {R"({"t": {"$date": {"$numberLong": "1689776100000"}}, "temp": 20})",
              R"({"t": {"$date": {"$numberLong": "1689776130000"}}})",
              R"({"t": {"$date": {"$numberLong": "1689776160000"}},
                  "temp": {"$numberDouble": "22.5"}})"});
  s.fields = {"t"};
  auto rows = UnpackAll(BucketUnpacker(s), J(kBucket));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0].BinaryEqual(J(R"({"tag": {"site": "a", "rack": 7},
      "_id": {"$oid": "650000000000000000000001"}, "temp": 20})")));
}

constexpr const char* kNoMetaBucket = R"({
  "_id": {"$oid": "64b7f0000000000000000002"},
  "control": {"version": 1, "min": {}, "max": {}},
  "data": {"t": {"0": {"$date": {"$numberLong": "5"}}}, "v": {"0": 1}}})";

TEST(BucketUnpackerTest, BucketWithoutMetaProducesNoMetaField) {
  ExpectDocs(UnpackAll(BucketUnpacker(Spec()), J(kNoMetaBucket)),
             {R"({"t": {"$date": {"$numberLong": "5"}}, "v": 1})"});
  // A collection without a metaField ignores a bucket's meta.
  auto rows = UnpackAll(BucketUnpacker(Spec(std::nullopt)), J(kBucket));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0].BinaryEqual(J(R"({"t": {"$date": {"$numberLong": "1689776100000"}},
      "_id": {"$oid": "650000000000000000000001"}, "temp": 20})")))
      << rows[0].ToJson();
}

TEST(BucketUnpackerTest, NullMetaIsProducedMissingMetaIsNot) {
  BsonObj null_meta = J(R"({"_id": 1, "control": {"version": 1}, "meta": null,
      "data": {"t": {"0": {"$date": {"$numberLong": "-86400000"}}}}})");
  ExpectDocs(UnpackAll(BucketUnpacker(Spec()), null_meta),
             {R"({"t": {"$date": {"$numberLong": "-86400000"}}, "tag": null})"});
  BsonObj no_meta = J(R"({"_id": 1, "control": {"version": 1},
      "data": {"t": {"0": {"$date": {"$numberLong": "-86400000"}}}}})");
  ExpectDocs(UnpackAll(BucketUnpacker(Spec()), no_meta),
             {R"({"t": {"$date": {"$numberLong": "-86400000"}}})"});
}

TEST(BucketUnpackerTest, ExtendedRangeDatesUnpackUnchanged) {
  // 1901 and 2200: outside the 32-bit seconds range of ObjectIds.
  BsonObj b = J(R"({"_id": 1, "control": {"version": 1},
      "data": {"t": {"0": {"$date": {"$numberLong": "-2177452800000"}},
                     "1": {"$date": {"$numberLong": "7258118400000"}}}}})");
  ExpectDocs(UnpackAll(BucketUnpacker(Spec()), b),
             {R"({"t": {"$date": {"$numberLong": "-2177452800000"}}})",
              R"({"t": {"$date": {"$numberLong": "7258118400000"}}})"});
}

TEST(BucketUnpackerTest, EmitReturningFalseStops) {
  BucketUnpacker u(Spec());
  int n = 0;
  Status st = u.Unpack(J(kBucket), [&](BsonObj) { return ++n < 2; });
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(n, 2);
}

TEST(BucketUnpackerTest, KeepRowBuildsOnlyTheRowsItAccepts) {
  BucketUnpacker u(Spec());
  std::vector<BsonObj> out;
  auto keep = [](int64_t position, const bson::BsonElement& t) {
    EXPECT_TRUE(position >= 0 && position < 3) << position;
    return t.type() == bson::BsonType::kDate && t.DateMillis() != 1689776130000;
  };
  Status st = u.Unpack(J(kBucket), keep, [&](BsonObj m) {
    out.push_back(m.Owned());
    return true;
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  // Rows 0 and 2, whole; row 1 (which has no temp) is stepped over.
  ExpectDocs(out, {R"({"t": {"$date": {"$numberLong": "1689776100000"}},
                       "tag": {"site": "a", "rack": 7},
                       "_id": {"$oid": "650000000000000000000001"}, "temp": 20})",
                   R"({"t": {"$date": {"$numberLong": "1689776160000"}},
                       "tag": {"site": "a", "rack": 7},
                       "_id": {"$oid": "650000000000000000000003"},
                       "temp": {"$numberDouble": "22.5"}})"});
  // Rows that are stepped over are still validated.
  BsonObj bad = J(R"({"_id": {"$oid": "64b7f00000000000000000aa"}, "control": {"version": 1},
      "data": {"t": {"0": {"$date": {"$numberLong": "1"}}, "1": {"$date": {"$numberLong": "2"}}},
               "v": {"1": 1, "0": 2}}})");
  int built = 0;
  st = u.Unpack(
      bad, [](int64_t, const bson::BsonElement&) { return false; },
      [&](BsonObj) {
        ++built;
        return true;
      });
  EXPECT_EQ(st.code(), ErrorCode::kDataCorruptionDetected) << st.ToString();
  EXPECT_EQ(built, 0);
}

TEST(BucketUnpackerTest, MongoVersion2BucketUnpacks) {
  UnpackSpec spec = Spec("m");
  ExpectDocs(UnpackAll(BucketUnpacker(spec), J(kMongoV2Bucket)),
             {R"({"t": {"$date": "2024-01-16T20:48:39.448Z"}, "m": 0, "a": 0.0,
                  "_id": {"$oid": "65a6eba7e6d2e848e08c3750"}})",
              R"({"t": {"$date": "2024-01-16T20:48:39.448Z"}, "m": 0, "a": 1.0,
                  "_id": {"$oid": "65a6eba7e6d2e848e08c3751"}})"});
  auto n = BucketUnpacker::CountRows(J(kMongoV2Bucket), "t");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 2);
}

TEST(BucketUnpackerTest, MongoVersion3BucketUnpacksInStoredNotTimeOrder) {
  ExpectDocs(UnpackAll(BucketUnpacker(Spec(std::nullopt)), J(kMongoV3Bucket)),
             {R"({"t": {"$date": "2022-08-31T00:00:01Z"},
                  "_id": {"$oid": "630fabf7c388456f8aea4f2d"}, "a": 0})",
              R"({"t": {"$date": "2022-08-31T00:00:00Z"},
                  "_id": {"$oid": "630fabf7c388456f8aea4f2f"}, "a": 1})"});
  // keep_row sees each row's position and time in stored order.
  std::vector<int64_t> times;
  Status st = BucketUnpacker(Spec(std::nullopt))
                  .Unpack(
                      J(kMongoV3Bucket),
                      [&](int64_t pos, const bson::BsonElement& t) {
                        EXPECT_EQ(pos, static_cast<int64_t>(times.size()));
                        times.push_back(t.DateMillis());
                        return pos == 1;
                      },
                      [&](BsonObj m) {
                        EXPECT_EQ(m["a"].Int32(), 1);
                        return true;
                      });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(times, (std::vector<int64_t>{1661904001000, 1661904000000}));
}

// A version-3 bucket written column by column with BsonColumnBuilder: rows out of time order,
// a sparse column (missing cells in the middle and at the end), a column of strings.
BsonObj BuiltV3Bucket(const std::string& extra_column_bytes = "") {
  const int64_t times[] = {5000, 1000, 3000, 2000, 4000};
  bsoncolumn::BsonColumnBuilder t, v, s;
  for (int r = 0; r < 5; ++r) {
    BsonBuilder cell;
    cell.AppendDate("", times[r]);
    EXPECT_TRUE(t.Append(cell.Obj().FirstElement()).ok());
    if (r == 1 || r == 4) {
      v.Skip();
    } else {
      BsonBuilder c;
      c.AppendDouble("", r * 1.5);
      EXPECT_TRUE(v.Append(c.Obj().FirstElement()).ok());
    }
    BsonBuilder c;
    c.AppendString("", "host-" + std::to_string(r % 2));
    EXPECT_TRUE(s.Append(c.Obj().FirstElement()).ok());
  }
  BsonBuilder b;
  b.AppendObjectId("_id", bson::ObjectId::FromSeconds(0));
  size_t control = b.OpenObject("control");
  b.AppendInt32("version", 3);
  size_t min = b.OpenObject("min");
  b.AppendDate("t", 0);
  b.Close(min);
  size_t max = b.OpenObject("max");
  b.AppendDate("t", 5000);
  b.Close(max);
  b.AppendInt32("count", 5);
  b.Close(control);
  b.AppendString("meta", "m1");
  size_t data = b.OpenObject("data");
  b.AppendBinData("t", 7, t.Release());
  b.AppendBinData("v", 7, v.Release());
  b.AppendBinData("s", 7, s.Release());
  if (!extra_column_bytes.empty()) b.AppendBinData("bad", 7, extra_column_bytes);
  b.Close(data);
  return b.Obj();
}

TEST(BucketUnpackerTest, BuiltVersion3BucketUnpacksEveryRowAndGap) {
  ExpectDocs(UnpackAll(BucketUnpacker(Spec()), BuiltV3Bucket()),
             {R"({"t": {"$date": {"$numberLong": "5000"}}, "tag": "m1", "v": 0.0, "s": "host-0"})",
              R"({"t": {"$date": {"$numberLong": "1000"}}, "tag": "m1", "s": "host-1"})",
              R"({"t": {"$date": {"$numberLong": "3000"}}, "tag": "m1", "v": 3.0, "s": "host-0"})",
              R"({"t": {"$date": {"$numberLong": "2000"}}, "tag": "m1", "v": 4.5, "s": "host-1"})",
              R"({"t": {"$date": {"$numberLong": "4000"}}, "tag": "m1", "s": "host-0"})"});
}

TEST(BucketUnpackerTest, CompressedProjectionDecodesOnlyItsColumns) {
  // A column that is not a BSONColumn fails every read that needs it, and no other.
  BsonObj bucket = BuiltV3Bucket(std::string("\x42\x00", 2));
  UnpackSpec include = Spec();
  include.mode = UnpackSpec::Mode::kInclude;
  include.fields = {"s"};
  ExpectDocs(UnpackAll(BucketUnpacker(include), bucket),
             {R"({"s": "host-0"})", R"({"s": "host-1"})", R"({"s": "host-0"})",
              R"({"s": "host-1"})", R"({"s": "host-0"})"});
  UnpackSpec exclude = Spec();
  exclude.mode = UnpackSpec::Mode::kExclude;
  exclude.fields = {"bad", "v", "tag"};
  EXPECT_EQ(UnpackAll(BucketUnpacker(exclude), bucket).size(), 5u);
  Status st = BucketUnpacker(Spec()).Unpack(bucket, [](BsonObj) { return true; });
  EXPECT_EQ(st.code(), ErrorCode::kDataCorruptionDetected) << st.ToString();
  EXPECT_NE(st.reason().find("'data.bad' is not a valid BSONColumn"), std::string::npos)
      << st.reason();
  std::vector<BucketUnpacker::Column> cols;
  EXPECT_TRUE(BucketUnpacker::Columns(bucket, "t", {"v"}, &cols).ok());
  EXPECT_EQ(BucketUnpacker::Columns(bucket, "t", {"bad"}, &cols).status().code(),
            ErrorCode::kDataCorruptionDetected);
}

TEST(BucketUnpackerTest, ColumnsOfCompressedBucketOutliveTheBucket) {
  std::vector<BucketUnpacker::Column> cols;
  int64_t rows = 0;
  {
    BsonObj bucket = BuiltV3Bucket();
    auto n = BucketUnpacker::Columns(bucket, "t", {"v", "t", "missing", "tag"}, &cols);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    rows = n.value();
  }
  // The bucket is gone; the cells live in the decoded form the Columns hold (ASan checks).
  ASSERT_EQ(rows, 5);
  ASSERT_TRUE(cols[0].present);
  ASSERT_TRUE(cols[1].present);
  EXPECT_FALSE(cols[2].present);
  EXPECT_FALSE(cols[3].present);  // the meta field is never a column
  EXPECT_EQ(cols[0].cells[0].Double(), 0.0);
  EXPECT_TRUE(cols[0].cells[1].eoo());
  EXPECT_EQ(cols[0].cells[3].Double(), 4.5);
  EXPECT_TRUE(cols[0].cells[4].eoo());
  EXPECT_EQ(cols[1].cells[0].DateMillis(), 5000);
  EXPECT_EQ(cols[1].cells[1].DateMillis(), 1000);
}

TEST(BucketUnpackerTest, CorruptCompressedBucketsFailNamingTheBucket) {
  auto unpack = [](const BsonObj& b) {
    return BucketUnpacker(Spec("m")).Unpack(b, [](BsonObj) { return true; });
  };
  auto with = [](std::string json, const std::string& from, const std::string& to) {
    size_t at = json.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    json.replace(at, from.size(), to);
    return json;
  };
  const std::string base = kMongoV2Bucket;
  for (const auto& [from, to, why] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"\"count\": 2", "\"count\": 3", "holds 2 measurements but 'control.count' is 3"},
           {"\"count\": 2", "\"count\": 0", "'control.count' must be a whole number"},
           {"\"count\": 2", "\"x\": 2", "'control.count' is required"},
           {"\"count\": 2", "\"count\": \"2\"", "'control.count' must be a number"},
           {R"("subType": "07"}},
           "a")",
            R"("subType": "00"}},
           "a")",
            "must be a BinData of subtype 7"},
           {"AQAAAAAAAAAAAJAuAAAAAAAAAAA=", "AQAAAAAAAAABAJAuAAAAAAAAAAA=",
            "is not a valid BSONColumn"},
       }) {
    Status st = unpack(J(with(base, from, to)));
    EXPECT_EQ(st.code(), ErrorCode::kDataCorruptionDetected) << from << " -> " << to;
    EXPECT_NE(st.reason().find("65a6eb806ffc9fa4280ecac4"), std::string::npos) << st.reason();
    EXPECT_NE(st.reason().find(why), std::string::npos) << st.reason();
  }
  // A time column with a missing cell leaves a row without a time.
  bsoncolumn::BsonColumnBuilder t;
  BsonBuilder cell;
  cell.AppendDate("", 1);
  ASSERT_TRUE(t.Append(cell.Obj().FirstElement()).ok());
  t.Skip();
  BsonBuilder b;
  b.AppendObjectId("_id", bson::ObjectId::FromSeconds(0));
  size_t control = b.OpenObject("control");
  b.AppendInt32("version", 2);
  b.AppendInt32("count", 2);
  b.Close(control);
  size_t data = b.OpenObject("data");
  b.AppendBinData("t", 7, t.Release());
  b.Close(data);
  Status st = unpack(b.Obj());
  EXPECT_EQ(st.code(), ErrorCode::kDataCorruptionDetected);
  EXPECT_NE(st.reason().find("lacks measurement 1"), std::string::npos) << st.reason();
}

TEST(BucketUnpackerTest, MalformedBucketsFailNamingTheBucket) {
  const char* cases[] = {
      // no control
      R"({"_id": {"$oid": "64b7f00000000000000000aa"}, "data": {"t": {"0": {"$date": {"$numberLong": "1"}}}}})",
      // unknown version
      R"({"_id": {"$oid": "64b7f00000000000000000aa"}, "control": {"version": 7},
          "data": {"t": {}}})",
      // no data
      R"({"_id": {"$oid": "64b7f00000000000000000aa"}, "control": {"version": 1}})",
      // no time column
      R"({"_id": {"$oid": "64b7f00000000000000000aa"}, "control": {"version": 1},
          "data": {"v": {"0": 1}}})",
      // a column that is not an object
      R"({"_id": {"$oid": "64b7f00000000000000000aa"}, "control": {"version": 1},
          "data": {"t": {"0": {"$date": {"$numberLong": "1"}}}, "v": [1]}})",
      // a column with a row the time column lacks
      R"({"_id": {"$oid": "64b7f00000000000000000aa"}, "control": {"version": 1},
          "data": {"t": {"0": {"$date": {"$numberLong": "1"}}}, "v": {"0": 1, "1": 2}}})",
      // keys not ascending
      R"({"_id": {"$oid": "64b7f00000000000000000aa"}, "control": {"version": 1},
          "data": {"t": {"0": {"$date": {"$numberLong": "1"}},
                         "1": {"$date": {"$numberLong": "2"}}}, "v": {"1": 1, "0": 2}}})",
      // a key that is not a row number
      R"({"_id": {"$oid": "64b7f00000000000000000aa"}, "control": {"version": 1},
          "data": {"t": {"x": {"$date": {"$numberLong": "1"}}}}})",
  };
  for (const char* c : cases) {
    Status st = BucketUnpacker(Spec()).Unpack(J(c), [](BsonObj) { return true; });
    EXPECT_EQ(st.code(), ErrorCode::kDataCorruptionDetected) << c << ": " << st.ToString();
    EXPECT_NE(st.reason().find("64b7f00000000000000000aa"), std::string::npos) << st.reason();
    // Decoding by columns validates the same way.
    std::vector<BucketUnpacker::Column> columns;
    auto by_columns = BucketUnpacker::Columns(J(c), "t", {"t", "v"}, &columns);
    EXPECT_EQ(by_columns.status().code(), ErrorCode::kDataCorruptionDetected) << c;
  }
}

// Checks that row i of every present column is what Unpack's i-th measurement holds (EOO where
// it lacks the field).
void ExpectColumnsMatchRows(const BsonObj& bucket, const std::vector<std::string>& fields,
                            const std::vector<BucketUnpacker::Column>& columns) {
  std::vector<BsonObj> rows = UnpackAll(BucketUnpacker(Spec()), bucket);
  for (size_t f = 0; f < fields.size(); ++f) {
    if (!columns[f].present) continue;
    ASSERT_EQ(columns[f].cells.size(), rows.size()) << fields[f];
    for (size_t i = 0; i < rows.size(); ++i) {
      bson::BsonElement want = rows[i][fields[f]];
      const bson::BsonElement& got = columns[f].cells[i];
      ASSERT_EQ(got.eoo(), want.eoo()) << fields[f] << " row " << i;
      if (!want.eoo()) {
        EXPECT_EQ(got.ValueSize(), want.ValueSize());
        EXPECT_EQ(std::string_view(got.value(), got.ValueSize()),
                  std::string_view(want.value(), want.ValueSize()));
      }
    }
  }
}

TEST(BucketUnpackerTest, ColumnsAlignCellsWithUnpackedRows) {
  std::vector<BucketUnpacker::Column> columns;
  BsonObj bucket = J(kBucket);
  const std::vector<std::string> fields = {"temp", "t", "tag", "nope"};
  auto n = BucketUnpacker::Columns(bucket, "t", fields, &columns);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n.value(), 3);
  // One entry per asked field; only data columns are present ("tag" is the meta field, "nope"
  // absent).
  ASSERT_EQ(columns.size(), 4u);
  EXPECT_TRUE(columns[0].present);
  EXPECT_TRUE(columns[1].present);
  EXPECT_FALSE(columns[2].present);
  EXPECT_FALSE(columns[3].present);
  ExpectColumnsMatchRows(bucket, fields, columns);
  // A compressed bucket without control.count is corrupt.
  EXPECT_EQ(
      BucketUnpacker::Columns(J(R"({"control": {"version": 2}, "data": {}})"), "t", {"t"}, &columns)
          .status()
          .code(),
      ErrorCode::kDataCorruptionDetected);
  // The same bucket compressed gives the same cells.
  ASSERT_TRUE(BucketUnpacker::Columns(bucket, "t", fields, &columns).ok());
  for (int version : {2, 3}) {
    auto compressed = CompressBucket(bucket, "t", version);
    ASSERT_TRUE(compressed.ok()) << compressed.status().ToString();
    std::vector<BucketUnpacker::Column> cc;
    n = BucketUnpacker::Columns(compressed.value(), "t", fields, &cc);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(n.value(), 3);
    ExpectColumnsMatchRows(compressed.value(), fields, cc);
    for (size_t i = 0; i < fields.size(); ++i) {
      ASSERT_EQ(cc[i].present, columns[i].present) << fields[i];
      ASSERT_EQ(cc[i].cells.size(), columns[i].cells.size()) << fields[i];
      for (size_t r = 0; r < cc[i].cells.size(); ++r) {  // kBucket's rows are in time order
        EXPECT_EQ(bson::CompareElementValues(cc[i].cells[r], columns[i].cells[r]), 0);
      }
    }
  }
}

// Columns asked for as numbers: a compressed bucket's column of one numeric type comes as its
// numbers (the same values as its cells, missing rows included); a column of mixed or other
// types, and every column of a version-1 bucket, as cells.
TEST(BucketUnpackerTest, ColumnsAsNumbers) {
  BsonObj bucket = J(R"({
    "_id": {"$oid": "64b7f0000000000000000001"},
    "control": {"version": 1},
    "data": {"t": {"0": {"$date": {"$numberLong": "1689776100000"}},
                   "1": {"$date": {"$numberLong": "1689776130000"}},
                   "2": {"$date": {"$numberLong": "1689776160000"}},
                   "3": {"$date": {"$numberLong": "1689776190000"}}},
             "d": {"0": {"$numberDouble": "NaN"}, "1": {"$numberDouble": "-0.0"},
                   "3": {"$numberDouble": "1.5"}},
             "i": {"0": 1, "1": -2147483648, "2": 2147483647, "3": 4},
             "l": {"0": {"$numberLong": "9223372036854775807"},
                   "2": {"$numberLong": "-9007199254740993"}},
             "mixed": {"0": 1, "1": 2.5, "2": 3},
             "s": {"0": "a", "1": "b", "2": "c", "3": "d"}}})");
  const std::vector<std::string> fields = {"t", "d", "i", "l", "mixed", "s", "nope"};
  std::vector<BucketUnpacker::Column> v1;
  ASSERT_TRUE(BucketUnpacker::Columns(bucket, "t", fields, &v1, /*numbers=*/true).ok());
  for (const auto& c : v1) EXPECT_EQ(c.values, nullptr);
  for (int version : {2, 3}) {
    auto compressed = CompressBucket(bucket, "t", version);
    ASSERT_TRUE(compressed.ok()) << compressed.status().ToString();
    std::vector<BucketUnpacker::Column> cells, numbers;
    ASSERT_TRUE(BucketUnpacker::Columns(compressed.value(), "t", fields, &cells).ok());
    auto n = BucketUnpacker::Columns(compressed.value(), "t", fields, &numbers, true);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_EQ(n.value(), 4);
    const bson::BsonType want[] = {bson::BsonType::kDate,  bson::BsonType::kDouble,
                                   bson::BsonType::kInt32, bson::BsonType::kInt64,
                                   bson::BsonType::kEOO,   bson::BsonType::kEOO,
                                   bson::BsonType::kEOO};
    for (size_t i = 0; i < fields.size(); ++i) {
      SCOPED_TRACE(fields[i]);
      ASSERT_EQ(numbers[i].present, cells[i].present);
      if (want[i] == bson::BsonType::kEOO) {
        EXPECT_EQ(numbers[i].values, nullptr);
        ASSERT_EQ(numbers[i].cells.size(), cells[i].cells.size());
        continue;
      }
      ASSERT_NE(numbers[i].values, nullptr);
      EXPECT_TRUE(numbers[i].cells.empty());
      const bsoncolumn::ColumnValues& v = *numbers[i].values;
      EXPECT_EQ(v.type, want[i]);
      ASSERT_EQ(v.size(), 4u);
      for (size_t r = 0; r < 4; ++r) {
        const bson::BsonElement& e = cells[i].cells[r];
        ASSERT_EQ(v.missing == 0 || v.present[r] != 0, !e.eoo()) << "row " << r;
        if (e.eoo()) continue;
        uint64_t bits = 0;
        if (e.type() == bson::BsonType::kInt32) {
          bits = static_cast<uint64_t>(int64_t{e.Int32()});
        } else {
          std::memcpy(&bits, e.value(), 8);
        }
        EXPECT_EQ(v.values[r], bits) << "row " << r;
      }
    }
  }
}

// A compressed bucket of `count` rows holding `columns` (name, BSONColumn bytes) in this order.
BsonObj CompressedBucket(int count,
                         const std::vector<std::pair<std::string, std::string>>& columns) {
  BsonBuilder b;
  b.AppendObjectId("_id", bson::ObjectId::FromSeconds(0));
  size_t control = b.OpenObject("control");
  b.AppendInt32("version", 2);
  b.AppendInt32("count", count);
  b.Close(control);
  size_t data = b.OpenObject("data");
  for (const auto& [name, bytes] : columns) b.AppendBinData(name, 7, bytes);
  b.Close(data);
  return b.Obj();
}

// A BSONColumn of the doubles 0, 1, ..., n-1, or with times, of the dates 1000, 2000, ...
std::string NumberColumn(int n, bool times = false) {
  bsoncolumn::BsonColumnBuilder col;
  for (int r = 0; r < n; ++r) {
    BsonBuilder cell;
    if (times) {
      cell.AppendDate("", 1000 * (r + 1));
    } else {
      cell.AppendDouble("", r);
    }
    EXPECT_TRUE(col.Append(cell.Obj().FirstElement()).ok());
  }
  return col.Release();
}

TEST(BucketUnpackerTest, CompressedColumnsDecodeAndCheckOnlyTheNamedColumns) {
  // Of a compressed bucket, Columns decodes the named columns and nothing else: the row count
  // is control.count (as CountRows takes it), the time column is read only when named, and the
  // walk of `data` ends at the last named column. What it decodes is checked in full.
  const std::string t = NumberColumn(3, /*times=*/true);
  const std::string v = NumberColumn(3);
  const std::string corrupt("\x42\x00", 2);
  std::vector<BucketUnpacker::Column> cols;
  auto expect_v = [&](const BsonObj& bucket, const std::vector<std::string>& fields) {
    auto n = BucketUnpacker::Columns(bucket, "t", fields, &cols, /*numbers=*/true);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(n.value(), 3);
    ASSERT_TRUE(cols[0].present);
    ASSERT_NE(cols[0].values, nullptr);
    EXPECT_EQ(std::bit_cast<double>(cols[0].values->values[2]), 2.0);
  };
  auto expect_corrupt = [&](const BsonObj& bucket, const std::vector<std::string>& fields,
                            const std::string& why) {
    for (bool numbers : {false, true}) {
      auto n = BucketUnpacker::Columns(bucket, "t", fields, &cols, numbers);
      EXPECT_EQ(n.status().code(), ErrorCode::kDataCorruptionDetected) << why;
      EXPECT_NE(n.status().reason().find(why), std::string::npos) << n.status().reason();
    }
  };
  // A corrupt time column, a time column with a missing cell, one of the wrong length, none at
  // all: a read that does not name the time column (a $group that takes it from control.min and
  // max) does not see them; one that names it fails.
  bsoncolumn::BsonColumnBuilder gap;
  BsonBuilder cell;
  cell.AppendDate("", 1);
  ASSERT_TRUE(gap.Append(cell.Obj().FirstElement()).ok());
  gap.Skip();
  gap.Skip();
  for (const auto& [time, why] : std::vector<std::pair<std::optional<std::string>, std::string>>{
           {corrupt, "'data.t' is not a valid BSONColumn"},
           {gap.Release(), "lacks measurement 1"},
           {NumberColumn(4, true), "holds 4 measurements but 'control.count' is 3"},
           {std::nullopt, "no time column 'data.t'"}}) {
    std::vector<std::pair<std::string, std::string>> columns = {{"v", v}};
    if (time) columns.insert(columns.begin(), {"t", *time});
    BsonObj bucket = CompressedBucket(3, columns);
    expect_v(bucket, {"v"});
    expect_corrupt(bucket, {"v", "t"}, why);
    // The row path needs every row's time: it fails whatever it produces.
    UnpackSpec only_v = Spec();
    only_v.mode = UnpackSpec::Mode::kInclude;
    only_v.fields = {"v"};
    Status st = BucketUnpacker(only_v).Unpack(bucket, [](BsonObj) { return true; });
    EXPECT_EQ(st.code(), ErrorCode::kDataCorruptionDetected) << why;
  }
  // A named column whose cells disagree with control.count fails, time column or not.
  expect_corrupt(CompressedBucket(3, {{"t", t}, {"v", NumberColumn(2)}}), {"v"},
                 "'data.v' holds 2 measurements but 'control.count' is 3");
  expect_corrupt(CompressedBucket(3, {{"t", t}, {"v", NumberColumn(4)}}), {"v"},
                 "'data.v' holds 4 measurements but 'control.count' is 3");
  expect_corrupt(CompressedBucket(3, {{"t", t}, {"v", corrupt}}), {"v"},
                 "'data.v' is not a valid BSONColumn");
  // Columns past the last named one are not read; one named after them is, and a name the
  // bucket lacks makes the walk go to the end.
  BsonObj tail = CompressedBucket(3, {{"t", t}, {"v", v}, {"bad", corrupt}, {"w", v}});
  expect_v(tail, {"v"});
  expect_v(tail, {"v", "t"});
  expect_v(tail, {"v", "v"});
  expect_v(tail, {"v", "nope"});
  expect_corrupt(tail, {"v", "w", "bad"}, "'data.bad' is not a valid BSONColumn");
  auto n = BucketUnpacker::Columns(tail, "t", {"v", "w"}, &cols);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_TRUE(cols[1].present);
  // Naming nothing decodes nothing: the rows are control.count.
  n = BucketUnpacker::Columns(CompressedBucket(3, {{"t", corrupt}}), "t",
                              std::vector<std::string>{}, &cols);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n.value(), 3);
}

TEST(BucketUnpackerTest, ColumnsOfSparseRowNumbersAndReusedOutput) {
  // Row numbers with gaps (a bucket whose rows were deleted): cells still align by position.
  BsonObj sparse = J(R"({"_id": {"$oid": "64b7f0000000000000000002"}, "control": {"version": 1},
      "data": {"t": {"0": {"$date": {"$numberLong": "10"}}, "2": {"$date": {"$numberLong": "20"}},
                     "5": {"$date": {"$numberLong": "30"}}, "9": {"$date": {"$numberLong": "40"}}},
               "v": {"2": 1.5, "9": 2.5}, "w": {"0": "a", "5": "b"}}})");
  const std::vector<std::string> fields = {"w", "v", "t"};
  std::vector<BucketUnpacker::Column> columns;
  // The output is reused: first for a bucket with more rows, then for fewer.
  ASSERT_TRUE(BucketUnpacker::Columns(J(kBucket), "t", fields, &columns).ok());
  auto n = BucketUnpacker::Columns(sparse, "t", fields, &columns);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n.value(), 4);
  ASSERT_EQ(columns.size(), 3u);
  for (const auto& c : columns) EXPECT_TRUE(c.present);
  EXPECT_EQ(columns[1].cells[1].NumberDouble(), 1.5);
  EXPECT_TRUE(columns[1].cells[0].eoo());
  EXPECT_EQ(columns[1].cells[3].NumberDouble(), 2.5);
  ExpectColumnsMatchRows(sparse, fields, columns);
  // A cell whose row the time column lacks is corruption, with or without gaps.
  for (const char* bad : {R"({"_id": {"$oid": "64b7f0000000000000000003"},
                              "control": {"version": 1}, "data": {
                              "t": {"0": {"$date": {"$numberLong": "1"}},
                                    "2": {"$date": {"$numberLong": "2"}}},
                              "v": {"1": 1}}})",
                          R"({"_id": {"$oid": "64b7f0000000000000000003"},
                              "control": {"version": 1}, "data": {
                              "t": {"0": {"$date": {"$numberLong": "1"}},
                                    "1": {"$date": {"$numberLong": "2"}}},
                              "v": {"2": 1}}})"}) {
    auto st = BucketUnpacker::Columns(J(bad), "t", {"v"}, &columns);
    EXPECT_EQ(st.status().code(), ErrorCode::kDataCorruptionDetected) << bad;
    EXPECT_NE(st.status().reason().find("has row"), std::string::npos) << st.status().reason();
  }
}

// A bucket of `rows` rows built by hand: "t" in every row numbered 0..rows-1 except those in
// `time_gaps`; "v" (doubles) in every row; "s" (strings) only from row `s_from` on.
BsonObj BigBucket(int rows, const std::vector<int>& time_gaps, int s_from) {
  auto has_time = [&](int r) {
    return std::find(time_gaps.begin(), time_gaps.end(), r) == time_gaps.end();
  };
  BsonBuilder b;
  b.AppendObjectId("_id", bson::ObjectId::FromSeconds(1'689'776'000));
  size_t control = b.OpenObject("control");
  b.AppendInt32("version", 1);
  b.Close(control);
  size_t data = b.OpenObject("data");
  size_t t = b.OpenObject("t");
  for (int r = 0; r < rows; ++r) {
    if (has_time(r)) b.AppendDate(std::to_string(r), 1'000'000 + r);
  }
  b.Close(t);
  size_t v = b.OpenObject("v");
  for (int r = 0; r < rows; ++r) {
    if (has_time(r)) b.AppendDouble(std::to_string(r), r / 4.0);
  }
  b.Close(v);
  size_t str = b.OpenObject("s");
  for (int r = s_from; r < rows; ++r) {
    if (has_time(r)) b.AppendString(std::to_string(r), "x" + std::to_string(r));
  }
  b.Close(str);
  b.Close(data);
  return b.Obj();
}

TEST(BucketUnpackerTest, ColumnsOfLargeBucketsAcrossKeyLengths) {
  // Row keys grow from one to four digits (9 -> 10, 99 -> 100, 999 -> 1000); cells must align
  // with Unpack's rows whether the rows are numbered densely or with gaps, and whether a column
  // starts at row 0 or later.
  const std::vector<std::string> fields = {"v", "s", "t"};
  std::vector<BucketUnpacker::Column> columns;
  for (const auto& [rows, gaps, s_from] : std::vector<std::tuple<int, std::vector<int>, int>>{
           {1205, {}, 0}, {1205, {}, 998}, {1205, {10, 11, 100}, 0}, {1000, {999}, 7}}) {
    BsonObj bucket = BigBucket(rows, gaps, s_from);
    auto n = BucketUnpacker::Columns(bucket, "t", fields, &columns);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(n.value(), rows - static_cast<int>(gaps.size()));
    ExpectColumnsMatchRows(bucket, fields, columns);
  }
  // A cell past the time column's last row, after a dense run, is corruption.
  BsonObj short_time = J(R"({"_id": {"$oid": "64b7f0000000000000000005"}, "control": {"version": 1},
      "data": {"t": {"0": {"$date": {"$numberLong": "1"}}, "1": {"$date": {"$numberLong": "2"}}},
               "v": {"0": 1.0, "1": 2.0, "2": 3.0}}})");
  EXPECT_EQ(BucketUnpacker::Columns(short_time, "t", {"v"}, &columns).status().code(),
            ErrorCode::kDataCorruptionDetected);
}

TEST(BucketUnpackerTest, CountRows) {
  auto n = BucketUnpacker::CountRows(J(kBucket), "t");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 3);
  n = BucketUnpacker::CountRows(J(kNoMetaBucket), "t");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 1);
  n = BucketUnpacker::CountRows(
      J(R"({"_id": 1, "control": {"version": 2, "count": 17}, "data": {}})"), "t");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 17);
  n = BucketUnpacker::CountRows(J(kBucket), "time");
  EXPECT_EQ(n.status().code(), ErrorCode::kDataCorruptionDetected);
}

// Builds a version-1 bucket of `rows` rows and 10 columns (time, _id, 8 doubles), with every
// third cell of one column missing.
BsonObj BigBucket(int rows) {
  BsonBuilder b;
  b.AppendObjectId("_id", bson::ObjectId::FromSeconds(1000));
  size_t control = b.OpenObject("control");
  b.AppendInt32("version", 1);
  b.Close(control);
  b.AppendString("meta", "sensor-17");
  size_t data = b.OpenObject("data");
  size_t col = b.OpenObject("t");
  for (int r = 0; r < rows; ++r) b.AppendDate(std::to_string(r), 1000000 + r * 1000);
  b.Close(col);
  col = b.OpenObject("_id");
  for (int r = 0; r < rows; ++r) b.AppendObjectId(std::to_string(r), bson::ObjectId::Generate());
  b.Close(col);
  for (int f = 0; f < 8; ++f) {
    col = b.OpenObject("f" + std::to_string(f));
    for (int r = 0; r < rows; ++r) {
      if (f == 3 && r % 3 == 0) continue;
      b.AppendDouble(std::to_string(r), r * 0.5 + f);
    }
    b.Close(col);
  }
  b.Close(data);
  return b.Obj();
}

TEST(BucketUnpackerTest, LargeBucketUnpacksEveryRow) {
  BsonObj bucket = BigBucket(1000);
  int64_t n = 0;
  int64_t with_f3 = 0;
  Status st = BucketUnpacker(Spec()).Unpack(bucket, [&](BsonObj m) {
    if (n == 998) {
      EXPECT_EQ(m.NumFields(), 11);
      EXPECT_EQ(m["tag"].Str(), "sensor-17");
      EXPECT_EQ(m["t"].DateMillis(), 1000000 + 998 * 1000);
      EXPECT_EQ(m["f7"].Double(), 998 * 0.5 + 7);
    }
    if (n == 999) {
      EXPECT_EQ(m.NumFields(), 10);  // row 999 has no f3
    }
    with_f3 += m.HasField("f3");
    ++n;
    return true;
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(n, 1000);
  EXPECT_EQ(with_f3, 666);
  auto count = BucketUnpacker::CountRows(bucket, "t");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(count.value(), 1000);
}

// Micro-benchmark: run with --gtest_also_run_disabled_tests --gtest_filter='*Benchmark*' on a
// Release build.
TEST(BucketUnpackerTest, DISABLED_BenchmarkRowsPerSecond) {
  BsonObj bucket = BigBucket(1000);
  BucketUnpacker u(Spec());
  int64_t rows = 0;
  int64_t bytes = 0;
  auto start = std::chrono::steady_clock::now();
  std::clock_t cpu_start = std::clock();
  for (int i = 0; i < 2000; ++i) {
    Status st = u.Unpack(bucket, [&](BsonObj m) {
      ++rows;
      bytes += m.size();
      return true;
    });
    ASSERT_TRUE(st.ok());
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double cpu_secs = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  std::printf(
      "unpacked %lld rows (%lld bytes): %.3f s wall, %.3f s CPU; %.2f M rows/s wall, "
      "%.2f M rows per CPU-second\n",
      static_cast<long long>(rows), static_cast<long long>(bytes), secs, cpu_secs,
      rows / secs / 1e6, rows / cpu_secs / 1e6);
}

}  // namespace
}  // namespace hourglass::timeseries
