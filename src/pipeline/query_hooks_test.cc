#include "pipeline/query_hooks.h"

#include <gtest/gtest.h>

#include "pipeline/test_util.h"
#include "query/matcher.h"
#include "query/projection.h"
#include "query/update.h"

namespace hourglass::pipeline {
namespace {

using testing::Json;

TEST(QueryHooksTest, ExprInFiltersUsesTheExpressionLanguage) {
  ASSERT_TRUE(InstallQueryHooks());
  auto m = query::Matcher::Parse(
      Json(R"({"$or": [{"a": 0}, {"$expr": {"$gt": [{"$add": ["$a", "$b"]}, 10]}}]})"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m.value().Evaluate(Json(R"({"a": 6, "b": 5})")).value());
  EXPECT_FALSE(m.value().Evaluate(Json(R"({"a": 5, "b": 5})")).value());
  EXPECT_TRUE(m.value().Evaluate(Json(R"({"a": 0, "b": "x"})")).value());
  // $add of a string: the expression's own error code.
  EXPECT_EQ(m.value().Evaluate(Json(R"({"a": 1, "b": "x"})")).status().code(),
            ErrorCode::kLocation16554);
  // $$NOW comes from the context.
  auto now = query::Matcher::Parse(Json(R"({"$expr": {"$eq": ["$t", "$$NOW"]}})"),
                                   query::ExpressionContext{1234, nullptr, nullptr});
  ASSERT_TRUE(now.ok());
  EXPECT_TRUE(now.value().Matches(Json(R"({"t": {"$date": 1234}})")));
}

TEST(QueryHooksTest, UpdatePipelines) {
  ASSERT_TRUE(InstallQueryHooks());
  auto d = query::UpdateDriver::ParsePipeline(
      Json(R"({"0": {"$set": {"c": {"$add": ["$a", 1]}}}, "1": {"$unset": "a"}})"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  bool modified = false;
  auto r = d.value().Apply(Json(R"({"_id": 1, "a": 1, "b": 2})"), false, &modified);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().ToJson(), Json(R"({"_id": 1, "b": 2, "c": 2})").ToJson());
  EXPECT_TRUE(modified);
  EXPECT_EQ(query::UpdateDriver::ParsePipeline(Json(R"({"0": {"$match": {}}})")).status().code(),
            ErrorCode::kInvalidOptions);
  EXPECT_EQ(query::UpdateDriver::ParsePipeline(Json(R"({"0": {"$set": {"a": 1}}})"),
                                               Json(R"({"0": {"x": 1}})"))
                .status()
                .code(),
            ErrorCode::kFailedToParse);
  auto id = query::UpdateDriver::ParsePipeline(Json(R"({"0": {"$project": {"_id": 0}}})"));
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id.value().Apply(Json(R"({"_id": 1})"), false, nullptr).status().code(),
            ErrorCode::kImmutableField);
}

TEST(QueryHooksTest, OneTransformServesManyDocumentsAndSurvivesErrors) {
  ASSERT_TRUE(InstallQueryHooks());
  auto p = query::Projection::Parse(Json(R"({"_id": 0, "t": {"$multiply": ["$a", 2]}})"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  for (int i = 0; i < 3; ++i) {
    auto r = p.value().Apply(Json("{\"a\": " + std::to_string(i) + "}"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r.value()["t"].Int32(), 2 * i);
    // $multiply of a string fails for this document only; the next one is transformed.
    EXPECT_EQ(p.value().Apply(Json(R"({"a": "x"})")).status().code(), ErrorCode::kLocation16555);
  }
}

TEST(QueryHooksTest, ProjectionExpressions) {
  ASSERT_TRUE(InstallQueryHooks());
  auto p =
      query::Projection::Parse(Json(R"({"_id": 0, "t": {"$multiply": ["$a", 2]}, "s": "$b.c"})"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto r = p.value().Apply(Json(R"({"_id": 1, "a": 4, "b": {"c": "x"}})"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().ToJson(), Json(R"({"t": 8, "s": "x"})").ToJson());
  EXPECT_EQ(query::Projection::Parse(Json(R"({"a": {"$slice": 1}, "t": {"$add": [1, 2]}})"))
                .status()
                .code(),
            ErrorCode::kBadValue);
}

}  // namespace
}  // namespace hourglass::pipeline
