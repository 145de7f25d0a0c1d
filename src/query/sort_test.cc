#include "query/sort.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "query/query_errors.h"
#include "query/test_util.h"

namespace hourglass::query {
namespace {

using bson::BsonObj;

// Sorts `docs` (JSON) by `spec` and returns their "_id" values in order.
std::vector<int> SortedIds(const char* spec, std::vector<const char*> docs) {
  SortPattern p = SortPattern::Parse(J(spec)).value();
  std::vector<BsonObj> objs;
  for (const char* d : docs) objs.push_back(J(d));
  std::stable_sort(objs.begin(), objs.end(),
                   [&](const BsonObj& a, const BsonObj& b) { return p.Compare(a, b) < 0; });
  std::vector<int> ids;
  for (const BsonObj& o : objs) ids.push_back(o["_id"].Int32());
  return ids;
}

TEST(SortPatternTest, AscendingAndDescending) {
  EXPECT_EQ(SortedIds(R"({"a": 1})", {R"({"_id": 1, "a": 3})", R"({"_id": 2, "a": 1})",
                                      R"({"_id": 3, "a": 2.5})"}),
            (std::vector<int>{2, 3, 1}));
  EXPECT_EQ(SortedIds(R"({"a": -1})", {R"({"_id": 1, "a": 3})", R"({"_id": 2, "a": 1})",
                                       R"({"_id": 3, "a": 2.5})"}),
            (std::vector<int>{1, 3, 2}));
}

TEST(SortPatternTest, CompoundKeys) {
  EXPECT_EQ(SortedIds(R"({"a": 1, "b": -1})",
                      {R"({"_id": 1, "a": 1, "b": 1})", R"({"_id": 2, "a": 1, "b": 2})",
                       R"({"_id": 3, "a": 0, "b": 0})"}),
            (std::vector<int>{3, 2, 1}));
}

TEST(SortPatternTest, MixedTypesFollowTheCanonicalOrder) {
  // null/missing < numbers < strings < objects < arrays' elements < ... < bool < date.
  EXPECT_EQ(SortedIds(R"({"a": 1})",
                      {R"({"_id": 1, "a": true})", R"({"_id": 2, "a": "s"})",
                       R"({"_id": 3, "a": 5})", R"({"_id": 4})", R"({"_id": 5, "a": {"x": 1}})",
                       R"({"_id": 6, "a": {"$date": "2020-01-01T00:00:00Z"}})"}),
            (std::vector<int>{4, 3, 2, 5, 1, 6}));
}

TEST(SortPatternTest, ArraysUseMinAscendingAndMaxDescending) {
  std::vector<const char*> docs = {R"({"_id": 1, "a": [1, 10]})", R"({"_id": 2, "a": [5, 6]})",
                                   R"({"_id": 3, "a": 3})"};
  EXPECT_EQ(SortedIds(R"({"a": 1})", docs), (std::vector<int>{1, 3, 2}));
  EXPECT_EQ(SortedIds(R"({"a": -1})", docs), (std::vector<int>{1, 2, 3}));
}

TEST(SortPatternTest, EmptyArraySortsBeforeNullAndMissing) {
  EXPECT_EQ(SortedIds(R"({"a": 1})", {R"({"_id": 1, "a": 1})", R"({"_id": 2})",
                                      R"({"_id": 3, "a": []})", R"({"_id": 4, "a": null})"}),
            (std::vector<int>{3, 2, 4, 1}));
}

TEST(SortPatternTest, DottedPathsThroughArrays) {
  EXPECT_EQ(SortedIds(R"({"a.b": 1})",
                      {R"({"_id": 1, "a": [{"b": 7}, {"b": 2}]})", R"({"_id": 2, "a": {"b": 4}})"}),
            (std::vector<int>{1, 2}));
}

TEST(SortPatternTest, KeysCompareLikeDocuments) {
  SortPattern p = SortPattern::Parse(J(R"({"a": -1, "b": 1})")).value();
  BsonObj x = J(R"({"a": 2, "b": 1})");
  BsonObj y = J(R"({"a": 2, "b": 0})");
  EXPECT_GT(p.CompareKeys(p.ExtractKey(x), p.ExtractKey(y)), 0);
  EXPECT_EQ(p.CompareKeys(p.ExtractKey(x), p.ExtractKey(x)), 0);
  EXPECT_EQ(p.NumKeys(), 2u);
}

TEST(SortPatternTest, ParseRules) {
  EXPECT_TRUE(SortPattern::Parse(J("{}")).value().IsEmpty());
  EXPECT_TRUE(SortPattern::Parse(J(R"({"a": 1.0, "b": {"$numberLong": "-1"}})")).ok());
  for (const char* bad : {R"({"a": 2})", R"({"a": 0})", R"({"a": "asc"})", R"({"a": true})"}) {
    auto r = SortPattern::Parse(J(bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), kBadSortDirectionCode);
  }
  EXPECT_EQ(SortPattern::Parse(J(R"({"s": {"$meta": "textScore"}})")).status().code(),
            ErrorCode::kBadValue);
}

}  // namespace
}  // namespace hourglass::query
