// Accumulator::PartialState / MergePartial, which $group's spilling relies on: folding the
// partial states of consecutive slices of the input, in order, gives the single-pass result.
#include <gtest/gtest.h>

#include <cmath>

#include "pipeline/accumulator.h"
#include "pipeline/test_util.h"

namespace hourglass::pipeline {
namespace {

using testing::Docs;
using testing::Json;

const char* kDocs = R"([
  {"v": 3, "o": {"a": 1}}, {"v": 2.5, "o": {"b": 2}}, {"v": {"$numberLong": "9000000000000000000"}},
  {"s": "x", "o": {"a": 3}}, {"v": 3}, {"v": {"$numberDecimal": "1.25"}}, {"v": -7, "o": null},
  {"v": {"$numberLong": "9000000000000000000"}}, {"v": 3, "s": "x"}, {"v": 11}])";

// {"r": result} of `spec` over docs, in one pass or merged from slices cut at `cuts`.
std::string Accumulate(std::string_view spec_json, const std::vector<size_t>& cuts) {
  bson::BsonObj spec = Json(spec_json);
  bson::BsonElement acc = spec.FirstElement();
  auto parsed = ParseAccumulator(acc.FieldName(), acc, ParseContext());
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  if (!parsed.ok()) return "";
  auto make = [&] {
    return parsed.value().make ? parsed.value().make()
                               : std::move(parsed.value().make_for_group(Value::Null())).value();
  };
  auto docs = Docs(kDocs);
  Variables vars;
  auto merged = make();
  size_t begin = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(docs.size());
  for (size_t end : ends) {
    auto slice = make();
    for (size_t i = begin; i < end; ++i) {
      auto v = parsed.value().input->Evaluate(docs[i], vars);
      EXPECT_TRUE(v.ok());
      EXPECT_TRUE(slice->Process(v.value()).ok());
    }
    if (cuts.empty()) {
      merged = std::move(slice);
    } else {
      // The partial state goes through BSON, as it does through a spill file.
      bson::BsonBuilder b;
      slice->PartialState().AppendTo(b, "p");
      bson::BsonObj stored = b.Obj();
      EXPECT_TRUE(merged->MergePartial(Value::FromElement(stored["p"])).ok());
    }
    begin = end;
  }
  bson::BsonBuilder b;
  merged->Finalize().AppendTo(b, "r");
  return b.Obj().ToJson();
}

TEST(AccumulatorMergeTest, MergedSlicesEqualOnePass) {
  const char* specs[] = {
      R"({"$sum": "$v"})",
      R"({"$count": 1})",
      R"({"$avg": "$v"})",
      R"({"$min": "$v"})",
      R"({"$max": "$s"})",
      R"({"$first": "$s"})",
      R"({"$last": "$s"})",
      R"({"$push": "$v"})",
      R"({"$addToSet": "$v"})",
      R"({"$stdDevPop": "$v"})",
      R"({"$stdDevSamp": "$v"})",
      R"({"$mergeObjects": "$o"})",
      R"({"$top": {"sortBy": {"v": -1}, "output": "$s"}})",
      R"({"$bottomN": {"n": 3, "sortBy": {"v": -1}, "output": "$v"}})",
      R"({"$topN": {"n": 4, "sortBy": {"s": 1}, "output": "$v"}})",
      R"({"$firstN": {"n": 3, "input": "$s"}})",
      R"({"$lastN": {"n": 4, "input": "$v"}})",
      R"({"$minN": {"n": 2, "input": "$v"}})",
      R"({"$maxN": {"n": 3, "input": "$v"}})",
      R"({"$median": {"input": "$v", "method": "approximate"}})",
      R"({"$percentile": {"input": "$v", "p": [0.2, 0.9], "method": "approximate"}})",
  };
  const std::vector<std::vector<size_t>> cut_sets = {{1}, {3, 4}, {2, 5, 7, 9}, {0, 10}};
  for (const char* spec : specs) {
    const std::string one_pass = Accumulate(spec, {});
    for (const auto& cuts : cut_sets) {
      std::string merged = Accumulate(spec, cuts);
      if (std::string_view(spec).find("stdDev") != std::string_view::npos ||
          std::string_view(spec).find("avg") != std::string_view::npos) {
        // Floating point: compare numerically.
        double a = Json(one_pass)["r"].NumberDouble(), b = Json(merged)["r"].NumberDouble();
        EXPECT_NEAR(a, b, 1e-9 * std::max(1.0, std::fabs(a))) << spec;
      } else {
        EXPECT_EQ(merged, one_pass) << spec << " cut " << cuts.size();
      }
    }
  }
}

}  // namespace
}  // namespace hourglass::pipeline
