#include "bson/key_string.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "bson/bson_compare.h"

namespace hourglass::bson {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

int SignOf(int v) { return v < 0 ? -1 : (v > 0 ? 1 : 0); }

// The pool of test values: each entry is a one-element document {"v": value}.
class ValuePool {
 public:
  void Add(BsonObj doc) { docs_.push_back(std::move(doc)); }
  template <typename F>
  void With(F fill) {
    BsonBuilder b;
    fill(b);
    Add(b.Obj());
  }
  void Double(double d) {
    With([&](BsonBuilder& b) { b.AppendDouble("v", d); });
  }
  void Int32(int32_t v) {
    With([&](BsonBuilder& b) { b.AppendInt32("v", v); });
  }
  void Int64(int64_t v) {
    With([&](BsonBuilder& b) { b.AppendInt64("v", v); });
  }
  void Decimal(std::string_view s) {
    Decimal128 d;
    ASSERT_TRUE(Decimal128::FromString(s, &d)) << s;
    With([&](BsonBuilder& b) { b.AppendDecimal("v", d); });
  }
  void String(std::string_view s) {
    With([&](BsonBuilder& b) { b.AppendString("v", s); });
  }
  void Json(std::string_view json) {
    auto sw = FromJson(json);
    ASSERT_TRUE(sw.ok()) << json;
    Add(sw.value());
  }
  // Types BsonBuilder cannot write: value bytes given raw.
  void Raw(BsonType t, const std::string& value) {
    std::string doc(4, '\0');
    doc.push_back(static_cast<char>(t));
    doc.append("v", 2);
    doc += value;
    doc.push_back('\0');
    int32_t n = static_cast<int32_t>(doc.size());
    std::memcpy(doc.data(), &n, 4);
    ASSERT_TRUE(ValidateBson(doc).ok());
    Add(BsonObj::CopyOf(doc));
  }

  size_t size() const { return docs_.size(); }
  BsonElement operator[](size_t i) const { return docs_[i].FirstElement(); }
  const BsonObj& doc(size_t i) const { return docs_[i]; }

 private:
  std::vector<BsonObj> docs_;
};

std::string Int32Bytes(int32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
std::string LengthPrefixed(std::string_view s) {
  return Int32Bytes(static_cast<int32_t>(s.size() + 1)) + std::string(s) + std::string(1, '\0');
}

std::string Encode(const BsonElement& e, bool descending = false) {
  KeyStringBuilder b;
  b.AppendElement(e, descending);
  return b.bytes();
}

std::string Describe(const BsonElement& e) {
  BsonBuilder b;
  b.AppendElement(e);
  return b.Obj().ToJson();
}

void AddEdgeCases(ValuePool& p) {
  p.With([](BsonBuilder& b) { b.AppendMinKey("v"); });
  p.With([](BsonBuilder& b) { b.AppendMaxKey("v"); });
  p.With([](BsonBuilder& b) { b.AppendNull("v"); });
  p.With([](BsonBuilder& b) { b.AppendUndefined("v"); });
  for (double d : {kNaN,
                   -kNaN,
                   kInf,
                   -kInf,
                   0.0,
                   -0.0,
                   1.0,
                   -1.0,
                   0.5,
                   1.5,
                   -1.5,
                   0.1,
                   -0.1,
                   0.3,
                   2.0,
                   1e308,
                   -1e308,
                   std::numeric_limits<double>::max(),
                   std::numeric_limits<double>::lowest(),
                   std::numeric_limits<double>::min(),
                   std::numeric_limits<double>::denorm_min(),
                   -std::numeric_limits<double>::denorm_min(),
                   9007199254740992.0,
                   std::nextafter(9007199254740992.0, 0.0),
                   std::nextafter(9007199254740992.0, kInf),
                   -9007199254740992.0,
                   9223372036854775808.0,
                   -9223372036854775808.0,
                   18446744073709551616.0,
                   std::nextafter(9223372036854775808.0, 0.0),
                   2147483648.0,
                   -2147483649.0,
                   1e19,
                   123456.789}) {
    p.Double(d);
  }
  for (int32_t v :
       {0, 1, -1, 2, 7, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()}) {
    p.Int32(v);
  }
  for (int64_t v :
       {int64_t{0}, int64_t{1}, int64_t{-1}, kInt64Max, kInt64Min, kInt64Min + 1, kInt64Max - 1,
        int64_t{9007199254740991}, int64_t{9007199254740992}, int64_t{9007199254740993},
        int64_t{-9007199254740993}, int64_t{2147483648}, int64_t{-2147483649}, int64_t{1} << 62}) {
    p.Int64(v);
  }
  for (const char* s : {"0",
                        "-0",
                        "0E+10",
                        "0E-6176",
                        "1",
                        "1.0",
                        "1.000",
                        "-1",
                        "1.5",
                        "-1.5",
                        "0.5",
                        "0.1",
                        "0.10",
                        "-0.1",
                        "0.3",
                        "2",
                        "7",
                        "NaN",
                        "-NaN",
                        "Infinity",
                        "-Infinity",
                        "9007199254740993",
                        "9007199254740992",
                        "9223372036854775807",
                        "9223372036854775808",
                        "-9223372036854775808",
                        "-9223372036854775809",
                        "18446744073709551616",
                        "1E+19",
                        "1E+400",
                        "-1E+400",
                        "1E-400",
                        "-1E-400",
                        "1E-6176",
                        "-1E-6176",
                        "9.999999999999999999999999999999999E+6144",
                        "-9.999999999999999999999999999999999E+6144",
                        "0.1000000000000000055511151231257827",
                        "0.1000000000000000055511151231257828",
                        "1.00000000000000000000000000000001",
                        "0.99999999999999999999999999999999",
                        "12345678901234567890123456789012",
                        "12345678901234567890123456789013",
                        "4.9E-324",
                        "4.940656458412465441765687928682213E-324",
                        "1.797693134862315708145274237317043E+308",
                        "1.797693134862315708145274237317044E+308",
                        "2.2250738585072014E-308",
                        "123456.789"}) {
    p.Decimal(s);
  }
  for (std::string s : {std::string(""), std::string("a"), std::string("a\0", 2),
                        std::string("a\0b", 3), std::string("a\x01"), std::string("ab"),
                        std::string("b"), std::string("\xff"), std::string("\xff\xff"),
                        std::string("\0", 1), std::string("\0\0", 2), std::string("\xc3\xa9")}) {
    p.String(s);
    p.Raw(BsonType::kSymbol, LengthPrefixed(s));
    p.With([&](BsonBuilder& b) { b.AppendCode("v", s); });
  }
  for (const char* json : {R"({"v": {}})",
                           R"({"v": {"a": 1}})",
                           R"({"v": {"a": 1.0}})",
                           R"({"v": {"a": {"$numberLong": "1"}}})",
                           R"({"v": {"a": 2}})",
                           R"({"v": {"a": -1}})",
                           R"({"v": {"b": -1}})",
                           R"({"v": {"b": 1}})",
                           R"({"v": {"a": "x"}})",
                           R"({"v": {"a": null}})",
                           R"({"v": {"a": 1, "b": 2}})",
                           R"({"v": {"a": 1, "b": null}})",
                           R"({"v": {"": 1}})",
                           R"({"v": {"a": {"b": 1}}})",
                           R"({"v": {"a": {"b": 1, "c": 0}}})",
                           R"({"v": {"a": []}})",
                           R"({"v": {"a": [1]}})",
                           R"({"v": []})",
                           R"({"v": [1]})",
                           R"({"v": [1.0]})",
                           R"({"v": [1, 2]})",
                           R"({"v": [2]})",
                           R"({"v": [null]})",
                           R"({"v": [[]]})",
                           R"({"v": [{}]})",
                           R"({"v": ["a", "b"]})",
                           R"({"v": ["a"]})",
                           R"({"v": [1, [2, [3]]]})",
                           R"({"v": [1, [2, [4]]]})",
                           R"({"v": {"a": [{"b": 1}]}})"}) {
    p.Json(json);
  }
  for (auto [subtype, data] : std::vector<std::pair<uint8_t, std::string>>{
           {0, ""}, {0, "a"}, {0, "b"}, {5, "a"}, {0, "aa"}, {4, std::string("\0\0", 2)}}) {
    p.With([&](BsonBuilder& b) { b.AppendBinData("v", subtype, data); });
  }
  for (uint8_t first : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
    ObjectId id{};
    id.bytes[0] = first;
    id.bytes[11] = first;
    p.With([&](BsonBuilder& b) { b.AppendObjectId("v", id); });
  }
  p.With([](BsonBuilder& b) { b.AppendBool("v", false); });
  p.With([](BsonBuilder& b) { b.AppendBool("v", true); });
  for (int64_t ms :
       {kInt64Min, int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{1621296000000}, kInt64Max}) {
    p.With([&](BsonBuilder& b) { b.AppendDate("v", ms); });
  }
  for (uint64_t ts : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 63, ~uint64_t{0},
                      (uint64_t{1621296000} << 32) | 3}) {
    p.With([&](BsonBuilder& b) { b.AppendTimestamp("v", ts); });
  }
  for (auto [pattern, options] : std::vector<std::pair<const char*, const char*>>{
           {"", ""}, {"a", ""}, {"a", "i"}, {"a", "im"}, {"ab", ""}, {"b", "i"}}) {
    p.With([&](BsonBuilder& b) { b.AppendRegex("v", pattern, options); });
  }
  for (auto [ns, oid_byte] : std::vector<std::pair<std::string, char>>{
           {"db.a", 0}, {"db.a", 1}, {"db.b", 0}, {"db.aa", 0}, {"x", 5}}) {
    p.Raw(BsonType::kDBPointer, LengthPrefixed(ns) + std::string(1, oid_byte) + std::string(11, 0));
  }
  for (auto [code, scope_json] :
       std::vector<std::pair<std::string, std::string>>{{"f", "{}"},
                                                        {"f", R"({"x": 1})"},
                                                        {"f", R"({"x": 1.0})"},
                                                        {"f", R"({"x": 2})"},
                                                        {"g", "{}"},
                                                        {"", R"({"a": "b"})"}}) {
    BsonObj scope = FromJson(scope_json).value();
    std::string body = LengthPrefixed(code) + std::string(scope.bytes());
    p.Raw(BsonType::kCodeWScope, Int32Bytes(static_cast<int32_t>(body.size() + 4)) + body);
  }
}

void AddRandomValues(ValuePool& p, std::mt19937_64& rng) {
  auto bits = [&](int n) { return n >= 64 ? rng() : rng() & ((uint64_t{1} << n) - 1); };
  for (int i = 0; i < 120; ++i) {
    int64_t v = static_cast<int64_t>(bits(1 + static_cast<int>(rng() % 64)));
    p.Int64(rng() % 2 ? v : -v);
  }
  for (int i = 0; i < 120; ++i) {
    uint64_t raw = rng();
    double d;
    std::memcpy(&d, &raw, 8);
    p.Double(d);
  }
  for (int i = 0; i < 60; ++i) {
    // Doubles with few significant bits and integers near 2^53 and 2^63, where int64 and double
    // ranges overlap.
    double base = std::ldexp(1.0, 50 + static_cast<int>(rng() % 15));
    double d = base + static_cast<double>(static_cast<int64_t>(rng() % 64) - 32) * 2;
    p.Double(rng() % 2 ? d : -d);
    int64_t as_int = static_cast<int64_t>(std::ldexp(1.0, 52 + static_cast<int>(rng() % 10))) +
                     static_cast<int64_t>(rng() % 16) - 8;
    p.Int64(rng() % 2 ? as_int : -as_int);
  }
  for (int i = 0; i < 100; ++i) {
    // Random decimals: up to 34 digits, mostly moderate exponents, some extreme.
    std::string digits;
    int n = 1 + static_cast<int>(rng() % 34);
    for (int j = 0; j < n; ++j) digits.push_back(static_cast<char>('0' + rng() % 10));
    int exponent =
        i % 10 == 0 ? static_cast<int>(rng() % 12000) - 6100 : static_cast<int>(rng() % 60) - 40;
    p.Decimal((rng() % 2 ? "-" : "") + digits + "E" + std::to_string(exponent));
  }
  for (int i = 0; i < 40; ++i) {
    // Decimals equal or adjacent to doubles and int64s.
    double d = static_cast<double>(static_cast<int64_t>(rng() % 2000000) - 1000000) / 64.0;
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17g", d);
    p.Decimal(buf);
    p.Double(d);
    std::snprintf(buf, sizeof(buf), "%.16g", d * 3.3);
    p.Decimal(buf);
  }
  const std::string alphabet("\0\1a\xff", 4);
  for (int i = 0; i < 60; ++i) {
    std::string s;
    int n = static_cast<int>(rng() % 5);
    for (int j = 0; j < n; ++j) s.push_back(alphabet[rng() % alphabet.size()]);
    p.String(s);
  }
  // Small nested documents and arrays over a tiny alphabet, so that many share prefixes.
  const char* leaves[] = {
      "1",    "1.0",  R"({"$numberLong": "2"})",     R"("x")", "null", "[]", "{}",
      "true", "-0.5", R"({"$numberDecimal": "0.1"})"};
  const char* names[] = {"a", "b", ""};
  for (int i = 0; i < 80; ++i) {
    std::string json;
    std::function<std::string(int)> value = [&](int depth) -> std::string {
      int kind = depth >= 2 ? 0 : static_cast<int>(rng() % 3);
      if (kind == 0) return leaves[rng() % std::size(leaves)];
      int n = static_cast<int>(rng() % 3);
      std::string out = kind == 1 ? "{" : "[";
      for (int j = 0; j < n; ++j) {
        if (j > 0) out += ", ";
        if (kind == 1) out += std::string("\"") + names[rng() % 3] + "\": ";
        out += value(depth + 1);
      }
      return out + (kind == 1 ? "}" : "]");
    };
    p.Json(R"({"v": )" + value(0) + "}");
  }
}

ValuePool BuildPool() {
  ValuePool pool;
  AddEdgeCases(pool);
  std::mt19937_64 rng(20240611);
  AddRandomValues(pool, rng);
  return pool;
}

TEST(KeyStringTest, ByteOrderMatchesCanonicalOrder) {
  ValuePool pool = BuildPool();
  std::vector<std::string> asc, desc;
  for (size_t i = 0; i < pool.size(); ++i) {
    asc.push_back(Encode(pool[i]));
    desc.push_back(Encode(pool[i], true));
  }
  int failures = 0;
  for (size_t i = 0; i < pool.size() && failures < 20; ++i) {
    for (size_t j = 0; j < pool.size() && failures < 20; ++j) {
      int expected = SignOf(CompareElementValues(pool[i], pool[j]));
      int got = SignOf(asc[i].compare(asc[j]));
      int got_desc = SignOf(desc[i].compare(desc[j]));
      if (got != expected || got_desc != -expected) {
        ++failures;
        ADD_FAILURE() << Describe(pool[i]) << " vs " << Describe(pool[j]) << ": compare "
                      << expected << ", bytes " << got << ", descending bytes " << got_desc;
      }
    }
  }
}

TEST(KeyStringTest, EqualNumbersOfDifferentTypesShareBytes) {
  ValuePool p;
  p.Int32(1);
  p.Int64(1);
  p.Double(1.0);
  p.Decimal("1.00");
  p.Decimal("0.001E+3");
  for (size_t i = 1; i < p.size(); ++i) EXPECT_EQ(Encode(p[0]), Encode(p[i])) << Describe(p[i]);
  ValuePool z;
  z.Int32(0);
  z.Double(-0.0);
  z.Decimal("-0E+5");
  z.Int64(0);
  for (size_t i = 1; i < z.size(); ++i) EXPECT_EQ(Encode(z[0]), Encode(z[i])) << Describe(z[i]);
  ValuePool big;
  big.Int64(9007199254740993LL);
  big.Decimal("9007199254740993");
  EXPECT_EQ(Encode(big[0]), Encode(big[1]));
  ValuePool nan;
  nan.Double(kNaN);
  nan.Decimal("NaN");
  EXPECT_EQ(Encode(nan[0]), Encode(nan[1]));
}

TEST(KeyStringTest, MissingFieldEncodesAsNull) {
  BsonObj pattern = FromJson(R"({"a": 1, "b.c": -1})").value();
  std::string missing = EncodeIndexKey(pattern, FromJson(R"({"x": 1})").value());
  std::string nulls = EncodeIndexKey(pattern, FromJson(R"({"a": null, "b": {"c": null}})").value());
  EXPECT_EQ(missing, nulls);
  KeyStringBuilder b;
  b.AppendMissing();
  b.AppendMissing(true);
  EXPECT_EQ(b.bytes(), missing);
}

TEST(KeyStringTest, AppendDateEncodesAsADateElement) {
  for (int64_t ms : {std::numeric_limits<int64_t>::min(), int64_t{-1}, int64_t{0},
                     int64_t{1621296000000}, std::numeric_limits<int64_t>::max()}) {
    for (bool descending : {false, true}) {
      BsonBuilder b;
      b.AppendDate("t", ms);
      BsonObj doc = b.Obj();
      KeyStringBuilder by_element, by_date;
      by_element.AppendElement(doc.FirstElement(), descending);
      by_date.AppendDate(ms, descending);
      EXPECT_EQ(by_date.bytes(), by_element.bytes()) << ms << " " << descending;
    }
  }
}

TEST(KeyStringTest, CompoundKeysSortByComponentWithDirections) {
  BsonObj pattern = FromJson(R"({"a": 1, "b": -1, "c.d": 1})").value();
  std::mt19937_64 rng(7);
  const char* values[] = {"1",
                          "2",
                          "1.5",
                          R"("s")",
                          R"("s\u0000")",
                          R"("")",
                          "null",
                          "[1]",
                          "{}",
                          R"({"$numberLong": "2"})",
                          "true",
                          R"({"$minKey": 1})"};
  auto random_doc = [&]() {
    std::string json = "{";
    bool first = true;
    auto field = [&](const std::string& name, const std::string& v) {
      if (!first) json += ", ";
      first = false;
      json += "\"" + name + "\": " + v;
    };
    if (rng() % 5) field("a", values[rng() % std::size(values)]);
    if (rng() % 5) field("b", values[rng() % std::size(values)]);
    if (rng() % 5) field("c", std::string(R"({"d": )") + values[rng() % std::size(values)] + "}");
    return FromJson(json + "}").value();
  };
  auto null_if_missing = [](const BsonElement& e) {
    static const BsonObj kNull = FromJson(R"({"": null})").value();
    return e.eoo() ? kNull.FirstElement() : e;
  };
  for (int i = 0; i < 3000; ++i) {
    BsonObj x = random_doc(), y = random_doc();
    int expected = 0;
    for (const BsonElement& f : pattern) {
      int c = CompareElementValues(null_if_missing(x.GetPath(f.FieldName())),
                                   null_if_missing(y.GetPath(f.FieldName())));
      if (f.NumberDouble() < 0) c = -c;
      if (c != 0) {
        expected = SignOf(c);
        break;
      }
    }
    EXPECT_EQ(SignOf(EncodeIndexKey(pattern, x).compare(EncodeIndexKey(pattern, y))), expected)
        << x.ToJson() << " vs " << y.ToJson();
  }
}

TEST(KeyStringTest, DecodeRoundTripsEveryPoolValue) {
  ValuePool pool = BuildPool();
  for (bool descending : {false, true}) {
    BsonObj pattern = FromJson(descending ? R"({"v": -1})" : R"({"v": 1})").value();
    for (size_t i = 0; i < pool.size(); ++i) {
      std::string key = EncodeIndexKey(pattern, pool.doc(i));
      auto decoded = DecodeIndexKey(key, pattern);
      ASSERT_TRUE(decoded.ok()) << Describe(pool[i]) << " " << decoded.status().reason();
      BsonElement back = decoded.value().FirstElement();
      EXPECT_EQ(back.FieldName(), "");
      EXPECT_EQ(CompareElementValues(back, pool[i]), 0)
          << Describe(pool[i]) << " came back as " << Describe(back);
      EXPECT_EQ(Encode(back, descending), key) << Describe(pool[i]);
    }
  }
}

TEST(KeyStringTest, DecodeUsesCanonicalNumericTypes) {
  BsonObj pattern =
      FromJson(R"({"a": 1, "b": -1, "c": 1, "d": 1, "e": -1, "f": 1, "g": 1})").value();
  BsonObj doc = FromJson(R"({"a": 1.0, "b": {"$numberLong": "5000000000"}, "c": -2.5,
      "d": {"$numberDecimal": "0.10"}, "e": {"$numberDecimal": "-3"}, "f": -0.0,
      "g": {"$numberDouble": "NaN"}})")
                    .value();
  auto decoded = DecodeIndexKey(EncodeIndexKey(pattern, doc), pattern);
  ASSERT_TRUE(decoded.ok());
  std::vector<BsonElement> v;
  for (const BsonElement& e : decoded.value()) v.push_back(e);
  ASSERT_EQ(v.size(), 7u);
  EXPECT_EQ(v[0].type(), BsonType::kInt32);
  EXPECT_EQ(v[0].Int32(), 1);
  EXPECT_EQ(v[1].type(), BsonType::kInt64);
  EXPECT_EQ(v[1].Int64(), 5000000000LL);
  EXPECT_EQ(v[2].type(), BsonType::kDouble);
  EXPECT_EQ(v[2].Double(), -2.5);
  EXPECT_EQ(v[3].type(), BsonType::kDecimal128);
  EXPECT_EQ(v[3].Decimal().ToString(), "0.1");
  EXPECT_EQ(v[4].type(), BsonType::kInt32);
  EXPECT_EQ(v[4].Int32(), -3);
  EXPECT_EQ(v[5].type(), BsonType::kInt32);
  EXPECT_EQ(v[5].Int32(), 0);
  EXPECT_EQ(v[6].type(), BsonType::kDouble);
  EXPECT_TRUE(std::isnan(v[6].Double()));
}

TEST(KeyStringTest, DecodeRejectsMalformedKeys) {
  BsonObj one = FromJson(R"({"a": 1})").value();
  BsonObj two = FromJson(R"({"a": 1, "b": 1})").value();
  std::string key = EncodeIndexKey(one, FromJson(R"({"a": "hello"})").value());
  EXPECT_EQ(DecodeIndexKey(key.substr(0, key.size() - 1), one).status().code(),
            ErrorCode::kBadValue);
  EXPECT_EQ(DecodeIndexKey(key + "x", one).status().code(), ErrorCode::kBadValue);
  EXPECT_EQ(DecodeIndexKey(key, two).status().code(), ErrorCode::kBadValue);
  EXPECT_EQ(DecodeIndexKey(std::string(1, '\x01'), one).status().code(), ErrorCode::kBadValue);
  EXPECT_EQ(DecodeIndexKey("", one).status().code(), ErrorCode::kBadValue);
  // Every truncation of a nested key fails cleanly.
  std::string nested = EncodeIndexKey(
      one, FromJson(R"({"a": {"x": [1, 2.5, {"$numberDecimal": "0.1"}], "y": "s"}})").value());
  for (size_t n = 0; n < nested.size(); ++n) {
    EXPECT_FALSE(DecodeIndexKey(nested.substr(0, n), one).ok()) << n;
  }
  EXPECT_TRUE(DecodeIndexKey(nested, one).ok());
}

TEST(KeyStringTest, AppendDecodedIndexKeyFillsAReusedBuilder) {
  BsonObj pattern = FromJson(R"({"a": 1, "b": -1})").value();
  BsonBuilder b;
  for (int i : {5, 7}) {
    b.Reset();
    BsonObj doc = FromJson("{\"a\": " + std::to_string(i) + R"(, "b": "x"})").value();
    ASSERT_TRUE(AppendDecodedIndexKey(EncodeIndexKey(pattern, doc), pattern, b).ok());
    BsonObj values = b.View();
    ASSERT_EQ(values.NumFields(), 2);
    EXPECT_EQ(values.FirstElement().Int32(), i);
    EXPECT_EQ(values.FirstElement().FieldName(), "");
  }
  b.Reset();
  EXPECT_EQ(AppendDecodedIndexKey("", pattern, b).code(), ErrorCode::kBadValue);
}

TEST(KeyStringTest, SmallNumbersEncodeCompactly) {
  ValuePool p;
  p.Int32(1);
  p.Double(0.1);
  p.Int64(kInt64Max);
  p.Int32(-1);
  EXPECT_EQ(Encode(p[0]), std::string("\x1e\x05\x80\x00\x00", 5));  // the README's example
  EXPECT_EQ(Encode(p[3]), std::string("\x1e\x03\x7f\xff\xff", 5));
  EXPECT_EQ(Encode(p[0]).size(), 5u);   // rank, class, 2 exponent bytes, 1 group
  EXPECT_LE(Encode(p[1]).size(), 12u);  // 52 fraction bits: 8 groups
  EXPECT_LE(Encode(p[2]).size(), 13u);  // 62 fraction bits: 9 groups
}

}  // namespace
}  // namespace hourglass::bson
