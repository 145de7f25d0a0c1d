// Accumulators with options (accumulator_n.cc) through ParseAccumulator, as $group and the
// window stages use them.
#include <gtest/gtest.h>

#include "pipeline/accumulator.h"
#include "pipeline/test_util.h"

namespace hourglass::pipeline {
namespace {

using testing::Docs;
using testing::Json;

// Runs the accumulator spec {op: arg} over `docs_json` and returns {"r": result} as JSON.
std::string Accumulate(std::string_view spec_json, std::string_view docs_json) {
  bson::BsonObj spec = Json(spec_json);
  bson::BsonElement acc = spec.FirstElement();
  auto parsed = ParseAccumulator(acc.FieldName(), acc, ParseContext());
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  if (!parsed.ok()) return "";
  EXPECT_TRUE(parsed.value().make);
  auto state = parsed.value().make();
  Variables vars;
  for (const auto& doc : Docs(docs_json)) {
    auto v = parsed.value().input->Evaluate(doc, vars);
    EXPECT_TRUE(v.ok());
    EXPECT_TRUE(state->Process(v.value()).ok());
  }
  bson::BsonBuilder b;
  state->Finalize().AppendTo(b, "r");
  return b.Obj().ToJson();
}

int ParseErrorCode(std::string_view spec_json) {
  bson::BsonObj spec = Json(spec_json);
  bson::BsonElement acc = spec.FirstElement();
  auto parsed = ParseAccumulator(acc.FieldName(), acc, ParseContext());
  return parsed.ok() ? 0 : static_cast<int>(parsed.status().code());
}

const char* kDocs = R"([{"s": 2, "v": "a"}, {"s": 1, "v": "b"}, {"s": 2, "v": "c"},
                        {"v": "d"}, {"s": 3, "v": "e"}])";

TEST(AccumulatorNTest, TopAndBottomKeepSortOrderAndTies) {
  EXPECT_EQ(Accumulate(R"({"$topN": {"n": 3, "sortBy": {"s": -1}, "output": "$v"}})", kDocs),
            R"({ "r" : [ "e", "a", "c" ] })");
  EXPECT_EQ(Accumulate(R"({"$bottomN": {"n": 2, "sortBy": {"s": -1}, "output": "$v"}})", kDocs),
            R"({ "r" : [ "b", "d" ] })");
  EXPECT_EQ(Accumulate(R"({"$top": {"sortBy": {"s": 1}, "output": "$v"}})", kDocs),
            R"({ "r" : "d" })");  // missing sorts first ascending
  EXPECT_EQ(Accumulate(R"({"$bottom": {"sortBy": {"s": 1}, "output": "$s"}})", kDocs),
            R"({ "r" : 3 })");
  EXPECT_EQ(Accumulate(R"({"$top": {"sortBy": {"s": 1}, "output": "$s"}})", "[]"),
            R"({ "r" : null })");
}

TEST(AccumulatorNTest, FirstLastMinMaxN) {
  EXPECT_EQ(Accumulate(R"({"$firstN": {"n": 2, "input": "$s"}})", kDocs), R"({ "r" : [ 2, 1 ] })");
  EXPECT_EQ(Accumulate(R"({"$lastN": {"n": 2, "input": "$s"}})", kDocs),
            R"({ "r" : [ null, 3 ] })");
  EXPECT_EQ(Accumulate(R"({"$minN": {"n": 3, "input": "$s"}})", kDocs), R"({ "r" : [ 1, 2, 2 ] })");
  EXPECT_EQ(Accumulate(R"({"$maxN": {"n": 2, "input": "$s"}})", kDocs), R"({ "r" : [ 3, 2 ] })");
}

TEST(AccumulatorNTest, PercentileIsTheDiscreteRank) {
  const char* docs = R"([{"x": 58}, {"x": 60}, {"x": 62}, {"x": 79}, {"x": 83}, {"x": "no"}])";
  EXPECT_EQ(Accumulate(R"({"$percentile": {"input": "$x", "p": [0.5, 0.75, 0.9, 0.95],
                                            "method": "approximate"}})",
                       docs),
            R"({ "r" : [ 62.0, 79.0, 83.0, 83.0 ] })");
  EXPECT_EQ(Accumulate(R"({"$median": {"input": "$x", "method": "approximate"}})", docs),
            R"({ "r" : 62.0 })");
  EXPECT_EQ(Accumulate(R"({"$median": {"input": "$x", "method": "approximate"}})", "[]"),
            R"({ "r" : null })");
}

TEST(AccumulatorNTest, SpecErrors) {
  EXPECT_EQ(ParseErrorCode(R"({"$topN": {"n": 1, "output": "$v"}})"), 5788005);
  EXPECT_EQ(ParseErrorCode(R"({"$topN": {"n": 0, "sortBy": {"s": 1}, "output": "$v"}})"), 5787908);
  EXPECT_EQ(ParseErrorCode(R"({"$firstN": {"n": "x", "input": "$v"}})"), 5787902);
  EXPECT_EQ(
      ParseErrorCode(R"({"$percentile": {"input": "$x", "p": [2], "method": "approximate"}})"),
      7750303);
  EXPECT_EQ(ParseErrorCode(R"({"$median": {"input": "$x", "method": "continuous"}})"), 2);
  EXPECT_EQ(ParseErrorCode(R"({"$nope": 1})"), 15952);
  // A non-constant n is left to the group: no `make`, a `make_for_group` instead.
  bson::BsonObj spec = Json(R"({"$firstN": {"n": "$k", "input": "$v"}})");
  auto parsed = ParseAccumulator("$firstN", spec.FirstElement(), ParseContext());
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE(parsed.value().make);
  auto state = parsed.value().make_for_group(Value::Object(Json(R"({"k": 2})")));
  ASSERT_TRUE(state.ok());
  auto bad = parsed.value().make_for_group(Value::Int(7));  // scalar key: n is missing
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(static_cast<int>(bad.status().code()), 5787902);
}

}  // namespace
}  // namespace hourglass::pipeline
