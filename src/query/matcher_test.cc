#include "query/matcher.h"

#include <gtest/gtest.h>

#include "query/query_errors.h"
#include "query/test_util.h"

namespace hourglass::query {
using bson::BsonObj;
namespace {

struct MatchCase {
  const char* filter;
  const char* doc;
  bool expected;
};

void RunCases(const std::vector<MatchCase>& cases) {
  for (const MatchCase& c : cases) {
    auto m = Matcher::Parse(J(c.filter));
    ASSERT_TRUE(m.ok()) << c.filter << ": " << m.status().ToString();
    EXPECT_EQ(m.value().Matches(J(c.doc)), c.expected) << "filter " << c.filter << " doc " << c.doc;
  }
}

TEST(MatcherTest, EqualityAndPaths) {
  RunCases({
      {R"({})", R"({"a": 1})", true},
      {R"({"a": 1})", R"({"a": 1})", true},
      {R"({"a": 1})", R"({"a": 1.0})", true},
      {R"({"a": 1})", R"({"a": {"$numberLong": "1"}})", true},
      {R"({"a": 1})", R"({"a": "1"})", false},
      {R"({"a": 1})", R"({"b": 1})", false},
      {R"({"a": 1, "b": 2})", R"({"a": 1, "b": 3})", false},
      // Equality to an array element or the whole array.
      {R"({"tags": "red"})", R"({"tags": ["blank", "red"]})", true},
      {R"({"tags": ["red", "blank"]})", R"({"tags": ["red", "blank"]})", true},
      {R"({"tags": ["red", "blank"]})", R"({"tags": ["blank", "red"]})", false},
      {R"({"tags": ["red"]})", R"({"tags": [["red"], "x"]})", true},
      {R"({"a": 1})", R"({"a": [[1, 2]]})", false},
      // Embedded documents: exact match, field order matters.
      {R"({"size": {"h": 14, "w": 21}})", R"({"size": {"h": 14, "w": 21}})", true},
      {R"({"size": {"w": 21, "h": 14}})", R"({"size": {"h": 14, "w": 21}})", false},
      {R"({"size.h": 14})", R"({"size": {"h": 14, "w": 21}})", true},
      // Dotted paths through arrays of documents.
      {R"({"a.b": 1})", R"({"a": [{"b": 2}, {"b": 1}]})", true},
      {R"({"a.b": 1})", R"({"a": [{"b": [0, 1]}]})", true},
      {R"({"a.b": 1})", R"({"a": [[{"b": 1}]]})", false},
      {R"({"a.b.c": 1})", R"({"a": [{"b": [{"c": 1}]}]})", true},
      // Numeric components index arrays and also match fields named "0".
      {R"({"a.0": 5})", R"({"a": [5, 6]})", true},
      {R"({"a.1": 5})", R"({"a": [5, 6]})", false},
      {R"({"a.0": 5})", R"({"a": {"0": 5}})", true},
      {R"({"a.0": 5})", R"({"a": [{"0": 5}]})", true},
      {R"({"a.0.b": 1})", R"({"a": [{"b": 1}, {"b": 2}]})", true},
      {R"({"a.1.b": 1})", R"({"a": [{"b": 1}, {"b": 2}]})", false},
      {R"({"a.0": 1})", R"({"a": [[1, 2]]})", true},
  });
}

TEST(MatcherTest, NullMatchesNullUndefinedAndMissing) {
  RunCases({
      {R"({"a": null})", R"({"a": null})", true},
      {R"({"a": null})", R"({"b": 1})", true},
      {R"({"a": null})", R"({"a": {"$undefined": true}})", true},
      {R"({"a": null})", R"({"a": 0})", false},
      {R"({"a": null})", R"({"a": [1, null]})", true},
      {R"({"a": null})", R"({"a": []})", false},
      {R"({"a": {"$eq": null}})", R"({})", true},
      {R"({"a": {"$ne": null}})", R"({})", false},
      {R"({"a": {"$ne": null}})", R"({"a": 1})", true},
      // jstests/core/null2.js: non-object array elements don't yield missing values.
      {R"({"a.b": null})", R"({"a": [{"b": 5}]})", false},
      {R"({"a.b": null})", R"({"a": [{}]})", true},
      {R"({"a.b": null})", R"({"a": []})", false},
      {R"({"a.b": null})", R"({"a": [{}, {"b": 5}]})", true},
      {R"({"a.b": null})", R"({"a": [5, {"b": 5}]})", false},
      {R"({"a.b": {"$in": [null]}})", R"({"a": [{}, {"b": 5}]})", true},
      {R"({"a.b": null})", R"({"a": 4})", true},
      {R"({"a.b": null})", R"({"a": {"b": "hi"}})", false},
      {R"({"a": {"$gte": null}})", R"({})", true},
      {R"({"a": {"$lte": null}})", R"({"a": null})", true},
      {R"({"a": {"$gt": null}})", R"({"a": null})", false},
      {R"({"a": {"$lt": null}})", R"({})", false},
  });
}

TEST(MatcherTest, ComparisonsAreTypeBracketed) {
  RunCases({
      {R"({"qty": {"$gt": 20}})", R"({"qty": 25})", true},
      {R"({"qty": {"$gt": 20}})", R"({"qty": 20})", false},
      {R"({"qty": {"$gte": 20}})", R"({"qty": 20.0})", true},
      {R"({"qty": {"$lt": 20}})", R"({"qty": 19.5})", true},
      {R"({"qty": {"$lte": 20}})", R"({"qty": {"$numberLong": "21"}})", false},
      {R"({"qty": {"$gt": 5}})", R"({"qty": "abc"})", false},
      {R"({"qty": {"$lt": "z"}})", R"({"qty": 5})", false},
      {R"({"qty": {"$gt": 5}})", R"({})", false},
      {R"({"qty": {"$gt": 5}})", R"({"qty": null})", false},
      {R"({"s": {"$gt": "abc"}})", R"({"s": "abd"})", true},
      {R"({"qty": {"$gt": 20}})", R"({"qty": [5, 25]})", true},
      // Different elements may satisfy different bounds.
      {R"({"qty": {"$gt": 10, "$lt": 20}})", R"({"qty": [5, 25]})", true},
      {R"({"qty": {"$gt": 10, "$lt": 20}})", R"({"qty": 25})", false},
      {R"({"qty": {"$elemMatch": {"$gt": 10, "$lt": 20}}})", R"({"qty": [5, 25]})", false},
      {R"({"qty": {"$elemMatch": {"$gt": 10, "$lt": 20}}})", R"({"qty": [5, 15]})", true},
      {R"({"d": {"$gt": {"$date": "2020-01-01T00:00:00Z"}}})",
       R"({"d": {"$date": "2021-01-01T00:00:00Z"}})", true},
      {R"({"d": {"$gt": {"$date": "2020-01-01T00:00:00Z"}}})", R"({"d": 5})", false},
      // NaN equals only NaN and never compares less or greater.
      {R"({"x": {"$lt": 0}})", R"({"x": {"$numberDouble": "NaN"}})", false},
      {R"({"x": {"$eq": {"$numberDouble": "NaN"}}})", R"({"x": {"$numberDouble": "NaN"}})", true},
      {R"({"x": {"$gte": {"$numberDouble": "NaN"}}})", R"({"x": 1})", false},
      // MinKey/MaxKey bounds cover every type.
      {R"({"x": {"$lt": {"$maxKey": 1}}})", R"({"x": "s"})", true},
      {R"({"x": {"$gt": {"$minKey": 1}}})", R"({"x": 3})", true},
  });
}

TEST(MatcherTest, InternalExprComparisonsUseCanonicalOrder) {
  RunCases({
      {R"({"a": {"$_internalExprGt": 5}})", R"({"a": 6})", true},
      {R"({"a": {"$_internalExprGt": 5}})", R"({"a": 5})", false},
      {R"({"a": {"$_internalExprGte": 5}})", R"({"a": 5.0})", true},
      // No type bracketing: strings sort after numbers, null before them.
      {R"({"a": {"$_internalExprGt": 5}})", R"({"a": "x"})", true},
      {R"({"a": {"$_internalExprLt": 5}})", R"({"a": null})", true},
      {R"({"a": {"$_internalExprLte": "a"}})", R"({"a": 100})", true},
      {R"({"a": {"$_internalExprEq": 2}})", R"({"a": 2})", true},
      // Missing never matches; an array on the path always does.
      {R"({"a": {"$_internalExprLt": 5}})", R"({"b": 1})", false},
      {R"({"a": {"$_internalExprGt": 5}})", R"({"a": [1, 2]})", true},
      {R"({"a.b": {"$_internalExprGt": 5}})", R"({"a": [{"b": 1}]})", true},
      {R"({"a.b": {"$_internalExprGt": 5}})", R"({"a": 7})", false},
      {R"({"a.b": {"$_internalExprGt": 5, "$_internalExprLt": 9}})", R"({"a": {"b": 7}})", true},
      {R"({"a.b": {"$_internalExprGt": 5, "$_internalExprLt": 9}})", R"({"a": {"b": 9}})", false},
  });
  EXPECT_FALSE(Matcher::Parse(J(R"({"a": {"$_internalExprNope": 1}})")).ok());
}

TEST(MatcherTest, NeAndNinAreNegations) {
  RunCases({
      {R"({"a": {"$ne": 1}})", R"({"a": 2})", true},
      {R"({"a": {"$ne": 1}})", R"({"a": [1, 2]})", false},
      {R"({"a": {"$ne": 1}})", R"({})", true},
      {R"({"a": {"$ne": 5}})", R"({"a": "x"})", true},
      {R"({"a": {"$in": [1, 2]}})", R"({"a": 2})", true},
      {R"({"a": {"$in": [1, 2]}})", R"({"a": [3, 1]})", true},
      {R"({"a": {"$in": []}})", R"({"a": 1})", false},
      {R"({"a": {"$in": [null]}})", R"({})", true},
      {R"({"a": {"$in": [{"$regularExpression": {"pattern": "^be", "options": ""}}]}})",
       R"({"a": "best"})", true},
      {R"({"a": {"$nin": [1, 2]}})", R"({"a": 3})", true},
      {R"({"a": {"$nin": [1, 2]}})", R"({"a": [3, 2]})", false},
      {R"({"a": {"$nin": [1, 2]}})", R"({})", true},
  });
}

TEST(MatcherTest, LogicalOperators) {
  RunCases({
      {R"({"$and": [{"a": 1}, {"b": 2}]})", R"({"a": 1, "b": 2})", true},
      {R"({"$and": [{"a": 1}, {"b": 2}]})", R"({"a": 1})", false},
      {R"({"$or": [{"a": 1}, {"b": 2}]})", R"({"b": 2})", true},
      {R"({"$or": [{"a": 1}, {"b": 2}]})", R"({"c": 2})", false},
      {R"({"$nor": [{"a": 1}, {"b": 2}]})", R"({"c": 2})", true},
      {R"({"$nor": [{"a": 1}, {"b": 2}]})", R"({"a": 1})", false},
      {R"({"price": {"$not": {"$gt": 1.99}}})", R"({"price": 1.5})", true},
      {R"({"price": {"$not": {"$gt": 1.99}}})", R"({})", true},
      {R"({"price": {"$not": {"$gt": 1.99}}})", R"({"price": 2})", false},
      {R"({"price": {"$not": {"$gt": 1.99}}})", R"({"price": "abc"})", true},
      {R"({"item": {"$not": {"$regularExpression": {"pattern": "^p", "options": ""}}}})",
       R"({"item": "pen"})", false},
      {R"({"item": {"$not": {"$regularExpression": {"pattern": "^p", "options": ""}}}})",
       R"({"item": "ink"})", true},
      {R"({"a": 1, "$comment": "hello"})", R"({"a": 1})", true},
  });
}

TEST(MatcherTest, ExistsAndType) {
  RunCases({
      {R"({"a": {"$exists": true}})", R"({"a": null})", true},
      {R"({"a": {"$exists": true}})", R"({})", false},
      {R"({"a": {"$exists": false}})", R"({})", true},
      {R"({"a": {"$exists": 0}})", R"({"a": 1})", false},
      {R"({"a.b": {"$exists": true}})", R"({"a": [{"c": 1}, {"b": 1}]})", true},
      {R"({"a.b": {"$exists": false}})", R"({"a": [1, 2]})", true},
  });
}

TEST(MatcherTest, ArrayOperators) {
  RunCases({
      {R"({"tags": {"$all": ["ssl", "security"]}})",
       R"({"tags": ["appliance", "ssl", "security"]})", true},
      {R"({"tags": {"$all": ["ssl", "security"]}})", R"({"tags": ["ssl"]})", false},
      {R"({"tags": {"$all": ["ssl"]}})", R"({"tags": "ssl"})", true},
      {R"({"tags": {"$all": [["ssl", "x"]]}})", R"({"tags": [["ssl", "x"], "y"]})", true},
      {R"({"tags": {"$all": []}})", R"({"tags": []})", false},
      {R"({"qty": {"$all": [{"$elemMatch": {"size": "M", "num": {"$gt": 50}}}]}})",
       R"({"qty": [{"size": "S", "num": 10}, {"size": "M", "num": 100}]})", true},
      {R"({"results": {"$elemMatch": {"$gte": 80, "$lt": 85}}})", R"({"results": [82, 85, 88]})",
       true},
      {R"({"results": {"$elemMatch": {"$gte": 80, "$lt": 85}}})", R"({"results": [75, 88, 89]})",
       false},
      {R"({"results": {"$elemMatch": {"product": "xyz", "score": {"$gte": 8}}}})",
       R"({"results": [{"product": "abc", "score": 10}, {"product": "xyz", "score": 5}]})", false},
      {R"({"results": {"$elemMatch": {"product": "xyz", "score": {"$gte": 8}}}})",
       R"({"results": [{"product": "abc", "score": 8}, {"product": "xyz", "score": 9}]})", true},
      {R"({"results": {"$elemMatch": {"product": "xyz"}}})", R"({"results": {"product": "xyz"}})",
       false},
      {R"({"a": {"$elemMatch": {"$or": [{"b": 1}, {"c": 1}]}}})", R"({"a": [{"c": 1}]})", true},
      {R"({"a": {"$size": 2}})", R"({"a": [1, 2]})", true},
      {R"({"a": {"$size": 2}})", R"({"a": [1]})", false},
      {R"({"a": {"$size": 0}})", R"({"a": []})", true},
      {R"({"a": {"$size": 1}})", R"({"a": [[1, 2]]})", true},
      {R"({"a": {"$size": 2}})", R"({"a": [[1, 2]]})", false},
      {R"({"a": {"$size": 1}})", R"({"a": 1})", false},
      {R"({"a.b": {"$size": 1}})", R"({"a": [{"b": [1]}, {"b": 2}]})", true},
  });
}

// libbson's JSON reader takes {"$type": ...} for legacy binary, so $type filters are built here.
BsonObj TypeFilter(const char* arg_json) {
  BsonObj arg = J(std::string(R"({"v": )") + arg_json + "}");
  bson::BsonBuilder inner;
  inner.AppendElementAs(arg["v"], "$type");
  return bson::BsonBuilder().AppendObject("a", inner.Obj()).Obj();
}

TEST(MatcherTest, TypeOperator) {
  struct Case {
    const char* arg;
    const char* doc;
    bool expected;
  };
  std::vector<Case> cases = {
      {R"("string")", R"({"a": "x"})", true},
      {"2", R"({"a": "x"})", true},
      {R"("number")", R"({"a": {"$numberLong": "3"}})", true},
      {R"("number")", R"({"a": "3"})", false},
      {R"(["string", "double"])", R"({"a": 1.5})", true},
      {R"("array")", R"({"a": []})", true},
      {"4", R"({"a": [1]})", true},
      {R"("string")", R"({"a": [1, "x"]})", true},
      {R"("null")", R"({})", false},
      {R"("null")", R"({"a": null})", true},
      {R"("int")", R"({"a": 1.0})", false},
      {R"("long")", R"({"a": {"$numberLong": "1"}})", true},
      {R"("minKey")", R"({"a": {"$minKey": 1}})", true},
      {"-1", R"({"a": {"$minKey": 1}})", true},
  };
  for (const Case& c : cases) {
    auto m = Matcher::Parse(TypeFilter(c.arg));
    ASSERT_TRUE(m.ok()) << c.arg << ": " << m.status().ToString();
    EXPECT_EQ(m.value().Matches(J(c.doc)), c.expected) << c.arg << " " << c.doc;
  }
  for (const char* bad : {R"("foo")", "100", "1.5", "[]", "true"}) {
    auto m = Matcher::Parse(TypeFilter(bad));
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_EQ(m.status().code(), ErrorCode::kBadValue);
  }
  EXPECT_EQ(Matcher::Parse(TypeFilter(R"("foo")")).status().reason(),
            "Unknown type name alias: foo");
}

TEST(MatcherTest, ModAndBits) {
  RunCases({
      {R"({"qty": {"$mod": [4, 0]}})", R"({"qty": 12})", true},
      {R"({"qty": {"$mod": [4, 0]}})", R"({"qty": 13})", false},
      {R"({"qty": {"$mod": [4, 0]}})", R"({"qty": 12.7})", true},
      {R"({"qty": {"$mod": [4, 1]}})", R"({"qty": "5"})", false},
      {R"({"qty": {"$mod": [-4, -1]}})", R"({"qty": -5})", true},
      // a = 54 = 0b110110 (documented $bits examples).
      {R"({"a": {"$bitsAllSet": [1, 5]}})", R"({"a": 54})", true},
      {R"({"a": {"$bitsAllSet": 50}})", R"({"a": 54})", true},
      {R"({"a": {"$bitsAllSet": [0]}})", R"({"a": 54})", false},
      {R"({"a": {"$bitsAnySet": [0, 1]}})", R"({"a": 54})", true},
      {R"({"a": {"$bitsAllClear": [0, 3]}})", R"({"a": 54})", true},
      {R"({"a": {"$bitsAnyClear": [1, 5]}})", R"({"a": 54})", false},
      {R"({"a": {"$bitsAllSet": [63, 200]}})", R"({"a": -1})", true},
      {R"({"a": {"$bitsAllSet": [0]}})", R"({"a": 1.5})", false},
      {R"({"a": {"$bitsAllSet": [1]}})", R"({"a": 2.0})", true},
      {R"({"a": {"$bitsAllSet": [1, 9]}})",
       R"({"a": {"$binary": {"base64": "AgI=", "subType": "00"}}})", true},
      {R"({"a": {"$bitsAnySet": [0]}})", R"({"a": "x"})", false},
  });
}

TEST(MatcherTest, Regex) {
  RunCases({
      {R"({"sku": {"$regex": "789$"}})", R"({"sku": "abc789"})", true},
      {R"({"sku": {"$regex": "^ABC", "$options": "i"}})", R"({"sku": "abc123"})", true},
      {R"({"sku": {"$regex": "^ABC"}})", R"({"sku": "abc123"})", false},
      {R"({"sku": {"$regularExpression": {"pattern": "^ABC", "options": "i"}}})",
       R"({"sku": "xyz\nabc"})", false},
      {R"({"sku": {"$regex": "^abc", "$options": "m"}})", R"({"sku": "xyz\nabc"})", true},
      {R"({"sku": {"$regex": "a.c", "$options": "s"}})", R"({"sku": "a\nc"})", true},
      {R"({"sku": {"$regex": "a b c", "$options": "x"}})", R"({"sku": "abc"})", true},
      {R"({"sku": {"$regex": "^é"}})", R"({"sku": "été"})", true},
      {R"({"tags": {"$regex": "^ss"}})", R"({"tags": ["x", "ssl"]})", true},
      {R"({"n": {"$regex": "1"}})", R"({"n": 1})", false},
      // A regex literal compared with $eq matches the same stored regex only.
      {R"({"r": {"$eq": {"$regularExpression": {"pattern": "a", "options": ""}}}})",
       R"({"r": {"$regularExpression": {"pattern": "a", "options": ""}}})", true},
      {R"({"r": {"$eq": {"$regularExpression": {"pattern": "a", "options": ""}}}})",
       R"({"r": "a"})", false},
  });
}

// libbson's JSON reader folds {"$regex": s, "$options": o} into a regex value, so the operator
// form with string arguments is built by hand.
BsonObj RegexOperatorFilter(std::string_view pattern, std::string_view options) {
  bson::BsonBuilder inner;
  inner.AppendString("$regex", pattern);
  if (!options.empty()) inner.AppendString("$options", options);
  return bson::BsonBuilder().AppendObject("a", inner.Obj()).Obj();
}

TEST(MatcherTest, RegexOperatorWithStringArguments) {
  auto m = Matcher::Parse(RegexOperatorFilter("^ABC", "i"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m.value().Matches(J(R"({"a": "abcd"})")));
  EXPECT_FALSE(m.value().Matches(J(R"({"a": "xabc"})")));
  EXPECT_EQ(Matcher::Parse(RegexOperatorFilter("a", "z")).status().code(), kBadRegexOptionCode);
  EXPECT_EQ(Matcher::Parse(RegexOperatorFilter("(", "")).status().code(), kBadRegexCode);
  BsonObj options_only =
      bson::BsonBuilder()
          .AppendObject("a", bson::BsonBuilder().AppendString("$options", "i").Obj())
          .Obj();
  EXPECT_EQ(Matcher::Parse(options_only).status().code(), ErrorCode::kBadValue);
}

TEST(MatcherTest, MatchesEverything) {
  EXPECT_TRUE(Matcher::Parse(J("{}")).value().MatchesEverything());
  EXPECT_FALSE(Matcher::Parse(J(R"({"a": 1})")).value().MatchesEverything());
}

struct ErrorCase {
  const char* filter;
  ErrorCode code;
};

TEST(MatcherTest, ParseErrors) {
  std::vector<ErrorCase> cases = {
      {R"({"$foo": 1})", ErrorCode::kBadValue},
      {R"({"a": {"$foo": 1}})", ErrorCode::kBadValue},
      {R"({"a": {"$in": 1}})", ErrorCode::kBadValue},
      {R"({"a": {"$nin": {"x": 1}}})", ErrorCode::kBadValue},
      {R"({"$and": []})", ErrorCode::kBadValue},
      {R"({"$or": {"a": 1}})", ErrorCode::kBadValue},
      {R"({"$nor": [1]})", ErrorCode::kBadValue},
      {R"({"a": {"$not": 1}})", ErrorCode::kBadValue},
      {R"({"a": {"$not": {}}})", ErrorCode::kBadValue},
      {R"({"$where": "this.a == 1"})", ErrorCode::kBadValue},
      // query_test links no expression language: $expr says so instead of guessing.
      {R"({"$expr": {"$eq": ["$a", 1]}})", ErrorCode::kCommandNotSupported},
      {R"({"$jsonSchema": {"foo": 1}})", ErrorCode::kFailedToParse},
      {R"({"$jsonSchema": {"format": "date"}})", ErrorCode::kFailedToParse},
      {R"({"$jsonSchema": {"type": "string", "bsonType": "string"}})", ErrorCode::kFailedToParse},
      {R"({"$jsonSchema": {"minimum": "x"}})", ErrorCode::kTypeMismatch},
      {R"({"$jsonSchema": 1})", ErrorCode::kTypeMismatch},
      {R"({"a": {"$elemMatch": {"$jsonSchema": {}}}})", ErrorCode::kBadValue},
      {R"({"a": {"$regex": "("}})", kBadRegexCode},
      {R"({"a": {"$size": -1}})", ErrorCode::kBadValue},
      {R"({"a": {"$size": 1.5}})", ErrorCode::kBadValue},
      {R"({"a": {"$size": "1"}})", ErrorCode::kBadValue},
      {R"({"a": {"$mod": [0, 1]}})", ErrorCode::kBadValue},
      {R"({"a": {"$mod": [1]}})", ErrorCode::kBadValue},
      {R"({"a": {"$mod": [1, 2, 3]}})", ErrorCode::kBadValue},
      {R"({"a": {"$bitsAllSet": -1}})", ErrorCode::kBadValue},
      {R"({"a": {"$bitsAllSet": "x"}})", ErrorCode::kBadValue},
      {R"({"a": {"$all": 1}})", ErrorCode::kBadValue},
      {R"({"a": {"$elemMatch": 1}})", ErrorCode::kBadValue},
      {R"({"a": {"$gt": 1, "b": 1}})", ErrorCode::kBadValue},
      {R"({"a": {"$ne": {"$regularExpression": {"pattern": "a", "options": ""}}}})",
       ErrorCode::kBadValue},
  };
  for (const ErrorCase& c : cases) {
    auto m = Matcher::Parse(J(c.filter));
    ASSERT_FALSE(m.ok()) << c.filter;
    EXPECT_EQ(m.status().code(), c.code) << c.filter << ": " << m.status().ToString();
  }
  EXPECT_EQ(Matcher::Parse(J(R"({"$foo": 1})")).status().reason(),
            "unknown top level operator: $foo");
  EXPECT_EQ(Matcher::Parse(J(R"({"a": {"$foo": 1}})")).status().reason(), "unknown operator: $foo");
  EXPECT_EQ(Matcher::Parse(J(R"({"a": {"$in": 1}})")).status().reason(), "$in needs an array");
}

TEST(MatcherTest, JsonSchema) {
  RunCases({
      {R"({"$jsonSchema": {"required": ["a"]}})", R"({"a": null})", true},
      {R"({"$jsonSchema": {"required": ["a"]}})", R"({"b": 1})", false},
      {R"({"$jsonSchema": {"properties": {"a": {"bsonType": "int"}}}})", R"({"a": 1})", true},
      {R"({"$jsonSchema": {"properties": {"a": {"bsonType": "int"}}}})", R"({"a": 1.5})", false},
      // A keyword applies only when the field is present and of its kind.
      {R"({"$jsonSchema": {"properties": {"a": {"minimum": 5}}}})", R"({"b": 1})", true},
      {R"({"$jsonSchema": {"properties": {"a": {"minimum": 5}}}})", R"({"a": "x"})", true},
      {R"({"$jsonSchema": {"properties": {"a": {"minimum": 5}}}})", R"({"a": 4})", false},
      {R"({"$jsonSchema": {"properties": {"a": {"minimum": 5, "exclusiveMinimum": true}}}})",
       R"({"a": 5})", false},
      {R"({"$jsonSchema": {"properties": {"a": {"maximum": 5}}}})", R"({"a": 5})", true},
      {R"({"$jsonSchema": {"properties": {"a": {"type": "number"}}}})",
       R"({"a": {"$numberLong": "3"}})", true},
      {R"({"$jsonSchema": {"properties": {"a": {"type": ["string", "null"]}}}})", R"({"a": null})",
       true},
      // Lengths count code points, not bytes.
      {R"({"$jsonSchema": {"properties": {"s": {"maxLength": 2}}}})", R"({"s": "éé"})", true},
      {R"({"$jsonSchema": {"properties": {"s": {"minLength": 3}}}})", R"({"s": "ab"})", false},
      {R"({"$jsonSchema": {"properties": {"s": {"pattern": "^a+$"}}}})", R"({"s": "aaa"})", true},
      {R"({"$jsonSchema": {"properties": {"s": {"pattern": "^a+$"}}}})", R"({"s": "ab"})", false},
      {R"({"$jsonSchema": {"properties": {"e": {"enum": [1, "x"]}}}})", R"({"e": 1.0})", true},
      {R"({"$jsonSchema": {"properties": {"e": {"enum": [1, "x"]}}}})", R"({"e": "y"})", false},
      {R"({"$jsonSchema": {"properties": {"l": {"items": {"bsonType": "int"}, "minItems": 2}}}})",
       R"({"l": [1, 2]})", true},
      {R"({"$jsonSchema": {"properties": {"l": {"items": {"bsonType": "int"}}}}})",
       R"({"l": [1, "2"]})", false},
      {R"({"$jsonSchema": {"properties": {"l": {"maxItems": 1}}}})", R"({"l": [1, 2]})", false},
      // 1 and 1.0 are the same value; NaN sorts below every number.
      {R"({"$jsonSchema": {"properties": {"l": {"uniqueItems": true}}}})", R"({"l": [1, 1.0]})",
       false},
      {R"({"$jsonSchema": {"properties": {"a": {"maximum": 5}}}})",
       R"({"a": {"$numberDouble": "NaN"}})", true},
      {R"({"$jsonSchema": {"properties": {"a": {"minimum": 5}}}})",
       R"({"a": {"$numberDouble": "NaN"}})", false},
      {R"({"$jsonSchema": {"properties": {"l": {"uniqueItems": true}}}})", R"({"l": [1, 2, 1]})",
       false},
      {R"({"$jsonSchema": {"properties": {"a": {"bsonType": "int"}}, "additionalProperties": false}})",
       R"({"a": 1, "b": 2})", false},
      {R"({"$jsonSchema": {"properties": {"_id": {}, "a": {}}, "additionalProperties": false}})",
       R"({"_id": 1, "a": 2})", true},
      {R"({"$jsonSchema": {"additionalProperties": {"bsonType": "string"}}})", R"({"a": "x"})",
       true},
      {R"({"$jsonSchema": {"patternProperties": {"^n_": {"bsonType": "int"}}}})", R"({"n_a": "x"})",
       false},
      {R"({"$jsonSchema": {"minProperties": 2}})", R"({"a": 1})", false},
      {R"({"$jsonSchema": {"maxProperties": 1}})", R"({"a": 1})", true},
      {R"({"$jsonSchema": {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}})", R"({"b": 1})",
       true},
      {R"({"$jsonSchema": {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}})",
       R"({"a": 1, "b": 1})", false},
      {R"({"$jsonSchema": {"allOf": [{"required": ["a"]}, {"required": ["b"]}]}})", R"({"a": 1})",
       false},
      {R"({"$jsonSchema": {"not": {"required": ["a"]}}})", R"({"b": 1})", true},
      {R"({"$jsonSchema": {"properties": {"o": {"bsonType": "object", "required": ["x"]}}}})",
       R"({"o": {"y": 1}})", false},
      {R"({"$jsonSchema": {"bsonType": "object", "description": "d", "title": "t"}})",
       R"({"a": 1})", true},
      {R"({"$jsonSchema": {"required": ["a"]}, "b": 2})", R"({"a": 1, "b": 2})", true},
      {R"({"$or": [{"$jsonSchema": {"required": ["a"]}}, {"b": 2}]})", R"({"b": 2})", true},
  });
}

TEST(MatcherTest, WhereIsRefused) {
  EXPECT_EQ(Matcher::Parse(J(R"({"$where": "true"})")).status().code(), ErrorCode::kBadValue);
}

// A stand-in for the pipeline module's $expr: {$expr: "field"} is true when `field` is truthy,
// and {$expr: "boom"} fails to evaluate.
class FieldTruthy final : public CompiledExpression {
 public:
  explicit FieldTruthy(std::string f) : f_(std::move(f)) {}
  StatusWith<bool> EvaluateTruthy(const BsonObj& doc) const override {
    if (f_ == "boom") return Status(ErrorCode::kBadValue, "boom");
    return doc.GetField(f_).Truthy();
  }

 private:
  std::string f_;
};

StatusWith<CompiledExpressionPtr> FakeParse(const bson::BsonElement& e, const ExpressionContext&) {
  return CompiledExpressionPtr(std::make_shared<FieldTruthy>(std::string(e.Str())));
}

TEST(MatcherTest, ExprGoesThroughTheHookAnywhereAtTopLevel) {
  ExpressionHooks saved = GetExpressionHooks();
  ExpressionHooks fake;
  fake.parse_expression = &FakeParse;
  SetExpressionHooks(fake);
  RunCases({
      {R"({"$expr": "a"})", R"({"a": true})", true},
      {R"({"$expr": "a"})", R"({"a": 0})", false},
      {R"({"$or": [{"$expr": "a"}, {"b": 1}]})", R"({"a": false, "b": 1})", true},
      {R"({"$and": [{"$expr": "a"}, {"b": 1}]})", R"({"a": true, "b": 2})", false},
      {R"({"$nor": [{"$expr": "a"}]})", R"({"a": false})", true},
  });
  auto m = Matcher::Parse(J(R"({"$or": [{"x": 1}, {"$expr": "boom"}]})"));
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m.value().Evaluate(J(R"({"x": 1})")).value());
  EXPECT_EQ(m.value().Evaluate(J(R"({"x": 2})")).status().code(), ErrorCode::kBadValue);
  EXPECT_FALSE(m.value().Matches(J(R"({"x": 2})")));
  // Not inside $elemMatch.
  EXPECT_EQ(Matcher::Parse(J(R"({"a": {"$elemMatch": {"$expr": "a"}}})")).status().code(),
            ErrorCode::kBadValue);
  SetExpressionHooks(saved);
}

TEST(MatcherTest, MatchedArrayIndex) {
  struct Case {
    const char* filter;
    const char* doc;
    const char* array_path;
    int expected;  // -1: none
  };
  std::vector<Case> cases = {
      {R"({"a": 3})", R"({"a": [1, 3, 3]})", "a", 1},
      {R"({"a": {"$gt": 1}})", R"({"a": [1, 3]})", "a", 1},
      {R"({"a.b": 2})", R"({"a": [{"b": 1}, {"b": 2}]})", "a", 1},
      {R"({"a": {"$elemMatch": {"b": 1, "c": 2}}})", R"({"a": [{"b": 1}, {"b": 1, "c": 2}]})", "a",
       1},
      {R"({"x.a": 5})", R"({"x": {"a": [4, 5]}})", "x.a", 1},
      {R"({"_id": 1})", R"({"_id": 1, "a": [1]})", "a", -1},
      {R"({"a": {"$ne": 1}})", R"({"a": [2, 3]})", "a", -1},
      {R"({"$or": [{"a": 9}, {"a": 3}]})", R"({"a": [1, 3]})", "a", 1},
      // The last clause of an $and through the array wins, as in MongoDB.
      {R"({"a": {"$gte": 1}, "$and": [{"a": 2}]})", R"({"a": [1, 2]})", "a", 1},
  };
  for (const Case& c : cases) {
    auto m = Matcher::Parse(J(c.filter));
    ASSERT_TRUE(m.ok());
    auto idx = m.value().MatchedArrayIndex(J(c.doc), SplitPath(c.array_path));
    EXPECT_EQ(idx ? static_cast<int>(*idx) : -1, c.expected) << c.filter;
  }
}

TEST(MatcherTest, ElementMatcherValueAndDocumentForms) {
  auto value = ElementMatcher::Parse(J(R"({"$gte": 6})")).value();
  BsonObj doc = J(R"({"a": 7, "b": 5, "c": {"x": 1}})");
  EXPECT_TRUE(value.Matches(doc["a"]));
  EXPECT_FALSE(value.Matches(doc["b"]));
  auto object = ElementMatcher::Parse(J(R"({"x": 1})")).value();
  EXPECT_TRUE(object.Matches(doc["c"]));
  EXPECT_FALSE(object.Matches(doc["a"]));
}

TEST(MatcherTest, ExtractEqualityDocument) {
  auto r = ExtractEqualityDocument(J(R"({"a": 1, "b.c": 2, "$and": [{"d": 3}], "e": {"$gt": 1},
                                         "f": {"$eq": 4}, "g": {"$in": [5]}, "_id": 7})"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().ToJson(),
            J(R"({"_id": 7, "a": 1, "b": {"c": 2}, "d": 3, "f": 4, "g": 5})").ToJson());
  auto single_or = ExtractEqualityDocument(J(R"({"$or": [{"x": 1}]})"));
  EXPECT_EQ(single_or.value().ToJson(), J(R"({"x": 1})").ToJson());
  auto multi_or = ExtractEqualityDocument(J(R"({"$or": [{"x": 1}, {"y": 2}]})"));
  EXPECT_TRUE(multi_or.value().IsEmpty());
  EXPECT_EQ(ExtractEqualityDocument(J(R"({"a": 1, "$and": [{"a": 2}]})")).status().code(),
            ErrorCode::kNotSingleValueField);
  EXPECT_EQ(ExtractEqualityDocument(J(R"({"a": 1, "a.b": 2})")).status().code(),
            ErrorCode::kNotSingleValueField);
}

}  // namespace
}  // namespace hourglass::query

namespace hourglass::query {
namespace {

TEST(MatcherTest, WithoutDropsTopLevelClausesOfTheParsedFilter) {
  auto m = Matcher::Parse(J(R"({"tags.host": "a", "$comment": "c", "v": {"$gt": 5},
                                "$or": [{"w": 1}, {"tags.host": "b"}]})"));
  ASSERT_TRUE(m.ok());
  std::vector<std::string> offered;
  Matcher rest = m.value().Without([&](const bson::BsonElement& e) {
    offered.emplace_back(e.FieldName());
    return PathStartsWith(e.FieldName(), "tags");
  });
  // $comment is never offered; the others are, in order.
  EXPECT_EQ(offered, (std::vector<std::string>{"tags.host", "v", "$or"}));
  // The host test is gone, the others remain.
  EXPECT_TRUE(rest.Matches(J(R"({"tags": {"host": "z"}, "v": 6, "w": 1})")));
  EXPECT_FALSE(m.value().Matches(J(R"({"tags": {"host": "z"}, "v": 6, "w": 1})")));
  EXPECT_FALSE(rest.Matches(J(R"({"tags": {"host": "a"}, "v": 5, "w": 1})")));
  EXPECT_FALSE(rest.Matches(J(R"({"v": 6, "w": 2})")));
  EXPECT_FALSE(rest.MatchesEverything());
  // Dropping every clause leaves a filter that matches everything.
  Matcher none = m.value().Without([](const bson::BsonElement&) { return true; });
  EXPECT_TRUE(none.MatchesEverything());
  EXPECT_TRUE(none.Matches(J(R"({"v": 0})")));
  // A single remaining clause works as the whole filter's clause did.
  Matcher v_only =
      m.value().Without([](const bson::BsonElement& e) { return e.FieldName() != "v"; });
  EXPECT_TRUE(v_only.Matches(J(R"({"v": [1, 7]})")));
  EXPECT_FALSE(v_only.Matches(J(R"({"v": 5})")));
}

TEST(MatcherTest, FieldConjunctsOnlyForTestsOfTopLevelFields) {
  auto conjuncts = [](const char* filter) {
    auto m = Matcher::Parse(J(filter));
    EXPECT_TRUE(m.ok()) << filter;
    return m.value().FieldConjuncts();
  };
  auto fields = [&](const char* filter) {
    std::vector<std::string> out;
    auto found = conjuncts(filter);
    EXPECT_TRUE(found.has_value()) << filter;
    for (const FieldPredicate& p : found.value_or(std::vector<FieldPredicate>{})) {
      out.push_back(p.field());
    }
    return out;
  };
  EXPECT_EQ(fields(R"({})"), std::vector<std::string>{});
  // Each operator of a path is a conjunct of its own.
  EXPECT_EQ(fields(R"({"a": 1, "b": {"$gt": 2, "$lt": 5}})"),
            (std::vector<std::string>{"a", "b", "b"}));
  EXPECT_EQ(fields(R"({"$and": [{"a": 1}, {"$and": [{"c": {"$in": [1, 2]}}]}], "$comment": "x"})"),
            (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(fields(R"({"a": {"$not": {"$gt": 1}}, "b": {"$size": 2}})"),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(fields(R"({"$or": [{"a": 1}, {"a": {"$gt": 5}}], "b": {"$ne": 2}})"),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(fields(R"({"a.b": 1, "a.c": {"$gt": 1}})"), (std::vector<std::string>{"a", "a"}));
  EXPECT_FALSE(conjuncts(R"({"$or": [{"a.b": 1}, {"c": 1}]})").has_value());
  EXPECT_FALSE(conjuncts(R"({"a": 1, "$jsonSchema": {"required": ["a"]}})").has_value());
  EXPECT_FALSE(conjuncts(R"({"a": 1, "$or": [{"b": 1}, {"c": 1}]})").has_value());
  EXPECT_EQ(fields(R"({"$nor": [{"b": 1}, {"b": 2}]})"), std::vector<std::string>{"b"});
  EXPECT_FALSE(conjuncts(R"({"$alwaysFalse": 1})").has_value());
}

// A document {f: v} matches the filter exactly when every conjunct accepts v, for values of
// every kind the path rules treat differently: scalars of several types, null, missing, arrays
// (tested whole and element by element), nested arrays and objects.
TEST(MatcherTest, FieldConjunctsAgreeWithTheMatcher) {
  const char* const kFilters[] = {
      R"({"f": 5})",
      R"({"f": null})",
      R"({"f": {"$gt": 2, "$lte": 7}})",
      R"({"f": {"$ne": 3}})",
      R"({"f": {"$nin": [1, null]}})",
      R"({"f": {"$in": [[1, 2], "x", {"$regex": "^y"}]}})",
      R"({"f": [1, 2]})",
      R"({"f": {"$size": 2}})",
      R"({"f": {"$elemMatch": {"$gt": 4}}})",
      R"({"f": {"$exists": false}})",
      R"({"f": {"$not": {"$lt": 3}}})",
      R"({"f": {"$all": [1, 2]}})",
      R"({"f": {"$gte": {"$numberDouble": "NaN"}}})",
      R"({"f": {"a": 1}})",
      R"({"$or": [{"f": 1}, {"f": {"$size": 2}}]})",
      R"({"$nor": [{"f": 5}, {"f": null}]})",
      R"({"f.a": 1})",
      R"({"f.a": {"$exists": false}, "f.0": {"$lt": 4}})",
  };
  const char* const kValues[] = {
      R"({"f": 5})",      R"({"f": 5.0})",         R"({"f": {"$numberDouble": "NaN"}})",
      R"({"f": 3})",      R"({"f": null})",        R"({})",
      R"({"f": "x"})",    R"({"f": "yz"})",        R"({"f": [1, 2]})",
      R"({"f": [5, 9]})", R"({"f": [[1, 2], 3]})", R"({"f": []})",
      R"({"f": [null]})", R"({"f": {"a": 1}})",    R"({"f": [{"a": 1}]})",
      R"({"f": [2, 1]})", R"({"f": [3, 4, 5]})"};
  for (const char* filter : kFilters) {
    auto m = Matcher::Parse(J(filter));
    ASSERT_TRUE(m.ok()) << filter;
    auto conjuncts = m.value().FieldConjuncts();
    ASSERT_TRUE(conjuncts.has_value()) << filter;
    for (const char* value : kValues) {
      BsonObj doc = J(value);
      bool all = true;
      for (const FieldPredicate& p : *conjuncts) all = all && p.Matches(doc["f"]);
      EXPECT_EQ(all, m.value().Matches(doc)) << filter << " on " << value;
    }
  }
}

}  // namespace
}  // namespace hourglass::query
