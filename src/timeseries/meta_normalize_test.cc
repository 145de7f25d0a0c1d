#include "timeseries/meta_normalize.h"

#include <gtest/gtest.h>

#include <string>

namespace hourglass::timeseries {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;

BsonObj J(std::string_view json) {
  auto sw = bson::FromJson(json);
  EXPECT_TRUE(sw.ok()) << json;
  return sw.value();
}

// {"m": <normalized value of doc.m>}
BsonObj Normalized(const BsonObj& doc) {
  BsonBuilder b;
  AppendNormalizedMeta(b, "m", doc["m"]);
  return b.Obj();
}

void ExpectSameBytes(const BsonObj& actual, const BsonObj& expected) {
  EXPECT_TRUE(actual.BinaryEqual(expected))
      << "actual:   " << actual.ToCanonicalJson() << "\nexpected: " << expected.ToCanonicalJson();
}

TEST(MetaNormalizeTest, SortsTopLevelObjectFields) {
  ExpectSameBytes(Normalized(J(R"({"m": {"b": 2, "a": 1, "c": 3}})")),
                  J(R"({"m": {"a": 1, "b": 2, "c": 3}})"));
}

TEST(MetaNormalizeTest, SortsNestedObjectsRecursively) {
  ExpectSameBytes(Normalized(J(R"({"m": {"z": {"y": 1, "x": {"q": 1, "p": 2}}, "a": 0}})")),
                  J(R"({"m": {"a": 0, "z": {"x": {"p": 2, "q": 1}, "y": 1}}})"));
}

TEST(MetaNormalizeTest, SortsObjectsInsideArraysButKeepsArrayOrder) {
  ExpectSameBytes(Normalized(J(R"({"m": {"a": [{"c": 0, "b": 1}, 3, [{"e": 1, "d": 2}]]}})")),
                  J(R"({"m": {"a": [{"b": 1, "c": 0}, 3, [{"d": 2, "e": 1}]]}})"));
  ExpectSameBytes(Normalized(J(R"({"m": [3, 1, 2]})")), J(R"({"m": [3, 1, 2]})"));
}

TEST(MetaNormalizeTest, FieldNamesSortBytewise) {
  // Bytewise: uppercase before lowercase, a prefix before its extensions, UTF-8 lead bytes
  // (>= 0x80) after ASCII.
  ExpectSameBytes(Normalized(J(R"({"m": {"é": 1, "ab": 2, "a": 3, "B": 4, "_": 5}})")),
                  J(R"({"m": {"B": 4, "_": 5, "a": 3, "ab": 2, "é": 1}})"));
}

TEST(MetaNormalizeTest, ScalarsAreCopiedUntouched) {
  for (const char* json :
       {R"({"m": 1})", R"({"m": {"$numberLong": "1"}})", R"({"m": 1.5})", R"({"m": "x"})",
        R"({"m": null})", R"({"m": {"$date": "2021-05-18T00:00:00Z"}})",
        R"({"m": {"$numberDecimal": "1.50"}})", R"({"m": {"$oid": "0123456789abcdef01234567"}})",
        R"({"m": true})"}) {
    BsonObj doc = J(json);
    ExpectSameBytes(Normalized(doc), doc);
  }
}

TEST(MetaNormalizeTest, MissingMetaAppendsNothing) {
  BsonBuilder b;
  AppendNormalizedMeta(b, "m", J(R"({"x": 1})")["m"]);
  EXPECT_TRUE(b.Obj().IsEmpty());
  EXPECT_EQ(NormalizedMetaKey(bson::BsonElement()), "");
}

TEST(MetaNormalizeTest, KeyIgnoresFieldOrder) {
  EXPECT_EQ(NormalizedMetaKey(J(R"({"m": {"a": 1, "b": 2}})")["m"]),
            NormalizedMetaKey(J(R"({"m": {"b": 2, "a": 1}})")["m"]));
  EXPECT_EQ(NormalizedMetaKey(J(R"({"m": {"a": [{"b": 1, "c": 0}]}})")["m"]),
            NormalizedMetaKey(J(R"({"m": {"a": [{"c": 0, "b": 1}]}})")["m"]));
}

TEST(MetaNormalizeTest, KeyKeepsTypesAndArrayOrder) {
  auto key = [](std::string_view json) { return NormalizedMetaKey(J(json)["m"]); };
  EXPECT_NE(key(R"({"m": 1})"), key(R"({"m": {"$numberLong": "1"}})"));
  EXPECT_NE(key(R"({"m": 1})"), key(R"({"m": 1.0})"));
  EXPECT_NE(key(R"({"m": {"a": 1}})"), key(R"({"m": {"a": {"$numberLong": "1"}}})"));
  EXPECT_NE(key(R"({"m": {"a": [1, 2, 3]}})"), key(R"({"m": {"a": [2, 1, 3]}})"));
  EXPECT_NE(key(R"({"m": null})"), NormalizedMetaKey(bson::BsonElement()));
  EXPECT_NE(key(R"({"m": {}})"), key(R"({"m": []})"));
  EXPECT_EQ(key(R"({"m": "abc"})"), key(R"({"x": 0, "m": "abc"})"));
}

TEST(MetaNormalizeTest, KeyIsTypeByteAndValueBytes) {
  // int32 1: type 0x10, then 01 00 00 00.
  EXPECT_EQ(NormalizedMetaKey(J(R"({"m": 1})")["m"]), std::string("\x10\x01\x00\x00\x00", 5));
  // {b:1, a:2} -> {a:2, b:1}: 0x03, then the normalized document's bytes.
  BsonObj sorted = J(R"({"a": 2, "b": 1})");
  EXPECT_EQ(NormalizedMetaKey(J(R"({"m": {"b": 1, "a": 2}})")["m"]),
            std::string("\x03", 1) + std::string(sorted.bytes()));
}

TEST(MetaNormalizeTest, ArrayKeysAreRenumbered) {
  // An "array" whose keys are not 0, 1, ... (legal BSON, never produced by drivers) normalizes to
  // the canonical numbering, as MongoDB's array builder does.
  BsonBuilder inner;
  inner.AppendInt32("5", 1).AppendInt32("x", 2);
  BsonObj arr = inner.Obj();
  BsonBuilder outer;
  outer.AppendArray("m", arr);
  ExpectSameBytes(Normalized(outer.Obj()), J(R"({"m": [1, 2]})"));
}

}  // namespace
}  // namespace hourglass::timeseries
