#include "bson/bson_compare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace hourglass::bson {
namespace {

// A one-element document {"v": <value>} that owns its bytes; tests compare its first element.
struct Value {
  BsonObj doc;
  std::string label;
  BsonElement e() const { return doc.FirstElement(); }
};

Value Make(std::string label, void (*fill)(BsonBuilder&)) {
  BsonBuilder b;
  fill(b);
  return {b.Obj(), std::move(label)};
}

// A document holding one element of type `t` whose value bytes are `value` (for the deprecated
// types BsonBuilder does not write: Symbol, DBPointer, CodeWScope).
Value Raw(std::string label, BsonType t, std::string value) {
  std::string doc(4, '\0');
  doc.push_back(static_cast<char>(t));
  doc.append("v", 2);
  doc += value;
  doc.push_back('\0');
  int32_t n = static_cast<int32_t>(doc.size());
  std::memcpy(doc.data(), &n, 4);
  return {BsonObj::CopyOf(doc), std::move(label)};
}

std::string Int32Bytes(int32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

std::string LengthPrefixed(std::string_view s) {
  return Int32Bytes(static_cast<int32_t>(s.size() + 1)) + std::string(s) + std::string(1, '\0');
}

Value Dbl(double d) {
  BsonBuilder b;
  b.AppendDouble("v", d);
  return {b.Obj(), "double " + std::to_string(d)};
}
Value I32(int32_t v) {
  BsonBuilder b;
  b.AppendInt32("v", v);
  return {b.Obj(), "int " + std::to_string(v)};
}
Value I64(int64_t v) {
  BsonBuilder b;
  b.AppendInt64("v", v);
  return {b.Obj(), "long " + std::to_string(v)};
}
Value Dec(std::string_view s) {
  Decimal128 d;
  EXPECT_TRUE(Decimal128::FromString(s, &d)) << s;
  BsonBuilder b;
  b.AppendDecimal("v", d);
  return {b.Obj(), "decimal " + std::string(s)};
}
Value Str(std::string_view s) {
  BsonBuilder b;
  b.AppendString("v", s);
  return {b.Obj(), "string '" + std::string(s) + "'"};
}
Value Sym(std::string_view s) {
  return Raw("symbol " + std::string(s), BsonType::kSymbol, LengthPrefixed(s));
}
Value Json(std::string_view json) {
  auto sw = FromJson(json);
  EXPECT_TRUE(sw.ok()) << json;
  return {sw.value(), std::string(json)};
}
Value Bin(uint8_t subtype, std::string_view data) {
  BsonBuilder b;
  b.AppendBinData("v", subtype, data);
  return {b.Obj(), "bindata " + std::to_string(subtype) + " " + std::string(data)};
}
Value Oid(std::string_view hex_prefix) {
  ObjectId id{};
  for (size_t i = 0; i < hex_prefix.size() / 2 && i < 12; ++i) {
    id.bytes[i] =
        static_cast<uint8_t>(std::stoi(std::string(hex_prefix.substr(2 * i, 2)), nullptr, 16));
  }
  BsonBuilder b;
  b.AppendObjectId("v", id);
  return {b.Obj(), "oid " + std::string(hex_prefix)};
}
Value Bool(bool v) {
  BsonBuilder b;
  b.AppendBool("v", v);
  return {b.Obj(), v ? "true" : "false"};
}
Value Date(int64_t ms) {
  BsonBuilder b;
  b.AppendDate("v", ms);
  return {b.Obj(), "date " + std::to_string(ms)};
}
Value Ts(uint64_t v) {
  BsonBuilder b;
  b.AppendTimestamp("v", v);
  return {b.Obj(), "ts " + std::to_string(v)};
}
Value Regex(std::string_view p, std::string_view o) {
  BsonBuilder b;
  b.AppendRegex("v", p, o);
  return {b.Obj(), "/" + std::string(p) + "/" + std::string(o)};
}
Value DbPointer(std::string_view ns, uint8_t oid_first) {
  std::string oid(12, '\0');
  oid[0] = static_cast<char>(oid_first);
  return Raw("dbpointer " + std::string(ns), BsonType::kDBPointer, LengthPrefixed(ns) + oid);
}
Value Code(std::string_view s) {
  BsonBuilder b;
  b.AppendCode("v", s);
  return {b.Obj(), "code " + std::string(s)};
}
Value CodeWScope(std::string_view code, const BsonObj& scope) {
  std::string body = LengthPrefixed(code) + std::string(scope.bytes());
  return Raw("codewscope " + std::string(code) + " " + scope.ToJson(), BsonType::kCodeWScope,
             Int32Bytes(static_cast<int32_t>(body.size() + 4)) + body);
}
Value MinKey() {
  return Make("minkey", [](BsonBuilder& b) { b.AppendMinKey("v"); });
}
Value MaxKey() {
  return Make("maxkey", [](BsonBuilder& b) { b.AppendMaxKey("v"); });
}
Value Null() {
  return Make("null", [](BsonBuilder& b) { b.AppendNull("v"); });
}
Value Undefined() {
  return Make("undefined", [](BsonBuilder& b) { b.AppendUndefined("v"); });
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

int SignOf(int v) { return v < 0 ? -1 : (v > 0 ? 1 : 0); }

void ExpectOrder(const Value& a, const Value& b, int expected) {
  SCOPED_TRACE(a.label + " vs " + b.label);
  EXPECT_EQ(SignOf(CompareElementValues(a.e(), b.e())), expected);
  EXPECT_EQ(SignOf(CompareElementValues(b.e(), a.e())), -expected);
}

TEST(BsonCompareTest, TypeRanksFollowMongoDbBrackets) {
  EXPECT_LT(CanonicalTypeRank(BsonType::kMinKey), CanonicalTypeRank(BsonType::kUndefined));
  EXPECT_LT(CanonicalTypeRank(BsonType::kUndefined), CanonicalTypeRank(BsonType::kNull));
  EXPECT_EQ(CanonicalTypeRank(BsonType::kInt32), CanonicalTypeRank(BsonType::kDecimal128));
  EXPECT_EQ(CanonicalTypeRank(BsonType::kDouble), CanonicalTypeRank(BsonType::kInt64));
  EXPECT_EQ(CanonicalTypeRank(BsonType::kString), CanonicalTypeRank(BsonType::kSymbol));
  EXPECT_LT(CanonicalTypeRank(BsonType::kDate), CanonicalTypeRank(BsonType::kTimestamp));
  EXPECT_LT(CanonicalTypeRank(BsonType::kCodeWScope), CanonicalTypeRank(BsonType::kMaxKey));
}

TEST(BsonCompareTest, NumbersCompareByExactValue) {
  struct Case {
    Value a, b;
    int expected;
  };
  std::vector<Case> cases = {
      {I32(1), Dbl(1.0), 0},
      {I64(1), Dbl(1.0), 0},
      {I32(1), I64(1), 0},
      {Dbl(-0.0), Dbl(0.0), 0},
      {Dbl(-0.0), I32(0), 0},
      {I32(2), Dbl(1.5), 1},
      {I32(-2), Dbl(-1.5), -1},
      {I64(9007199254740993LL), Dbl(9007199254740992.0), 1},
      {I64(9007199254740992LL), Dbl(9007199254740992.0), 0},
      {I64(9007199254740991LL), Dbl(9007199254740992.0), -1},
      {I64(-9007199254740993LL), Dbl(-9007199254740992.0), -1},
      {I64(std::numeric_limits<int64_t>::max()), Dbl(9223372036854775808.0), -1},
      {I64(std::numeric_limits<int64_t>::min()), Dbl(-9223372036854775808.0), 0},
      {I64(std::numeric_limits<int64_t>::min()), Dbl(-9223372036854777856.0), 1},
      {I64(std::numeric_limits<int64_t>::max()), I64(std::numeric_limits<int64_t>::min()), 1},
      {Dbl(kNaN), Dbl(kNaN), 0},
      {Dbl(kNaN), Dbl(-kInf), -1},
      {Dbl(kNaN), I64(std::numeric_limits<int64_t>::min()), -1},
      {Dbl(kNaN), I32(0), -1},
      {Dbl(kInf), I64(std::numeric_limits<int64_t>::max()), 1},
      {Dbl(-kInf), I64(std::numeric_limits<int64_t>::min()), -1},
      {Dbl(kInf), Dbl(kInf), 0},
      {Dec("1"), I32(1), 0},
      {Dec("1.000"), Dbl(1.0), 0},
      {Dec("1"), I64(1), 0},
      {Dec("1.5"), I32(1), 1},
      {Dec("1.5"), Dbl(1.5), 0},
      {Dec("-1.5"), Dbl(-1.25), -1},
      {Dec("0.1"), Dbl(0.1), -1},  // the double 0.1 is 0.1000000000000000055511151231257827...
      {Dec("0.1000000000000000055511151231257827"), Dbl(0.1), -1},
      {Dec("0.1000000000000000055511151231257828"), Dbl(0.1), 1},
      {Dec("-0.1000000000000000055511151231257827"), Dbl(-0.1), 1},
      {Dec("0.3"), Dbl(0.3), 1},  // the double 0.3 is 0.299999999999999988897769753748...
      {Dec("NaN"), Dbl(kNaN), 0},
      {Dec("NaN"), Dec("NaN"), 0},
      {Dec("NaN"), Dec("-Infinity"), -1},
      {Dec("NaN"), I32(-5), -1},
      {Dec("Infinity"), Dbl(kInf), 0},
      {Dec("-Infinity"), Dbl(-kInf), 0},
      {Dec("Infinity"), Dbl(1e308), 1},
      {Dec("-Infinity"), I64(std::numeric_limits<int64_t>::min()), -1},
      {Dec("1E+400"), Dbl(kInf), -1},
      {Dec("1E+400"), Dbl(1.7976931348623157e308), 1},
      {Dec("-0"), I32(0), 0},
      {Dec("0E-20"), Dbl(-0.0), 0},
      {Dec("9223372036854775808"), I64(std::numeric_limits<int64_t>::max()), 1},
      {Dec("9223372036854775807"), I64(std::numeric_limits<int64_t>::max()), 0},
      {Dec("-9223372036854775808"), I64(std::numeric_limits<int64_t>::min()), 0},
      {Dec("9007199254740993"), Dbl(9007199254740992.0), 1},
      {Dec("1.1"), Dec("1.10"), 0},
      {Dec("1.1"), Dec("1.09"), 1},
      {Dec("100"), Dec("1E+2"), 0},
      {Dec("99"), Dec("1E+2"), -1},
      {Dec("-99"), Dec("-1E+2"), 1},
      {Dec("1E-6176"), Dec("0"), 1},
      {Dec("1E-6176"), Dbl(4.9e-324), -1},
  };
  for (const auto& c : cases) ExpectOrder(c.a, c.b, c.expected);
}

TEST(BsonCompareTest, NonNumericValuesCompareWithinTheirBracket) {
  struct Case {
    Value a, b;
    int expected;
  };
  std::vector<Case> cases = {
      {Str("a"), Str("b"), -1},
      {Str("ab"), Str("a"), 1},
      {Str(""), Str("a"), -1},
      {Str(std::string("a\0b", 3)), Str("a"), 1},
      {Str(std::string("a\0b", 3)), Str(std::string("a\0c", 3)), -1},
      {Str("\xc3\xa9"), Str("z"), 1},  // byte-wise: 0xC3 > 'z'
      {Str("B"), Str("a"), -1},        // simple binary collation: case-sensitive
      {Sym("abc"), Str("abc"), 0},
      {Sym("abd"), Str("abc"), 1},
      {Json(R"({"v": {"a": 1}})"), Json(R"({"v": {"a": 1.0}})"), 0},
      {Json(R"({"v": {"a": 1}})"), Json(R"({"v": {"a": 2}})"), -1},
      {Json(R"({"v": {"a": 1}})"), Json(R"({"v": {"b": 1}})"), -1},
      {Json(R"({"v": {"a": 1}})"), Json(R"({"v": {"a": 1, "b": 0}})"), -1},
      {Json(R"({"v": {}})"), Json(R"({"v": {"a": null}})"), -1},
      // The type bracket of an element outranks its field name.
      {Json(R"({"v": {"b": 1}})"), Json(R"({"v": {"a": "x"}})"), -1},
      {Json(R"({"v": {"a": {"b": 1}}})"), Json(R"({"v": {"a": {"b": 1, "c": 2}}})"), -1},
      {Json(R"({"v": [1, 2]})"), Json(R"({"v": [1, 2.0]})"), 0},
      {Json(R"({"v": [1, 2]})"), Json(R"({"v": [1, 3]})"), -1},
      {Json(R"({"v": [1, 2]})"), Json(R"({"v": [1]})"), 1},
      {Json(R"({"v": []})"), Json(R"({"v": [null]})"), -1},
      {Json(R"({"v": [2]})"), Json(R"({"v": [1, 5]})"), 1},
      {Json(R"({"v": ["a"]})"), Json(R"({"v": [1, 5]})"), 1},
      {Bin(0, "zz"), Bin(0, "aaa"), -1},  // length first
      {Bin(5, "aa"), Bin(0, "zz"), 1},    // then subtype
      {Bin(0, "ab"), Bin(0, "aa"), 1},    // then bytes
      {Bin(0, ""), Bin(0, ""), 0},
      {Oid("01"), Oid("02"), -1},
      {Oid("ff"), Oid("0f"), 1},
      {Oid("0a0b"), Oid("0a0b"), 0},
      {Bool(false), Bool(true), -1},
      {Bool(true), Bool(true), 0},
      {Date(-1), Date(0), -1},
      {Date(std::numeric_limits<int64_t>::min()), Date(std::numeric_limits<int64_t>::max()), -1},
      {Ts(1), Ts(0x8000000000000000ULL), -1},  // unsigned
      {Ts((uint64_t{5} << 32) | 1), Ts((uint64_t{4} << 32) | 9), 1},
      {Regex("a", "i"), Regex("b", ""), -1},
      {Regex("a", "i"), Regex("a", "m"), -1},
      {Regex("a", ""), Regex("a", "i"), -1},
      {Regex("ab", ""), Regex("a", "z"), 1},
      {DbPointer("db.b", 0), DbPointer("db.a", 9), 1},
      {DbPointer("db.a", 1), DbPointer("db.a", 2), -1},
      {DbPointer("db.zz", 0), DbPointer("db.a", 0), 1},
      {Code("a"), Code("b"), -1},
      {Code("function(){}"), Code("function(){}"), 0},
      {CodeWScope("f", Json(R"({"x": 1})").doc), CodeWScope("g", Json(R"({"x": 0})").doc), -1},
      {CodeWScope("f", Json(R"({"x": 1})").doc), CodeWScope("f", Json(R"({"x": 2})").doc), -1},
      {CodeWScope("f", Json(R"({"x": 1})").doc), CodeWScope("f", Json(R"({"x": 1.0})").doc), 0},
      {MinKey(), MinKey(), 0},
      {MaxKey(), MaxKey(), 0},
      {Null(), Null(), 0},
      {Undefined(), Undefined(), 0},
  };
  for (const auto& c : cases) ExpectOrder(c.a, c.b, c.expected);
}

// One representative list in MongoDB's documented order; values in the same group are equal.
std::vector<std::vector<Value>> OrderedGroups() {
  return {
      {MinKey()},
      {Undefined()},
      {Null()},
      {Dbl(kNaN), Dec("NaN")},
      {Dbl(-kInf), Dec("-Infinity")},
      {I64(std::numeric_limits<int64_t>::min())},
      {Dbl(-2.5), Dec("-2.50")},
      {I32(0), Dbl(-0.0), I64(0), Dec("0")},
      {Dec("0.1")},
      {Dbl(0.1)},
      {I32(1), Dbl(1.0), I64(1), Dec("1.0")},
      {Dbl(9007199254740992.0), I64(9007199254740992LL)},
      {I64(9007199254740993LL), Dec("9007199254740993")},
      {Dbl(kInf), Dec("Infinity")},
      {Str(""), Sym("")},
      {Str("a")},
      {Str(std::string("a\0", 2))},
      {Str("b"), Sym("b")},
      {Json(R"({"v": {}})")},
      {Json(R"({"v": {"a": 1}})"), Json(R"({"v": {"a": 1.0}})")},
      {Json(R"({"v": {"a": 1, "b": 1}})")},
      {Json(R"({"v": []})")},
      {Json(R"({"v": [1]})")},
      {Json(R"({"v": [1, 2]})")},
      {Bin(7, "")},
      {Bin(0, "z")},
      {Bin(1, "a")},
      {Oid("00")},
      {Oid("ff")},
      {Bool(false)},
      {Bool(true)},
      {Date(-5)},
      {Date(1621296000000LL)},
      {Ts(1)},
      {Ts(~uint64_t{0})},
      {Regex("a", "")},
      {Regex("a", "i")},
      {DbPointer("db.c", 0)},
      {Code("a")},
      {CodeWScope("a", BsonObj())},
      {MaxKey()},
  };
}

TEST(BsonCompareTest, SortingShuffledValuesGivesMongoDbOrder) {
  std::vector<std::pair<int, Value>> all;
  auto groups = OrderedGroups();
  for (size_t g = 0; g < groups.size(); ++g) {
    for (auto& v : groups[g]) all.emplace_back(static_cast<int>(g), v);
  }
  std::mt19937 rng(42);
  for (int round = 0; round < 20; ++round) {
    std::shuffle(all.begin(), all.end(), rng);
    std::stable_sort(all.begin(), all.end(), [](const auto& x, const auto& y) {
      return CompareElementValues(x.second.e(), y.second.e()) < 0;
    });
    for (size_t i = 1; i < all.size(); ++i) {
      EXPECT_LE(all[i - 1].first, all[i].first)
          << all[i - 1].second.label << " sorted before " << all[i].second.label;
    }
  }
  // Every pair agrees with the group order, in both directions.
  for (const auto& [ga, a] : all) {
    for (const auto& [gb, b] : all) {
      SCOPED_TRACE(a.label + " vs " + b.label);
      EXPECT_EQ(SignOf(CompareElementValues(a.e(), b.e())), SignOf(ga - gb));
    }
  }
}

TEST(BsonCompareTest, CompareObjectsUsesFieldNamesAndPrefixes) {
  auto obj = [](std::string_view json) { return FromJson(json).value(); };
  EXPECT_EQ(CompareObjects(obj(R"({"a": 1})"), obj(R"({"a": 1})")), 0);
  EXPECT_EQ(CompareObjects(obj(R"({"a": 1})"), obj(R"({"a": 1.0})")), 0);
  EXPECT_LT(CompareObjects(obj(R"({"a": 1})"), obj(R"({"b": 1})")), 0);
  EXPECT_LT(CompareObjects(obj(R"({})"), obj(R"({"a": 1})")), 0);
  EXPECT_GT(CompareObjects(obj(R"({"a": 1, "b": 2})"), obj(R"({"a": 1})")), 0);
  EXPECT_LT(CompareObjects(obj(R"({"a": null})"), obj(R"({"a": 0})")), 0);
  EXPECT_LT(CompareObjects(obj(R"({"z": 5})"), obj(R"({"a": "x"})")), 0);
  // Field names are ignored only at the top of CompareElementValues.
  BsonBuilder x, y;
  x.AppendInt32("p", 3);
  y.AppendDouble("q", 3.0);
  EXPECT_TRUE(ElementValuesEqual(x.Obj().FirstElement(), y.Obj().FirstElement()));
}

}  // namespace
}  // namespace hourglass::bson
