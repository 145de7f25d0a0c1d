#include "bson/field_check.h"

#include <gtest/gtest.h>

namespace hourglass::bson {
namespace {

BsonObj Doc() {
  BsonBuilder b;
  b.AppendString("s", "x");
  b.AppendInt32("i", 3);
  b.AppendDouble("half", 2.5);
  b.AppendNull("n");
  size_t t = b.OpenObject("o");
  b.Close(t);
  t = b.OpenArray("a");
  b.Close(t);
  return b.Obj();
}

TEST(FieldCheckTest, WrongTypeNamesTheFieldUnderItsContext) {
  BsonObj d = Doc();
  Status s = WrongType("find", d["s"], "object");
  EXPECT_EQ(s.code(), ErrorCode::kTypeMismatch);
  EXPECT_EQ(s.reason(), "BSON field 'find.s' is the wrong type 'string', expected type 'object'");
  EXPECT_EQ(WrongTypeAtPath("let", d["i"], "[string, object]").reason(),
            "BSON field 'let' is the wrong type 'int', expected type '[string, object]'");
}

TEST(FieldCheckTest, WrongVariantTypeMisplacesTheQuoteAsMongoDBDoes) {
  BsonObj d = Doc();
  Status s = WrongVariantType("create.timeseries.bucketMaxSpanSeconds", d["s"], "[long, int]");
  EXPECT_EQ(s.code(), ErrorCode::kTypeMismatch);
  EXPECT_EQ(s.reason(),
            "BSON field 'create.timeseries.bucketMaxSpanSeconds' is the wrong type 'string', "
            "expected types '[long, int']");
  EXPECT_EQ(WrongVariantType("p", d["s"], "object").reason(),
            WrongTypeAtPath("p", d["s"], "object").reason());
}

TEST(FieldCheckTest, UnknownAndMissingFields) {
  Status unknown = UnknownField("$merge", "foo");
  EXPECT_EQ(unknown.code(), ErrorCode::kLocation40415);
  EXPECT_EQ(unknown.reason(), "BSON field '$merge.foo' is an unknown field.");
  Status missing = MissingField("$merge", "into");
  EXPECT_EQ(missing.code(), ErrorCode::kLocation40414);
  EXPECT_EQ(missing.reason(), "BSON field '$merge.into' is missing but a required field");
}

TEST(FieldCheckTest, TypedGettersReturnDefaultsForAbsentFieldsAndRejectWrongTypes) {
  BsonObj d = Doc();
  auto o = GetObject("c", d, "o");
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o.value().has_value());
  EXPECT_FALSE(GetObject("c", d, "absent").value().has_value());
  EXPECT_EQ(GetObject("c", d, "s").status().code(), ErrorCode::kTypeMismatch);
  EXPECT_TRUE(GetArray("c", d, "a").value().has_value());
  EXPECT_EQ(GetArray("c", d, "o").status().code(), ErrorCode::kTypeMismatch);
  EXPECT_EQ(*GetString("c", d, "s").value(), "x");
  EXPECT_EQ(GetString("c", d, "i").status().code(), ErrorCode::kTypeMismatch);
  EXPECT_TRUE(GetBool("c", d, "i", false).value());
  EXPECT_TRUE(GetBool("c", d, "n", true).value());
  EXPECT_EQ(GetBool("c", d, "s", false).status().reason(),
            "BSON field 'c.s' is the wrong type 'string', expected type 'bool'");
  EXPECT_EQ(*GetInt64("c", d, "i").value(), 3);
  EXPECT_EQ(GetInt64("c", d, "half").status().code(), ErrorCode::kFailedToParse);
  EXPECT_EQ(GetInt64("c", d, "s").status().reason(),
            "BSON field 'c.s' is the wrong type 'string', expected type '[long, int, decimal, "
            "double]'");
}

TEST(FieldCheckTest, ExtractIntegerFieldAnswersAsBsonExtractDoes) {
  BsonObj d = Doc();
  EXPECT_EQ(ExtractIntegerField(d, "i").value(), 3);
  BsonBuilder b;
  b.AppendDouble("whole", 4.0);
  b.AppendDouble("huge", 1e30);
  BsonObj numbers = b.Obj();
  EXPECT_EQ(ExtractIntegerField(numbers, "whole").value(), 4);
  Status huge = ExtractIntegerField(numbers, "huge").status();
  EXPECT_EQ(huge.code(), ErrorCode::kBadValue);
  Status half = ExtractIntegerField(d, "half").status();
  EXPECT_EQ(half.code(), ErrorCode::kBadValue);
  EXPECT_EQ(half.reason(),
            "Expected field \"half\" to have a value exactly representable as a 64-bit integer, "
            "but found half: 2.5");
  Status text = ExtractIntegerField(d, "s").status();
  EXPECT_EQ(text.code(), ErrorCode::kTypeMismatch);
  EXPECT_EQ(text.reason(), "Expected field \"s\" to have numeric type, but found string");
  Status absent = ExtractIntegerField(d, "absent").status();
  EXPECT_EQ(absent.code(), ErrorCode::kNoSuchKey);
  EXPECT_EQ(absent.reason(), "Missing expected field \"absent\"");
}

}  // namespace
}  // namespace hourglass::bson
