// Helpers shared by the pipeline module's tests (not part of the library).
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "bson/bson.h"
#include "bson/bson_compare.h"
#include "pipeline/expression.h"
#include "pipeline/pipeline.h"

namespace hourglass::pipeline::testing {

// ASCII letters compared without their case: a collation for the tests.
class CaseInsensitive final : public bson::StringComparator {
 public:
  int Compare(std::string_view a, std::string_view b) const override {
    const std::string x = ComparisonKey(a), y = ComparisonKey(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  std::string ComparisonKey(std::string_view s) const override {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  }
};

inline bson::BsonObj Json(std::string_view json) {
  auto r = bson::FromJson(json);
  EXPECT_TRUE(r.ok()) << r.status().ToString() << " in " << json;
  return r.ok() ? r.value() : bson::BsonObj();
}

// Documents from a JSON array "[{...}, {...}]".
inline std::vector<bson::BsonObj> Docs(std::string_view json_array) {
  bson::BsonObj wrapper = Json("{\"d\": " + std::string(json_array) + "}");
  std::vector<bson::BsonObj> out;
  for (const auto& e : wrapper["d"].Obj()) out.push_back(e.Obj().Owned());
  return out;
}

// Evaluates the expression `expr_json` over `doc_json`; the result as {"r": value} ({} when
// missing).
// `strings`: the collation the expression compares strings under (null: simple).
inline StatusWith<bson::BsonObj> EvalToDoc(
    std::string_view expr_json, std::string_view doc_json = "{}",
    std::shared_ptr<const bson::StringComparator> strings = {}) {
  bson::BsonObj spec = Json("{\"e\": " + std::string(expr_json) + "}");
  HG_ASSIGN_OR_RETURN(auto expr, Expression::ParseExpression(
                                     spec["e"], ParseContext().WithCollator(std::move(strings))));
  bson::BsonObj doc = Json(doc_json);
  Variables vars(1'000'000);
  HG_ASSIGN_OR_RETURN(Value v, expr->Evaluate(doc, vars));
  bson::BsonBuilder b;
  v.AppendTo(b, "r");
  return b.Obj();
}

// Runs `pipeline_json` (an array of stages) over `docs_json`.
inline StatusWith<std::vector<bson::BsonObj>> RunPipeline(std::string_view pipeline_json,
                                                          std::string_view docs_json,
                                                          PipelineContext ctx = {}) {
  bson::BsonObj p = Json("{\"p\": " + std::string(pipeline_json) + "}");
  HG_ASSIGN_OR_RETURN(auto pipeline, Pipeline::Parse(p["p"].Obj(), ctx));
  return pipeline->RunOver(Docs(docs_json));
}

inline std::string ToJson(const std::vector<bson::BsonObj>& docs) {
  std::string s = "[";
  for (size_t i = 0; i < docs.size(); ++i) s += (i ? ", " : "") + docs[i].ToJson();
  return s + "]";
}

}  // namespace hourglass::pipeline::testing
