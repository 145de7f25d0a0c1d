// CompressBucket against the layout of spec timeseries.md §3.2, decoding every column back with
// the BSONColumn decoder.
#include "timeseries/bucket_compression.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bsoncolumn/bson_column_decoder.h"

namespace hourglass::timeseries {
namespace {

using bson::BsonElement;
using bson::BsonObj;

BsonObj J(std::string_view json) {
  auto r = bson::FromJson(json);
  EXPECT_TRUE(r.ok()) << json << ": " << r.status().ToString();
  return r.ok() ? r.value() : BsonObj();
}

// The cells of compressed column `name` as relaxed JSON values ("-" for a missing cell).
std::vector<std::string> Cells(const BsonObj& bucket, std::string_view name) {
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

std::vector<std::string> Names(const BsonObj& obj) {
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
  auto v2 = CompressBucket(v1, "t");
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  const BsonObj& b = v2.value().bucket;
  EXPECT_EQ(v2.value().interleave_restarts, 0);
  // _id, control, meta as they were (data last); version 2 in place, count appended.
  EXPECT_EQ(Names(b), (std::vector<std::string>{"_id", "control", "meta", "data"}));
  EXPECT_EQ(b["_id"].Oid(), v1["_id"].Oid());
  EXPECT_EQ(b["meta"].Obj().ToJson(), v1["meta"].Obj().ToJson());
  BsonObj control = b["control"].Obj();
  EXPECT_EQ(Names(control), (std::vector<std::string>{"version", "min", "max", "closed", "count"}));
  EXPECT_EQ(control["version"].Int32(), 2);
  EXPECT_EQ(control["count"].Int32(), 3);
  EXPECT_EQ(control["min"].Obj().ToJson(), v1["control"].Obj()["min"].Obj().ToJson());
  EXPECT_EQ(control["max"].Obj().ToJson(), v1["control"].Obj()["max"].Obj().ToJson());
  // The time column first, the others in their order; rows sorted by time (1, 2, 0).
  EXPECT_EQ(Names(b["data"].Obj()), (std::vector<std::string>{"t", "_id", "b", "s"}));
  EXPECT_EQ(Cells(b, "t"), (std::vector<std::string>{R"({ "$date" : "2024-01-01T00:00:10Z" })",
                                                     R"({ "$date" : "2024-01-01T00:00:20Z" })",
                                                     R"({ "$date" : "2024-01-01T00:00:30Z" })"}));
  EXPECT_EQ(Cells(b, "_id"), (std::vector<std::string>{"2", "3", "1"}));
  EXPECT_EQ(Cells(b, "b"), (std::vector<std::string>{"-", "1.5", "4.5"}));
  EXPECT_EQ(Cells(b, "s"), (std::vector<std::string>{"-", "\"x\"", "-"}));
}

TEST(BucketCompressionTest, EqualTimesKeepTheirOrderAndObjectsRoundTrip) {
  BsonObj v1 = J(R"({
    "_id": {"$oid": "65a0000000000000000000ab"},
    "control": {"version": 1, "min": {"t": {"$date": "2024-01-01T00:00:00Z"}},
                "max": {"t": {"$date": "2024-01-01T00:00:00Z"}}},
    "data": {"t": {"0": {"$date": "2024-01-01T00:00:00Z"}, "1": {"$date": "2024-01-01T00:00:00Z"},
                   "2": {"$date": "2024-01-01T00:00:00Z"}},
             "o": {"0": {"a": 1, "b": "p"}, "1": {"a": 2, "b": "q"}, "2": {"a": 3}}}})");
  auto v2 = CompressBucket(v1, "t");
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(Cells(v2.value().bucket, "o"),
            (std::vector<std::string>{R"({ "a" : 1, "b" : "p" })", R"({ "a" : 2, "b" : "q" })",
                                      R"({ "a" : 3 })"}));
  // No metaField: no meta in, none out.
  EXPECT_FALSE(v2.value().bucket.HasField("meta"));
}

TEST(BucketCompressionTest, RefusesWhatIsNotAVersion1Bucket) {
  auto code = [](std::string_view json) { return CompressBucket(J(json), "t").status().code(); };
  // Already compressed.
  EXPECT_EQ(code(R"({"control": {"version": 2, "count": 0}, "data": {}})"), ErrorCode::kBadValue);
  EXPECT_EQ(code(R"({"data": {"t": {}}})"), ErrorCode::kBadValue);
  EXPECT_EQ(code(R"({"control": {"version": 1}})"), ErrorCode::kBadValue);
  // A cell beyond the time column's rows, a cell not named by a row, a time that is no date.
  EXPECT_EQ(code(R"({"control": {"version": 1}, "data": {"t": {"0": {"$date": 0}},
                                                         "v": {"1": 5}}})"),
            ErrorCode::kBadValue);
  EXPECT_EQ(code(R"({"control": {"version": 1}, "data": {"t": {"0": {"$date": 0}},
                                                         "v": {"x": 5}}})"),
            ErrorCode::kBadValue);
  EXPECT_EQ(code(R"({"control": {"version": 1}, "data": {"t": {"0": 7}}})"), ErrorCode::kBadValue);
}

}  // namespace
}  // namespace hourglass::timeseries
