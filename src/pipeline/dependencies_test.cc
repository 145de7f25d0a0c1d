#include "pipeline/dependencies.h"

#include <gtest/gtest.h>

#include "pipeline/test_util.h"

namespace hourglass::pipeline {
namespace {

using testing::Docs;
using testing::Json;

struct DepsCase {
  const char* pipeline;
  bool whole;
  std::set<std::string> fields;  // checked only when !whole
};

TEST(DependenciesTest, PipelineDependencies) {
  const std::vector<DepsCase> cases = {
      {R"([{"$count": "n"}])", false, {}},
      {R"([{"$match": {"a.b": 1, "$or": [{"c": 2}, {"d": {"$gt": 1}}]}}, {"$count": "n"}])",
       false,
       {"a", "c", "d"}},
      {R"([{"$group": {"_id": "$m.k", "x": {"$max": "$temp"}, "n": {"$sum": 1}}}])",
       false,
       {"m", "temp"}},
      {R"([{"$group": {"_id": null, "t": {"$top": {"sortBy": {"ts": -1}, "output": "$v"}}}}])",
       false,
       {"ts", "v"}},
      {R"([{"$sort": {"t": 1}}, {"$limit": 3}, {"$project": {"a": 1, "b": "$c"}}])",
       false,
       {"_id", "t", "a", "c"}},  // b is computed, not read
      {R"([{"$project": {"_id": 0, "a": 1}}])", false, {"a"}},
      {R"([{"$addFields": {"z": {"$add": ["$x", "$y"]}}}, {"$group": {"_id": "$z"}}])",
       false,
       {"x", "y", "z"}},
      {R"([{"$project": {"_id": 0, "v": {"$literal": "$notAField"}}}])", false, {}},
      {R"([{"$project": {"_id": 0, "v": {"$const": "$notAField"}}}])", false, {}},
      // A computed dotted path reads its parent (an array there gets the field per element).
      {R"([{"$project": {"_id": 0, "c.a": "$m"}}])", false, {"c", "m"}},
      {R"([{"$replaceRoot": {"newRoot": "$$ROOT.sub"}}])", false, {"sub"}},
      {R"([{"$group": {"_id": {"$getField": {"field": "a.b", "input": "$o"}}}}])", false, {"o"}},
      {R"([{"$group": {"_id": {"$setField": {"field": "f", "input": {"$literal": {}},
                                             "value": "$v"}}}}])",
       false,
       {"v"}},
      // Whole document: the output is the input, or something reads it all.
      {R"([])", true, {}},
      {R"([{"$match": {"a": 1}}])", true, {}},
      {R"([{"$project": {"a": 0}}])", true, {}},
      {R"([{"$project": {"_id": 0}}])", true, {}},
      {R"([{"$project": {"a": {"b": 0}}}])", true, {}},
      {R"([{"$group": {"_id": "$$ROOT"}}])", true, {}},
      {R"([{"$group": {"_id": {"$getField": "a"}}}])", true, {}},
      {R"([{"$group": {"_id": {"$getField": {"field": "a"}}}}])", true, {}},
      {R"([{"$group": {"_id": {"$unsetField": {"field": "a", "input": "$$CURRENT"}}}}])", true, {}},
      {R"([{"$match": {"$where": "true"}}, {"$count": "n"}])", true, {}},
      {R"([{"$lookup": {"from": "x", "as": "y", "pipeline": []}}, {"$count": "n"}])", true, {}},
  };
  for (const DepsCase& c : cases) {
    bson::BsonObj holder = Json(std::string("{\"p\": ") + c.pipeline + "}");
    bson::BsonObj arr = holder["p"].Obj();
    std::vector<bson::BsonObj> stages;
    for (bson::BsonElement e : arr) stages.push_back(e.Obj());
    FieldDependencies deps = PipelineDependencies(stages);
    EXPECT_EQ(deps.needs_whole_document, c.whole) << c.pipeline;
    if (!c.whole && !deps.needs_whole_document) {
      EXPECT_EQ(deps.fields, c.fields) << c.pipeline;
    }
  }
}

TEST(DependenciesTest, FilterDependenciesTopLevelNames) {
  FieldDependencies d = FilterDependencies(
      Json(R"({"a.b": 1, "$expr": {"$gt": ["$c.d", "$$NOW"]}, "$comment": "x"})"));
  EXPECT_FALSE(d.needs_whole_document);
  EXPECT_EQ(d.fields, (std::set<std::string>{"a", "c"}));
  EXPECT_TRUE(FilterDependencies(Json(R"({"$jsonSchema": {}})")).needs_whole_document);
}

TEST(DependenciesTest, ExpressionDependenciesSeeRandomNumbers) {
  auto deps = [](const char* json) { return ExpressionDependencies(Json(json).FirstElement()); };
  EXPECT_TRUE(deps(R"({"x": {"$add": ["$m.k", {"$rand": {}}]}})").random);
  EXPECT_TRUE(deps(R"({"x": {"$cond": [{"$lt": [{"$rand": {}}, 0.5]}, "$a", "$b"]}})").random);
  EXPECT_FALSE(deps(R"({"x": {"$literal": {"$rand": {}}}})").random);
  EXPECT_FALSE(deps(R"({"x": {"$multiply": ["$a", 2]}})").random);
  FieldDependencies all;
  all.AddAll(deps(R"({"x": {"$rand": {}}})"));
  EXPECT_TRUE(all.random);
}

}  // namespace
}  // namespace hourglass::pipeline
