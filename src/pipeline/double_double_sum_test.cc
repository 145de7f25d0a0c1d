// The double-double running sum must give MongoDB's $sum results: exact totals rounded once.
#include "pipeline/double_double_sum.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "pipeline/accumulator.h"

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

namespace hourglass::pipeline {
namespace {

// ProcessRepeated(v, n) must leave $sum and $avg exactly as n calls of Process(v) do, whatever
// was added before (doubles leave an addend; totals near 2^53 and int64 overflow).
TEST(DoubleDoubleSumTest, RepeatedIntegersLeaveTheStateOfSingleAdditions) {
  const double big = 4503599627370496.0;  // 2^52
  const std::vector<std::vector<Value>> befores = {
      {},
      {Value::Double(0.1), Value::Double(0.2)},
      {Value::Double(big)},
      {Value::Double(1.0), Value::Double(1e-20)},  // an integral leading part and an addend
      {Value::Long(std::numeric_limits<int64_t>::max() - 10)},
      {Value::Int(7), Value::Double(1e300)},
  };
  for (const char* op : {"$sum", "$avg", "$count"}) {
    for (const auto& before : befores) {
      for (const Value& v : {Value::Int(1), Value::Int(-3), Value::Long(1'000'000'007)}) {
        for (size_t n : {0, 1, 5, 1000}) {
          auto once = MakeAccumulator(op);
          auto each = MakeAccumulator(op);
          for (const Value& b : before) {
            ASSERT_TRUE(once->Process(b).ok());
            ASSERT_TRUE(each->Process(b).ok());
          }
          ASSERT_TRUE(once->ProcessRepeated(v, n).ok());
          for (size_t i = 0; i < n; ++i) ASSERT_TRUE(each->Process(v).ok());
          // A double added afterwards shows any difference in the double-double too.
          ASSERT_TRUE(once->Process(Value::Double(0.3)).ok());
          ASSERT_TRUE(each->Process(Value::Double(0.3)).ok());
          EXPECT_EQ(once->PartialState().ToString(), each->PartialState().ToString())
              << op << " " << v.ToString() << " x" << n;
          EXPECT_EQ(once->Finalize().ToString(), each->Finalize().ToString());
        }
      }
    }
  }
}

}  // namespace
}  // namespace hourglass::pipeline
