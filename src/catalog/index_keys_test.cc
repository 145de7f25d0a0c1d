// Index key generation: one key per value, MongoDB's multikey rules (arrays at the end of a path
// and in its middle, empty arrays, positional components), parallel arrays (171), hashed fields
// (16766), sparse and partial indexes; and default index names.
#include "catalog/index_keys.h"

#include <gtest/gtest.h>

#include "bson/key_string.h"

namespace hourglass::catalog {
namespace {

using bson::BsonObj;

BsonObj J(const char* json) { return bson::FromJson(json).value(); }

IndexDescriptor Desc(const char* spec) {
  auto d = IndexDescriptor::FromSpec(J(spec));
  EXPECT_TRUE(d.ok());
  return std::move(d).value();
}

// The decoded keys of `doc`, each as the JSON of {"": v, ...}.
std::vector<std::string> Keys(const IndexDescriptor& d, const char* doc) {
  auto keys = GenerateIndexKeys(d, J(doc));
  EXPECT_TRUE(keys.ok()) << keys.status().ToString();
  std::vector<std::string> out;
  for (const auto& k : keys.value().keys) {
    auto decoded = bson::DecodeIndexKey(k, d.key);
    EXPECT_TRUE(decoded.ok());
    out.push_back(decoded.value().ToJson());
  }
  return out;
}

// The raw keys of `doc` (one expected).
std::string OnlyKey(const IndexDescriptor& d, const char* doc) {
  auto keys = GenerateIndexKeys(d, J(doc));
  EXPECT_TRUE(keys.ok());
  EXPECT_EQ(keys.value().keys.size(), 1u) << doc;
  return keys.value().keys.empty() ? std::string() : keys.value().keys.front();
}

TEST(IndexKeysTest, CollatedIndexKeysStringsByTheirCollationKeys) {
  auto ci = Desc(R"({"v": 2, "key": {"a": 1, "b": -1}, "name": "ab",
                     "collation": {"locale": "en", "strength": 2}})");
  ASSERT_NE(ci.collator, nullptr);
  EXPECT_EQ(ci.collation["strength"].Int32(), 2);
  EXPECT_EQ(ci.collation["version"].Str(), "57.1");  // normalized
  // Case variants are one key, at any depth; accents (a secondary difference) are not.
  EXPECT_EQ(OnlyKey(ci, R"({"a": "Hello", "b": {"x": ["WORLD"]}})"),
            OnlyKey(ci, R"({"a": "hELLO", "b": {"x": ["world"]}})"));
  EXPECT_NE(OnlyKey(ci, R"({"a": "resume", "b": 1})"), OnlyKey(ci, R"({"a": "résumé", "b": 1})"));
  // Numbers key as in any index; key order is the collation's ("apple" < "Banana").
  EXPECT_EQ(
      OnlyKey(ci, R"({"a": 5, "b": 1})"),
      OnlyKey(Desc(R"({"v": 2, "key": {"a": 1, "b": -1}, "name": "ab"})"), R"({"a": 5, "b": 1})"));
  EXPECT_LT(OnlyKey(ci, R"({"a": "apple", "b": 1})"), OnlyKey(ci, R"({"a": "Banana", "b": 1})"));
  auto simple = Desc(R"({"v": 2, "key": {"a": 1}, "name": "a_1"})");
  EXPECT_NE(OnlyKey(simple, R"({"a": "Hello"})"), OnlyKey(simple, R"({"a": "hello"})"));
  EXPECT_EQ(simple.collator, nullptr);
  // Hashed components hash the collation key.
  auto hashed = Desc(R"({"v": 2, "key": {"h": "hashed"}, "name": "h",
                         "collation": {"locale": "en", "strength": 2}})");
  EXPECT_EQ(OnlyKey(hashed, R"({"h": "KEY"})"), OnlyKey(hashed, R"({"h": "key"})"));
  EXPECT_NE(OnlyKey(hashed, R"({"h": "key"})"), OnlyKey(hashed, R"({"h": "kee"})"));
}

TEST(IndexKeysTest, PartialFilterComparesUnderTheIndexCollation) {
  auto d = Desc(R"({"v": 2, "key": {"a": 1}, "name": "a_1", "partialFilterExpression":
                    {"k": "yes"}, "collation": {"locale": "en", "strength": 2}})");
  EXPECT_EQ(GenerateIndexKeys(d, J(R"({"a": 1, "k": "YES"})")).value().keys.size(), 1u);
  EXPECT_TRUE(GenerateIndexKeys(d, J(R"({"a": 1, "k": "no"})")).value().keys.empty());
}

TEST(IndexKeysTest, ScalarMissingAndNull) {
  auto d = Desc(R"({"v": 2, "key": {"a": 1}, "name": "a_1"})");
  EXPECT_EQ(Keys(d, R"({"a": 5})"), std::vector<std::string>{R"({ "" : 5 })"});
  EXPECT_EQ(Keys(d, R"({"b": 5})"), std::vector<std::string>{R"({ "" : null })"});
  EXPECT_EQ(Keys(d, R"({"a": null})"), std::vector<std::string>{R"({ "" : null })"});
  auto keys = GenerateIndexKeys(d, J(R"({"a": 5})"));
  EXPECT_FALSE(keys.value().multikey);
}

TEST(IndexKeysTest, LeafArrayGivesOneKeyPerDistinctElement) {
  auto d = Desc(R"({"v": 2, "key": {"a": 1}, "name": "a_1"})");
  auto keys = GenerateIndexKeys(d, J(R"({"a": [3, 1, 3, [2]]})"));
  ASSERT_TRUE(keys.ok());
  EXPECT_TRUE(keys.value().multikey);
  // 1, 3 and the nested array [2] (indexed whole); duplicates collapse.
  EXPECT_EQ(keys.value().keys.size(), 3u);
  EXPECT_EQ(Keys(d, R"({"a": []})"),
            std::vector<std::string>{R"({ "" : { "$undefined" : true } })"});
}

TEST(IndexKeysTest, ArraysInTheMiddleOfAPath) {
  auto d = Desc(R"({"v": 2, "key": {"a.b": 1}, "name": "a.b_1"})");
  EXPECT_EQ(Keys(d, R"({"a": [{"b": 2}, {"b": 1}]})"),
            (std::vector<std::string>{R"({ "" : 1 })", R"({ "" : 2 })"}));
  // An element without the field, and a scalar element, index as null.
  EXPECT_EQ(Keys(d, R"({"a": [{"b": 2}, 7, {"c": 1}]})"),
            (std::vector<std::string>{R"({ "" : null })", R"({ "" : 2 })"}));
  EXPECT_EQ(Keys(d, R"({"a": [{"b": [4, 5]}]})"),
            (std::vector<std::string>{R"({ "" : 4 })", R"({ "" : 5 })"}));
}

TEST(IndexKeysTest, PositionalComponentSelectsTheElement) {
  auto d = Desc(R"({"v": 2, "key": {"a.1": 1}, "name": "a.1_1"})");
  EXPECT_EQ(Keys(d, R"({"a": [10, 20, 30]})"), std::vector<std::string>{R"({ "" : 20 })"});
  EXPECT_EQ(Keys(d, R"({"a": [10]})"), std::vector<std::string>{R"({ "" : null })"});
}

TEST(IndexKeysTest, CompoundKeysAreTheCrossProduct) {
  auto d = Desc(R"({"v": 2, "key": {"a": 1, "b": -1}, "name": "a_1_b_-1"})");
  EXPECT_EQ(Keys(d, R"({"a": [1, 2], "b": "x"})"),
            (std::vector<std::string>{R"({ "" : 1, "" : "x" })", R"({ "" : 2, "" : "x" })"}));
  // Fields under one shared array are not parallel.
  auto shared = Desc(R"({"v": 2, "key": {"a.b": 1, "a.c": 1}, "name": "s"})");
  auto keys = GenerateIndexKeys(shared, J(R"({"a": [{"b": 1, "c": 2}, {"b": 3, "c": 4}]})"));
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  // Every combination is present, so bounds on both fields never lose the document.
  EXPECT_EQ(keys.value().keys.size(), 4u);
}

TEST(IndexKeysTest, ParallelArraysAreRejected) {
  auto d = Desc(R"({"v": 2, "key": {"a": 1, "b": 1}, "name": "a_1_b_1"})");
  auto keys = GenerateIndexKeys(d, J(R"({"a": [1], "b": [2]})"));
  EXPECT_EQ(keys.status().code(), ErrorCode::kCannotIndexParallelArrays);
  auto nested = Desc(R"({"v": 2, "key": {"x.b": 1, "x.c": 1}, "name": "n"})");
  keys = GenerateIndexKeys(nested, J(R"({"x": {"b": [1], "c": [2]}})"));
  EXPECT_EQ(keys.status().code(), ErrorCode::kCannotIndexParallelArrays);
  EXPECT_TRUE(GenerateIndexKeys(d, J(R"({"a": [1, 2], "b": 3})")).ok());
}

TEST(IndexKeysTest, BucketBoundsHoldingAnArrayAreRefusedOnBucketCollections) {
  auto d = Desc(R"({"v": 2, "key": {"meta": 1, "control.min.v": 1, "control.max.v": 1},
                    "name": "m_1_v_1"})");
  const char* bucket = R"({"meta": [1, 2], "control": {"min": {"v": [1]}, "max": {"v": [2]}}})";
  // A regular collection with these paths: parallel arrays.
  EXPECT_EQ(GenerateIndexKeys(d, J(bucket)).status().code(), ErrorCode::kCannotIndexParallelArrays);
  d.timeseries_buckets = true;
  auto keys = GenerateIndexKeys(d, J(bucket));
  EXPECT_EQ(keys.status().code(), ErrorCode::kLocation5930501);
  EXPECT_EQ(keys.status().reason(), "Indexed measurement field contains an array value");
  // An array meta is multikey as anywhere; scalar bounds index.
  keys = GenerateIndexKeys(
      d, J(R"({"meta": [1, 2], "control": {"min": {"v": 1}, "max": {"v": {"a": [2]}}}})"));
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_TRUE(keys.value().multikey);
  EXPECT_EQ(keys.value().keys.size(), 2u);
}

TEST(IndexKeysTest, HashedFields) {
  auto d = Desc(R"({"v": 2, "key": {"h": "hashed"}, "name": "h_hashed"})");
  auto one = GenerateIndexKeys(d, J(R"({"h": 1})")).value().keys;
  auto one_double = GenerateIndexKeys(d, J(R"({"h": 1.0})")).value().keys;
  auto two = GenerateIndexKeys(d, J(R"({"h": 2})")).value().keys;
  EXPECT_EQ(one, one_double);
  EXPECT_NE(one, two);
  EXPECT_EQ(GenerateIndexKeys(d, J(R"({"h": [1]})")).status().code(), ErrorCode::kLocation16766);
}

TEST(IndexKeysTest, SparseAndPartialSkipDocuments) {
  auto sparse = Desc(R"({"v": 2, "key": {"a": 1, "b": 1}, "name": "s", "sparse": true})");
  EXPECT_TRUE(Keys(sparse, R"({"c": 1})").empty());
  EXPECT_EQ(Keys(sparse, R"({"b": 1})").size(), 1u);
  auto partial = Desc(
      R"({"v": 2, "key": {"a": 1}, "name": "p", "partialFilterExpression": {"a": {"$gt": 5}}})");
  EXPECT_TRUE(Keys(partial, R"({"a": 1})").empty());
  EXPECT_EQ(Keys(partial, R"({"a": 6})").size(), 1u);
}

TEST(IndexKeysTest, KeyBytesMatchTheCompoundEncoding) {
  auto d = Desc(R"({"v": 2, "key": {"a": 1, "b": -1}, "name": "x"})");
  BsonObj doc = J(R"({"a": 3, "b": "z"})");
  EXPECT_EQ(GenerateIndexKeys(d, doc).value().keys,
            std::vector<std::string>{bson::EncodeIndexKey(d.key, doc)});
}

TEST(IndexKeysTest, DefaultNames) {
  EXPECT_EQ(DefaultIndexName(J(R"({"a": 1, "b": -1})")), "a_1_b_-1");
  EXPECT_EQ(DefaultIndexName(J(R"({"x.y": 1})")), "x.y_1");
  EXPECT_EQ(DefaultIndexName(J(R"({"h": "hashed"})")), "h_hashed");
  EXPECT_EQ(DefaultIndexName(J(R"({"a": 1.5})")), "a_1.5");
}

TEST(PrefixSuccessorTest, IncrementsTheLastNonFfByte) {
  EXPECT_EQ(PrefixSuccessor("ab"), std::optional<std::string>("ac"));
  EXPECT_EQ(PrefixSuccessor(std::string("a\xff", 2)), std::optional<std::string>("b"));
  EXPECT_EQ(PrefixSuccessor(std::string("\xff\xff", 2)), std::nullopt);
}

TEST(IndexKeysTest, SameKeyPatternComparesDirectionsAndTypes) {
  EXPECT_TRUE(SameKeyPattern(J(R"({"a": 1, "b": -1})"), J(R"({"a": 1.0, "b": -5})")));
  EXPECT_FALSE(SameKeyPattern(J(R"({"a": 1, "b": -1})"), J(R"({"a": 1, "b": 1})")));
  EXPECT_FALSE(SameKeyPattern(J(R"({"a": 1, "b": 1})"), J(R"({"b": 1, "a": 1})")));
  EXPECT_FALSE(SameKeyPattern(J(R"({"a": "hashed"})"), J(R"({"a": 1})")));
  EXPECT_FALSE(SameKeyPattern(J(R"({"a": 1})"), J(R"({"a": 1, "b": 1})")));
}

// Wildcard indexes: each key is (path, value) decoded as {"": "path", "": value}.
std::vector<std::string> WildcardKeys(const IndexDescriptor& d, const char* doc,
                                      bool* multikey = nullptr) {
  auto keys = GenerateIndexKeys(d, J(doc));
  EXPECT_TRUE(keys.ok()) << keys.status().ToString();
  if (multikey) *multikey = keys.value().multikey;
  BsonObj pattern = J(d.wildcard->descending ? R"({"p": 1, "v": -1})" : R"({"p": 1, "v": 1})");
  std::vector<std::string> out;
  for (const auto& k : keys.value().keys) {
    auto decoded = bson::DecodeIndexKey(k, pattern);
    EXPECT_TRUE(decoded.ok());
    BsonObj kv = decoded.value();
    auto it = kv.begin();
    std::string path(std::string((*it).Str()));
    ++it;
    bson::BsonBuilder b;
    b.AppendElementAs(*it, "v");
    out.push_back(path + "=" + b.Obj().ToJson());
  }
  return out;
}

using Strings = std::vector<std::string>;

TEST(WildcardKeysTest, OneKeyPerLeafPathAndValueWithoutId) {
  auto d = Desc(R"({"v": 2, "key": {"$**": 1}, "name": "$**_1"})");
  ASSERT_TRUE(d.wildcard.has_value());
  bool multikey = true;
  EXPECT_EQ(WildcardKeys(d, R"({"_id": 1, "a": 1, "b": {"c": "x", "d": {"e": true}}})", &multikey),
            (Strings{R"(a={ "v" : 1 })", R"(b.c={ "v" : "x" })", R"(b.d.e={ "v" : true })"}));
  EXPECT_FALSE(multikey);
}

TEST(WildcardKeysTest, ArraysIndexElementsUnderTheArrayPath) {
  auto d = Desc(R"({"v": 2, "key": {"$**": 1}, "name": "$**_1"})");
  bool multikey = false;
  // Elements share the path; objects in arrays are walked; a nested array is one value; an
  // empty array is undefined and an empty object is itself.
  EXPECT_EQ(WildcardKeys(d, R"({"a": [2, 1, 2, {"b": 3}, [4, 5]], "e": [], "o": {}})", &multikey),
            (Strings{R"(a={ "v" : 1 })", R"(a={ "v" : 2 })", R"(a={ "v" : [ 4, 5 ] })",
                     R"(a.b={ "v" : 3 })", R"(e={ "v" : { "$undefined" : true } })",
                     R"(o={ "v" : {  } })"}));
  EXPECT_TRUE(multikey);
  // The arrays walked are recorded by path (not the nested one, indexed as a value).
  auto keys = GenerateIndexKeys(d, J(R"({"a": [1, [2]], "b": {"c": [{"d": [3]}]}, "e": []})"));
  EXPECT_EQ(keys.value().array_paths, (Strings{"a", "b.c", "b.c.d", "e"}));
  EXPECT_TRUE(PathIsMultikey("b.c.d", keys.value().array_paths));
  EXPECT_TRUE(PathIsMultikey("a.x", keys.value().array_paths));
  EXPECT_FALSE(PathIsMultikey("b", keys.value().array_paths));
  EXPECT_FALSE(PathIsMultikey("ab", keys.value().array_paths));
}

TEST(WildcardKeysTest, NoKeysForADocumentWithOnlyId) {
  auto d = Desc(R"({"v": 2, "key": {"$**": 1}, "name": "$**_1"})");
  EXPECT_EQ(WildcardKeys(d, R"({"_id": 5})"), Strings{});
}

TEST(WildcardKeysTest, SubtreeKeyIndexesOnlyThatSubtree) {
  auto d = Desc(R"({"v": 2, "key": {"a.b.$**": 1}, "name": "a.b.$**_1"})");
  EXPECT_EQ(WildcardKeys(d, R"({"a": {"b": {"c": 1}, "x": 2}, "b": 3})"),
            Strings{R"(a.b.c={ "v" : 1 })"});
  EXPECT_EQ(WildcardKeys(d, R"({"a": [{"b": 1}, {"b": [2]}, 7]})"),
            (Strings{R"(a.b={ "v" : 1 })", R"(a.b={ "v" : 2 })"}));
  EXPECT_TRUE(d.wildcard->Covers("a.b"));
  EXPECT_TRUE(d.wildcard->Covers("a.b.c"));
  EXPECT_FALSE(d.wildcard->Covers("a"));
  EXPECT_FALSE(d.wildcard->Covers("a.bc"));
}

TEST(WildcardKeysTest, InclusionProjection) {
  auto d = Desc(
      R"({"v": 2, "key": {"$**": 1}, "name": "$**_1", "wildcardProjection": {"a": 1, "c.d": 1}})");
  EXPECT_EQ(WildcardKeys(d, R"({"_id": 0, "a": {"x": 1}, "b": 2, "c": {"d": 3, "e": 4}})"),
            (Strings{R"(a.x={ "v" : 1 })", R"(c.d={ "v" : 3 })"}));
  EXPECT_TRUE(d.wildcard->Covers("a.x"));
  EXPECT_TRUE(d.wildcard->Covers("c.d"));
  EXPECT_FALSE(d.wildcard->Covers("c"));
  EXPECT_FALSE(d.wildcard->Covers("b"));
  EXPECT_FALSE(d.wildcard->Covers("_id"));
}

TEST(WildcardKeysTest, ExclusionProjectionAndExplicitId) {
  auto d = Desc(
      R"({"v": 2, "key": {"$**": 1}, "name": "$**_1", "wildcardProjection": {"b": 0, "_id": 1}})");
  EXPECT_EQ(WildcardKeys(d, R"({"_id": 7, "a": 1, "b": {"c": 2}})"),
            (Strings{R"(_id={ "v" : 7 })", R"(a={ "v" : 1 })"}));
  EXPECT_TRUE(d.wildcard->Covers("_id"));
  EXPECT_TRUE(d.wildcard->Covers("a.z"));
  EXPECT_FALSE(d.wildcard->Covers("b"));
  EXPECT_FALSE(d.wildcard->Covers("b.c"));
  auto plain = Desc(R"({"v": 2, "key": {"$**": 1}, "name": "$**_1"})");
  EXPECT_FALSE(plain.wildcard->Covers("_id"));
  EXPECT_TRUE(plain.wildcard->Covers("x.y"));
}

TEST(WildcardKeysTest, DescendingKeyOrdersValuesDescending) {
  auto d = Desc(R"({"v": 2, "key": {"$**": -1}, "name": "$**_-1"})");
  EXPECT_EQ(WildcardKeys(d, R"({"a": [1, 2]})"), (Strings{R"(a={ "v" : 2 })", R"(a={ "v" : 1 })"}));
}

TEST(WildcardKeysTest, ProjectionErrors) {
  auto mixed = IndexDescriptor::FromSpec(
      J(R"({"v": 2, "key": {"$**": 1}, "name": "x", "wildcardProjection": {"a": 1, "b": 0}})"));
  EXPECT_EQ(mixed.status().code(), ErrorCode::kLocation31254);
  auto bad = IndexDescriptor::FromSpec(
      J(R"({"v": 2, "key": {"$**": 1}, "name": "x", "wildcardProjection": {"a": "yes"}})"));
  EXPECT_EQ(bad.status().code(), ErrorCode::kLocation7246207);
}

}  // namespace
}  // namespace hourglass::catalog
