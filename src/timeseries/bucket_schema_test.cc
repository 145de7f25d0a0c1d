#include "timeseries/bucket_schema.h"

#include <gtest/gtest.h>

#include <string>

#include "timeseries/bucket_min_max.h"

namespace hourglass::timeseries {
namespace {

using bson::BsonObj;

BsonObj J(std::string_view json) {
  auto sw = bson::FromJson(json);
  EXPECT_TRUE(sw.ok()) << json;
  return sw.value();
}

class BucketSchemaTest : public ::testing::Test {
 protected:
  void Add(std::string_view json) {
    ASSERT_TRUE(schema_.IsCompatible(J(json), "meta")) << json;
    schema_.Update(J(json), "meta");
  }
  bool Fits(std::string_view json) const { return schema_.IsCompatible(J(json), "meta"); }
  BucketSchema schema_;
};

TEST_F(BucketSchemaTest, EmptySchemaAcceptsAnything) {
  EXPECT_TRUE(schema_.IsEmpty());
  EXPECT_TRUE(Fits(R"({"a": 1, "b": {"c": [1, "x"]}})"));
}

TEST_F(BucketSchemaTest, NumbersAreOneClass) {
  Add(R"({"a": 1})");
  EXPECT_TRUE(Fits(R"({"a": 2.5})"));
  EXPECT_TRUE(Fits(R"({"a": {"$numberLong": "7"}})"));
  EXPECT_TRUE(Fits(R"({"a": {"$numberDecimal": "1.1"}})"));
  EXPECT_TRUE(Fits(R"({"a": {"$numberDouble": "NaN"}})"));
}

TEST_F(BucketSchemaTest, NumberToStringIsAChange) {
  Add(R"({"a": 1})");
  EXPECT_FALSE(Fits(R"({"a": "1"})"));
}

TEST_F(BucketSchemaTest, DistinctScalarBracketsAreChanges) {
  Add(R"({"s": "x", "d": {"$date": "2021-01-01T00:00:00Z"}, "n": null, "b": true,)"
      R"( "o": {"$oid": "0123456789abcdef01234567"}, "ts": {"$timestamp": {"t": 1, "i": 1}}})");
  EXPECT_TRUE(Fits(R"({"s": "y", "d": {"$date": "2022-01-01T00:00:00Z"}, "n": null, "b": false})"));
  EXPECT_FALSE(Fits(R"({"d": {"$timestamp": {"t": 1, "i": 1}}})"));
  EXPECT_FALSE(Fits(R"({"ts": {"$date": "2022-01-01T00:00:00Z"}})"));
  EXPECT_FALSE(Fits(R"({"n": 0})"));
  EXPECT_FALSE(Fits(R"({"b": 1})"));
  EXPECT_FALSE(Fits(R"({"o": "0123456789abcdef01234567"})"));
  EXPECT_FALSE(Fits(R"({"s": {"$binary": {"base64": "AAE=", "subType": "00"}}})"));
  EXPECT_FALSE(Fits(R"({"s": {"$regularExpression": {"pattern": "x", "options": ""}}})"));
  EXPECT_FALSE(Fits(R"({"n": {"$undefined": true}})"));
}

TEST_F(BucketSchemaTest, AbsentAndNewFieldsAreFine) {
  Add(R"({"a": 1, "b": "x"})");
  EXPECT_TRUE(Fits(R"({})"));
  EXPECT_TRUE(Fits(R"({"b": "y"})"));
  EXPECT_TRUE(Fits(R"({"c": true, "a": 3})"));
}

TEST_F(BucketSchemaTest, MetaFieldIsIgnored) {
  Add(R"({"meta": 1, "a": 1})");
  EXPECT_TRUE(Fits(R"({"meta": "now a string", "a": 2})"));
  // Only at the top level.
  Add(R"({"x": {"meta": 1}})");
  EXPECT_FALSE(Fits(R"({"x": {"meta": "s"}})"));
}

TEST_F(BucketSchemaTest, ObjectScalarAndArrayKindsDiffer) {
  Add(R"({"o": {"x": 1}, "s": 1, "r": [1]})");
  EXPECT_FALSE(Fits(R"({"o": 1})"));
  EXPECT_FALSE(Fits(R"({"o": [1]})"));
  EXPECT_FALSE(Fits(R"({"s": {"x": 1}})"));
  EXPECT_FALSE(Fits(R"({"s": [1]})"));
  EXPECT_FALSE(Fits(R"({"r": {"x": 1}})"));
  EXPECT_FALSE(Fits(R"({"r": 1})"));
  EXPECT_TRUE(Fits(R"({"o": {}, "s": 2.0, "r": []})"));
}

TEST_F(BucketSchemaTest, NestedPathChanges) {
  Add(R"({"a": {"b": 1, "c": {"d": "x"}}})");
  EXPECT_TRUE(Fits(R"({"a": {"b": 2}})"));
  EXPECT_TRUE(Fits(R"({"a": {"e": true}})"));
  EXPECT_FALSE(Fits(R"({"a": {"b": "2"}})"));
  EXPECT_FALSE(Fits(R"({"a": {"c": {"d": 1}}})"));
  EXPECT_FALSE(Fits(R"({"a": {"c": 5}})"));
  // A subfield seen once stays part of the schema even when later rows omit it.
  Add(R"({"a": {"e": true}})");
  EXPECT_FALSE(Fits(R"({"a": {"e": 1}})"));
}

TEST_F(BucketSchemaTest, ArraysRecurseByPosition) {
  Add(R"({"a": [1, 2]})");
  EXPECT_TRUE(Fits(R"({"a": [3]})"));
  EXPECT_TRUE(Fits(R"({"a": [3, 4, "new position"]})"));
  EXPECT_FALSE(Fits(R"({"a": ["x"]})"));
  EXPECT_FALSE(Fits(R"({"a": [1, {"x": 1}]})"));
  Add(R"({"a": [1, 2, "s"]})");
  EXPECT_FALSE(Fits(R"({"a": [1, 2, 3]})"));
}

TEST_F(BucketSchemaTest, ObjectsInsideArrays) {
  Add(R"({"a": [{"x": 1}]})");
  EXPECT_TRUE(Fits(R"({"a": [{"x": 2, "y": "s"}]})"));
  EXPECT_FALSE(Fits(R"({"a": [{"x": "s"}]})"));
}

TEST_F(BucketSchemaTest, IsCompatibleDoesNotModify) {
  Add(R"({"a": 1})");
  EXPECT_TRUE(Fits(R"({"b": "x"})"));
  // b was only checked, never recorded.
  EXPECT_TRUE(Fits(R"({"b": 1})"));
}

TEST_F(BucketSchemaTest, UpdateIfCompatible) {
  EXPECT_TRUE(schema_.UpdateIfCompatible(J(R"({"a": 1})"), ""));
  EXPECT_FALSE(schema_.UpdateIfCompatible(J(R"({"a": "x", "b": 1})"), ""));
  // The rejected row left nothing behind.
  EXPECT_TRUE(Fits(R"({"b": "y"})"));
}

TEST_F(BucketSchemaTest, ResetForgetsEverything) {
  Add(R"({"a": 1})");
  schema_.Reset();
  EXPECT_TRUE(schema_.IsEmpty());
  EXPECT_TRUE(Fits(R"({"a": "x"})"));
}

TEST_F(BucketSchemaTest, ApproxMemoryGrows) {
  size_t empty = schema_.ApproxMemory();
  Add(R"({"a": 1, "b": {"c": [1, 2, 3]}})");
  EXPECT_GT(schema_.ApproxMemory(), empty);
}

TEST(BucketSchemaFromBucketTest, DerivesTheSchemaOfTheRows) {
  BucketMinMax mm;
  for (const char* r : {R"({"t": {"$date": "2021-01-01T00:00:00Z"}, "a": 1, "b": {"x": "s"}})",
                        R"({"t": {"$date": "2021-01-01T00:00:01Z"}, "a": 2.5, "c": [1, true]})",
                        R"({"t": {"$date": "2021-01-01T00:00:02Z"}, "b": {"y": null}})"}) {
    mm.Update(J(r), "");
  }
  auto sw = BucketSchema::FromBucket(mm.Min(), mm.Max());
  ASSERT_TRUE(sw.ok()) << sw.status().reason();
  const BucketSchema& schema = sw.value();
  EXPECT_TRUE(
      schema.IsCompatible(J(R"({"a": {"$numberLong": "3"}, "b": {"x": "t", "y": null}})"), ""));
  EXPECT_TRUE(schema.IsCompatible(J(R"({"c": [5, false, "new"]})"), ""));
  EXPECT_FALSE(schema.IsCompatible(J(R"({"a": "x"})"), ""));
  EXPECT_FALSE(schema.IsCompatible(J(R"({"b": {"x": 1}})"), ""));
  EXPECT_FALSE(schema.IsCompatible(J(R"({"b": {"y": 0}})"), ""));
  EXPECT_FALSE(schema.IsCompatible(J(R"({"c": [1, 1]})"), ""));
  EXPECT_FALSE(schema.IsCompatible(J(R"({"t": 5})"), ""));
}

TEST(BucketSchemaFromBucketTest, MixedSchemaBucketIsRejected) {
  // Rows {a: 1} and {a: "x"} (a pre-5.2 mixed bucket) give min {a: 1}, max {a: "x"}.
  auto sw = BucketSchema::FromBucket(J(R"({"a": 1})"), J(R"({"a": "x"})"));
  EXPECT_FALSE(sw.ok());
  EXPECT_EQ(sw.status().code(), ErrorCode::kBadValue);
  // Object in some rows, scalar in others: min scalar, max object.
  sw = BucketSchema::FromBucket(J(R"({"a": 5})"), J(R"({"a": {"x": 1}})"));
  EXPECT_FALSE(sw.ok());
  sw = BucketSchema::FromBucket(J(R"({"a": {"x": 1}})"), J(R"({"a": {"x": "s"}})"));
  EXPECT_FALSE(sw.ok());
}

}  // namespace
}  // namespace hourglass::timeseries
