// The double-double running sum must give MongoDB's $sum results: exact totals rounded once.
#include "pipeline/double_double_sum.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace hourglass::pipeline {
namespace {

double SumOf(std::initializer_list<double> xs) {
  DoubleDoubleSum s;
  for (double x : xs) s.Add(x);
  return s.Double();
}

TEST(DoubleDoubleSumTest, DecimalFractionsSumAsTheirExactTotalRounded) {
  EXPECT_EQ(SumOf({0.1, 0.2, 0.3}), 0.6);
  EXPECT_NE(0.1 + 0.2 + 0.3, 0.6);  // plain addition
  DoubleDoubleSum tenth;
  for (int i = 0; i < 10; ++i) tenth.Add(0.1);
  EXPECT_EQ(tenth.Double(), 1.0);
}

TEST(DoubleDoubleSumTest, SmallValuesSurviveLargeOnes) {
  DoubleDoubleSum s;
  s.Add(1e16);
  s.Add(1.0);
  s.Add(1.0);
  s.Add(-1e16);
  EXPECT_EQ(s.Double(), 2.0);  // plain addition loses both ones: 0
}

TEST(DoubleDoubleSumTest, LongsAreExactInTheTwoParts) {
  DoubleDoubleSum s;
  const int64_t big = std::numeric_limits<int64_t>::max();
  s.AddLong(big);
  s.AddLong(big);
  ASSERT_TRUE(s.Finite());
  EXPECT_EQ(s.Leading(), std::ldexp(1.0, 64));  // 2^64 - 2, rounded
  EXPECT_EQ(s.Addend(), -2.0);                  // and what rounding left out
  s.AddLong(big, /*negated=*/true);
  s.AddLong(big, /*negated=*/true);
  EXPECT_EQ(s.Leading() + s.Addend(), 0.0);
  DoubleDoubleSum neg;
  neg.AddLong(-5'000'000'000'123);
  EXPECT_EQ(neg.Double(), -5'000'000'000'123.0);
}

TEST(DoubleDoubleSumTest, InfinitiesGiveThePlainSum) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(SumOf({1.0, inf, 2.0}), inf);
  EXPECT_TRUE(std::isnan(SumOf({inf, -inf})));
  DoubleDoubleSum s;
  s.Add(inf);
  s.Add(1.0);
  EXPECT_FALSE(s.Finite());
  EXPECT_EQ(s.Double(), inf);  // the pair itself is NaN (inf - inf inside 2Sum)
}

TEST(DoubleDoubleSumTest, MergeAddsTheOtherTotal) {
  DoubleDoubleSum a, b;
  a.Add(0.1);
  a.Add(0.2);
  b.Add(0.3);
  a.Merge(b);
  EXPECT_EQ(a.Double(), 0.6);
}

}  // namespace
}  // namespace hourglass::pipeline
