#include "query/projection.h"

#include <gtest/gtest.h>

#include "query/query_errors.h"
#include "query/test_util.h"

namespace hourglass::query {
namespace {

struct Case {
  const char* spec;
  const char* doc;
  const char* expected;
};

TEST(ProjectionTest, DocumentedCases) {
  std::vector<Case> cases = {
      // Inclusion: _id by default, document order kept.
      {R"({"item": 1, "status": 1})", R"({"_id": 1, "item": "a", "qty": 5, "status": "A"})",
       R"({"_id": 1, "item": "a", "status": "A"})"},
      {R"({"status": 1, "item": 1})", R"({"_id": 1, "item": "a", "qty": 5, "status": "A"})",
       R"({"_id": 1, "item": "a", "status": "A"})"},
      {R"({"item": 1, "_id": 0})", R"({"_id": 1, "item": "a", "qty": 5})", R"({"item": "a"})"},
      {R"({"_id": 1})", R"({"_id": 1, "item": "a"})", R"({"_id": 1})"},
      // Exclusion.
      {R"({"qty": 0})", R"({"_id": 1, "item": "a", "qty": 5})", R"({"_id": 1, "item": "a"})"},
      {R"({"_id": 0})", R"({"_id": 1, "item": "a"})", R"({"item": "a"})"},
      {R"({})", R"({"_id": 1, "item": "a"})", R"({"_id": 1, "item": "a"})"},
      // Embedded fields.
      {R"({"size.uom": 1})", R"({"_id": 1, "size": {"h": 14, "uom": "cm"}, "x": 1})",
       R"({"_id": 1, "size": {"uom": "cm"}})"},
      {R"({"size.uom": 0})", R"({"_id": 1, "size": {"h": 14, "uom": "cm"}, "x": 1})",
       R"({"_id": 1, "size": {"h": 14}, "x": 1})"},
      {R"({"size.uom": 1})", R"({"_id": 1, "size": 5})", R"({"_id": 1})"},
      {R"({"size.uom": 1})", R"({"_id": 1, "size": {"h": 1}})", R"({"_id": 1, "size": {}})"},
      // Paths through arrays apply to every element; scalars are dropped by inclusion.
      {R"({"instock.qty": 1})",
       R"({"_id": 1, "instock": [{"wh": "A", "qty": 5}, {"wh": "C", "qty": 15}, 7]})",
       R"({"_id": 1, "instock": [{"qty": 5}, {"qty": 15}]})"},
      {R"({"instock.qty": 0})", R"({"_id": 1, "instock": [{"wh": "A", "qty": 5}, 7]})",
       R"({"_id": 1, "instock": [{"wh": "A"}, 7]})"},
      // $slice.
      {R"({"a": {"$slice": 2}})", R"({"_id": 1, "a": [1, 2, 3], "b": 1})",
       R"({"_id": 1, "a": [1, 2], "b": 1})"},
      {R"({"a": {"$slice": -2}})", R"({"_id": 1, "a": [1, 2, 3]})", R"({"_id": 1, "a": [2, 3]})"},
      {R"({"a": {"$slice": [1, 1]}})", R"({"_id": 1, "a": [1, 2, 3]})", R"({"_id": 1, "a": [2]})"},
      {R"({"a": {"$slice": [-2, 5]}})", R"({"_id": 1, "a": [1, 2, 3]})",
       R"({"_id": 1, "a": [2, 3]})"},
      {R"({"a": {"$slice": 1}})", R"({"_id": 1, "a": "x"})", R"({"_id": 1, "a": "x"})"},
      {R"({"b": 1, "a": {"$slice": 1}})", R"({"_id": 1, "a": [1, 2], "b": 2, "c": 3})",
       R"({"_id": 1, "a": [1], "b": 2})"},
      // $elemMatch returns the first matching element only.
      {R"({"students": {"$elemMatch": {"school": 102}}})",
       R"({"_id": 1, "zip": "63109", "students": [{"name": "john", "school": 102},
           {"name": "jess", "school": 102}]})",
       R"({"_id": 1, "students": [{"name": "john", "school": 102}]})"},
      {R"({"students": {"$elemMatch": {"school": 999}}})",
       R"({"_id": 1, "students": [{"name": "john", "school": 102}]})", R"({"_id": 1})"},
  };
  for (const Case& c : cases) {
    auto p = Projection::Parse(J(c.spec));
    ASSERT_TRUE(p.ok()) << c.spec << ": " << p.status().ToString();
    EXPECT_EQ(p.value().Apply(J(c.doc)).value().ToJson(), J(c.expected).ToJson()) << c.spec;
  }
}

TEST(ProjectionTest, InclusionFlag) {
  EXPECT_TRUE(Projection::Parse(J(R"({"a": 1})")).value().IsInclusion());
  EXPECT_TRUE(Projection::Parse(J(R"({"a": true, "_id": 0})")).value().IsInclusion());
  EXPECT_FALSE(Projection::Parse(J(R"({"a": 0})")).value().IsInclusion());
  EXPECT_FALSE(Projection::Parse(J(R"({"_id": 0})")).value().IsInclusion());
}

TEST(ProjectionTest, Errors) {
  EXPECT_EQ(Projection::Parse(J(R"({"a": 1, "b": 0})")).status().code(), kExclusionInInclusionCode);
  EXPECT_EQ(Projection::Parse(J(R"({"a": 1, "b": 0})")).status().reason(),
            "Cannot do exclusion on field b in inclusion projection");
  EXPECT_EQ(Projection::Parse(J(R"({"a": 0, "b": 1})")).status().code(), kInclusionInExclusionCode);
  EXPECT_EQ(Projection::Parse(J(R"({"a": 1, "a.b": 1})")).status().code(),
            kProjectionPathCollisionCode);
  EXPECT_EQ(Projection::Parse(J(R"({"a": {"$slice": [1, 0]}})")).status().code(),
            ErrorCode::kLocation28724);
  // Expressions need the pipeline module, which query_test does not link.
  EXPECT_EQ(Projection::Parse(J(R"({"a": "x"})")).status().code(), ErrorCode::kCommandNotSupported);
  // Positional forms MongoDB's projection parser rejects, with its codes.
  EXPECT_EQ(Projection::Parse(J(R"({"a.$": 0})")).status().code(), ErrorCode::kLocation31395);
  EXPECT_EQ(Projection::Parse(J(R"({"a.$": 1, "b.$": 1})")).status().code(),
            ErrorCode::kLocation31276);
  EXPECT_EQ(Projection::Parse(J(R"({"a.$.b": 1})")).status().code(), ErrorCode::kLocation31394);
  EXPECT_EQ(Projection::Parse(J(R"({"a.$": {"$slice": 1}})")).status().code(),
            ErrorCode::kLocation31271);
  EXPECT_EQ(Projection::Parse(J(R"({"a.$": "x"})")).status().code(), ErrorCode::kLocation31308);
  EXPECT_EQ(Projection::Parse(J(R"({"a.$": 1, "b": {"$elemMatch": {"x": 1}}})")).status().code(),
            ErrorCode::kLocation31255);
  EXPECT_EQ(Projection::Parse(J(R"({"b": {"$elemMatch": {"x": 1}}, "a.$": 1})")).status().code(),
            ErrorCode::kLocation31256);
  // $slice and $elemMatch arguments MongoDB's projection parser rejects (a $slice that is
  // neither a number nor [skip, limit] is reported as failing the expression form too).
  for (const char* bad : {R"({"a": {"$slice": []}})", R"({"a": {"$slice": [1]}})",
                          R"({"a": {"$slice": [1, 2, 3]}})"}) {
    auto st = Projection::Parse(J(bad)).status();
    EXPECT_EQ(st.code(), ErrorCode::kLocation28667) << bad;
    EXPECT_NE(st.reason().find("Location31272"), std::string::npos) << st.reason();
  }
  auto elem = Projection::Parse(J(R"({"a": {"$elemMatch": [1]}})")).status();
  EXPECT_EQ(elem.code(), ErrorCode::kLocation31274);
  EXPECT_NE(elem.reason().find("but got array"), std::string::npos) << elem.reason();
  EXPECT_EQ(Projection::Parse(J(R"({"a.b": {"$elemMatch": {"x": 1}}})")).status().code(),
            ErrorCode::kLocation31275);
  EXPECT_EQ(Projection::Parse(J(R"({"a": {"$meta": "textScore"}})")).status().code(),
            ErrorCode::kBadValue);
  EXPECT_TRUE(Projection::Parse(J(R"({"a": 1, "_id": 0})")).ok());
}

TEST(ProjectionTest, PositionalKeepsTheMatchedElement) {
  auto p = Projection::Parse(J(R"({"grades.$": 1})"), J(R"({"grades": {"$gte": 85}})"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto r = p.value().Apply(J(R"({"_id": 1, "x": 1, "grades": [80, 85, 90]})"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().ToJson(), J(R"({"_id": 1, "grades": [85]})").ToJson());
  // Through embedded documents of the array.
  auto q = Projection::Parse(J(R"({"s.$": 1, "_id": 0})"), J(R"({"s.k": "b"})"));
  ASSERT_TRUE(q.ok());
  auto r2 = q.value().Apply(J(R"({"_id": 1, "s": [{"k": "a"}, {"k": "b", "v": 2}]})"));
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2.value().ToJson(), J(R"({"s": [{"k": "b", "v": 2}]})").ToJson());
  // The query did not go through the array: MongoDB's 51246.
  auto none = Projection::Parse(J(R"({"grades.$": 1})"), J(R"({"_id": 1})"));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none.value().Apply(J(R"({"_id": 1, "grades": [1]})")).status().code(),
            ErrorCode::kLocation51246);
  // A missing field or a scalar is projected as it is.
  EXPECT_EQ(none.value().Apply(J(R"({"_id": 1, "grades": 7})")).value().ToJson(),
            J(R"({"_id": 1, "grades": 7})").ToJson());
  EXPECT_EQ(none.value().Apply(J(R"({"_id": 1})")).value().ToJson(), J(R"({"_id": 1})").ToJson());
}

}  // namespace
}  // namespace hourglass::query
