// MatchLastpoint, table-driven: which leading stages are a last-point spelling (time field "t",
// metaField "m"), and the order and key explain shows for them on bucket fields;
// SplitLastpointFilter: which filters the rewrite may run beneath.
#include "exec/lastpoint_pattern.h"

#include <gtest/gtest.h>

namespace hourglass::exec {
namespace {

using bson::BsonObj;

std::vector<BsonObj> Stages(std::string_view json_array) {
  auto holder = bson::FromJson(std::string("{\"p\": ") + std::string(json_array) + "}");
  EXPECT_TRUE(holder.ok()) << json_array;
  std::vector<BsonObj> out;
  if (!holder.ok()) return out;
  for (bson::BsonElement e : holder.value()["p"].Obj()) out.push_back(e.Obj().Owned());
  return out;
}

struct Case {
  const char* name;
  const char* stages;
  size_t matched;       // 0: not a last-point spelling
  const char* explain;  // when matched: {sortBy, groupBy} as JSON
};

TEST(LastpointPatternTest, RecognizesSpellingsOfTheSameMeaning) {
  const Case cases[] = {
      {"meta and time",
       R"([{"$sort": {"m": 1, "t": -1}}, {"$group": {"_id": "$m", "x": {"$first": "$$ROOT"}}}])", 2,
       R"({"sortBy": {"meta": 1, "control.max.t": -1}, "groupBy": "$meta"})"},
      {"subfield, descending, tie-breaker after time",
       R"([{"$sort": {"m.h": -1, "t": -1, "v": 1}}, {"$group": {"_id": "$m.h", "x": {"$first": "$v"}}}])",
       2, R"({"sortBy": {"meta.h": -1, "control.max.t": -1}, "groupBy": "$meta.h"})"},
      {"time alone",
       R"([{"$sort": {"t": -1}}, {"$group": {"_id": {"h": "$m.h", "r": "$m.r"}, "x": {"$first": "$v"}}}])",
       2, R"({"sortBy": {"control.max.t": -1}, "groupBy": {"h": "$meta.h", "r": "$meta.r"}})"},
      {"$last after ascending time",
       R"([{"$sort": {"m": 1, "t": 1}}, {"$group": {"_id": "$m", "x": {"$last": "$v"}}}])", 2,
       R"({"sortBy": {"meta": 1, "control.max.t": -1}, "groupBy": "$meta"})"},
      {"expression key",
       R"([{"$sort": {"t": -1}}, {"$group": {"_id": {"$toLower": "$m.h"}, "x": {"$first": "$v"}}}])",
       2, R"({"sortBy": {"control.max.t": -1}, "groupBy": {"$toLower": "$meta.h"}})"},
      {"$top",
       R"([{"$group": {"_id": "$m.h", "x": {"$top": {"sortBy": {"t": -1}, "output": "$v"}}}}])", 1,
       R"({"sortBy": {"control.max.t": -1}, "groupBy": "$meta.h"})"},
      {"$bottom with meta first and $max of time",
       R"([{"$group": {"_id": null, "x": {"$bottom": {"sortBy": {"m.h": 1, "t": 1}, "output": "$v"}}, "mt": {"$max": "$t"}}}])",
       1, R"({"sortBy": {"control.max.t": -1}, "groupBy": null})"},
      {"earliest",
       R"([{"$sort": {"m": 1, "t": 1}}, {"$group": {"_id": "$m", "x": {"$first": "$v"}}}])", 0, ""},
      {"$last after descending time",
       R"([{"$sort": {"m": 1, "t": -1}}, {"$group": {"_id": "$m", "x": {"$last": "$v"}}}])", 0, ""},
      {"measurement field before time",
       R"([{"$sort": {"v": 1, "t": -1}}, {"$group": {"_id": "$m", "x": {"$first": "$v"}}}])", 0,
       ""},
      {"no time in the sort",
       R"([{"$sort": {"m": 1}}, {"$group": {"_id": "$m", "x": {"$first": "$v"}}}])", 0, ""},
      {"key on a measurement",
       R"([{"$sort": {"t": -1}}, {"$group": {"_id": "$v", "x": {"$first": "$v"}}}])", 0, ""},
      {"key reads a variable",
       R"([{"$sort": {"t": -1}}, {"$group": {"_id": "$$ROOT.m", "x": {"$first": "$v"}}}])", 0, ""},
      {"key binds a variable",
       R"([{"$sort": {"t": -1}}, {"$group": {"_id": {"$map": {"input": "$m.l", "in": "$$this"}}, "x": {"$first": "$v"}}}])",
       0, ""},
      {"random key",
       R"([{"$sort": {"t": -1}}, {"$group": {"_id": {"$rand": {}}, "x": {"$first": "$v"}}}])", 0,
       ""},
      {"a sum beside",
       R"([{"$sort": {"m": 1, "t": -1}}, {"$group": {"_id": "$m", "x": {"$first": "$v"}, "n": {"$sum": 1}}}])",
       0, ""},
      {"$max of a measurement",
       R"([{"$group": {"_id": "$m", "x": {"$top": {"sortBy": {"t": -1}, "output": "$v"}}, "y": {"$max": "$v"}}}])",
       0, ""},
      {"$top of the earliest",
       R"([{"$group": {"_id": "$m", "x": {"$top": {"sortBy": {"t": 1}, "output": "$v"}}}}])", 0,
       ""},
      {"$max of time alone: control answers it",
       R"([{"$group": {"_id": "$m", "x": {"$max": "$t"}}}])", 0, ""},
      {"$first without a sort", R"([{"$group": {"_id": "$m", "x": {"$first": "$v"}}}])", 0, ""},
      {"a text score in the sort",
       R"([{"$sort": {"t": -1, "s": {"$meta": "textScore"}}}, {"$group": {"_id": "$m", "x": {"$first": "$v"}}}])",
       0, ""},
      {"a sort alone", R"([{"$sort": {"m": 1, "t": -1}}])", 0, ""},
      // The latest n per key: $firstN/$lastN after the sort, $topN/$bottomN by time.
      {"$firstN after the sort",
       R"([{"$sort": {"m": 1, "t": -1}}, {"$group": {"_id": "$m", "x": {"$firstN": {"n": 3, "input": "$v"}}}}])",
       2,
       R"({"sortBy": {"meta": 1, "control.max.t": -1}, "groupBy": "$meta", "n": {"$numberLong": "3"}})"},
      {"$lastN after ascending time, n a double",
       R"([{"$sort": {"t": 1}}, {"$group": {"_id": "$m.h", "x": {"$lastN": {"n": 4.0, "input": "$v"}}}}])",
       2, R"({"sortBy": {"control.max.t": -1}, "groupBy": "$meta.h", "n": {"$numberLong": "4"}})"},
      {"$topN beside $top: the larger n",
       R"([{"$group": {"_id": "$m", "x": {"$topN": {"n": 7, "sortBy": {"t": -1}, "output": "$v"}}, "y": {"$top": {"sortBy": {"t": -1}, "output": "$v"}}}}])",
       1, R"({"sortBy": {"control.max.t": -1}, "groupBy": "$meta", "n": {"$numberLong": "7"}})"},
      {"$bottomN of n 1",
       R"([{"$group": {"_id": "$m", "x": {"$bottomN": {"n": 1, "sortBy": {"t": 1}, "output": "$v"}}}}])",
       1, R"({"sortBy": {"control.max.t": -1}, "groupBy": "$meta"})"},
      {"$firstN after descending time, $lastN wanted ascending",
       R"([{"$sort": {"t": -1}}, {"$group": {"_id": "$m", "x": {"$lastN": {"n": 2, "input": "$v"}}}}])",
       0, ""},
      {"$topN of the earliest",
       R"([{"$group": {"_id": "$m", "x": {"$topN": {"n": 2, "sortBy": {"t": 1}, "output": "$v"}}}}])",
       0, ""},
      {"n an expression",
       R"([{"$group": {"_id": "$m", "x": {"$topN": {"n": {"$literal": 2}, "sortBy": {"t": -1}, "output": "$v"}}}}])",
       0, ""},
      {"n not whole",
       R"([{"$sort": {"t": -1}}, {"$group": {"_id": "$m", "x": {"$firstN": {"n": 2.5, "input": "$v"}}}}])",
       0, ""},
      {"n zero",
       R"([{"$sort": {"t": -1}}, {"$group": {"_id": "$m", "x": {"$firstN": {"n": 0, "input": "$v"}}}}])",
       0, ""},
      {"$firstN without a sort",
       R"([{"$group": {"_id": "$m", "x": {"$firstN": {"n": 2, "input": "$v"}}}}])", 0, ""},
      {"$maxN of time is not of the family",
       R"([{"$group": {"_id": "$m", "x": {"$maxN": {"n": 2, "input": "$t"}}}}])", 0, ""},
  };
  for (const Case& c : cases) {
    auto got = MatchLastpoint(Stages(c.stages), "t", "m");
    if (c.matched == 0) {
      EXPECT_FALSE(got.has_value()) << c.name;
      continue;
    }
    ASSERT_TRUE(got.has_value()) << c.name;
    EXPECT_EQ(got->stages, c.matched) << c.name;
    auto want = bson::FromJson(c.explain);
    ASSERT_TRUE(want.ok()) << c.name;
    EXPECT_TRUE(got->explain.BinaryEqual(want.value())) << c.name << ": " << got->explain.ToJson();
  }
}

TEST(LastpointPatternTest, MetaFieldPrefixIsNotAPath) {
  // "mx" starts with "m" but is a measurement field.
  EXPECT_FALSE(MatchLastpoint(
      Stages(
          R"([{"$sort": {"mx": 1, "t": -1}}, {"$group": {"_id": "$mx", "x": {"$first": "$v"}}}])"),
      "t", "m"));
  EXPECT_TRUE(MatchLastpoint(
      Stages(
          R"([{"$sort": {"m.x": 1, "t": -1}}, {"$group": {"_id": "$m.x", "x": {"$first": "$v"}}}])"),
      "t", "m"));
}

// A bucket's control of time field "t" (control.count left out when `count` is 0).
BsonObj Bucket(int64_t min_ms, int64_t max_ms, int64_t count) {
  std::string json = R"({"control": {"min": {"t": {"$date": )" + std::to_string(min_ms) +
                     R"(}}, "max": {"t": {"$date": )" + std::to_string(max_ms) + "}}";
  if (count > 0) json += R"(, "count": )" + std::to_string(count);
  auto doc = bson::FromJson(json + "}}");
  EXPECT_TRUE(doc.ok()) << json;
  return doc.ok() ? doc.value() : BsonObj();
}

TEST(LatestTimeBoundTest, BoundsTheNthLatestTimeFromTheControls) {
  LatestTimeBound bound(5, "t");
  EXPECT_FALSE(bound.Bound().has_value());
  // 3 measurements in [100, 200]: one at 200, two at or after 100; not yet 5.
  bound.Add(Bucket(100, 200, 3));
  EXPECT_FALSE(bound.Bound().has_value());
  EXPECT_TRUE(bound.MayHold(50));
  // 4 more in [150, 300]: 300 (1), 200 (1), 150 (3), 100 (2): the 5th latest is at or after 150.
  bound.Add(Bucket(150, 300, 4));
  ASSERT_TRUE(bound.Bound().has_value());
  EXPECT_EQ(*bound.Bound(), 150);
  EXPECT_FALSE(bound.MayHold(149));
  EXPECT_TRUE(bound.MayHold(150));
  // A newer bucket of 10 raises it to its own start.
  bound.Add(Bucket(400, 500, 10));
  EXPECT_EQ(*bound.Bound(), 400);
  // Without control.count (a version-1 or MongoDB 7.0 bucket) only control.max is certain.
  LatestTimeBound uncounted(2, "t");
  uncounted.Add(Bucket(0, 50, 0));
  EXPECT_FALSE(uncounted.Bound().has_value());
  uncounted.Add(Bucket(0, 40, 0));
  EXPECT_EQ(*uncounted.Bound(), 40);
  // n = 1: the latest control.max.
  LatestTimeBound one(1, "t");
  one.Add(Bucket(0, 70, 9));
  one.Add(Bucket(10, 60, 9));
  EXPECT_EQ(*one.Bound(), 70);
  // A bucket whose control.max is not a date is not counted.
  BsonObj not_a_date = bson::FromJson(R"({"control": {"max": {"t": 5}}})").value();
  EXPECT_FALSE(one.MaxTime(not_a_date).has_value());
  one.Add(not_a_date);
  EXPECT_EQ(*one.Bound(), 70);
}

}  // namespace
TEST(LastpointPatternTest, FiltersOfMetaTestsAndLowerBoundsOnTimeOnly) {
  const std::pair<const char*, bool> cases[] = {
      {R"({})", true},
      {R"({"m": 3})", true},
      {R"({"m.h": {"$in": ["a", "b"]}, "m.r": {"$exists": false}})", true},
      {R"({"t": {"$gte": {"$date": 1000}}})", true},
      {R"({"t": {"$gt": {"$date": 1000}, "$gte": {"$date": 5}}, "m.h": "a"})", true},
      {R"({"$and": [{"m.h": "a"}, {"$and": [{"t": {"$gt": {"$date": 0}}}]}]})", true},
      // An equality or an upper bound keeps older measurements of a series.
      {R"({"t": {"$date": 1000}})", false},
      {R"({"t": {"$lt": {"$date": 1000}}})", false},
      {R"({"t": {"$gte": {"$date": 0}, "$lte": {"$date": 1000}}})", false},
      {R"({"t": {"$not": {"$lt": {"$date": 1000}}}})", false},
      {R"({"t": {}})", false},
      // Measurement fields, alternatives, expressions, and paths that only begin like M.
      {R"({"v": 1})", false},
      {R"({"mm": 1})", false},
      {R"({"$or": [{"m": 1}, {"m": 2}]})", false},
      {R"({"$expr": {"$eq": ["$m", 1]}})", false},
      {R"({"$and": [1]})", false},
      {R"({"$and": [{"m": 1}, {"v": 2}]})", false},
  };
  for (const auto& [json, want] : cases) {
    auto filter = bson::FromJson(json);
    ASSERT_TRUE(filter.ok()) << json;
    EXPECT_EQ(SplitLastpointFilter(filter.value(), "t", "m").has_value(), want) << json;
  }
}

TEST(LastpointPatternTest, SplitsAFilterIntoTheMetaFieldsTestsAndTheBoundsOnTime) {
  auto filter =
      bson::FromJson(R"({"m.h": "a", "$and": [{"t": {"$gt": {"$date": 5}}}, {"m.r": {"$ne": 2}}],)"
                     R"( "t": {"$gte": {"$date": 1}}})");
  ASSERT_TRUE(filter.ok());
  auto parts = SplitLastpointFilter(filter.value(), "t", "m");
  ASSERT_TRUE(parts.has_value());
  EXPECT_EQ(parts->meta.ToJson(),
            bson::FromJson(R"({"$and": [{"m.h": "a"}, {"m.r": {"$ne": 2}}]})").value().ToJson());
  EXPECT_EQ(parts->time.ToJson(), bson::FromJson(R"({"$and": [{"t": {"$gt": {"$date": 5}}},)"
                                                 R"( {"t": {"$gte": {"$date": 1}}}]})")
                                      .value()
                                      .ToJson());
  // One test each: no $and around it; none: {}.
  parts = SplitLastpointFilter(bson::FromJson(R"({"t": {"$gt": {"$date": 5}}})").value(), "t", "m");
  ASSERT_TRUE(parts.has_value());
  EXPECT_TRUE(parts->meta.IsEmpty());
  EXPECT_EQ(parts->time.ToJson(),
            bson::FromJson(R"({"t": {"$gt": {"$date": 5}}})").value().ToJson());
}

}  // namespace hourglass::exec
