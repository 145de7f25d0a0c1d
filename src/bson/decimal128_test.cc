#include "bson/decimal128.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace hourglass::bson::decimal {
namespace {

Decimal128 D(const std::string& s) {
  Decimal128 d{};
  EXPECT_TRUE(Decimal128::FromString(s, &d)) << s;
  return d;
}

std::string S(const Decimal128& d) { return d.ToString(); }

TEST(Decimal128Test, EncodesKnownValuesInBid) {
  // IEEE 754-2008 BID: sign, 14-bit exponent biased by 6176, 113-bit coefficient.
  Decimal128 one = D("1");
  EXPECT_EQ(one.high, 0x3040000000000000ULL);
  EXPECT_EQ(one.low, 1ULL);
  Decimal128 neg_zero = D("-0");
  EXPECT_EQ(neg_zero.high, 0xB040000000000000ULL);
  EXPECT_EQ(neg_zero.low, 0ULL);
  Decimal128 tenth = D("0.1");
  EXPECT_EQ(tenth.high, 0x303E000000000000ULL);
  EXPECT_EQ(tenth.low, 1ULL);
  // 1E+6144 is above the largest exponent for a one-digit coefficient: it is stored clamped as
  // 10^33 * 10^6111.
  Decimal128 big = D("1E+6144");
  EXPECT_EQ(big.high, 0x5FFE314DC6448D93ULL);
  EXPECT_EQ(big.low, 0x38C15B0A00000000ULL);
  EXPECT_EQ(S(big), "1.000000000000000000000000000000000E+6144");
  EXPECT_EQ(FromInt64(1).high, one.high);
  EXPECT_EQ(FromInt64(1).low, one.low);
}

TEST(Decimal128Test, FormatsTheWayMongoDBPrints) {
  for (const char* s : {"1.0", "1E+10", "-0", "NaN", "Infinity", "-Infinity", "0.001", "1E-7",
                        "123456789012345678901234567890.1234", "-1.5E+300"}) {
    EXPECT_EQ(S(D(s)), s);
  }
  EXPECT_EQ(S(FromInt64(-9223372036854775807LL - 1)), "-9223372036854775808");
  EXPECT_EQ(S(FromInt64(0)), "0");
}

TEST(Decimal128Test, DoublesKeepFifteenDigitsByDefault) {
  EXPECT_EQ(S(FromDouble(0.1)), "0.100000000000000");
  EXPECT_EQ(S(FromDouble(3.0)), "3.00000000000000");
  EXPECT_EQ(S(FromDouble(-2.5)), "-2.50000000000000");
  EXPECT_EQ(S(FromDouble(1e300)), "1.00000000000000E+300");
  EXPECT_EQ(S(FromDouble(1.0 / 3)), "0.333333333333333");
  // Rounding up carries into a sixteenth digit: one digit more is dropped.
  EXPECT_EQ(S(FromDouble(9.9999999999999995)), "10.0000000000000");
  EXPECT_EQ(S(FromDouble(0.0)), "0");
  EXPECT_EQ(S(FromDouble(std::numeric_limits<double>::infinity())), "Infinity");
  EXPECT_EQ(S(FromDouble(-std::numeric_limits<double>::infinity())), "-Infinity");
  EXPECT_EQ(S(FromDouble(std::nan(""))), "NaN");
}

TEST(Decimal128Test, DoublesToThirtyFourDigits) {
  EXPECT_EQ(S(FromDouble(0.1, DoubleDigits::k34)), "0.1000000000000000055511151231257827");
  EXPECT_EQ(S(FromDouble(0.5, DoubleDigits::k34)), "0.5");
  EXPECT_EQ(S(FromDouble(3.0, DoubleDigits::k34)), "3");
}

TEST(Decimal128Test, ConvertsToDouble) {
  EXPECT_EQ(ToDouble(D("0.1")), 0.1);
  EXPECT_EQ(ToDouble(D("-2.5")), -2.5);
  EXPECT_EQ(ToDouble(D("1E+400")), std::numeric_limits<double>::infinity());
  EXPECT_EQ(ToDouble(D("1E-400")), 0.0);
  EXPECT_TRUE(std::isnan(ToDouble(D("NaN"))));
  EXPECT_EQ(D("12345.678").ToDouble(), 12345.678);
}

TEST(Decimal128Test, ConvertsToInt64WithEachRounding) {
  int64_t v = 0;
  ASSERT_TRUE(ToInt64(D("2.5"), Round::kHalfEven, &v));
  EXPECT_EQ(v, 2);
  ASSERT_TRUE(ToInt64(D("3.5"), Round::kHalfEven, &v));
  EXPECT_EQ(v, 4);
  ASSERT_TRUE(ToInt64(D("-2.7"), Round::kTowardZero, &v));
  EXPECT_EQ(v, -2);
  ASSERT_TRUE(ToInt64(D("-2.2"), Round::kFloor, &v));
  EXPECT_EQ(v, -3);
  ASSERT_TRUE(ToInt64(D("2.2"), Round::kCeil, &v));
  EXPECT_EQ(v, 3);
  ASSERT_TRUE(ToInt64(D("-9223372036854775808"), Round::kTowardZero, &v));
  EXPECT_EQ(v, std::numeric_limits<int64_t>::min());
  v = 7;
  EXPECT_FALSE(ToInt64(D("9223372036854775808"), Round::kTowardZero, &v));
  EXPECT_FALSE(ToInt64(D("NaN"), Round::kHalfEven, &v));
  EXPECT_FALSE(ToInt64(D("-Infinity"), Round::kHalfEven, &v));
  EXPECT_EQ(v, 7);
}

TEST(Decimal128Test, AddsExactly) {
  EXPECT_EQ(S(Add(D("0.1"), D("0.2"))), "0.3");
  EXPECT_EQ(S(Add(D("1.10"), D("2.205"))), "3.305");
  EXPECT_EQ(S(Subtract(D("1"), D("0.9"))), "0.1");
  EXPECT_EQ(S(Subtract(D("1.0"), D("1.0"))), "0.0");
  EXPECT_EQ(S(Add(D("Infinity"), D("1"))), "Infinity");
  EXPECT_EQ(S(Add(D("Infinity"), D("-Infinity"))), "NaN");
}

TEST(Decimal128Test, RoundsHalfEvenAtThirtyFourDigits) {
  // 34 digits plus a half: the tie goes to the even last digit.
  EXPECT_EQ(S(Add(D("1234567890123456789012345678901234"), D("0.5"))),
            "1234567890123456789012345678901234");
  EXPECT_EQ(S(Add(D("1234567890123456789012345678901235"), D("0.5"))),
            "1234567890123456789012345678901236");
  EXPECT_EQ(S(Add(D("9999999999999999999999999999999999"), D("1"))),
            "1.000000000000000000000000000000000E+34");
  EXPECT_EQ(S(Divide(D("1"), D("3"))), "0.3333333333333333333333333333333333");
  EXPECT_EQ(S(Divide(D("2"), D("3"))), "0.6666666666666666666666666666666667");
}

TEST(Decimal128Test, MultipliesAndDivides) {
  EXPECT_EQ(S(Multiply(D("1.5"), D("2.00"))), "3.000");
  EXPECT_EQ(S(Multiply(D("-0"), D("5"))), "-0");
  EXPECT_EQ(S(Divide(D("1"), D("4"))), "0.25");
  EXPECT_EQ(S(Divide(D("10"), D("2"))), "5");
  EXPECT_EQ(S(Divide(D("1"), D("0"))), "Infinity");
  EXPECT_EQ(S(Divide(D("-1"), D("0"))), "-Infinity");
  EXPECT_EQ(S(Divide(D("0"), D("0"))), "NaN");
  // Overflow gives infinity, underflow zero.
  EXPECT_EQ(S(Multiply(D("1E+6000"), D("1E+6000"))), "Infinity");
  EXPECT_EQ(S(Multiply(D("1E-6000"), D("1E-6000"))), "0E-6176");
}

TEST(Decimal128Test, Modulo) {
  EXPECT_EQ(S(Modulo(D("7.5"), D("2"))), "1.5");
  EXPECT_EQ(S(Modulo(D("-7"), D("3"))), "-1");
  EXPECT_EQ(S(Modulo(D("7"), D("-3"))), "1");
}

TEST(Decimal128Test, Transcendentals) {
  EXPECT_EQ(S(Sqrt(D("2"))), "1.414213562373095048801688724209698");
  EXPECT_EQ(S(Sqrt(D("16"))), "4");
  EXPECT_EQ(S(Sqrt(D("-1"))), "NaN");
  EXPECT_EQ(S(Exp(D("1"))), "2.718281828459045235360287471352662");
  EXPECT_EQ(S(Exp(D("0"))), "1");
  EXPECT_EQ(S(Ln(D("1"))), "0");
  EXPECT_EQ(S(Log10(D("1000"))), "3");
  EXPECT_EQ(S(Log(D("8"), D("2"))), "3");
  EXPECT_EQ(S(Log(D("100"), D("10"))), "2");
  EXPECT_EQ(ToDouble(Log(D("81"), D("3"))), 4.0);
  EXPECT_EQ(S(Pow(D("2"), D("10"))), "1024");
  // A non-integer exponent goes through exp/ln: the result carries all 34 digits.
  EXPECT_EQ(S(Pow(D("4"), D("0.5"))), "2.000000000000000000000000000000000");
  EXPECT_EQ(S(Pow(D("1.1"), D("2"))), "1.21");
}

TEST(Decimal128Test, Trigonometry) {
  EXPECT_EQ(S(Trig(TrigOp::kSin, D("0"))), "0");
  EXPECT_EQ(S(Trig(TrigOp::kCos, D("0"))), "1.000000000000000000000000000000000");
  EXPECT_EQ(S(Trig(TrigOp::kAsin, D("2"))), "NaN");
  // pi to 34 digits: 3.14159265358979323846264338327950288... rounds up in the last place.
  EXPECT_EQ(S(Trig(TrigOp::kDegreesToRadians, D("180"))), "3.141592653589793238462643383279503");
  EXPECT_NEAR(ToDouble(Atan2(D("1"), D("1"))), M_PI / 4, 1e-15);
  EXPECT_NEAR(ToDouble(Trig(TrigOp::kRadiansToDegrees, D("1"))), 180 / M_PI, 1e-12);
}

TEST(Decimal128Test, RoundsToPlaces) {
  EXPECT_EQ(S(RoundToPlace(D("1.25"), 1, Round::kHalfEven)), "1.2");
  EXPECT_EQ(S(RoundToPlace(D("1.35"), 1, Round::kHalfEven)), "1.4");
  EXPECT_EQ(S(RoundToPlace(D("1234.5678"), 2, Round::kHalfEven)), "1234.57");
  EXPECT_EQ(S(RoundToPlace(D("1234.5678"), -2, Round::kHalfEven)), "1.2E+3");
  EXPECT_EQ(S(RoundToPlace(D("1234.5678"), 0, Round::kHalfEven)), "1235");
  EXPECT_EQ(S(RoundToPlace(D("-45.34"), 1, Round::kTowardZero)), "-45.3");
  EXPECT_EQ(S(RoundToPlace(D("1"), 2, Round::kHalfEven)), "1.00");
  EXPECT_EQ(S(RoundToPlace(D("-1.5"), 0, Round::kFloor)), "-2");
  EXPECT_EQ(S(RoundToPlace(D("1.2"), 0, Round::kCeil)), "2");
  EXPECT_EQ(S(RoundToPlace(D("1E+40"), 2, Round::kHalfEven)), "1E+40");
  EXPECT_EQ(S(RoundToPlace(D("NaN"), 2, Round::kHalfEven)), "NaN");
  EXPECT_EQ(S(RoundToPlace(D("-Infinity"), 0, Round::kCeil)), "-Infinity");
}

TEST(Decimal128Test, Predicates) {
  EXPECT_TRUE(IsZero(D("0E+5")));
  EXPECT_TRUE(IsZero(D("-0.000")));
  EXPECT_FALSE(IsZero(D("1E-6000")));
  EXPECT_TRUE(IsNaN(D("NaN")));
  EXPECT_TRUE(IsInfinite(D("-Infinity")));
  EXPECT_TRUE(IsNegative(D("-0")));
  EXPECT_FALSE(IsNegative(D("0")));
  EXPECT_TRUE(IsInteger(D("1.000")));
  EXPECT_TRUE(IsInteger(D("1E+3")));
  EXPECT_FALSE(IsInteger(D("1.5")));
  EXPECT_FALSE(IsInteger(D("Infinity")));
}

TEST(Decimal128Test, ParsesWithRounding) {
  Decimal128 d{};
  ASSERT_TRUE(ParseRounded("0.12345678901234567890123456789012345", &d));
  EXPECT_EQ(S(d), "0.1234567890123456789012345678901234");  // tie: the even digit stays
  ASSERT_TRUE(ParseRounded("12345678901234567890123456789012355", &d));
  EXPECT_EQ(S(d), "1.234567890123456789012345678901236E+34");
  ASSERT_TRUE(ParseRounded("-.5e-3", &d));
  EXPECT_EQ(S(d), "-0.0005");
  ASSERT_TRUE(ParseRounded("5.", &d));
  EXPECT_EQ(S(d), "5");
  ASSERT_TRUE(ParseRounded("-Infinity", &d));
  EXPECT_EQ(S(d), "-Infinity");
  ASSERT_TRUE(ParseRounded("nan", &d));
  EXPECT_EQ(S(d), "NaN");
  for (const char* bad :
       {"", "abc", " 1", "1.5x", "1e", "e5", ".", "+", "1E+7000", "1E-7000", "--1", "1..2"}) {
    EXPECT_FALSE(ParseRounded(bad, &d)) << bad;
  }
}

TEST(Decimal128Test, ParsesAndPrintsRoundTrip) {
  for (const char* s : {"0", "-0", "1", "-1", "0.1", "1.00", "1E+6111", "1E-6176",
                        "9.999999999999999999999999999999999E+6144"}) {
    Decimal128 d = D(s);
    Decimal128 again = D(S(d));
    EXPECT_EQ(d.high, again.high) << s;
    EXPECT_EQ(d.low, again.low) << s;
  }
}

}  // namespace
}  // namespace hourglass::bson::decimal
