#include "bson/bson.h"

#include <gtest/gtest.h>

namespace hourglass::bson {
namespace {

TEST(BsonBuilderTest, BuildsNestedDocumentsInPlace) {
  BsonBuilder b;
  b.AppendInt32("a", 1);
  size_t t = b.OpenObject("sub");
  b.AppendString("s", "hi");
  size_t ta = b.OpenArray("arr");
  b.AppendDouble("0", 1.5);
  b.Close(ta);
  b.Close(t);
  b.AppendInt64("z", 7);
  BsonObj o = b.Obj();
  ASSERT_TRUE(ValidateBson(o.bytes()).ok());
  EXPECT_EQ(o.ToJson(), R"({ "a" : 1, "sub" : { "s" : "hi", "arr" : [ 1.5 ] }, "z" : 7 })");
  EXPECT_EQ(o.GetPath("sub.s").Str(), "hi");
  EXPECT_EQ(o.GetPath("sub.arr.0").Double(), 1.5);
  EXPECT_TRUE(o.GetPath("sub.missing").eoo());
  EXPECT_EQ(o.NumFields(), 3);
}

TEST(BsonBuilderTest, ViewFinishesInPlaceAndResetReusesTheBuffer) {
  BsonBuilder b;
  b.AppendInt32("a", 1);
  b.AppendString("s", "a string long enough to need the heap");
  BsonObj first = b.View();
  ASSERT_TRUE(ValidateBson(first.bytes()).ok());
  EXPECT_FALSE(first.IsOwned());
  EXPECT_EQ(first.ToJson(), R"({ "a" : 1, "s" : "a string long enough to need the heap" })");
  const char* data = first.bytes().data();
  b.Reset();
  b.AppendInt32("b", 2);
  BsonObj second = b.View();
  EXPECT_EQ(second.bytes().data(), data);  // same buffer, no new allocation
  EXPECT_EQ(second.ToJson(), R"({ "b" : 2 })");
  b.Reset();
  EXPECT_TRUE(b.View().IsEmpty());
}

// WholeNumber: any numeric type holding a whole value in int64's range; nothing else.
TEST(BsonElementTest, WholeNumberTakesWholeValuesOfEveryNumericType) {
  auto doc =
      FromJson(R"({"i": 5, "l": {"$numberLong": "-7"}, "d": 3.0, "m": {"$numberDecimal": "12"},
      "f": 2.5, "nan": {"$numberDouble": "NaN"}, "big": 1e19, "s": "5", "b": true,
      "dd": {"$numberDecimal": "1.5"}})");
  ASSERT_TRUE(doc.ok());
  const BsonObj d = doc.value();
  EXPECT_EQ(d["i"].WholeNumber(), std::optional<int64_t>(5));
  EXPECT_EQ(d["l"].WholeNumber(), std::optional<int64_t>(-7));
  EXPECT_EQ(d["d"].WholeNumber(), std::optional<int64_t>(3));
  EXPECT_EQ(d["m"].WholeNumber(), std::optional<int64_t>(12));
  for (const char* no : {"f", "nan", "big", "s", "b", "dd", "missing"}) {
    EXPECT_FALSE(d[no].WholeNumber().has_value()) << no;
  }
}

// {a: {a: ... {a: 1}}} (or {a: [[...[1]]]}, levels >= 2) with `levels` levels of fields: 1 is
// {a: 1}. Built, not parsed: FromJson stops at 100 levels.
BsonObj NestedObjects(int levels, bool arrays = false) {
  BsonBuilder innermost;
  innermost.AppendInt32(arrays ? "0" : "a", 1);
  BsonObj inner = innermost.Obj();
  for (int i = arrays ? 2 : 1; i < levels; ++i) {
    BsonBuilder wrap;
    if (arrays) {
      wrap.AppendArray("0", inner);
    } else {
      wrap.AppendObject("a", inner);
    }
    inner = wrap.Obj();
  }
  if (!arrays) return inner;
  BsonBuilder top;
  top.AppendArray("a", inner);
  return top.Obj();
}

TEST(BsonNestingTest, CountsLevelsAsMongoDbStoresThem) {
  EXPECT_FALSE(NestsDeeperThan(BsonObj(), 1));
  EXPECT_FALSE(NestsDeeperThan(NestedObjects(1), 1));
  EXPECT_TRUE(NestsDeeperThan(NestedObjects(2), 1));
  EXPECT_FALSE(NestsDeeperThan(NestedObjects(100), 100));
  EXPECT_TRUE(NestsDeeperThan(NestedObjects(101), 100));
  // Arrays count as documents; empty ones add no level.
  EXPECT_FALSE(NestsDeeperThan(NestedObjects(100, true), 100));
  EXPECT_TRUE(NestsDeeperThan(NestedObjects(101, true), 100));
  EXPECT_FALSE(NestsDeeperThan(FromJson(R"({"a": {}, "b": []})").value(), 1));
  EXPECT_TRUE(NestsDeeperThan(FromJson(R"({"x": 1, "a": {}, "b": [[]]})").value(), 1));
  // A deep field after shallow siblings is found.
  BsonBuilder b;
  b.AppendInt32("x", 1);
  b.AppendObject("deep", NestedObjects(100));
  EXPECT_TRUE(NestsDeeperThan(b.Obj(), 100));
  EXPECT_FALSE(NestsDeeperThan(b.Obj(), 101));
}

// The smallest documents of each depth ({"": {"": ... {"": null}}}, 7 bytes a level) are judged
// by their fields, not turned away or let through by their size.
TEST(BsonNestingTest, TheSmallestDeepDocumentIsFound) {
  auto smallest = [](int levels) {
    BsonBuilder innermost;
    innermost.AppendNull("");
    BsonObj inner = innermost.Obj();
    for (int i = 1; i < levels; ++i) {
      BsonBuilder wrap;
      wrap.AppendObject("", inner);
      inner = wrap.Obj();
    }
    return inner;
  };
  EXPECT_EQ(smallest(101).size(), 707);
  EXPECT_TRUE(NestsDeeperThan(smallest(101), 100));
  EXPECT_FALSE(NestsDeeperThan(smallest(100), 100));
  EXPECT_TRUE(NestsDeeperThan(smallest(3), 2));
  EXPECT_FALSE(NestsDeeperThan(smallest(2), 2));
}

TEST(BsonValidateTest, RejectsTruncatedAndBadLength) {
  BsonBuilder b;
  b.AppendString("s", "hello");
  std::string bytes = b.Release();
  EXPECT_TRUE(ValidateBson(bytes).ok());
  EXPECT_EQ(ValidateBson(bytes.substr(0, bytes.size() - 1)).code(), ErrorCode::kInvalidBSON);
  std::string bad = bytes;
  bad[4 + 1 + 2 + 0] = 100;  // string length beyond the document
  EXPECT_EQ(ValidateBson(bad).code(), ErrorCode::kInvalidBSON);
}

// ASCII documents skip libbson's pass: the structural walk must still reject bad booleans, and
// documents with non-ASCII bytes must still get libbson's checks (which reject invalid UTF-8 in
// field names; string values were never checked there and still are not).
TEST(BsonValidateTest, BoolsMustBeZeroOrOneAndUtf8IsChecked) {
  BsonBuilder b;
  b.AppendBool("ok", true);
  std::string bytes = b.Release();
  EXPECT_TRUE(ValidateBson(bytes).ok());
  bytes[4 + 1 + 3] = 2;  // type, "ok\0", then the bool byte
  EXPECT_EQ(ValidateBson(bytes).code(), ErrorCode::kInvalidBSON);

  BsonBuilder good;
  good.AppendString("s", "caf\xc3\xa9");  // valid two-byte UTF-8
  EXPECT_TRUE(ValidateBson(good.Release()).ok());
  BsonBuilder bad_name;
  bad_name.AppendInt32("\xff", 1);  // invalid UTF-8 in a field name
  EXPECT_EQ(ValidateBson(bad_name.Release()).code(), ErrorCode::kInvalidBSON);
}

// Field names are scanned eight bytes at a time for their end and for non-ASCII bytes (which
// send the document to the UTF-8 check): a bad byte must be found at every position of names of
// every length, across and within the eight-byte steps, and a name running into the document's
// end must be refused.
TEST(BsonValidateTest, EveryByteOfEveryNameLengthIsChecked) {
  for (size_t len = 0; len <= 25; ++len) {
    SCOPED_TRACE(len);
    const std::string plain(len, 'n');
    BsonBuilder ok;
    ok.AppendInt32(plain, 1);
    ok.AppendInt32("after", 2);
    const std::string ok_bytes = ok.Release();
    EXPECT_TRUE(ValidateBson(ok_bytes).ok());
    for (size_t at = 0; at < len; ++at) {
      SCOPED_TRACE(at);
      std::string bad = plain;
      bad[at] = '\xff';  // invalid UTF-8
      BsonBuilder b;
      b.AppendInt32(bad, 1);
      b.AppendInt32("after", 2);
      EXPECT_EQ(ValidateBson(b.Release()).code(), ErrorCode::kInvalidBSON);
      if (at + 1 < len) {
        std::string utf8 = plain;
        utf8[at] = '\xc3';  // "é": valid two-byte UTF-8
        utf8[at + 1] = '\xa9';
        BsonBuilder g;
        g.AppendInt32(utf8, 1);
        g.AppendInt32("after", 2);
        EXPECT_TRUE(ValidateBson(g.Release()).ok());
      }
    }
    // The name's NUL overwritten, and the rest of the document made name bytes: no NUL before
    // the document's own.
    std::string unterminated = ok_bytes;
    for (size_t i = 5; i + 1 < unterminated.size(); ++i) unterminated[i] = 'x';
    EXPECT_EQ(ValidateBson(unterminated).code(), ErrorCode::kInvalidBSON);
  }
}

TEST(BsonJsonTest, RoundTripsExtendedJson) {
  auto sw = FromJson(R"({"d": {"$date": "2021-05-18T00:00:00Z"}, "n": {"$numberLong": "5"}})");
  ASSERT_TRUE(sw.ok());
  EXPECT_EQ(sw.value()["d"].type(), BsonType::kDate);
  EXPECT_EQ(sw.value()["d"].DateMillis(), 1621296000000LL);
  EXPECT_EQ(sw.value()["n"].Int64(), 5);
  EXPECT_FALSE(FromJson("{bad").ok());
}

TEST(ObjectIdTest, GeneratedIdsAreDistinctAndCarryTime) {
  ObjectId a = ObjectId::Generate(), b = ObjectId::Generate();
  EXPECT_FALSE(a == b);
  EXPECT_GT(a.Timestamp(), 1600000000u);
  EXPECT_EQ(ObjectId::FromSeconds(0x01020304).ToHex(), "010203040000000000000000");
}

}  // namespace
}  // namespace hourglass::bson
