#include "bson/bson_compare.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace hourglass::bson {
namespace {

using U128 = unsigned __int128;

template <typename T>
int Cmp3(const T& a, const T& b) {
  return a < b ? -1 : (a > b ? 1 : 0);
}

int Sign(int v) { return v < 0 ? -1 : (v > 0 ? 1 : 0); }

// IEEE comparison except that NaN equals NaN and sorts below every other number (MongoDB's rule);
// -0.0 == 0.0 falls out of the IEEE comparison.
int CompareDoubles(double a, double b) {
  if (a < b) return -1;
  if (a > b) return 1;
  if (a == b) return 0;
  bool a_nan = std::isnan(a), b_nan = std::isnan(b);
  if (a_nan == b_nan) return 0;
  return a_nan ? -1 : 1;
}

// Exact comparison of an int64 with a double, without converting the int64 to double (which
// would round above 2^53).
int CompareLongToDouble(int64_t l, double d) {
  if (std::isnan(d)) return 1;
  constexpr double kTwo63 = 9223372036854775808.0;
  if (d >= kTwo63) return -1;
  if (d < -kTwo63) return 1;
  // |d| < 2^63 here, so truncation is exact and in range; the truncated value is itself a double.
  int64_t t = static_cast<int64_t>(d);
  if (l != t) return l < t ? -1 : 1;
  return CompareDoubles(static_cast<double>(t), d);
}

// ---- Decimal128 arithmetic ----
//
// A finite decimal128 is (-1)^sign * coefficient * 10^exponent with coefficient < 10^34, so two
// decimals compare exactly with 128-bit integers. Doubles compare with decimals through the
// double's exact decimal expansion (every finite double has one, up to 767 significant digits);
// see CompareDecimalToDouble.

using DecimalParts = Decimal128::Parts;

constexpr int kMaxDecimalDigits = Decimal128::kMaxDigits;

U128 PowerOfTen(int n) {
  U128 r = 1;
  for (int i = 0; i < n; ++i) r *= 10;
  return r;
}

int DigitCount(U128 v) {
  int n = 0;
  while (v != 0) {
    v /= 10;
    ++n;
  }
  return n;
}

int DecimalSignum(const DecimalParts& p) {
  if (p.kind == DecimalParts::kFinite && p.coefficient == 0) return 0;
  return p.negative ? -1 : 1;
}

int CompareDecimalMagnitudes(const DecimalParts& a, const DecimalParts& b) {
  bool a_inf = a.kind == DecimalParts::kInfinity, b_inf = b.kind == DecimalParts::kInfinity;
  if (a_inf || b_inf) return a_inf == b_inf ? 0 : (a_inf ? 1 : -1);
  int a_digits = DigitCount(a.coefficient), b_digits = DigitCount(b.coefficient);
  // The exponent of the leading digit decides first; then the coefficients, both scaled to 34
  // digits (10^34 < 2^113, so no overflow).
  int a_adjusted = a.exponent + a_digits - 1, b_adjusted = b.exponent + b_digits - 1;
  if (a_adjusted != b_adjusted) return Cmp3(a_adjusted, b_adjusted);
  U128 a_scaled = a.coefficient * PowerOfTen(kMaxDecimalDigits - a_digits);
  U128 b_scaled = b.coefficient * PowerOfTen(kMaxDecimalDigits - b_digits);
  return Cmp3(a_scaled, b_scaled);
}

int CompareDecimalParts(const DecimalParts& a, const DecimalParts& b) {
  bool a_nan = a.kind == DecimalParts::kNaN, b_nan = b.kind == DecimalParts::kNaN;
  if (a_nan || b_nan) return a_nan == b_nan ? 0 : (a_nan ? -1 : 1);
  int sa = DecimalSignum(a), sb = DecimalSignum(b);
  if (sa != sb) return Cmp3(sa, sb);
  if (sa == 0) return 0;
  int magnitude = CompareDecimalMagnitudes(a, b);
  return sa > 0 ? magnitude : -magnitude;
}

DecimalParts LongToDecimal(int64_t v) {
  DecimalParts p;
  p.negative = v < 0;
  uint64_t magnitude = v < 0 ? ~static_cast<uint64_t>(v) + 1 : static_cast<uint64_t>(v);
  p.coefficient = magnitude;
  return p;
}

// `d` (finite, nonzero) as a decimal of at most 34 digits: exact when the double's exact decimal
// expansion has at most 34 significant digits; otherwise truncated toward zero and `*truncated`
// is set. glibc's printf prints the exact expansion for any requested precision.
DecimalParts DoubleToDecimal(double d, bool* truncated) {
  char buf[820];
  std::snprintf(buf, sizeof(buf), "%.780e", std::fabs(d));
  // Format: D.DDDD...e[+-]XX
  std::string digits;
  digits.push_back(buf[0]);
  const char* p = buf + 2;
  while (*p != 'e') digits.push_back(*p++);
  int exponent10 = std::atoi(p + 1);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  *truncated = digits.size() > kMaxDecimalDigits;
  if (*truncated) digits.resize(kMaxDecimalDigits);
  DecimalParts parts;
  parts.negative = d < 0;
  for (char c : digits) parts.coefficient = parts.coefficient * 10 + static_cast<U128>(c - '0');
  parts.exponent = exponent10 - static_cast<int>(digits.size() - 1);
  return parts;
}

// Decides x <=> d from a long double approximation of x when the two are clearly apart (relative
// gap above 1e-12, far beyond the approximation's error of a few parts in 10^18); 0 means "too
// close, compare exactly". Spares the exact path's 780-digit printf for almost every pair.
int QuickCompareDecimalToDouble(const DecimalParts& x, double d) {
  if (x.kind != DecimalParts::kFinite || std::isnan(d) || std::isinf(d)) return 0;
  int sx = DecimalSignum(x), sd = d > 0 ? 1 : (d < 0 ? -1 : 0);
  if (sx != sd) return Cmp3(sx, sd);
  if (sx == 0) return 0;
  // Over/underflow to inf/0 still lands on the right side: |x| is then beyond any double.
  long double approx = static_cast<long double>(x.coefficient) *
                       std::pow(10.0L, static_cast<long double>(x.exponent));
  long double magnitude = std::fabs(static_cast<long double>(d));
  int c = 0;
  if (approx > magnitude * (1 + 1e-12L)) c = 1;
  if (approx < magnitude * (1 - 1e-12L)) c = -1;
  return sx > 0 ? c : -c;
}

// Exact: a double whose expansion does not fit in 34 digits equals no decimal128, and lies
// strictly between its 34-digit truncation t and the next 34-digit value above |t|; no decimal128
// lies in that gap, so comparing against t decides everything except x == t.
int CompareDecimalToDouble(const DecimalParts& x, double d) {
  if (std::isnan(d)) return x.kind == DecimalParts::kNaN ? 0 : 1;
  DecimalParts other;
  bool truncated = false;
  if (int quick = QuickCompareDecimalToDouble(x, d); quick != 0) return quick;
  if (std::isinf(d)) {
    other.kind = DecimalParts::kInfinity;
    other.negative = d < 0;
  } else if (d != 0) {
    other = DoubleToDecimal(d, &truncated);
  }
  int c = CompareDecimalParts(x, other);
  if (c != 0 || !truncated) return c;
  // x equals the truncation of d, which lies strictly between d and zero.
  return d > 0 ? -1 : 1;
}

int CompareNumbers(const BsonElement& a, const BsonElement& b) {
  BsonType ta = a.type(), tb = b.type();
  if (ta == BsonType::kDecimal128 || tb == BsonType::kDecimal128) {
    if (tb != BsonType::kDecimal128) return -CompareNumbers(b, a);
    DecimalParts y = b.Decimal().Split();
    switch (ta) {
      case BsonType::kDecimal128:
        return CompareDecimalParts(a.Decimal().Split(), y);
      case BsonType::kDouble:
        return -CompareDecimalToDouble(y, a.Double());
      default:
        return CompareDecimalParts(LongToDecimal(a.NumberLong()), y);
    }
  }
  if (ta == BsonType::kDouble && tb == BsonType::kDouble)
    return CompareDoubles(a.Double(), b.Double());
  if (ta == BsonType::kDouble) return -CompareLongToDouble(b.NumberLong(), a.Double());
  if (tb == BsonType::kDouble) return CompareLongToDouble(a.NumberLong(), b.Double());
  return Cmp3(a.NumberLong(), b.NumberLong());
}

int CompareBytes(std::string_view a, std::string_view b) { return Sign(a.compare(b)); }

// CodeWScope value: int32 total, int32 code length (with NUL), code, NUL, scope document.
std::string_view CodeWScopeCode(const BsonElement& e) {
  const char* v = e.value();
  return std::string_view(v + 8, static_cast<size_t>(ReadInt32(v + 4)) - 1);
}
BsonObj CodeWScopeScope(const BsonElement& e) {
  const char* v = e.value();
  return BsonObj(v + 8 + ReadInt32(v + 4));
}

}  // namespace

int CanonicalTypeRank(BsonType t) {
  // MongoDB's canonicalizeBSONType values (bsontypes.h). Undefined shares EOO's rank 0, below
  // Null's 5: the two are distinct brackets in MongoDB's order.
  switch (t) {
    case BsonType::kMinKey:
      return -1;
    case BsonType::kEOO:
    case BsonType::kUndefined:
      return 0;
    case BsonType::kNull:
      return 5;
    case BsonType::kDouble:
    case BsonType::kInt32:
    case BsonType::kInt64:
    case BsonType::kDecimal128:
      return 10;
    case BsonType::kString:
    case BsonType::kSymbol:
      return 15;
    case BsonType::kObject:
      return 20;
    case BsonType::kArray:
      return 25;
    case BsonType::kBinData:
      return 30;
    case BsonType::kObjectId:
      return 35;
    case BsonType::kBool:
      return 40;
    case BsonType::kDate:
      return 45;
    case BsonType::kTimestamp:
      return 47;
    case BsonType::kRegex:
      return 50;
    case BsonType::kDBPointer:
      return 55;
    case BsonType::kCode:
      return 60;
    case BsonType::kCodeWScope:
      return 65;
    case BsonType::kMaxKey:
      return 127;
  }
  // Validated BSON never holds another type byte.
  invariant(false);
  return 0;
}

int CompareDecimals(const Decimal128& a, const Decimal128& b) {
  return CompareDecimalParts(a.Split(), b.Split());
}

int CompareElementValues(const BsonElement& a, const BsonElement& b) {
  return CompareElementValues(a, b, nullptr);
}

int CompareObjects(const BsonObj& a, const BsonObj& b) { return CompareObjects(a, b, nullptr); }

int CompareElementValues(const BsonElement& a, const BsonElement& b,
                         const StringComparator* strings) {
  int ra = CanonicalTypeRank(a.type()), rb = CanonicalTypeRank(b.type());
  if (ra != rb) return Cmp3(ra, rb);
  switch (a.type()) {
    case BsonType::kEOO:
    case BsonType::kUndefined:
    case BsonType::kNull:
    case BsonType::kMinKey:
    case BsonType::kMaxKey:
      return 0;
    case BsonType::kDouble:
    case BsonType::kInt32:
    case BsonType::kInt64:
    case BsonType::kDecimal128:
      return CompareNumbers(a, b);
    case BsonType::kString:
    case BsonType::kSymbol:
      if (strings != nullptr) return Sign(strings->Compare(a.Str(), b.Str()));
      [[fallthrough]];
    case BsonType::kCode:
      // Simple binary collation; string_view compares as unsigned bytes and honours lengths, so
      // embedded NULs and prefixes order correctly.
      return CompareBytes(a.Str(), b.Str());
    case BsonType::kObject:
    case BsonType::kArray:
      return CompareObjects(a.Obj(), b.Obj(), strings);
    case BsonType::kBinData: {
      // MongoDB orders BinData by length, then subtype, then bytes.
      std::string_view da = a.BinData(), db = b.BinData();
      if (da.size() != db.size()) return Cmp3(da.size(), db.size());
      if (a.BinSubtype() != b.BinSubtype()) return Cmp3(a.BinSubtype(), b.BinSubtype());
      return CompareBytes(da, db);
    }
    case BsonType::kObjectId:
      return Sign(std::memcmp(a.value(), b.value(), 12));
    case BsonType::kBool:
      return Cmp3(a.Bool(), b.Bool());
    case BsonType::kDate:
      return Cmp3(a.DateMillis(), b.DateMillis());
    case BsonType::kTimestamp:
      return Cmp3(a.TimestampValue(), b.TimestampValue());
    case BsonType::kRegex: {
      int c = CompareBytes(a.RegexPattern(), b.RegexPattern());
      return c != 0 ? c : CompareBytes(a.RegexOptions(), b.RegexOptions());
    }
    case BsonType::kDBPointer: {
      // MongoDB: by value size (i.e. namespace length), then the raw value bytes (namespace,
      // then ObjectId).
      size_t sa = a.ValueSize(), sb = b.ValueSize();
      if (sa != sb) return Cmp3(sa, sb);
      return Sign(std::memcmp(a.value(), b.value(), sa));
    }
    case BsonType::kCodeWScope: {
      int c = CompareBytes(CodeWScopeCode(a), CodeWScopeCode(b));
      return c != 0 ? c : CompareObjects(CodeWScopeScope(a), CodeWScopeScope(b));
    }
  }
  return 0;
}

int CompareObjects(const BsonObj& a, const BsonObj& b, const StringComparator* strings) {
  auto ia = a.begin(), ea = a.end();
  auto ib = b.begin(), eb = b.end();
  for (;; ++ia, ++ib) {
    bool a_done = ia == ea, b_done = ib == eb;
    if (a_done || b_done) return a_done == b_done ? 0 : (a_done ? -1 : 1);
    BsonElement x = *ia, y = *ib;
    int ra = CanonicalTypeRank(x.type()), rb = CanonicalTypeRank(y.type());
    if (ra != rb) return Cmp3(ra, rb);
    int c = CompareBytes(x.FieldName(), y.FieldName());
    if (c != 0) return c;
    c = CompareElementValues(x, y, strings);
    if (c != 0) return c;
  }
}

bool IsCollatable(BsonType t) {
  return t == BsonType::kString || t == BsonType::kSymbol || t == BsonType::kObject ||
         t == BsonType::kArray;
}

void AppendComparisonForm(BsonBuilder& b, std::string_view name, const BsonElement& e,
                          const StringComparator& strings) {
  switch (e.type()) {
    case BsonType::kString:
    case BsonType::kSymbol:
      b.AppendString(name, strings.ComparisonKey(e.Str()));
      return;
    case BsonType::kObject:
    case BsonType::kArray: {
      size_t token = e.type() == BsonType::kObject ? b.OpenObject(name) : b.OpenArray(name);
      for (BsonElement x : e.Obj()) AppendComparisonForm(b, x.FieldName(), x, strings);
      b.Close(token);
      return;
    }
    default:
      b.AppendElementAs(e, name);
  }
}

}  // namespace hourglass::bson
