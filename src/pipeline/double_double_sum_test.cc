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

// Which integer type a test column holds.
struct BsonTypeFor32 {
  bool int32;
};

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

// ProcessNumbers of an integer column must leave $sum and $avg as Process of each cell does.
TEST(DoubleDoubleSumTest, IntegerColumnsLeaveTheStateOfSingleAdditions) {
  const std::vector<std::vector<Value>> befores = {
      {},
      {Value::Double(0.1)},
      {Value::Double(1.0), Value::Double(1e-20)},
      {Value::Long(int64_t{1} << 51)},
      {Value::Long(std::numeric_limits<int64_t>::max() - 10)},
  };
  const std::vector<std::vector<int64_t>> columns = {
      {1, 2, 3, -4, 5},
      {int64_t{1} << 50, int64_t{1} << 50, int64_t{1} << 50, -7},
      {std::numeric_limits<int64_t>::max(), 1},
      {},
  };
  for (const char* op : {"$sum", "$avg"}) {
    for (BsonTypeFor32 t : {BsonTypeFor32{false}, BsonTypeFor32{true}}) {
      for (const auto& before : befores) {
        for (const auto& cells : columns) {
          std::vector<uint64_t> bits;
          std::vector<uint8_t> present;
          std::vector<uint32_t> rows;
          for (size_t i = 0; i < cells.size(); ++i) {
            if (t.int32 && (cells[i] > INT32_MAX || cells[i] < INT32_MIN)) continue;
            bits.push_back(static_cast<uint64_t>(cells[i]));
            present.push_back(1);
            rows.push_back(static_cast<uint32_t>(rows.size()));
            bits.push_back(0);  // a missing cell between
            present.push_back(0);
            rows.push_back(static_cast<uint32_t>(rows.size()));
          }
          NumberColumn col{t.int32 ? bson::BsonType::kInt32 : bson::BsonType::kInt64, bits.data(),
                           present.data()};
          auto column = MakeAccumulator(op);
          auto each = MakeAccumulator(op);
          for (const Value& b : before) {
            ASSERT_TRUE(column->Process(b).ok());
            ASSERT_TRUE(each->Process(b).ok());
          }
          ASSERT_TRUE(column->ProcessNumbers(col, rows.data(), rows.size()).ok());
          for (size_t i = 0; i < bits.size(); ++i) {
            if (!present[i]) continue;
            const int64_t v = static_cast<int64_t>(bits[i]);
            ASSERT_TRUE(
                each->Process(t.int32 ? Value::Int(static_cast<int32_t>(v)) : Value::Long(v)).ok());
          }
          ASSERT_TRUE(column->Process(Value::Double(0.3)).ok());
          ASSERT_TRUE(each->Process(Value::Double(0.3)).ok());
          EXPECT_EQ(column->PartialState().ToString(), each->PartialState().ToString()) << op;
          EXPECT_EQ(column->Finalize().ToString(), each->Finalize().ToString()) << op;
        }
      }
    }
  }
}

}  // namespace
}  // namespace hourglass::pipeline
