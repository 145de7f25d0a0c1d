// Decimal128 arithmetic: IEEE 754-2008 decimal128 (34 significant digits, adjusted exponents
// -6143..6144, round half to even), computed by Intel's decimal floating-point library, the one
// MongoDB's server links, so results agree with MongoDB digit for digit. The values are the
// 16-byte BID encoding BSON stores (bson::Decimal128); parsing and printing stay with
// Decimal128::FromString/ToString (the BSON Decimal128 spec's string forms: "1.0", "1E+10", "-0",
// "NaN", "Infinity").
//
// Overflow gives +-Infinity, invalid operations (0/0, sqrt(-1), Inf - Inf) give NaN, as IEEE
// says; operators that MongoDB rejects (division by zero, logarithms of non-positive numbers)
// check their operands before calling in here. Pure functions, thread-safe; only ParseRounded
// and the degree/radian factors allocate.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "bson/bson.h"

namespace hourglass::bson::decimal {

// How many significant digits a double keeps when it becomes a decimal. MongoDB's expressions
// ($add, $toDecimal, comparisons' coercion) use 15, the digits a double holds faithfully, so 0.1
// becomes 0.100000000000000; its $sum/$avg accumulators use 34 (the double's binary value to 34
// digits: 0.1000000000000000055511151231257827).
enum class DoubleDigits { k15, k34 };

// How a value is rounded to an integer or a decimal place.
enum class Round {
  kHalfEven,  // ties to the even neighbor ($round, conversions)
  kTowardZero,
  kFloor,
  kCeil,
};

Decimal128 FromInt64(int64_t v);
Decimal128 FromDouble(double d, DoubleDigits digits = DoubleDigits::k15);
// Parses a number the way MongoDB's $convert reads a string: an optional sign, then digits with
// an optional point and exponent ("1.5", ".5", "1e5"), or Infinity/Inf/NaN (any case); more than
// 34 digits round (ties to even). False for other syntax and for values beyond the exponent range
// (they would overflow to infinity or underflow to zero).
bool ParseRounded(std::string_view s, Decimal128* out);

// A numeric element as a decimal, the way MongoDB coerces operands once one of them is a
// decimal: int32/int64 exactly, doubles to 15 digits, decimals as they are (0 for non-numbers).
Decimal128 FromNumber(const BsonElement& e);
// The nearest double (ties to even); infinities and NaN carry over, values beyond the double
// range go to +-Infinity and tiny ones to +-0 (then *out_of_range, when given, is set true).
double ToDouble(const Decimal128& d, bool* out_of_range = nullptr);
// `d` rounded to an integer with `mode`; false (out untouched) for NaN, infinities and values
// outside int64.
bool ToInt64(const Decimal128& d, Round mode, int64_t* out);

Decimal128 Add(const Decimal128& a, const Decimal128& b);
Decimal128 Subtract(const Decimal128& a, const Decimal128& b);
Decimal128 Multiply(const Decimal128& a, const Decimal128& b);
Decimal128 Divide(const Decimal128& a, const Decimal128& b);
// a - b * trunc(a / b), sign of a (fmod; MongoDB's $mod).
Decimal128 Modulo(const Decimal128& a, const Decimal128& b);
Decimal128 Abs(const Decimal128& a);
Decimal128 Sqrt(const Decimal128& a);
Decimal128 Exp(const Decimal128& a);
Decimal128 Ln(const Decimal128& a);
Decimal128 Log10(const Decimal128& a);
// Logarithm of `a` in base `base`: log10 and log2 directly, log10(a)/log10(base) otherwise.
Decimal128 Log(const Decimal128& a, const Decimal128& base);
Decimal128 Pow(const Decimal128& base, const Decimal128& exponent);

// Trigonometric and hyperbolic functions in decimal (MongoDB's $sin ... $radiansToDegrees on a
// decimal); out-of-domain arguments give NaN.
enum class TrigOp {
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kTanh,
  kAsinh,
  kAcosh,
  kAtanh,
  kDegreesToRadians,
  kRadiansToDegrees,
};
Decimal128 Trig(TrigOp op, const Decimal128& a);
Decimal128 Atan2(const Decimal128& y, const Decimal128& x);

// `a` rounded to a multiple of 10^-place with `mode` (place 0 rounds to an integer; negative
// places round to tens, hundreds, ...), with exponent -place as IEEE quantize gives it (MongoDB's
// $round/$trunc: 1.25 to place 1 is 1.2, 1 to place 2 is 1.00). When that exponent would need
// more than 34 digits the value has nothing to round and comes back as it is; so do NaN and the
// infinities.
Decimal128 RoundToPlace(const Decimal128& a, int place, Round mode);

bool IsZero(const Decimal128& a);  // +0 or -0 with any exponent
bool IsNaN(const Decimal128& a);
bool IsInfinite(const Decimal128& a);
bool IsNegative(const Decimal128& a);  // the sign bit: true for -0 and -NaN too
// Finite and equal to an integer (1, 1.000, 1E+3).
bool IsInteger(const Decimal128& a);

}  // namespace hourglass::bson::decimal
