#include "query/update.h"

#include <gtest/gtest.h>

#include "query/matcher.h"
#include "query/query_errors.h"
#include "query/test_util.h"

namespace hourglass::query {
namespace {

using bson::BsonObj;

struct Case {
  const char* doc;
  const char* update;
  const char* expected;
};

StatusWith<BsonObj> ApplyUpdate(const char* doc, const char* update, bool* modified = nullptr,
                                bool upsert_insert = false) {
  HG_ASSIGN_OR_RETURN(UpdateDriver d, UpdateDriver::Parse(J(update), BsonObj()));
  return d.Apply(J(doc), upsert_insert, modified);
}

void RunCases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    auto r = ApplyUpdate(c.doc, c.update);
    ASSERT_TRUE(r.ok()) << c.update << ": " << r.status().ToString();
    EXPECT_EQ(r.value().ToJson(), J(c.expected).ToJson()) << c.doc << " " << c.update;
  }
}

TEST(UpdateDriverTest, SetAndUnset) {
  RunCases({
      {R"({"_id": 1, "a": 1})", R"({"$set": {"a": 2}})", R"({"_id": 1, "a": 2})"},
      {R"({"_id": 1, "a": 1})", R"({"$set": {"b": 2}})", R"({"_id": 1, "a": 1, "b": 2})"},
      // New fields are appended in path order; existing ones stay in place.
      {R"({"_id": 1, "m": 1})", R"({"$set": {"z": 1, "b": 2, "m": 3}})",
       R"({"_id": 1, "m": 3, "b": 2, "z": 1})"},
      {R"({"_id": 1})", R"({"$set": {"a.b.c": 1}})", R"({"_id": 1, "a": {"b": {"c": 1}}})"},
      {R"({"_id": 1, "a": {"x": 1}})", R"({"$set": {"a.y": 2}})",
       R"({"_id": 1, "a": {"x": 1, "y": 2}})"},
      {R"({"_id": 1, "a": [1, 2, 3]})", R"({"$set": {"a.1": 9}})", R"({"_id": 1, "a": [1, 9, 3]})"},
      {R"({"_id": 1, "a": [1]})", R"({"$set": {"a.3": 9}})",
       R"({"_id": 1, "a": [1, null, null, 9]})"},
      {R"({"_id": 1, "a": [{"b": 1}]})", R"({"$set": {"a.0.b": 2}})",
       R"({"_id": 1, "a": [{"b": 2}]})"},
      {R"({"_id": 1, "a": {}})", R"({"$set": {"a.0": 1}})", R"({"_id": 1, "a": {"0": 1}})"},
      {R"({"_id": 1, "a": 1, "b": 2})", R"({"$unset": {"a": ""}})", R"({"_id": 1, "b": 2})"},
      {R"({"_id": 1, "a": 1})", R"({"$unset": {"x.y": 1}})", R"({"_id": 1, "a": 1})"},
      {R"({"_id": 1, "a": [1, 2]})", R"({"$unset": {"a.0": 1}})", R"({"_id": 1, "a": [null, 2]})"},
      {R"({"_id": 1, "a": {"b": 1, "c": 2}})", R"({"$unset": {"a.b": 1}})",
       R"({"_id": 1, "a": {"c": 2}})"},
      {R"({"_id": 1, "a": 1})", R"({"$set": {}})", R"({"_id": 1, "a": 1})"},
  });
}

TEST(UpdateDriverTest, IncAndMulPromoteTypes) {
  RunCases({
      {R"({"_id": 1, "a": 1})", R"({"$inc": {"a": 2}})", R"({"_id": 1, "a": 3})"},
      {R"({"_id": 1, "a": 1})", R"({"$inc": {"a": -2}})", R"({"_id": 1, "a": -1})"},
      {R"({"_id": 1})", R"({"$inc": {"a": 5}})", R"({"_id": 1, "a": 5})"},
      {R"({"_id": 1, "a": 1})", R"({"$inc": {"a": 0.5}})", R"({"_id": 1, "a": 1.5})"},
      {R"({"_id": 1, "a": 2147483647})", R"({"$inc": {"a": 1}})",
       R"({"_id": 1, "a": {"$numberLong": "2147483648"}})"},
      {R"({"_id": 1, "a": {"$numberLong": "1"}})", R"({"$inc": {"a": 1}})",
       R"({"_id": 1, "a": {"$numberLong": "2"}})"},
      {R"({"_id": 1, "a": 5})", R"({"$mul": {"a": 2}})", R"({"_id": 1, "a": 10})"},
      {R"({"_id": 1, "a": 10.5})", R"({"$mul": {"a": 2}})", R"({"_id": 1, "a": 21.0})"},
      {R"({"_id": 1})", R"({"$mul": {"a": {"$numberLong": "3"}}})",
       R"({"_id": 1, "a": {"$numberLong": "0"}})"},
      {R"({"_id": 1, "a": 65536})", R"({"$mul": {"a": 65536}})",
       R"({"_id": 1, "a": {"$numberLong": "4294967296"}})"},
  });
  EXPECT_EQ(ApplyUpdate(R"({"_id": 1, "a": {"$numberLong": "9223372036854775807"}})",
                        R"({"$inc": {"a": 1}})")
                .status()
                .code(),
            ErrorCode::kBadValue);
}

TEST(UpdateDriverTest, MinMaxRenameCurrentDate) {
  RunCases({
      {R"({"_id": 1, "lo": 200})", R"({"$min": {"lo": 150}})", R"({"_id": 1, "lo": 150})"},
      {R"({"_id": 1, "lo": 200})", R"({"$min": {"lo": 250}})", R"({"_id": 1, "lo": 200})"},
      {R"({"_id": 1, "hi": 800})", R"({"$max": {"hi": 950}})", R"({"_id": 1, "hi": 950})"},
      {R"({"_id": 1})", R"({"$max": {"hi": 1}})", R"({"_id": 1, "hi": 1})"},
      // $min/$max compare across types in the canonical order (null < numbers < strings).
      {R"({"_id": 1, "v": "s"})", R"({"$min": {"v": 5}})", R"({"_id": 1, "v": 5})"},
      {R"({"_id": 1, "a": 1, "b": 2})", R"({"$rename": {"a": "c"}})",
       R"({"_id": 1, "b": 2, "c": 1})"},
      {R"({"_id": 1, "a": {"x": 1}})", R"({"$rename": {"a.x": "b.y"}})",
       R"({"_id": 1, "a": {}, "b": {"y": 1}})"},
      {R"({"_id": 1, "a": 1})", R"({"$rename": {"missing": "b"}})", R"({"_id": 1, "a": 1})"},
      {R"({"_id": 1, "a": 1, "b": 2})", R"({"$rename": {"a": "b"}})", R"({"_id": 1, "b": 1})"},
  });
  auto r =
      ApplyUpdate(R"({"_id": 1})", R"({"$currentDate": {"d": true, "t": {"$type": "timestamp"}}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()["d"].type(), bson::BsonType::kDate);
  EXPECT_EQ(r.value()["t"].type(), bson::BsonType::kTimestamp);
  EXPECT_GT(r.value()["d"].DateMillis(), 1600000000000);
}

TEST(UpdateDriverTest, ArrayOperators) {
  RunCases({
      {R"({"_id": 1, "s": [1]})", R"({"$push": {"s": 2}})", R"({"_id": 1, "s": [1, 2]})"},
      {R"({"_id": 1})", R"({"$push": {"s": 2}})", R"({"_id": 1, "s": [2]})"},
      {R"({"_id": 1, "s": [1]})", R"({"$push": {"s": [2, 3]}})", R"({"_id": 1, "s": [1, [2, 3]]})"},
      {R"({"_id": 1, "s": [1]})", R"({"$push": {"s": {"$each": [2, 3]}}})",
       R"({"_id": 1, "s": [1, 2, 3]})"},
      {R"({"_id": 1, "s": [1, 2]})", R"({"$push": {"s": {"$each": [9], "$position": 0}}})",
       R"({"_id": 1, "s": [9, 1, 2]})"},
      {R"({"_id": 1, "s": [1, 2, 3]})", R"({"$push": {"s": {"$each": [9], "$position": -1}}})",
       R"({"_id": 1, "s": [1, 2, 9, 3]})"},
      {R"({"_id": 1, "s": [89, 70]})",
       R"({"$push": {"s": {"$each": [100, 20], "$sort": -1, "$slice": 3}}})",
       R"({"_id": 1, "s": [100, 89, 70]})"},
      {R"({"_id": 1, "s": [1, 2, 3]})", R"({"$push": {"s": {"$each": [4], "$slice": -2}}})",
       R"({"_id": 1, "s": [3, 4]})"},
      {R"({"_id": 1, "s": [1, 2]})", R"({"$push": {"s": {"$each": [], "$slice": 0}}})",
       R"({"_id": 1, "s": []})"},
      {R"({"_id": 1, "q": [{"id": 3, "score": 6}, {"id": 4, "score": 9}]})",
       R"({"$push": {"q": {"$each": [{"id": 5, "score": 8}], "$sort": {"score": 1}}}})",
       R"({"_id": 1, "q": [{"id": 3, "score": 6}, {"id": 5, "score": 8}, {"id": 4, "score": 9}]})"},
      {R"({"_id": 1, "t": ["a", "b"]})", R"({"$addToSet": {"t": "b"}})",
       R"({"_id": 1, "t": ["a", "b"]})"},
      {R"({"_id": 1, "t": ["a", "b"]})", R"({"$addToSet": {"t": {"$each": ["c", "a", "c"]}}})",
       R"({"_id": 1, "t": ["a", "b", "c"]})"},
      {R"({"_id": 1, "t": [1]})", R"({"$addToSet": {"t": 1.0}})", R"({"_id": 1, "t": [1]})"},
      {R"({"_id": 1, "t": [1, 2, 3]})", R"({"$pop": {"t": -1}})", R"({"_id": 1, "t": [2, 3]})"},
      {R"({"_id": 1, "t": [1, 2, 3]})", R"({"$pop": {"t": 1}})", R"({"_id": 1, "t": [1, 2]})"},
      {R"({"_id": 1, "t": []})", R"({"$pop": {"t": 1}})", R"({"_id": 1, "t": []})"},
      {R"({"_id": 1, "v": [3, 6, 9, 6]})", R"({"$pull": {"v": 6}})", R"({"_id": 1, "v": [3, 9]})"},
      {R"({"_id": 1, "v": [3, 6, 9, 7]})", R"({"$pull": {"v": {"$gte": 6}}})",
       R"({"_id": 1, "v": [3]})"},
      {R"({"_id": 1, "r": [{"item": "A", "score": 5}, {"item": "B", "score": 8, "x": 1}]})",
       R"({"$pull": {"r": {"score": 8, "item": "B"}}})",
       R"({"_id": 1, "r": [{"item": "A", "score": 5}]})"},
      {R"({"_id": 1, "v": ["apple", "kiwi"]})",
       R"({"$pull": {"v": {"$regularExpression": {"pattern": "^a", "options": ""}}}})",
       R"({"_id": 1, "v": ["kiwi"]})"},
      {R"({"_id": 1, "v": [0, 2, 5, 5, 1, 0]})", R"({"$pullAll": {"v": [0, 5]}})",
       R"({"_id": 1, "v": [2, 1]})"},
      {R"({"_id": 1})", R"({"$pull": {"v": 1}})", R"({"_id": 1})"},
  });
}

TEST(UpdateDriverTest, Bit) {
  RunCases({
      // Manual examples: 13 & 10 = 8, 3 | 5 = 7, 1 ^ 5 = 4.
      {R"({"_id": 1, "e": 13})", R"({"$bit": {"e": {"and": 10}}})", R"({"_id": 1, "e": 8})"},
      {R"({"_id": 1, "e": 3})", R"({"$bit": {"e": {"or": 5}}})", R"({"_id": 1, "e": 7})"},
      {R"({"_id": 1, "e": 1})", R"({"$bit": {"e": {"xor": 5}}})", R"({"_id": 1, "e": 4})"},
      {R"({"_id": 1, "e": 12})", R"({"$bit": {"e": {"and": 10, "or": 1}}})",
       R"({"_id": 1, "e": 9})"},
      // A long operand makes a long; a missing field starts from 0.
      {R"({"_id": 1, "e": 1})", R"({"$bit": {"e": {"or": {"$numberLong": "2"}}}})",
       R"({"_id": 1, "e": {"$numberLong": "3"}})"},
      {R"({"_id": 1})", R"({"$bit": {"e": {"or": 6}}})", R"({"_id": 1, "e": 6})"},
  });
  EXPECT_EQ(ApplyUpdate(R"({"_id": 1, "e": 1.5})", R"({"$bit": {"e": {"or": 1}}})").status().code(),
            ErrorCode::kBadValue);
  EXPECT_EQ(ApplyUpdate(R"({"_id": 1})", R"({"$bit": {"e": {"or": 1.0}}})").status().code(),
            ErrorCode::kBadValue);
  EXPECT_EQ(ApplyUpdate(R"({"_id": 1})", R"({"$bit": {"e": {"nand": 1}}})").status().code(),
            ErrorCode::kBadValue);
  EXPECT_EQ(ApplyUpdate(R"({"_id": 1})", R"({"$bit": {"e": 1}})").status().code(),
            ErrorCode::kBadValue);
}

TEST(UpdateDriverTest, ReplacementKeepsId) {
  RunCases({
      {R"({"_id": 1, "a": 1})", R"({"b": 2})", R"({"_id": 1, "b": 2})"},
      {R"({"_id": 1, "a": 1})", R"({"b": 2, "_id": 1})", R"({"_id": 1, "b": 2})"},
      {R"({"_id": 1, "a": 1})", R"({})", R"({"_id": 1})"},
  });
  EXPECT_TRUE(UpdateDriver::Parse(J(R"({"b": 2})"), BsonObj()).value().IsReplacement());
  EXPECT_FALSE(UpdateDriver::Parse(J(R"({"$set": {"b": 2}})"), BsonObj()).value().IsReplacement());
  EXPECT_EQ(ApplyUpdate(R"({"_id": 1})", R"({"_id": 2, "a": 1})").status().code(),
            ErrorCode::kImmutableField);
}

TEST(UpdateDriverTest, ModifiedFlagAndSetOnInsert) {
  bool modified = true;
  ASSERT_TRUE(ApplyUpdate(R"({"_id": 1, "a": 1})", R"({"$set": {"a": 1}})", &modified).ok());
  EXPECT_FALSE(modified);
  ASSERT_TRUE(ApplyUpdate(R"({"_id": 1, "a": 1})", R"({"$set": {"a": 1.0}})", &modified).ok());
  EXPECT_TRUE(modified);
  auto no_insert = ApplyUpdate(R"({"_id": 1})", R"({"$setOnInsert": {"a": 1}})", &modified);
  EXPECT_EQ(no_insert.value().ToJson(), J(R"({"_id": 1})").ToJson());
  EXPECT_FALSE(modified);
  auto insert = ApplyUpdate(R"({"_id": 1})", R"({"$setOnInsert": {"a": 1}})", &modified, true);
  EXPECT_EQ(insert.value().ToJson(), J(R"({"_id": 1, "a": 1})").ToJson());
  // _id may be "set" to its current value.
  EXPECT_TRUE(ApplyUpdate(R"({"_id": 1})", R"({"$set": {"_id": 1}})").ok());
}

struct ErrorCase {
  const char* doc;
  const char* update;
  ErrorCode code;
};

TEST(UpdateDriverTest, Errors) {
  std::vector<ErrorCase> cases = {
      {R"({"_id": 1})", R"({"$foo": {"a": 1}})", ErrorCode::kFailedToParse},
      {R"({"_id": 1})", R"({"$set": {"a": 1}, "b": 1})", ErrorCode::kFailedToParse},
      {R"({"_id": 1})", R"({"$set": 5})", ErrorCode::kFailedToParse},
      {R"({"_id": 1})", R"({"a": 1, "$set": {"b": 1}})", ErrorCode::kDollarPrefixedFieldName},
      {R"({"_id": 1})", R"({"$set": {"a": 1}, "$inc": {"a": 1}})", kConflictingUpdateOperatorsCode},
      {R"({"_id": 1})", R"({"$set": {"a": 1, "a.b": 1}})", kConflictingUpdateOperatorsCode},
      {R"({"_id": 1})", R"({"$rename": {"a": "b"}, "$set": {"b.c": 1}})",
       kConflictingUpdateOperatorsCode},
      {R"({"_id": 1})", R"({"$inc": {"a": "x"}})", ErrorCode::kTypeMismatch},
      {R"({"_id": 1, "a": "x"})", R"({"$inc": {"a": 1}})", ErrorCode::kTypeMismatch},
      {R"({"_id": 1})", R"({"$set": {"_id": 2}})", ErrorCode::kImmutableField},
      {R"({"_id": {"x": 1}})", R"({"$set": {"_id.x": 2}})", ErrorCode::kImmutableField},
      {R"({"_id": 1})", R"({"$unset": {"_id": 1}})", ErrorCode::kImmutableField},
      {R"({"_id": 1, "a": 1})", R"({"$set": {"a.b": 1}})", ErrorCode::kPathNotViable},
      {R"({"_id": 1, "a": [1]})", R"({"$set": {"a.b": 1}})", ErrorCode::kPathNotViable},
      {R"({"_id": 1})", R"({"$set": {"": 1}})", ErrorCode::kEmptyFieldName},
      {R"({"_id": 1})", R"({"$set": {"a..b": 1}})", ErrorCode::kEmptyFieldName},
      {R"({"_id": 1})", R"({"$set": {"a.$": 1}})", ErrorCode::kBadValue},
      {R"({"_id": 1, "a": 1})", R"({"$push": {"a": 1}})", ErrorCode::kBadValue},
      {R"({"_id": 1, "a": 1})", R"({"$pop": {"a": 1}})", ErrorCode::kTypeMismatch},
      {R"({"_id": 1})", R"({"$pop": {"a": 2}})", ErrorCode::kFailedToParse},
      {R"({"_id": 1})", R"({"$push": {"a": {"$each": 1}}})", ErrorCode::kBadValue},
      {R"({"_id": 1})", R"({"$push": {"a": {"$each": [1], "$slice": "x"}}})", ErrorCode::kBadValue},
      {R"({"_id": 1})", R"({"$push": {"a": {"$each": [1], "$sort": 2}}})", ErrorCode::kBadValue},
      {R"({"_id": 1})", R"({"$pullAll": {"a": 1}})", ErrorCode::kBadValue},
      {R"({"_id": 1})", R"({"$rename": {"a": 1}})", ErrorCode::kBadValue},
      {R"({"_id": 1})", R"({"$rename": {"a": "a.b"}})", ErrorCode::kBadValue},
      {R"({"_id": 1, "a": [{"b": 1}]})", R"({"$rename": {"a.0.b": "c"}})", ErrorCode::kBadValue},
      {R"({"_id": 1})", R"({"$currentDate": {"a": 1}})", ErrorCode::kBadValue},
  };
  for (const ErrorCase& c : cases) {
    auto r = ApplyUpdate(c.doc, c.update);
    ASSERT_FALSE(r.ok()) << c.update;
    EXPECT_EQ(r.status().code(), c.code) << c.update << ": " << r.status().ToString();
  }
  EXPECT_EQ(
      ApplyUpdate(R"({"_id": 1})", R"({"$set": {"a": 1}, "$inc": {"a": 1}})").status().reason(),
      "Updating the path 'a' would create a conflict at 'a'");
  EXPECT_EQ(ApplyUpdate(R"({"_id": 1})", R"({"$foo": {"a": 1}})").status().reason(),
            "Unknown modifier: $foo. Expected a valid update modifier or pipeline-style update "
            "specified as an array");
  // An array filter no path uses (MongoDB: FailedToParse).
  EXPECT_EQ(
      UpdateDriver::Parse(J(R"({"$set": {"a": 1}})"), J(R"({"0": {"x": 1}})")).status().code(),
      ErrorCode::kFailedToParse);
  // Pipeline updates need the pipeline module, which query_test does not link.
  EXPECT_EQ(UpdateDriver::ParsePipeline(J(R"({"0": {"$set": {"a": 1}}})")).status().code(),
            ErrorCode::kCommandNotSupported);
}

StatusWith<BsonObj> ApplyWith(const char* doc, const char* update, const char* array_filters,
                              const char* query = "{}", bool upsert_insert = false) {
  HG_ASSIGN_OR_RETURN(UpdateDriver d, UpdateDriver::Parse(J(update), J(array_filters)));
  HG_ASSIGN_OR_RETURN(Matcher m, Matcher::Parse(J(query)));
  return d.Apply(J(doc), upsert_insert, nullptr, &m);
}

TEST(UpdateDriverTest, PositionalOperators) {
  struct PCase {
    const char* doc;
    const char* query;
    const char* update;
    const char* filters;
    const char* expected;
  };
  std::vector<PCase> cases = {
      // "$": the first element the query matched (manual: positional $).
      {R"({"_id": 1, "grades": [85, 80, 80]})", R"({"grades": 80})",
       R"({"$set": {"grades.$": 82}})", "{}", R"({"_id": 1, "grades": [85, 82, 80]})"},
      {R"({"_id": 1, "g": [{"k": 1, "v": 1}, {"k": 2, "v": 1}]})", R"({"g.k": 2})",
       R"({"$inc": {"g.$.v": 5}})", "{}",
       R"({"_id": 1, "g": [{"k": 1, "v": 1}, {"k": 2, "v": 6}]})"},
      {R"({"_id": 1, "g": [{"k": 1, "v": 1}, {"k": 2, "v": 7}]})",
       R"({"g": {"$elemMatch": {"k": 2, "v": {"$gt": 5}}}})", R"({"$set": {"g.$.v": 0}})", "{}",
       R"({"_id": 1, "g": [{"k": 1, "v": 1}, {"k": 2, "v": 0}]})"},
      // "$[]": every element.
      {R"({"_id": 1, "a": [1, 2, 3]})", "{}", R"({"$inc": {"a.$[]": 10}})", "{}",
       R"({"_id": 1, "a": [11, 12, 13]})"},
      {R"({"_id": 1, "a": [{"b": 1}, {"c": 1}]})", "{}", R"({"$set": {"a.$[].b": 0}})", "{}",
       R"({"_id": 1, "a": [{"b": 0}, {"c": 1, "b": 0}]})"},
      // "$[<id>]": the elements the array filter selects.
      {R"({"_id": 1, "a": [95, 102, 90, 150]})", "{}", R"({"$set": {"a.$[e]": 100}})",
       R"([{"e": {"$gte": 100}}])", R"({"_id": 1, "a": [95, 100, 90, 100]})"},
      {R"({"_id": 1, "a": [{"g": 80, "m": 75}, {"g": 85, "m": 90}, {"g": 85, "m": 85}]})", "{}",
       R"({"$inc": {"a.$[e].m": -2}})", R"([{"e.g": {"$gte": 85}}])",
       R"({"_id": 1, "a": [{"g": 80, "m": 75}, {"g": 85, "m": 88}, {"g": 85, "m": 83}]})"},
      // Nested: every array in `a`, then the elements of each that pass `x`.
      {R"({"_id": 1, "a": [[1, 5], [6, 2]]})", "{}", R"({"$set": {"a.$[].$[x]": 0}})",
       R"([{"x": {"$gt": 4}}])", R"({"_id": 1, "a": [[1, 0], [0, 2]]})"},
  };
  for (const PCase& c : cases) {
    auto r = ApplyWith(c.doc, c.update, c.filters, c.query);
    ASSERT_TRUE(r.ok()) << c.update << ": " << r.status().ToString();
    EXPECT_EQ(r.value().ToJson(), J(c.expected).ToJson()) << c.update;
  }
  // Errors: the query matched no element, a missing or non-array path, an undefined or unused
  // identifier, bad array filters, and two positional paths reaching the same element.
  EXPECT_EQ(ApplyWith(R"({"_id": 1, "a": [1]})", R"({"$set": {"a.$": 1}})", "{}").status().code(),
            ErrorCode::kBadValue);
  EXPECT_EQ(ApplyWith(R"({"_id": 1})", R"({"$set": {"a.$[]": 1}})", "{}").status().code(),
            ErrorCode::kBadValue);
  EXPECT_EQ(ApplyWith(R"({"_id": 1, "a": 5})", R"({"$set": {"a.$[]": 1}})", "{}").status().code(),
            ErrorCode::kBadValue);
  EXPECT_EQ(
      ApplyWith(R"({"_id": 1})", R"({"$set": {"a.$[]": 1}})", "{}", "{}", true).status().code(),
      ErrorCode::kBadValue);
  EXPECT_EQ(
      ApplyWith(R"({"_id": 1, "a": [1]})", R"({"$set": {"a.$[x]": 1}})", "{}").status().code(),
      ErrorCode::kBadValue);
  EXPECT_EQ(
      ApplyWith(R"({"_id": 1, "a": [1]})", R"({"$set": {"a.$[x]": 1}})", R"([{"x": 1}, {"y": 1}])")
          .status()
          .code(),
      ErrorCode::kFailedToParse);
  EXPECT_EQ(
      ApplyWith(R"({"_id": 1, "a": [1]})", R"({"$set": {"a.$[x]": 1}})", R"([{"x": 1, "y": 1}])")
          .status()
          .code(),
      ErrorCode::kFailedToParse);
  EXPECT_EQ(
      ApplyWith(R"({"_id": 1, "a": [1]})", R"({"$set": {"a.$[x]": 1}})", R"([{"x": 1}, {"x": 2}])")
          .status()
          .code(),
      ErrorCode::kFailedToParse);
  EXPECT_EQ(ApplyWith(R"({"_id": 1, "a": [1]})", R"({"$set": {"a.$[X]": 1}})", R"([{"X": 1}])")
                .status()
                .code(),
            ErrorCode::kBadValue);
  EXPECT_EQ(
      ApplyWith(R"({"_id": 1, "a": [1]})", R"({"$set": {"a.$[x]": 1}})", R"([{}])").status().code(),
      ErrorCode::kFailedToParse);
  EXPECT_EQ(ApplyWith(R"({"_id": 1, "a": [1, 2]})", R"({"$set": {"a.$[x]": 1, "a.$[y]": 2}})",
                      R"([{"x": 1}, {"y": {"$lt": 5}}])")
                .status()
                .code(),
            kConflictingUpdateOperatorsCode);
  EXPECT_EQ(ApplyWith(R"({"_id": 1, "a": [1]})", R"({"$set": {"a.$.$": 1}})", "{}", R"({"a": 1})")
                .status()
                .code(),
            ErrorCode::kBadValue);
}

}  // namespace
}  // namespace hourglass::query
