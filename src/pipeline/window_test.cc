// $setWindowFields, $densify and $fill (window_stage.cc, window_functions.cc, densify_stage.cc).
#include <gtest/gtest.h>

#include "pipeline/errors.h"
#include "pipeline/pipeline.h"
#include "pipeline/stage.h"
#include "pipeline/test_util.h"
#include "pipeline/window_functions.h"
#include "query/path.h"

namespace hourglass::pipeline {
namespace {

using bson::BsonObj;
using testing::Docs;
using testing::Json;
using testing::RunPipeline;
using testing::ToJson;

void ExpectOutput(const char* pipeline, const char* input, const char* expected) {
  auto r = RunPipeline(pipeline, input);
  ASSERT_TRUE(r.ok()) << pipeline << ": " << r.status().ToString();
  auto want = Docs(expected);
  bool same = want.size() == r.value().size();
  for (size_t i = 0; same && i < want.size(); ++i) same = want[i].BinaryEqual(r.value()[i]);
  EXPECT_TRUE(same) << pipeline << "\n  got:  " << ToJson(r.value())
                    << "\n  want: " << ToJson(want);
}

// SetPathValues (how $setWindowFields writes its outputs) gives what SetPathValue gives one
// write at a time: positions kept, sub-documents created or replacing non-objects, missing
// values removing fields or creating nothing, new fields in the order of their creating write.
TEST(SetPathValuesTest, MatchesOneWriteAtATime) {
  struct Case {
    const char* doc;
    std::vector<std::pair<const char*, const char*>> writes;  // path, {"v": value} or "{}"
  };
  const std::vector<Case> cases = {
      {R"({"a": 1, "b": 2, "c": 3})", {{"c", R"({"v": 30})"}, {"a", R"({"v": 10})"}}},
      {R"({"a": 1})", {{"z", R"({"v": 1})"}, {"y", R"({"v": 2})"}, {"a", "{}"}}},
      {R"({"a": {"x": 1, "y": 2}, "b": 5})",
       {{"a.y", R"({"v": 20})"}, {"b.c", R"({"v": 1})"}, {"a.w", R"({"v": 3})"}}},
      {R"({"b": 1})", {{"n.x", "{}"}, {"m", R"({"v": 1})"}, {"n.y", R"({"v": 2})"}}},
      {R"({"a": 7, "k": 1})", {{"a.p", "{}"}, {"a.q", "{}"}}},
      {R"({"a": [1, 2], "d": {"e": {"f": 1}}})",
       {{"d.e.g", R"({"v": [1]})"}, {"d.e.f", "{}"}, {"a.b", R"({"v": "s"})"}}},
      {R"({})", {{"x.y.z", R"({"v": 1})"}, {"x.w", R"({"v": 2})"}, {"v", R"({"v": null})"}}},
  };
  for (const Case& c : cases) {
    BsonObj doc = Json(c.doc);
    std::vector<std::vector<std::string>> paths;
    std::vector<Value> values;
    for (const auto& [path, value] : c.writes) {
      paths.push_back(query::SplitPath(path));
      values.push_back(Value::FromElement(Json(value)["v"]));
    }
    std::vector<PathWrite> writes;
    std::vector<const std::vector<std::string>*> path_ptrs;
    BsonObj one_at_a_time = doc;
    for (size_t k = 0; k < paths.size(); ++k) {
      writes.push_back({&paths[k], &values[k]});
      path_ptrs.push_back(&paths[k]);
      one_at_a_time = SetPathValue(one_at_a_time, paths[k], values[k]);
    }
    ASSERT_TRUE(PathsAreIndependent(path_ptrs)) << c.doc;
    BsonObj got = SetPathValues(doc, writes);
    EXPECT_TRUE(got.BinaryEqual(one_at_a_time))
        << c.doc << "\n  got:  " << got.ToJson() << "\n  want: " << one_at_a_time.ToJson();
  }
  std::vector<std::string> a = query::SplitPath("a"), ab = query::SplitPath("a.b"),
                           ac = query::SplitPath("a.c"), abx = query::SplitPath("ab");
  EXPECT_FALSE(PathsAreIndependent({&ab, &a}));
  EXPECT_FALSE(PathsAreIndependent({&a, &a}));
  EXPECT_TRUE(PathsAreIndependent({&ab, &ac, &abx}));
}

void ExpectError(const char* pipeline, const char* input, int code, PipelineContext ctx = {}) {
  auto r = RunPipeline(pipeline, input, ctx);
  ASSERT_FALSE(r.ok()) << pipeline << " unexpectedly gave " << ToJson(r.value());
  EXPECT_EQ(static_cast<int>(r.status().code()), code) << pipeline << ": " << r.status().ToString();
}

const char* kSeries = R"([
  {"_id": 3, "g": "b", "t": 3, "v": 30},
  {"_id": 1, "g": "a", "t": 1, "v": 10},
  {"_id": 4, "g": "a", "t": 4, "v": 40},
  {"_id": 2, "g": "a", "t": 2, "v": 20},
  {"_id": 5, "g": "b", "t": 5, "v": 50}
])";

TEST(SetWindowFieldsTest, CumulativeSumOrdersByPartitionThenSort) {
  ExpectOutput(
      R"([{"$setWindowFields": {"partitionBy": "$g", "sortBy": {"t": 1},
            "output": {"s": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}}}}},
          {"$project": {"_id": 1, "s": 1}}])",
      kSeries,
      R"([{"_id": 1, "s": 10}, {"_id": 2, "s": 30}, {"_id": 4, "s": 70},
          {"_id": 3, "s": 30}, {"_id": 5, "s": 80}])");
}

// The ordered-input variant (what a time-series read by series and time takes) reads its input
// a partition at a time without sorting it: over input already in (partition, sortBy) order it
// answers as the stage over any order; partitions it sees apart stay apart.
TEST(SetWindowFieldsTest, OrderedInputVariantWindowsItsInputAsItComes) {
  const char* stages = R"({"p": [{"$setWindowFields": {"partitionBy": "$g", "sortBy": {"t": 1},
      "output": {"s": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}}}}},
      {"$project": {"_id": 1, "s": 1}}]})";
  auto sorting = Pipeline::Parse(Json(stages)["p"].Obj(), {});
  auto ordered = Pipeline::Parse(Json(stages)["p"].Obj(), {});
  ASSERT_TRUE(sorting.ok() && ordered.ok());
  ASSERT_TRUE(ordered.value()->FirstStageTakesOrderedInput());
  auto want = sorting.value()->RunOver(Docs(kSeries));
  const char* in_order = R"([
    {"_id": 1, "g": "a", "t": 1, "v": 10}, {"_id": 2, "g": "a", "t": 2, "v": 20},
    {"_id": 4, "g": "a", "t": 4, "v": 40}, {"_id": 3, "g": "b", "t": 3, "v": 30},
    {"_id": 5, "g": "b", "t": 5, "v": 50}])";
  auto got = ordered.value()->RunOver(Docs(in_order));
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ(ToJson(got.value()), ToJson(want.value()));
  // Not sorted again: "a" seen twice apart is two partitions.
  got = ordered.value()->RunOver(Docs(R"([{"_id": 1, "g": "a", "t": 1, "v": 10},
      {"_id": 3, "g": "b", "t": 3, "v": 30}, {"_id": 2, "g": "a", "t": 2, "v": 20}])"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(ToJson(got.value()),
            R"([{ "_id" : 1, "s" : 10 }, { "_id" : 3, "s" : 30 }, { "_id" : 2, "s" : 20 }])");
  // Stages without such a variant are left as they are.
  auto match = Pipeline::Parse(Json(R"({"p": [{"$match": {"g": "a"}}]})")["p"].Obj(), {});
  ASSERT_TRUE(match.ok());
  EXPECT_FALSE(match.value()->FirstStageTakesOrderedInput());
}

TEST(SetWindowFieldsTest, SlidingDocumentWindowAndDefaultWholePartition) {
  ExpectOutput(
      R"([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
            "m": {"$avg": "$v", "window": {"documents": [-1, 1]}},
            "n": {"$count": {}}}}},
          {"$project": {"_id": 1, "m": 1, "n": 1}}])",
      kSeries,
      R"([{"_id": 1, "m": 15.0, "n": 5}, {"_id": 2, "m": 20.0, "n": 5}, {"_id": 3, "m": 30.0, "n": 5},
          {"_id": 4, "m": 40.0, "n": 5}, {"_id": 5, "m": 45.0, "n": 5}])");
}

TEST(SetWindowFieldsTest, WindowsToTheEndOfThePartition) {
  ExpectOutput(
      R"([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
            "s": {"$sum": "$v", "window": {"documents": [-1, "unbounded"]}},
            "p": {"$push": "$v", "window": {"documents": [1, "unbounded"]}}}}},
          {"$project": {"_id": 1, "s": 1, "p": 1}}])",
      kSeries,
      R"([{"_id": 1, "s": 150, "p": [20, 30, 40, 50]}, {"_id": 2, "s": 150, "p": [30, 40, 50]},
          {"_id": 3, "s": 140, "p": [40, 50]}, {"_id": 4, "s": 120, "p": [50]},
          {"_id": 5, "s": 90, "p": []}])");
  ExpectOutput(
      R"([{"$setWindowFields": {"sortBy": {"t": 1},
            "output": {"s": {"$max": "$v", "window": {"range": ["current", "unbounded"]}}}}},
          {"$project": {"_id": 1, "s": 1}}])",
      R"([{"_id": 1, "t": 1, "v": 9}, {"_id": 2, "t": 1, "v": 2}, {"_id": 3, "t": 2, "v": 4}])",
      R"([{"_id": 1, "s": 9}, {"_id": 2, "s": 9}, {"_id": 3, "s": 4}])");
}

// Sliding $sum/$avg/$min/$max/$count (added and removed as the window moves) must agree with
// the expression operators applied to the window's $push.
TEST(SetWindowFieldsTest, SlidingWindowsAgreeWithRefolding) {
  std::string docs = "[";
  uint32_t seed = 12345;
  auto next = [&] { return seed = seed * 1103515245u + 12345u, (seed >> 16) % 1000; };
  int t = 0;
  for (int i = 0; i < 300; ++i) {
    t += 1 + static_cast<int>(next() % 3);
    std::string v;
    switch (next() % 6) {
      case 0:
        v = "null";
        break;
      case 1:
        v = "\"s\"";
        break;
      case 2:
        v = std::to_string(next()) + ".5";
        break;
      case 3:
        v = "{\"$numberLong\": \"" + std::to_string(next()) + "\"}";
        break;
      default:
        v = std::to_string(static_cast<int>(next()) - 500);
        break;
    }
    docs += std::string(i ? ", " : "") + "{\"t\": " + std::to_string(t) + ", \"v\": " + v + "}";
  }
  docs += "]";
  for (const char* window : {R"({"documents": [-3, 2]})", R"({"documents": [1, 4]})",
                             R"({"range": [-4, 1]})", R"({"range": [-2, "current"]})"}) {
    const std::string w = window;
    const std::string pipeline =
        R"([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
              "s": {"$sum": "$v", "window": )" +
        w + R"(},
              "a": {"$avg": "$v", "window": )" +
        w + R"(},
              "lo": {"$min": "$v", "window": )" +
        w + R"(},
              "hi": {"$max": "$v", "window": )" +
        w + R"(},
              "n": {"$count": {}, "window": )" +
        w + R"(},
              "p": {"$push": "$v", "window": )" +
        w + R"(}}}},
            {"$project": {"_id": 0, "s": 1, "a": 1, "lo": 1, "hi": 1, "n": 1,
              "s2": {"$sum": "$p"}, "a2": {"$avg": "$p"}, "lo2": {"$min": "$p"},
              "hi2": {"$max": "$p"}, "n2": {"$size": "$p"}}}])";
    auto r = RunPipeline(pipeline, docs);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r.value().size(), 300u);
    for (const auto& d : r.value()) {
      for (const char* f : {"s", "a", "lo", "hi", "n"}) {
        const std::string f2 = std::string(f) + "2";
        EXPECT_EQ(d[f].type(), d[f2].type()) << w << " " << d.ToJson();
        EXPECT_TRUE(ValuesEqual(Value::FromElement(d[f]), Value::FromElement(d[f2])))
            << w << " " << d.ToJson();
      }
    }
  }
}

TEST(SetWindowFieldsTest, RangeWindowOverNumbersAndDates) {
  ExpectOutput(
      R"([{"$setWindowFields": {"sortBy": {"t": 1},
            "output": {"s": {"$sum": "$v", "window": {"range": [-1, 0]}}}}},
          {"$project": {"_id": 1, "s": 1}}])",
      R"([{"_id": 1, "t": 1, "v": 1}, {"_id": 2, "t": 1.5, "v": 2}, {"_id": 3, "t": 3, "v": 4}])",
      R"([{"_id": 1, "s": 1}, {"_id": 2, "s": 3}, {"_id": 3, "s": 4}])");
  ExpectOutput(
      R"([{"$setWindowFields": {"sortBy": {"t": 1},
            "output": {"s": {"$sum": "$v", "window": {"range": [-1, "current"], "unit": "hour"}}}}},
          {"$project": {"_id": 1, "s": 1}}])",
      R"([{"_id": 1, "t": {"$date": "2021-01-01T00:00:00Z"}, "v": 1},
          {"_id": 2, "t": {"$date": "2021-01-01T00:30:00Z"}, "v": 2},
          {"_id": 3, "t": {"$date": "2021-01-01T02:00:00Z"}, "v": 4}])",
      R"([{"_id": 1, "s": 1}, {"_id": 2, "s": 3}, {"_id": 3, "s": 4}])");
}

TEST(SetWindowFieldsTest, RankFamily) {
  ExpectOutput(
      R"([{"$setWindowFields": {"sortBy": {"v": -1}, "output": {
            "r": {"$rank": {}}, "d": {"$denseRank": {}}, "n": {"$documentNumber": {}}}}},
          {"$project": {"_id": 1, "r": 1, "d": 1, "n": 1}}])",
      R"([{"_id": 1, "v": 5}, {"_id": 2, "v": 7}, {"_id": 3, "v": 5}, {"_id": 4, "v": 1}])",
      R"([{"_id": 2, "r": 1, "d": 1, "n": 1}, {"_id": 1, "r": 2, "d": 2, "n": 2},
          {"_id": 3, "r": 2, "d": 2, "n": 3}, {"_id": 4, "r": 4, "d": 3, "n": 4}])");
}

TEST(SetWindowFieldsTest, ShiftLocfLinearFill) {
  ExpectOutput(
      R"([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
            "prev": {"$shift": {"output": "$v", "by": -1, "default": "none"}},
            "l": {"$locf": "$v"}, "lin": {"$linearFill": "$v"}}}},
          {"$project": {"_id": 0, "t": 1, "prev": 1, "l": 1, "lin": 1}}])",
      R"([{"t": 1, "v": 10}, {"t": 2, "v": null}, {"t": 4}, {"t": 5, "v": 40}, {"t": 6}])",
      R"([{"t": 1, "prev": "none", "l": 10, "lin": 10},
          {"t": 2, "prev": 10, "l": 10, "lin": 17.5},
          {"t": 4, "prev": null, "l": 10, "lin": 32.5},
          {"t": 5, "l": 40, "lin": 40},
          {"t": 6, "prev": 40, "l": 40, "lin": null}])");
}

TEST(SetWindowFieldsTest, DerivativeIntegralExpMovingAvg) {
  ExpectOutput(
      R"([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
            "d": {"$derivative": {"input": "$v"}, "window": {"documents": [-1, 0]}},
            "i": {"$integral": {"input": "$v"}, "window": {"documents": ["unbounded", "current"]}},
            "e": {"$expMovingAvg": {"input": "$v", "N": 3}}}}},
          {"$project": {"_id": 0, "d": 1, "i": 1, "e": 1}}])",
      R"([{"t": 0, "v": 0}, {"t": 2, "v": 4}, {"t": 4, "v": 4}])",
      R"([{"d": null, "i": 0.0, "e": 0.0}, {"d": 2.0, "i": 4.0, "e": 2.0},
          {"d": 0.0, "i": 12.0, "e": 3.0}])");
}

TEST(SetWindowFieldsTest, MedianAndPercentileAreDiscrete) {
  ExpectOutput(
      R"([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
            "p": {"$percentile": {"input": "$v", "p": [0, 0.25, 0.5, 1], "method": "approximate"}},
            "m": {"$median": {"input": "$v", "method": "approximate"},
                  "window": {"documents": [-1, 1]}}}}},
          {"$project": {"_id": 1, "p": 1, "m": 1}}])",
      kSeries,
      R"([{"_id": 1, "p": [10.0, 20.0, 30.0, 50.0], "m": 10.0},
          {"_id": 2, "p": [10.0, 20.0, 30.0, 50.0], "m": 20.0},
          {"_id": 3, "p": [10.0, 20.0, 30.0, 50.0], "m": 30.0},
          {"_id": 4, "p": [10.0, 20.0, 30.0, 50.0], "m": 40.0},
          {"_id": 5, "p": [10.0, 20.0, 30.0, 50.0], "m": 40.0}])");
}

TEST(SetWindowFieldsTest, CovarianceAndStdDev) {
  ExpectOutput(
      R"([{"$setWindowFields": {"output": {
            "cp": {"$covariancePop": ["$x", "$y"]}, "cs": {"$covarianceSamp": ["$x", "$y"]},
            "sd": {"$stdDevPop": "$x"}}}},
          {"$limit": 1}, {"$project": {"_id": 0, "cp": 1, "cs": 1, "sd": 1}}])",
      R"([{"x": 1, "y": 2}, {"x": 3, "y": 6}, {"x": "skip", "y": 1}])",
      R"([{"cp": 2.0, "cs": 4.0, "sd": 1.0}])");
}

TEST(SetWindowFieldsTest, OutputReplacesInPlaceAndAppendsNested) {
  ExpectOutput(
      R"([{"$setWindowFields": {"output": {"a": {"$max": "$a"}, "x.y": {"$min": "$a"}}}}])",
      R"([{"_id": 1, "a": 3, "b": 1}, {"_id": 2, "a": 5, "b": 2}])",
      R"([{"_id": 1, "a": 5, "b": 1, "x": {"y": 3}}, {"_id": 2, "a": 5, "b": 2, "x": {"y": 3}}])");
}

TEST(SetWindowFieldsTest, ParseErrors) {
  const char* in = R"([{"t": 1, "v": 1}])";
  ExpectError(R"([{"$setWindowFields": 1}])", in, 9);
  ExpectError(R"([{"$setWindowFields": {"sortBy": {"t": 1}}}])", in, 40414);
  ExpectError(R"([{"$setWindowFields": {"output": {}, "bogus": 1}}])", in, 40415);
  ExpectError(R"([{"$setWindowFields": {"output": {"x": {"$summ": "$v"}}}}])", in, 9);
  ExpectError(R"([{"$setWindowFields": {"output": {"x": {"$topN": {"n": 1, "output": "$v"}}}}}])",
              in, 5788005);
  ExpectError(R"([{"$setWindowFields": {"output": {"x": {"$median": {"input": "$v"}}}}}])", in,
              40414);
  ExpectError(
      R"([{"$setWindowFields": {"output": {"x": {"$percentile": {"input": "$v", "p": [1.5], "method": "approximate"}}}}}])",
      in, 7750303);
  ExpectError(
      R"([{"$setWindowFields": {"output": {"x": {"$median": {"input": "$v", "method": "exact"}}}}}])",
      in, 2);
  ExpectError(R"([{"$setWindowFields": {"output": {"x": {"$rank": {}}}}}])", in, 5371602);
  ExpectError(
      R"([{"$setWindowFields": {"sortBy": {"t": 1, "v": 1}, "output": {"x": {"$rank": {}}}}}])", in,
      5371602);
  ExpectError(R"([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {"x": {"$rank": 1}}}}])", in,
              5371603);
  ExpectError(
      R"([{"$setWindowFields": {"output": {"x": {"$sum": "$v", "window": {"documents": [-1, 0]}}}}}])",
      in, 5339901);
  ExpectError(
      R"([{"$setWindowFields": {"sortBy": {"t": 1, "v": 1},
           "output": {"x": {"$sum": "$v", "window": {"range": [-1, 0]}}}}}])",
      in, 5339902);
  ExpectError(
      R"([{"$setWindowFields": {"sortBy": {"t": 1},
           "output": {"x": {"$sum": "$v", "window": {"documents": [1, -1]}}}}}])",
      in, 5339900);
  ExpectError(
      R"([{"$setWindowFields": {"sortBy": {"t": 1},
           "output": {"x": {"$sum": "$v", "window": {"documents": [0, 1, 2]}}}}}])",
      in, 9);
  ExpectError(
      R"([{"$setWindowFields": {"sortBy": {"t": 1},
           "output": {"x": {"$derivative": {"input": "$v"}}}}}])",
      in, 9);
  ExpectError(R"([{"$setWindowFields": {"output": {"x": {"$linearFill": "$v"}}}}])", in, 605001);
  ExpectError(
      R"([{"$setWindowFields": {"sortBy": {"t": 1},
           "output": {"x": {"$sum": "$v", "window": {"documents": [-1e30, 0]}}}}}])",
      in, 9);
}

TEST(SetWindowFieldsTest, RuntimeErrors) {
  ExpectError(
      R"([{"$setWindowFields": {"sortBy": {"t": 1},
           "output": {"x": {"$sum": "$v", "window": {"range": [-1, 0]}}}}}])",
      R"([{"t": "a", "v": 1}])", 5429414);
  ExpectError(
      R"([{"$setWindowFields": {"sortBy": {"t": 1},
           "output": {"x": {"$sum": "$v", "window": {"range": [-1, 0], "unit": "day"}}}}}])",
      R"([{"t": 1, "v": 1}])", 5429513);
  ExpectError(R"([{"$setWindowFields": {"partitionBy": "$a", "output": {"x": {"$sum": 1}}}}])",
              R"([{"a": [1, 2]}])", 5722400);
  ExpectError(
      R"([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {"x": {"$linearFill": "$v"}}}}])",
      R"([{"t": 1, "v": 1}, {"t": 1, "v": null}])", 6050106);
  PipelineContext small;
  small.limits.window = 200;
  ExpectError(R"([{"$setWindowFields": {"output": {"x": {"$sum": 1}}}}])",
              R"([{"a": "0123456789012345678901234567890123456789"}, {"a": 1}])", 292, small);
  // With allowDiskUse the sorted input spills, and so does a partition over the limit.
  small.allow_disk_use = true;
  small.tmp_dir = ::testing::TempDir() + "/window_test_spill";
  auto one = RunPipeline(
      R"([{"$setWindowFields": {"sortBy": {"a": -1}, "output": {"x": {"$sum": 1},
           "f": {"$first": "$a", "window": {"documents": [1, 1]}},
           "s": {"$shift": {"output": "$a", "by": -1}}}}}])",
      R"([{"a": "0123456789012345678901234567890123456789"}, {"a": 1}])", small);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(
      ToJson(one.value()),
      R"([{ "a" : "0123456789012345678901234567890123456789", "x" : 2, "f" : 1, "s" : null }, )"
      R"({ "a" : 1, "x" : 2, "f" : null, "s" : "0123456789012345678901234567890123456789" }])");
  auto ok =
      RunPipeline(R"([{"$setWindowFields": {"partitionBy": "$a", "output": {"x": {"$sum": 1}}}}])",
                  R"([{"a": "0123456789012345678901234567890123456789"}, {"a": 1}])", small);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(
      ToJson(ok.value()),
      R"([{ "a" : 1, "x" : 1 }, { "a" : "0123456789012345678901234567890123456789", "x" : 1 }])");
}

TEST(DensifyTest, NumericFullAndPartition) {
  ExpectOutput(R"([{"$densify": {"field": "v", "range": {"step": 2, "bounds": "full"}}}])",
               R"([{"v": 5}, {"v": 1}, {"x": 1}])", R"([{"x": 1}, {"v": 1}, {"v": 3}, {"v": 5}])");
  ExpectOutput(
      R"([{"$densify": {"field": "v", "partitionByFields": ["p"],
            "range": {"step": 1, "bounds": "partition"}}}])",
      R"([{"p": "b", "v": 7}, {"p": "a", "v": 1}, {"p": "a", "v": 3}, {"p": "b", "v": 9}])",
      R"([{"p": "a", "v": 1}, {"p": "a", "v": 2}, {"p": "a", "v": 3},
          {"p": "b", "v": 7}, {"p": "b", "v": 8}, {"p": "b", "v": 9}])");
}

TEST(DensifyTest, ExplicitBoundsUpperExclusiveAndOffGrid) {
  ExpectOutput(R"([{"$densify": {"field": "v", "range": {"step": 2, "bounds": [0, 6]}}}])",
               R"([{"v": 3}, {"v": 9}])", R"([{"v": 0}, {"v": 2}, {"v": 3}, {"v": 4}, {"v": 9}])");
}

TEST(DensifyTest, DatesWithUnit) {
  ExpectOutput(
      R"([{"$densify": {"field": "t", "range": {"step": 1, "unit": "month", "bounds": "full"}}}])",
      R"([{"t": {"$date": "2021-01-15T00:00:00Z"}}, {"t": {"$date": "2021-04-01T00:00:00Z"}}])",
      R"([{"t": {"$date": "2021-01-15T00:00:00Z"}}, {"t": {"$date": "2021-02-15T00:00:00Z"}},
          {"t": {"$date": "2021-03-15T00:00:00Z"}}, {"t": {"$date": "2021-04-01T00:00:00Z"}}])");
}

TEST(DensifyTest, Errors) {
  const char* in = R"([{"v": 1}])";
  ExpectError(R"([{"$densify": {"field": "v", "range": {"step": 0, "bounds": "full"}}}])", in,
              5733401);
  ExpectError(R"([{"$densify": {"field": "v", "range": {"step": 1, "bounds": "partition"}}}])", in,
              5733408);
  ExpectError(R"([{"$densify": {"field": "v", "range": {"step": 1, "bounds": [5, 1]}}}])", in,
              5733402);
  ExpectError(R"([{"$densify": {"field": "v", "range": {"step": 1, "bounds": [1]}}}])", in,
              5733403);
  ExpectError(R"([{"$densify": {"field": "v", "range": {"step": 1}}}])", in, 40414);
  ExpectError(R"([{"$densify": {"field": "v", "range": {"step": 1, "bounds": "full"}}}])",
              R"([{"v": "x"}])", 5733201);
  ExpectError(
      R"([{"$densify": {"field": "v", "range": {"step": 1, "unit": "day", "bounds": "full"}}}])",
      in, 6053600);
  PipelineContext small;
  small.limits.densify = 100;
  ExpectError(R"([{"$densify": {"field": "v", "range": {"step": 1, "bounds": "full"}}}])",
              R"([{"v": 1, "pad": "0123456789012345678901234567890123456789"}, {"v": 2}])", 292,
              small);
}

TEST(FillTest, ValueAndMethods) {
  ExpectOutput(
      R"([{"$fill": {"sortBy": {"t": 1}, "output": {
            "a": {"value": 0}, "b": {"method": "locf"}, "c": {"method": "linear"}}}},
          {"$project": {"_id": 0}}])",
      R"([{"t": 3, "a": 3, "b": 3, "c": 30}, {"t": 1, "a": 1, "b": 1, "c": 10},
          {"t": 2, "a": null, "b": null, "c": null}])",
      R"([{"t": 1, "a": 1, "b": 1, "c": 10}, {"t": 2, "a": 0, "b": 1, "c": 20.0},
          {"t": 3, "a": 3, "b": 3, "c": 30}])");
}

TEST(FillTest, Errors) {
  const char* in = R"([{"t": 1}])";
  ExpectError(R"([{"$fill": {"output": {}}}])", in, 6050203);
  ExpectError(R"([{"$fill": {"output": {"a": 1}}}])", in, 6050200);
  ExpectError(R"([{"$fill": {"output": {"a": {"value": 1, "method": "locf"}}}}])", in, 6050201);
  ExpectError(R"([{"$fill": {"output": {"a": {"method": "spline"}}}}])", in, 6050202);
  ExpectError(
      R"([{"$fill": {"partitionBy": "$p", "partitionByFields": ["p"],
           "output": {"a": {"method": "locf"}}}}])",
      in, 6050204);
  ExpectError(R"([{"$fill": {"output": {"a": {"method": "linear"}}}}])", in, 605001);
}

TEST(TimeUnitTest, AddsCalendarMonthsWithClamping) {
  // 2021-01-31 + 1 month = 2021-02-28; + 1 year from 2020-02-29 = 2021-02-28.
  EXPECT_EQ(AddTimeUnits(1612051200000, TimeUnit::kMonth, 1), 1614470400000);
  EXPECT_EQ(AddTimeUnits(1582934400000, TimeUnit::kYear, 1), 1614470400000);
  EXPECT_EQ(AddTimeUnits(0, TimeUnit::kWeek, -1), -604800000);
  EXPECT_FALSE(ParseTimeUnit("fortnight").ok());
  // Far beyond the representable dates the result saturates instead of overflowing.
  EXPECT_EQ(AddTimeUnits(INT64_MAX - 5, TimeUnit::kDay, 1), INT64_MAX);
  EXPECT_EQ(AddTimeUnits(0, TimeUnit::kWeek, INT64_MIN), INT64_MIN);
  EXPECT_EQ(AddTimeUnits(INT64_MAX - 5, TimeUnit::kYear, 1), INT64_MAX);
  EXPECT_EQ(AddTimeUnits(0, TimeUnit::kMonth, INT64_MAX), INT64_MAX);
  EXPECT_EQ(AddTimeUnits(0, TimeUnit::kQuarter, -4'000'000'000), INT64_MIN);
}

}  // namespace
}  // namespace hourglass::pipeline
