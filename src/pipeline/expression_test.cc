#include "pipeline/expression.h"

#include <gtest/gtest.h>

#include <cctype>

#include "pipeline/errors.h"
#include "pipeline/test_util.h"

namespace hourglass::pipeline {
namespace {

using testing::EvalToDoc;
using testing::Json;

struct EvalCase {
  const char* expr;
  const char* doc;
  const char* expected;  // the value as JSON, or nullptr for "missing"
};

void CheckCases(const std::vector<EvalCase>& cases) {
  for (const auto& c : cases) {
    auto r = EvalToDoc(c.expr, c.doc);
    ASSERT_TRUE(r.ok()) << c.expr << ": " << r.status().ToString();
    bson::BsonObj want =
        c.expected ? Json(std::string("{\"r\": ") + c.expected + "}") : bson::BsonObj();
    EXPECT_TRUE(r.value().BinaryEqual(want))
        << c.expr << " over " << c.doc << "\n  got:  " << r.value().ToCanonicalJson()
        << "\n  want: " << want.ToCanonicalJson();
  }
}

struct ErrorCase {
  const char* expr;
  const char* doc;
  int code;
};

void CheckErrors(const std::vector<ErrorCase>& cases) {
  for (const auto& c : cases) {
    auto r = EvalToDoc(c.expr, c.doc);
    ASSERT_FALSE(r.ok()) << c.expr << " unexpectedly gave " << r.value().ToJson();
    EXPECT_EQ(r.status().code(), LocationCode(c.code)) << c.expr << ": " << r.status().ToString();
  }
}

TEST(ExpressionTest, ComparingOperatorsUseTheParseContextsCollation) {
  const auto ci = std::make_shared<const testing::CaseInsensitive>();
  const char* doc = R"({"s": "Abc", "a": ["x", "ABC", "X"]})";
  struct Case {
    const char* expr;
    const char* with;     // under the collation
    const char* without;  // simple
  };
  for (const Case& c : std::vector<Case>{
           {R"({"$eq": ["$s", "aBC"]})", "true", "false"},
           {R"({"$cmp": ["$s", "abd"]})", "-1", "-1"},
           {R"({"$gt": ["$s", "B"]})", "false", "false"},
           {R"({"$lt": ["$s", "a"]})", "false", "true"},
           {R"({"$in": ["abc", "$a"]})", "true", "false"},
           {R"({"$indexOfArray": ["$a", "abc"]})", "1", "-1"},
           {R"({"$setUnion": ["$a", []]})", R"(["x", "ABC"])", R"(["x", "ABC", "X"])"},
           {R"({"$setIsSubset": [["abc"], "$a"]})", "true", "false"},
           {R"({"$max": ["b", "A", "C"]})", R"("C")", R"("b")"},
           {R"({"$sortArray": {"input": ["b", "A", "c"], "sortBy": 1}})", R"(["A", "b", "c"])",
            R"(["A", "b", "c"])"},
           {R"({"$sortArray": {"input": ["b", "C", "a"], "sortBy": -1}})", R"(["C", "b", "a"])",
            R"(["b", "a", "C"])"},
           {R"({"$minN": {"n": 1, "input": ["b", "A"]}})", R"(["A"])", R"(["A"])"},
           {R"({"$maxN": {"n": 1, "input": ["b", "C"]}})", R"(["C"])", R"(["b"])"},
       }) {
    for (bool collated : {true, false}) {
      auto r = testing::EvalToDoc(c.expr, doc, collated ? ci : nullptr);
      ASSERT_TRUE(r.ok()) << c.expr << ": " << r.status().ToString();
      bson::BsonObj want = Json(std::string("{\"r\": ") + (collated ? c.with : c.without) + "}");
      EXPECT_TRUE(r.value().BinaryEqual(want)) << c.expr << (collated ? " (collated)" : " (simple)")
                                               << " got " << r.value().ToCanonicalJson();
    }
  }
}

TEST(ExpressionTest, FieldPathsTraverseArrays) {
  CheckCases({
      {R"("$a")", R"({"a": 5})", "5"},
      {R"("$a.b")", R"({"a": {"b": "x"}})", R"("x")"},
      {R"("$a.b")", R"({"a": [{"b": 1}, {"c": 2}, {"b": 3}, 7]})", "[1, 3]"},
      {R"("$a.b")", R"({"a": [[{"b": 1}], {"b": 2}]})", "[[1], 2]"},
      {R"("$nope")", R"({"a": 1})", nullptr},
      {R"("$a.b")", R"({"a": 1})", nullptr},
      {R"("$$ROOT")", R"({"a": 1})", R"({"a": 1})"},
      {R"("$$CURRENT.a")", R"({"a": 1})", "1"},
      {R"("$$REMOVE")", R"({"a": 1})", nullptr},
      {R"("$$NOW")", "{}", R"({"$date": {"$numberLong": "1000000"}})"},
      {R"("plain")", "{}", R"("plain")"},
      {R"({"x": "$a", "y": {"z": 1}, "gone": "$missing"})", R"({"a": 2})",
       R"({"x": 2, "y": {"z": 1}})"},
      {R"(["$a", "$missing", 3])", R"({"a": 1})", "[1, null, 3]"},
      {R"({"$literal": "$a"})", R"({"a": 1})", R"("$a")"},
      {R"({"$let": {"vars": {"x": 2, "y": "$a"}, "in": {"$multiply": ["$$x", "$$y"]}}})",
       R"({"a": 5})", "10"},
      // Rebinding $$CURRENT moves field paths (and $$CURRENT) into its value; $$ROOT stays.
      {R"({"$let": {"vars": {"CURRENT": "$a"}, "in": ["$b", "$$CURRENT.c", "$$ROOT.b"]}})",
       R"({"a": {"b": 1, "c": 2}, "b": 3})", "[1, 2, 3]"},
      {R"({"$let": {"vars": {"CURRENT": "$a", "x": "$b"}, "in": "$$x"}})",
       R"({"a": {"b": 1}, "b": 3})", "3"},
      {R"({"$let": {"vars": {"CURRENT": "$a"},
                    "in": {"$let": {"vars": {"CURRENT": "$b"}, "in": "$c"}}}})",
       R"({"a": {"b": {"c": 7}}, "c": 0})", "7"},
      {R"({"$map": {"input": "$a", "as": "CURRENT", "in": "$v"}})",
       R"({"a": [{"v": 1}, {"v": 2}], "v": 9})", "[1, 2]"},
  });
}

TEST(ExpressionTest, ArithmeticFollowsNumericPromotion) {
  CheckCases({
      {R"({"$add": [1, 2]})", "{}", "3"},
      {R"({"$add": [2147483647, 1]})", "{}", R"({"$numberLong": "2147483648"})"},
      {R"({"$add": [1, 2.5]})", "{}", "3.5"},
      {R"({"$add": [{"$numberLong": "1"}, 2]})", "{}", R"({"$numberLong": "3"})"},
      {R"({"$add": [{"$numberLong": "9223372036854775807"}, 1]})", "{}", "9.2233720368547758e+18"},
      {R"({"$add": [1, null]})", "{}", "null"},
      {R"({"$add": [1, "$missing"]})", "{}", "null"},
      // Manual: $add with a date adds milliseconds.
      {R"({"$add": ["$d", 259200000]})", R"({"d": {"$date": "2014-03-01T08:00:00Z"}})",
       R"({"$date": "2014-03-04T08:00:00Z"})"},
      {R"({"$subtract": [5, 7]})", "{}", "-2"},
      {R"({"$subtract": ["$a", "$b"]})",
       R"({"a": {"$date": "2014-03-01T08:00:00Z"}, "b": {"$date": "2014-03-01T07:00:00Z"}})",
       R"({"$numberLong": "3600000"})"},
      {R"({"$subtract": ["$a", 60000]})", R"({"a": {"$date": "2014-03-01T08:00:00Z"}})",
       R"({"$date": "2014-03-01T07:59:00Z"})"},
      {R"({"$multiply": [2, 3, 4]})", "{}", "24"},
      {R"({"$multiply": [65536, 65536]})", "{}", R"({"$numberLong": "4294967296"})"},
      {R"({"$multiply": [2, 1.5]})", "{}", "3.0"},
      {R"({"$divide": [9, 3]})", "{}", "3.0"},
      {R"({"$divide": [1, 4]})", "{}", "0.25"},
      {R"({"$mod": [10, 3]})", "{}", "1"},
      {R"({"$mod": [-10, 3]})", "{}", "-1"},
      {R"({"$mod": [10.5, 3]})", "{}", "1.5"},
      {R"({"$abs": -5})", "{}", "5"},
      {R"({"$abs": -2147483648})", "{}", R"({"$numberLong": "2147483648"})"},
      {R"({"$abs": null})", "{}", "null"},
      {R"({"$ceil": 7.80})", "{}", "8.0"},
      {R"({"$ceil": -2.8})", "{}", "-2.0"},
      {R"({"$floor": -2.8})", "{}", "-3.0"},
      {R"({"$floor": 5})", "{}", "5"},
      {R"({"$sqrt": 25})", "{}", "5.0"},
      {R"({"$pow": [5, 0]})", "{}", "1"},
      {R"({"$pow": [5, 2]})", "{}", "25"},
      {R"({"$pow": [5, -2]})", "{}", "0.04"},
      {R"({"$pow": [4, 0.5]})", "{}", "2.0"},
      {R"({"$pow": [2, 40]})", "{}", R"({"$numberLong": "1099511627776"})"},
      {R"({"$exp": 0})", "{}", "1.0"},
      {R"({"$ln": 1})", "{}", "0.0"},
      {R"({"$log": [100, 10]})", "{}", "2.0"},
      {R"({"$log10": 1000})", "{}", "3.0"},
      // Manual $round / $trunc examples (round half to even).
      {R"({"$round": [19.25, 1]})", "{}", "19.2"},
      {R"({"$round": [28.73, -1]})", "{}", "30.0"},
      {R"({"$round": [34.3, 0]})", "{}", "34.0"},
      {R"({"$round": 10.5})", "{}", "10.0"},
      {R"({"$round": 11.5})", "{}", "12.0"},
      {R"({"$round": [1234, -2]})", "{}", "1200"},
      {R"({"$round": [1250, -2]})", "{}", "1200"},
      {R"({"$trunc": [19.25, 1]})", "{}", "19.2"},
      {R"({"$trunc": [28.73, -1]})", "{}", "20.0"},
      {R"({"$trunc": -2.8})", "{}", "-2.0"},
  });
}

TEST(ExpressionTest, ArithmeticErrorsCarryMongoCodes) {
  CheckErrors({
      {R"({"$add": [1, "a"]})", "{}", 16554},
      {R"({"$add": ["$d", "$d"]})", R"({"d": {"$date": "2014-03-01T08:00:00Z"}})", 16612},
      {R"({"$divide": [1, 0]})", "{}", 16608},
      {R"({"$divide": ["a", 1]})", "{}", 16609},
      {R"({"$mod": [1, 0]})", "{}", 16610},
      {R"({"$multiply": [1, "x"]})", "{}", 16555},
      {R"({"$sqrt": -1})", "{}", 28714},
      {R"({"$ln": 0})", "{}", 28766},
      {R"({"$pow": [0, -1]})", "{}", 28764},
      {R"({"$abs": "x"})", "{}", 28765},
      // Dates past 64 bits of milliseconds: an error, never a wrapped date.
      {R"({"$add": ["$d", {"$numberLong": "9223372036854775807"}]})", R"({"d": {"$date": 1000}})",
       static_cast<int>(ErrorCode::kOverflow)},
      {R"({"$add": ["$d", 1e300]})", R"({"d": {"$date": 0}})",
       static_cast<int>(ErrorCode::kOverflow)},
      {R"({"$subtract": ["$d", {"$numberLong": "9223372036854775807"}]})",
       R"({"d": {"$date": -1000}})", static_cast<int>(ErrorCode::kOverflow)},
      {R"({"$subtract": ["$d", -1e19]})", R"({"d": {"$date": 0}})",
       static_cast<int>(ErrorCode::kOverflow)},
  });
}

TEST(ExpressionTest, ParseErrors) {
  auto r = EvalToDoc(R"({"$foo": 1})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidPipelineOperator);
  EXPECT_EQ(r.status().reason(), "Unrecognized expression '$foo'");
  r = EvalToDoc(R"({"$size": [1, 2]})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), LocationCode(16020));
  EXPECT_EQ(r.status().reason(), "Expression $size takes exactly 1 arguments. 2 were passed in.");
  r = EvalToDoc(R"({"$round": [1, 2, 3]})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kLocation28667);
  CheckErrors({
      {R"("$$undefinedVar")", "{}", 17276},
      {R"({"$add": [1], "$sub": 2})", "{}", 15983},
      {R"({"$cond": {"if": true}})", "{}", 17081},
  });
}

TEST(ExpressionTest, ComparisonBooleanConditional) {
  CheckCases({
      {R"({"$cmp": ["$qty", 250]})", R"({"qty": 300})", "1"},
      {R"({"$cmp": ["$qty", 250]})", R"({"qty": 250.0})", "0"},
      {R"({"$eq": [1, {"$numberLong": "1"}]})", "{}", "true"},
      {R"({"$ne": ["a", "b"]})", "{}", "true"},
      {R"({"$gt": ["$qty", 250]})", R"({"qty": 100})", "false"},
      {R"({"$gte": [250, 250]})", "{}", "true"},
      {R"({"$lt": [null, 0]})", "{}", "true"},
      {R"({"$lte": ["$missing", null]})", "{}", "true"},
      {R"({"$eq": ["$missing", null]})", "{}", "false"},
      {R"({"$and": [1, "green"]})", "{}", "true"},
      {R"({"$and": []})", "{}", "true"},
      {R"({"$and": [null, true]})", "{}", "false"},
      {R"({"$and": [false, {"$divide": [1, 0]}]})", "{}", "false"},
      {R"({"$or": [false, 0, [0]]})", "{}", "true"},
      {R"({"$or": []})", "{}", "false"},
      {R"({"$not": [[false]]})", "{}", "false"},
      {R"({"$not": [null]})", "{}", "true"},
      {R"({"$cond": {"if": {"$gte": ["$qty", 250]}, "then": 30, "else": 20}})", R"({"qty": 300})",
       "30"},
      {R"({"$cond": [{"$gte": ["$qty", 250]}, 30, 20]})", R"({"qty": 100})", "20"},
      {R"({"$ifNull": ["$description", "Unspecified"]})", R"({"description": null})",
       R"("Unspecified")"},
      {R"({"$ifNull": ["$a", "$b", "c"]})", R"({"b": 2})", "2"},
      {R"({"$switch": {"branches": [{"case": {"$lt": ["$s", 5]}, "then": "low"},
                                     {"case": {"$lt": ["$s", 10]}, "then": "mid"}],
                       "default": "high"}})",
       R"({"s": 7})", R"("mid")"},
      {R"({"$switch": {"branches": [{"case": false, "then": 1}], "default": "d"}})", "{}",
       R"("d")"},
  });
  CheckErrors({{R"({"$switch": {"branches": [{"case": false, "then": 1}]}})", "{}", 40066}});
}

TEST(ExpressionTest, StringOperators) {
  CheckCases({
      {R"({"$concat": ["$item", " - ", "$description"]})",
       R"({"item": "ABC1", "description": "product 1"})", R"("ABC1 - product 1")"},
      {R"({"$concat": ["a", null]})", "{}", "null"},
      {R"({"$toUpper": "abC"})", "{}", R"("ABC")"},
      {R"({"$toLower": "ABc"})", "{}", R"("abc")"},
      {R"({"$toLower": null})", "{}", R"("")"},
      {R"({"$toUpper": 12})", "{}", R"("12")"},
      {R"({"$substrCP": ["abcde", 1, 2]})", "{}", R"("bc")"},
      {R"({"$substrCP": ["cafétéria", 0, 5]})", "{}", R"("cafét")"},
      {R"({"$substrCP": ["cafétéria", 5, 4]})", "{}", R"("éria")"},
      {R"({"$strLenCP": "cafétéria"})", "{}", "9"},
      {R"({"$strLenBytes": "cafétéria"})", "{}", "11"},
      {R"({"$split": ["June-15-2013", "-"]})", "{}", R"(["June", "15", "2013"])"},
      {R"({"$split": ["a--b", "-"]})", "{}", R"(["a", "", "b"])"},
      {R"({"$split": [null, "-"]})", "{}", "null"},
      {R"({"$trim": {"input": "  ggggoodbyeeeee  "}})", "{}", R"("ggggoodbyeeeee")"},
      {R"({"$trim": {"input": "ggggoodbyeeeee", "chars": "ge"}})", "{}", R"("oodby")"},
      {R"({"$ltrim": {"input": "  x  "}})", "{}", R"("x  ")"},
      {R"({"$rtrim": {"input": "  x  "}})", "{}", R"("  x")"},
      {R"({"$strcasecmp": ["abc", "ABC"]})", "{}", "0"},
      {R"({"$indexOfCP": ["cafeteria", "e"]})", "{}", "3"},
      {R"({"$indexOfCP": ["cafeteria", "x"]})", "{}", "-1"},
  });
  CheckErrors({
      {R"({"$concat": ["a", 1]})", "{}", 16702},
      {R"({"$strLenCP": 1})", "{}", 34471},
      {R"({"$split": ["a", ""]})", "{}", 40087},
  });
}

TEST(ExpressionTest, ArrayOperators) {
  CheckCases({
      {R"({"$size": "$colors"})", R"({"colors": ["blue", "black", "red"]})", "3"},
      {R"({"$arrayElemAt": [[1, 2, 3], 0]})", "{}", "1"},
      {R"({"$arrayElemAt": [[1, 2, 3], -1]})", "{}", "3"},
      {R"({"$arrayElemAt": [[1, 2, 3], 15]})", "{}", nullptr},
      {R"({"$first": [[1, 2, 3]]})", "{}", "1"},
      {R"({"$last": [[1, 2, 3]]})", "{}", "3"},
      {R"({"$in": [2, [1, 2, 3]]})", "{}", "true"},
      {R"({"$in": ["abc", ["xyz", "abc"]]})", "{}", "true"},
      {R"({"$in": [[1], [1, 2]]})", "{}", "false"},
      {R"({"$isArray": ["hello"]})", "{}", "false"},
      {R"({"$isArray": [[1]]})", "{}", "true"},
      {R"({"$concatArrays": [["hello", " "], ["world"]]})", "{}", R"(["hello", " ", "world"])"},
      {R"({"$concatArrays": [[1], null]})", "{}", "null"},
      {R"({"$slice": [[1, 2, 3], 1, 1]})", "{}", "[2]"},
      {R"({"$slice": [[1, 2, 3], -2]})", "{}", "[2, 3]"},
      {R"({"$slice": [[1, 2, 3], 15, 2]})", "{}", "[]"},
      {R"({"$slice": [[1, 2, 3], -15, 2]})", "{}", "[1, 2]"},
      {R"({"$filter": {"input": [1, "a", 2, null, 3.1, {"$numberLong": "4"}, "5"],
                       "as": "num", "cond": {"$isNumber": "$$num"}}})",
       "{}", R"([1, 2, 3.1, {"$numberLong": "4"}])"},
      {R"({"$filter": {"input": "$items", "cond": {"$gte": ["$$this.price", 100]}}})",
       R"({"items": [{"price": 10}, {"price": 150}]})", R"([{"price": 150}])"},
      {R"({"$filter": {"input": [1, 2, 3, 4], "cond": {"$gt": ["$$this", 1]}, "limit": 2}})", "{}",
       "[2, 3]"},
      {R"({"$map": {"input": "$quizzes", "as": "grade", "in": {"$add": ["$$grade", 2]}}})",
       R"({"quizzes": [5, 6, 7]})", "[7, 8, 9]"},
      {R"({"$map": {"input": null, "in": 1}})", "{}", "null"},
      {R"({"$reduce": {"input": ["a", "b", "c"], "initialValue": "",
                       "in": {"$concat": ["$$value", "$$this"]}}})",
       "{}", R"("abc")"},
      {R"({"$reverseArray": [[1, 2, 3]]})", "{}", "[3, 2, 1]"},
      {R"({"$indexOfArray": [["a", "abc", "b"], "b"]})", "{}", "2"},
      {R"({"$range": [0, 10, 3]})", "{}", "[0, 3, 6, 9]"},
      {R"({"$sum": [[1, 2, "x", 3.5]]})", "{}", "6.5"},
      {R"({"$sum": ["$a", "$b"]})", R"({"a": 1, "b": 2})", "3"},
      {R"({"$avg": [[1, 2, 3, 4]]})", "{}", "2.5"},
      {R"({"$max": [[1, 5, null, 3]]})", "{}", "5"},
      {R"({"$min": [4, 2, 8]})", "{}", "2"},
  });
  CheckErrors({
      {R"({"$size": "$missing"})", "{}", 17124},
      {R"({"$arrayElemAt": ["x", 0]})", "{}", 28689},
      {R"({"$in": [1, "x"]})", "{}", 40081},
      {R"({"$concatArrays": [[1], 2]})", "{}", 28664},
      {R"({"$filter": {"input": 1, "cond": true}})", "{}", 28651},
  });
}

TEST(ExpressionTest, TypeConversions) {
  CheckCases({
      {R"({"$isNumber": "1"})", "{}", "false"},
      {R"({"$toInt": "123"})", "{}", "123"},
      {R"({"$toInt": 5.9})", "{}", "5"},
      {R"({"$toInt": true})", "{}", "1"},
      {R"({"$toLong": "$d"})", R"({"d": {"$date": "2018-03-26T04:38:28.044Z"}})",
       R"({"$numberLong": "1522039108044"})"},
      {R"({"$toDouble": "5.5"})", "{}", "5.5"},
      {R"({"$toDouble": false})", "{}", "0.0"},
      {R"({"$toString": 2.5})", "{}", R"("2.5")"},
      {R"({"$toString": 100})", "{}", R"("100")"},
      {R"({"$toString": true})", "{}", R"("true")"},
      {R"({"$toString": "$d"})", R"({"d": {"$date": "2018-03-27T16:58:51.538Z"}})",
       R"("2018-03-27T16:58:51.538Z")"},
      {R"({"$toString": null})", "{}", "null"},
      {R"({"$toBool": 0})", "{}", "false"},
      {R"({"$toBool": "false"})", "{}", "true"},
      {R"({"$toBool": ""})", "{}", "true"},
      {R"({"$toDate": "2018-03-03"})", "{}", R"({"$date": "2018-03-03T00:00:00Z"})"},
      {R"({"$toDate": "2018-03-20T11:00:06.000+01:00"})", "{}",
       R"({"$date": "2018-03-20T10:00:06Z"})"},
      {R"({"$toDate": {"$numberLong": "1522039108044"}})", "{}",
       R"({"$date": "2018-03-26T04:38:28.044Z"})"},
      {R"({"$toObjectId": "5ab9cbfa31c2ab715d42129e"})", "{}",
       R"({"$oid": "5ab9cbfa31c2ab715d42129e"})"},
      {R"({"$convert": {"input": "abc", "to": "int", "onError": "bad"}})", "{}", R"("bad")"},
      {R"({"$convert": {"input": null, "to": "int", "onNull": 0}})", "{}", "0"},
      {R"({"$convert": {"input": "42", "to": 16}})", "{}", "42"},
      {R"({"$convert": {"input": 1.99999, "to": "long"}})", "{}", R"({"$numberLong": "1"})"},
  });
  CheckErrors({
      {R"({"$toInt": "abc"})", "{}", 241},
      {R"({"$toInt": 3000000000})", "{}", 241},
      {R"({"$toDate": 5})", "{}", 241},
  });
  auto r = EvalToDoc(R"({"$convert": {"input": 1, "to": "nosuch"}})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadValue);
}

// Extended JSON reserves {"$type": ...}, so these specs are built with BsonBuilder.
TEST(ExpressionTest, TypeNames) {
  struct Case {
    const char* doc;
    const char* expected;
  };
  for (const Case& c : std::vector<Case>{{R"({"v": "a"})", "string"},
                                         {R"({})", "missing"},
                                         {R"({"v": [1]})", "array"},
                                         {R"({"v": {"$numberLong": "1"}})", "long"},
                                         {R"({"v": 1.5})", "double"},
                                         {R"({"v": null})", "null"}}) {
    bson::BsonBuilder b;
    size_t t = b.OpenObject("e");
    b.AppendString("$type", "$v");
    b.Close(t);
    bson::BsonObj spec = b.Obj();
    auto expr = Expression::ParseExpression(spec["e"], ParseContext());
    ASSERT_TRUE(expr.ok());
    Variables vars;
    auto v = expr.value()->Evaluate(Json(c.doc), vars);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v.value().Str(), c.expected) << c.doc;
  }
}

TEST(ExpressionTest, ObjectOperators) {
  CheckCases({
      {R"({"$mergeObjects": [{"a": 1, "b": 1}, null, {"b": 2, "c": 3}]})", "{}",
       R"({"a": 1, "b": 2, "c": 3})"},
      {R"({"$getField": "price"})", R"({"price": 5})", "5"},
      {R"({"$getField": {"field": "a.b", "input": "$o"}})", R"({"o": {"a.b": 3}})", "3"},
      {R"({"$getField": {"field": "x", "input": "$missing"}})", "{}", nullptr},
      {R"({"$objectToArray": {"item": "foo", "qty": 25}})", "{}",
       R"([{"k": "item", "v": "foo"}, {"k": "qty", "v": 25}])"},
      {R"({"$arrayToObject": [[["item", "abc123"], ["qty", 25]]]})", "{}",
       R"({"item": "abc123", "qty": 25})"},
      {R"({"$arrayToObject": [[{"k": "item", "v": "abc123"}, {"k": "item", "v": 2}]]})", "{}",
       R"({"item": 2})"},
  });
  CheckErrors(
      {{R"({"$mergeObjects": [1]})", "{}", 40400}, {R"({"$objectToArray": 1})", "{}", 40390}});
}

TEST(ExpressionTest, DateOperatorsInUtc) {
  const char* doc = R"({"date": {"$date": "2014-01-01T08:15:39.736Z"}})";
  CheckCases({
      {R"({"$year": "$date"})", doc, "2014"},
      {R"({"$month": "$date"})", doc, "1"},
      {R"({"$dayOfMonth": "$date"})", doc, "1"},
      {R"({"$hour": "$date"})", doc, "8"},
      {R"({"$minute": "$date"})", doc, "15"},
      {R"({"$second": "$date"})", doc, "39"},
      {R"({"$millisecond": "$date"})", doc, "736"},
      {R"({"$dayOfYear": "$date"})", doc, "1"},
      {R"({"$dayOfWeek": "$date"})", doc, "4"},
      {R"({"$week": "$date"})", doc, "0"},
      {R"({"$hour": {"date": "$date", "timezone": "+05:30"}})", doc, "13"},
      {R"({"$year": null})", "{}", "null"},
      {R"({"$dateToString": {"format": "%Y-%m-%d", "date": "$date"}})", doc, R"("2014-01-01")"},
      {R"({"$dateToString": {"format": "%H:%M:%S:%L%z", "date": "$date"}})", doc,
       R"("08:15:39:736+0000")"},
      {R"({"$dateToString": {"date": "$date"}})", doc, R"("2014-01-01T08:15:39.736Z")"},
      {R"({"$dateTrunc": {"date": "$date", "unit": "hour"}})", doc,
       R"({"$date": "2014-01-01T08:00:00Z"})"},
      {R"({"$dateTrunc": {"date": "$d", "unit": "month"}})",
       R"({"d": {"$date": "2021-03-15T10:00:00Z"}})", R"({"$date": "2021-03-01T00:00:00Z"})"},
      {R"({"$dateTrunc": {"date": "$d", "unit": "quarter"}})",
       R"({"d": {"$date": "2021-05-15T10:00:00Z"}})", R"({"$date": "2021-04-01T00:00:00Z"})"},
      {R"({"$dateTrunc": {"date": "$d", "unit": "week"}})",
       R"({"d": {"$date": "2021-03-17T10:00:00Z"}})", R"({"$date": "2021-03-14T00:00:00Z"})"},
      {R"({"$dateTrunc": {"date": "$d", "unit": "minute", "binSize": 15}})",
       R"({"d": {"$date": "2021-03-17T10:44:00Z"}})", R"({"$date": "2021-03-17T10:30:00Z"})"},
      {R"({"$dateFromParts": {"year": 2017, "month": 2, "day": 8, "hour": 12}})", "{}",
       R"({"$date": "2017-02-08T12:00:00Z"})"},
  });
  CheckErrors({{R"({"$year": "x"})", "{}", 16006}});
}

}  // namespace
// ---- variables of a `let` option (query::LetVariables) ----

StatusWith<std::shared_ptr<const query::LetVariables>> CommandLet(const char* json) {
  return ParseCommandLet(Json(std::string("{\"let\": ") + json + "}")["let"], 1'000'000);
}

StatusWith<bson::BsonObj> EvalWithLet(const char* expr_json,
                                      std::shared_ptr<const query::LetVariables> let) {
  bson::BsonObj spec = Json(std::string("{\"e\": ") + expr_json + "}");
  HG_ASSIGN_OR_RETURN(auto expr, Expression::ParseExpression(spec["e"], ParseContext(let)));
  Variables vars(1'000'000);
  HG_ASSIGN_OR_RETURN(Value v, expr->Evaluate(bson::BsonObj(), vars));
  bson::BsonBuilder b;
  v.AppendTo(b, "r");
  return b.Obj();
}

TEST(LetVariablesTest, CommandLetEvaluatesInOrderOnce) {
  auto let = CommandLet(R"({"a": 2, "b": {"$add": ["$$a", 3]}, "c": {"$multiply": ["$$a", "$$b"]},
                            "t": "$$NOW", "o": {"x": [1, {"y": "z"}]}})");
  ASSERT_TRUE(let.ok()) << let.status().ToString();
  struct Case {
    const char* expr;
    const char* expected;
  };
  for (const Case& c : std::vector<Case>{
           {R"("$$c")", "10"},
           {R"("$$t")", R"({"$date": {"$numberLong": "1000000"}})"},
           {R"("$$o.x.y")", R"(["z"])"},
           {R"({"$let": {"vars": {"a": "inner"}, "in": "$$a"}})", R"("inner")"},
           {R"({"$map": {"input": [1], "as": "b", "in": "$$b"}})", "[1]"},
           {R"({"$let": {"vars": {"a": "$$b"}, "in": "$$a"}})", "5"},
       }) {
    auto r = EvalWithLet(c.expr, let.value());
    ASSERT_TRUE(r.ok()) << c.expr << ": " << r.status().ToString();
    EXPECT_TRUE(r.value().BinaryEqual(Json(std::string("{\"r\": ") + c.expected + "}")))
        << c.expr << " gave " << r.value().ToJson();
  }
  auto absent = EvalWithLet(R"("$$d")", let.value());
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.status().code_number(), 17276);
}

TEST(LetVariablesTest, CommandLetErrors) {
  struct Case {
    const char* let;
    int code;
  };
  for (const Case& c : std::vector<Case>{
           {"1", 14},
           {"[1]", 14},
           {R"("x")", 14},
           {R"({"Bad": 1})", 9},
           {R"({"ROOT": 1})", 9},
           {R"({"REMOVE": 1})", 9},
           {R"({"_a": 1})", 9},
           {R"({"a.b": 1})", 9},
           {R"({"": 1})", 9},
           {R"({"NOW": 1})", 4738901},
           {R"({"CLUSTER_TIME": 1})", 4738901},
           {R"({"USER_ROLES": 1})", 4738901},
           {R"({"CURRENT": 1})", 115},  // in a command's let only
           {R"({"a": "$f"})", 4890500},
           {R"({"a": "$$CURRENT.f"})", 4890500},
           {R"({"a": {"$concat": ["x", "$f"]}})", 4890500},
           {R"({"a": "$$b", "b": 1})", 17276},
           {R"({"a": {"$add": ["x", 1]}})", 16554},
       }) {
    auto r = CommandLet(c.let);
    ASSERT_FALSE(r.ok()) << c.let;
    EXPECT_EQ(r.status().code_number(), c.code) << c.let << ": " << r.status().ToString();
  }
  for (const char* none : {"null", "{}"}) {
    auto r = CommandLet(none);
    ASSERT_TRUE(r.ok()) << none;
    EXPECT_EQ(r.value(), nullptr) << none;
  }
  auto non_ascii = CommandLet(R"({"\u00e9t\u00e9": 1, "aB_9": 2})");
  EXPECT_TRUE(non_ascii.ok()) << non_ascii.status().ToString();
}

TEST(LetVariablesTest, ValuesAreReadWhenEvaluated) {
  // A $lookup sets its variables' values per input document after parsing the sub-pipeline.
  auto let = std::make_shared<query::LetVariables>(std::vector<std::string>{"x"},
                                                   std::vector<bson::BsonObj>{});
  bson::BsonObj spec = Json(R"({"e": {"$add": ["$$x", 1]}})");
  auto expr = Expression::ParseExpression(spec["e"], ParseContext(let));
  ASSERT_TRUE(expr.ok());
  Variables vars;
  for (int i : {1, 41}) {
    let->SetValues(LetValueDocuments({Value::Int(i)}));
    auto v = expr.value()->Evaluate(bson::BsonObj(), vars);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v.value().NumberLong(), i + 1);
  }
  let->SetValues(LetValueDocuments({Value::Missing()}));
  auto v = expr.value()->Evaluate(bson::BsonObj(), vars);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v.value().nullish());
}

TEST(LetVariablesTest, SystemVariables) {
  CheckCases({{R"("$$SEARCH_META")", "{}", nullptr}, {R"("$$USER_ROLES")", "{}", "[]"}});
  CheckErrors({{R"("$$CLUSTER_TIME")", "{}", 51144},
               {R"("$$JS_SCOPE")", "{}", 51144},
               {R"("$$Nope")", "{}", 17276}});
  for (const char* bad : {R"({"$let": {"vars": {"Up": 1}, "in": 1}})",
                          R"({"$map": {"input": [], "as": "1x", "in": 1}})",
                          R"({"$filter": {"input": [], "as": "a-b", "cond": true}})"}) {
    auto r = EvalToDoc(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kFailedToParse) << bad;
  }
}

}  // namespace hourglass::pipeline
