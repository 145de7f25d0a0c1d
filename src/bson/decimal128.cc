#include "bson/decimal128.h"

#include <cmath>

extern "C" {
#include <bid_conf.h>
#include <bid_functions.h>
}

namespace hourglass::bson::decimal {
namespace {

// Every call passes its rounding mode and its own status flags (the library's by-value build,
// libbidgcc000), so nothing global is touched and calls are thread-safe.
constexpr _IDEC_round kHalfEven = BID_ROUNDING_TO_NEAREST;

BID_UINT128 ToBid(const Decimal128& d) {
  BID_UINT128 r;
  r.w[0] = d.low;
  r.w[1] = d.high;
  return r;
}

Decimal128 FromBid(const BID_UINT128& b) { return Decimal128{b.w[0], b.w[1]}; }

_IDEC_round BidMode(Round mode) {
  switch (mode) {
    case Round::kHalfEven:
      return BID_ROUNDING_TO_NEAREST;
    case Round::kTowardZero:
      return BID_ROUNDING_TO_ZERO;
    case Round::kFloor:
      return BID_ROUNDING_DOWN;
    case Round::kCeil:
      return BID_ROUNDING_UP;
  }
  return BID_ROUNDING_TO_NEAREST;
}

// 1E<exponent>: coefficient 1, biased exponent in bits 49..62 of the high word.
Decimal128 PowerOfTen(int exponent) {
  constexpr int kBias = 6176;
  return Decimal128{1, static_cast<uint64_t>(exponent + kBias) << 49};
}

int DigitCount(unsigned __int128 c) {
  int n = 0;
  while (c != 0) {
    c /= 10;
    ++n;
  }
  return n;
}

Decimal128 Quantize(const Decimal128& a, int exponent, _IDEC_round mode, bool* invalid) {
  _IDEC_flags flags = 0;
  BID_UINT128 r = bid128_quantize(ToBid(a), ToBid(PowerOfTen(exponent)), mode, &flags);
  *invalid = (flags & BID_INVALID_EXCEPTION) != 0;
  return FromBid(r);
}

// One rounded library call: the library's functions take the operands, the rounding mode and
// their own status flags.
using UnaryFn = BID_UINT128 (*)(BID_UINT128, _IDEC_round, _IDEC_flags*);
using BinaryFn = BID_UINT128 (*)(BID_UINT128, BID_UINT128, _IDEC_round, _IDEC_flags*);

Decimal128 Call(UnaryFn f, const Decimal128& a) {
  _IDEC_flags flags = 0;
  return FromBid(f(ToBid(a), kHalfEven, &flags));
}

Decimal128 Call(BinaryFn f, const Decimal128& a, const Decimal128& b) {
  _IDEC_flags flags = 0;
  return FromBid(f(ToBid(a), ToBid(b), kHalfEven, &flags));
}

}  // namespace

Decimal128 FromInt64(int64_t v) { return FromBid(bid128_from_int64(v)); }

Decimal128 FromDouble(double d, DoubleDigits digits) {
  _IDEC_flags flags = 0;
  Decimal128 exact = FromBid(binary64_to_bid128(d, kHalfEven, &flags));
  if (digits == DoubleDigits::k34 || d == 0 || !std::isfinite(d)) return exact;
  // Keep 15 significant digits: quantize to the exponent that leaves 15 digits before the
  // decimal's own adjusted exponent; rounding up can carry into a 16th digit (9.99...95 -> 10.0),
  // in which case one more power of ten is dropped.
  Decimal128::Parts p = exact.Split();
  const int adjusted = p.exponent + DigitCount(p.coefficient) - 1;
  constexpr int kDigits = 15;
  bool invalid = false;
  Decimal128 r = Quantize(exact, adjusted - (kDigits - 1), kHalfEven, &invalid);
  if (DigitCount(r.Split().coefficient) > kDigits) {
    r = Quantize(exact, adjusted - (kDigits - 2), kHalfEven, &invalid);
  }
  return r;
}

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char c = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    if (c != b[i]) return false;
  }
  return true;
}

// The library reads any text it does not understand as NaN without a flag, so the syntax is
// checked first.
bool ValidDecimalSyntax(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  const std::string_view rest = s.substr(i);
  if (EqualsIgnoreCase(rest, "inf") || EqualsIgnoreCase(rest, "infinity") ||
      EqualsIgnoreCase(rest, "nan")) {
    return true;
  }
  size_t digits = 0;
  while (i < s.size() && IsDigit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exponent_digits = 0;
    while (i < s.size() && IsDigit(s[i])) ++i, ++exponent_digits;
    if (exponent_digits == 0) return false;
  }
  return i == s.size();
}

}  // namespace

bool ParseRounded(std::string_view s, Decimal128* out) {
  if (!ValidDecimalSyntax(s)) return false;
  std::string text(s);
  _IDEC_flags flags = 0;
  BID_UINT128 r = bid128_from_string(text.data(), kHalfEven, &flags);
  if (flags & (BID_OVERFLOW_EXCEPTION | BID_UNDERFLOW_EXCEPTION | BID_INVALID_EXCEPTION)) {
    return false;
  }
  *out = FromBid(r);
  return true;
}

Decimal128 FromNumber(const BsonElement& e) {
  switch (e.type()) {
    case BsonType::kDecimal128:
      return e.Decimal();
    case BsonType::kDouble:
      return FromDouble(e.NumberDouble());
    default:
      return FromInt64(e.NumberLong());
  }
}

double ToDouble(const Decimal128& d, bool* out_of_range) {
  _IDEC_flags flags = 0;
  double r = bid128_to_binary64(ToBid(d), kHalfEven, &flags);
  if (out_of_range != nullptr) {
    *out_of_range = (flags & (BID_OVERFLOW_EXCEPTION | BID_UNDERFLOW_EXCEPTION)) != 0;
  }
  return r;
}

bool ToInt64(const Decimal128& d, Round mode, int64_t* out) {
  _IDEC_flags flags = 0;
  BID_SINT64 r = 0;
  switch (mode) {
    case Round::kHalfEven:
      r = bid128_to_int64_rnint(ToBid(d), &flags);
      break;
    case Round::kTowardZero:
      r = bid128_to_int64_int(ToBid(d), &flags);
      break;
    case Round::kFloor:
      r = bid128_to_int64_floor(ToBid(d), &flags);
      break;
    case Round::kCeil:
      r = bid128_to_int64_ceil(ToBid(d), &flags);
      break;
  }
  if (flags & BID_INVALID_EXCEPTION) return false;
  *out = r;
  return true;
}

Decimal128 Add(const Decimal128& a, const Decimal128& b) { return Call(bid128_add, a, b); }

Decimal128 Subtract(const Decimal128& a, const Decimal128& b) { return Call(bid128_sub, a, b); }

Decimal128 Multiply(const Decimal128& a, const Decimal128& b) { return Call(bid128_mul, a, b); }

Decimal128 Divide(const Decimal128& a, const Decimal128& b) { return Call(bid128_div, a, b); }

Decimal128 Modulo(const Decimal128& a, const Decimal128& b) {
  _IDEC_flags flags = 0;
  return FromBid(bid128_fmod(ToBid(a), ToBid(b), &flags));
}

Decimal128 Abs(const Decimal128& a) { return FromBid(bid128_abs(ToBid(a))); }

Decimal128 Sqrt(const Decimal128& a) { return Call(bid128_sqrt, a); }

Decimal128 Exp(const Decimal128& a) { return Call(bid128_exp, a); }

Decimal128 Ln(const Decimal128& a) { return Call(bid128_log, a); }

Decimal128 Log10(const Decimal128& a) { return Call(bid128_log10, a); }

Decimal128 Log(const Decimal128& a, const Decimal128& base) {
  int64_t b = 0;
  if (IsInteger(base) && ToInt64(base, Round::kHalfEven, &b)) {
    if (b == 10) return Log10(a);
    if (b == 2) return Call(bid128_log2, a);
  }
  return Divide(Log10(a), Log10(base));
}

Decimal128 Pow(const Decimal128& base, const Decimal128& exponent) {
  return Call(bid128_pow, base, exponent);
}

Decimal128 Trig(TrigOp op, const Decimal128& a) {
  switch (op) {
    case TrigOp::kSin:
      return Call(bid128_sin, a);
    case TrigOp::kCos:
      return Call(bid128_cos, a);
    case TrigOp::kTan:
      return Call(bid128_tan, a);
    case TrigOp::kAsin:
      return Call(bid128_asin, a);
    case TrigOp::kAcos:
      return Call(bid128_acos, a);
    case TrigOp::kAtan:
      return Call(bid128_atan, a);
    case TrigOp::kSinh:
      return Call(bid128_sinh, a);
    case TrigOp::kCosh:
      return Call(bid128_cosh, a);
    case TrigOp::kTanh:
      return Call(bid128_tanh, a);
    case TrigOp::kAsinh:
      return Call(bid128_asinh, a);
    case TrigOp::kAcosh:
      return Call(bid128_acosh, a);
    case TrigOp::kAtanh:
      return Call(bid128_atanh, a);
    case TrigOp::kDegreesToRadians:
    case TrigOp::kRadiansToDegrees: {
      // pi/180 and 180/pi to 34 digits.
      Decimal128 factor{};
      Decimal128::FromString(op == TrigOp::kDegreesToRadians
                                 ? "0.01745329251994329576923690768488613"
                                 : "57.29577951308232087679815481410517",
                             &factor);
      return Multiply(a, factor);
    }
  }
  return a;
}

Decimal128 Atan2(const Decimal128& y, const Decimal128& x) { return Call(bid128_atan2, y, x); }

Decimal128 RoundToPlace(const Decimal128& a, int place, Round mode) {
  if (IsNaN(a) || IsInfinite(a)) return a;
  bool invalid = false;
  Decimal128 r = Quantize(a, -place, BidMode(mode), &invalid);
  return invalid ? a : r;
}

bool IsZero(const Decimal128& a) { return bid128_isZero(ToBid(a)) != 0; }
bool IsNaN(const Decimal128& a) { return bid128_isNaN(ToBid(a)) != 0; }
bool IsInfinite(const Decimal128& a) { return bid128_isInf(ToBid(a)) != 0; }
bool IsNegative(const Decimal128& a) { return (a.high >> 63) != 0; }

bool IsInteger(const Decimal128& a) {
  Decimal128::Parts p = a.Split();
  if (p.kind != Decimal128::Parts::kFinite) return false;
  if (p.exponent >= 0 || p.coefficient == 0) return true;
  if (p.exponent < -Decimal128::kMaxDigits) return false;
  unsigned __int128 scale = 1;
  for (int i = 0; i < -p.exponent; ++i) scale *= 10;
  return p.coefficient % scale == 0;
}

}  // namespace hourglass::bson::decimal
