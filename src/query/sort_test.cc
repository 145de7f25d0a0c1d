#include "query/sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "bson/bson_compare.h"
#include "query/query_errors.h"
#include "query/test_util.h"

namespace hourglass::query {
namespace {

using bson::BsonElement;
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

// A random scalar or small object of many BSON types, as field `name` of `b`.
void AppendRandomValue(bson::BsonBuilder& b, const std::string& name, std::mt19937& rng,
                       int depth = 0) {
  const double doubles[] = {0.0,
                            -0.0,
                            1.0,
                            1.5,
                            -2.25,
                            1e300,
                            -1e-300,
                            std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN()};
  const char* strings[] = {"", "a", "ab", "b", "a\x01", "host_12", "host_2", "\xc3\xa9"};
  switch (rng() % (depth == 0 ? 13 : 11)) {
    case 0:
      b.AppendInt32(name, static_cast<int32_t>(rng() % 7) - 3);
      break;
    case 1:
      b.AppendInt64(name, static_cast<int64_t>(rng() % 7) - 3);
      break;
    case 2:
      b.AppendDouble(name, doubles[rng() % std::size(doubles)]);
      break;
    case 3:
      b.AppendString(name, strings[rng() % std::size(strings)]);
      break;
    case 4:
      b.AppendBool(name, rng() % 2 == 0);
      break;
    case 5:
      b.AppendDate(name, static_cast<int64_t>(rng() % 5) * 1000 - 2000);
      break;
    case 6:
      b.AppendNull(name);
      break;
    case 7:
      b.AppendMinKey(name);
      break;
    case 8:
      b.AppendMaxKey(name);
      break;
    case 9:
      b.AppendTimestamp(name, rng() % 3);
      break;
    case 10:
      break;  // missing
    default: {
      size_t o = b.OpenObject(name);
      const int n = static_cast<int>(rng() % 3);
      for (int i = 0; i < n; ++i) {
        AppendRandomValue(b, std::string(1, static_cast<char>('x' + rng() % 2)), rng, depth + 1);
      }
      b.Close(o);
    }
  }
}

int Sign(int c) { return c < 0 ? -1 : c > 0 ? 1 : 0; }

TEST(SortPatternTest, KeysOrderAsTheValuesCompareWhateverTheirTypes) {
  // The extracted keys are compared bytewise: their order must be the canonical order of the
  // values (a missing field as null), reversed for descending fields, component by component.
  std::mt19937 rng(20261203);
  SortPattern p = SortPattern::Parse(J(R"({"a": 1, "b": -1})")).value();
  std::vector<BsonObj> docs;
  for (int i = 0; i < 300; ++i) {
    bson::BsonBuilder b;
    AppendRandomValue(b, "a", rng);
    AppendRandomValue(b, "b", rng);
    docs.push_back(b.Obj());
  }
  const BsonObj null_doc = J(R"({"v": null})");
  auto value = [&](const BsonObj& d, const char* f) {
    BsonElement e = d[f];
    return e.eoo() ? null_doc["v"] : e;
  };
  for (const BsonObj& x : docs) {
    for (const BsonObj& y : docs) {
      int want = bson::CompareElementValues(value(x, "a"), value(y, "a"));
      if (want == 0) want = -bson::CompareElementValues(value(x, "b"), value(y, "b"));
      ASSERT_EQ(Sign(p.CompareKeys(p.ExtractKey(x), p.ExtractKey(y))), Sign(want))
          << x.ToJson() << " vs " << y.ToJson();
    }
  }
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
