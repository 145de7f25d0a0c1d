#include "pipeline/column_arith.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "pipeline/test_util.h"

namespace hourglass::pipeline {
namespace {

using bson::BsonBuilder;
using bson::BsonType;
using testing::Json;

// Three columns a, b, c of random numbers of one type each, and the rows' documents.
struct Columns {
  std::vector<std::vector<uint64_t>> values;
  std::vector<NumberColumn> columns;
  std::vector<bson::BsonObj> docs;
};

Columns RandomColumns(std::mt19937_64& rng, size_t rows, bool extremes) {
  static constexpr BsonType kTypes[] = {BsonType::kInt32, BsonType::kInt64, BsonType::kDouble};
  Columns c;
  c.values.assign(3, std::vector<uint64_t>(rows));
  std::vector<BsonType> types;
  for (int k = 0; k < 3; ++k) types.push_back(kTypes[rng() % 3]);
  c.docs.resize(rows);
  for (size_t r = 0; r < rows; ++r) {
    BsonBuilder b;
    for (int k = 0; k < 3; ++k) {
      const std::string name(1, static_cast<char>('a' + k));
      const bool extreme = extremes && rng() % 8 == 0;
      if (types[k] == BsonType::kInt32) {
        const int32_t v = extreme ? (rng() % 2 ? std::numeric_limits<int32_t>::max() - 3
                                               : std::numeric_limits<int32_t>::min() + 3)
                                  : static_cast<int32_t>(rng() % 2001) - 1000;
        c.values[k][r] = static_cast<uint64_t>(static_cast<int64_t>(v));
        b.AppendInt32(name, v);
      } else if (types[k] == BsonType::kInt64) {
        const int64_t v = extreme ? (rng() % 2 ? int64_t{1} << 62 : -(int64_t{1} << 62))
                                  : static_cast<int64_t>(rng() % 2000001) - 1000000;
        c.values[k][r] = static_cast<uint64_t>(v);
        b.AppendInt64(name, v);
      } else {
        static constexpr double kOdd[] = {std::numeric_limits<double>::quiet_NaN(), -0.0,
                                          std::numeric_limits<double>::infinity(), 1e308, 0.0};
        const double v =
            extreme ? kOdd[rng() % 5]
                    : static_cast<double>(static_cast<int64_t>(rng() % 200001) - 100000) / 7.0;
        c.values[k][r] = std::bit_cast<uint64_t>(v);
        b.AppendDouble(name, v);
      }
    }
    c.docs[r] = b.Obj();
  }
  for (int k = 0; k < 3; ++k) c.columns.push_back({types[k], c.values[k].data(), nullptr});
  return c;
}

const char* const kExpressions[] = {
    R"({"$add": ["$a", "$b"]})",
    R"({"$multiply": ["$a", 3, "$b"]})",
    R"({"$subtract": ["$a", "$b"]})",
    R"({"$divide": ["$a", {"$add": ["$b", 1]}]})",
    R"({"$add": [{"$multiply": ["$a", "$b"]}, "$c", 0.5]})",
    R"({"$multiply": ["$a", {"$numberLong": "2"}, {"$subtract": ["$c", "$b"]}]})",
    R"({"$add": ["$c", 2147483000]})",
    R"({"$subtract": [{"$multiply": ["$a", "$a", "$a"]}, {"$add": ["$b", "$c", -1]}]})",
    R"({"$cond": [{"$gt": ["$a", 0]}, 1, 0]})",
    R"({"$cond": {"if": {"$lte": ["$a", "$b"]}, "then": "$c", "else": {"$multiply": ["$a", 2]}}})",
    R"({"$add": [{"$cond": [{"$ne": ["$a", "$b"]}, "$a", 0.5]}, 1]})",
    R"({"$cond": [{"$eq": ["$c", "$c"]}, "$b", "$a"]})",
    R"({"$cond": [{"$lt": ["$c", {"$add": ["$a", 3]}]}, "$c", {"$subtract": ["$b", 1]}]})",
    R"({"$cond": [{"$gte": [{"$multiply": ["$a", 0.5]}, "$b"]}, 2.5, -1.5]})",
    // Equal operands: each comparison's boundary.
    R"({"$add": [{"$cond": [{"$gte": ["$b", "$b"]}, 1, 0]}, {"$cond": [{"$lte": ["$a", "$a"]}, 2, 0]},
                 {"$cond": [{"$gt": ["$c", "$c"]}, 4, 0]}, {"$cond": [{"$lt": ["$a", "$a"]}, 8, 0]},
                 {"$cond": [{"$ne": ["$b", "$b"]}, 16, 0]}, "$a"]})",
};

// Every row computed by the column program is the per-row evaluation's value: the same type
// and the same bits.
TEST(ColumnArithTest, ComputesWhatEachRowsEvaluationGives) {
  std::mt19937_64 rng(11);
  int computed = 0, integers = 0, trials = 0;
  for (const char* json : kExpressions) {
    const bson::BsonObj spec = Json(std::string("{\"e\": ") + json + "}");
    auto arith = ColumnArith::Compile(spec["e"]);
    ASSERT_TRUE(arith.has_value()) << json;
    auto expr = Expression::ParseExpression(spec["e"], ParseContext());
    ASSERT_TRUE(expr.ok());
    for (int trial = 0; trial < 60; ++trial, ++trials) {
      const size_t rows = 1 + rng() % 40;
      Columns c = RandomColumns(rng, rows, trial % 3 == 0);
      std::vector<const NumberColumn*> columns;
      for (const std::string& f : arith->fields()) columns.push_back(&c.columns[f[0] - 'a']);
      // Every other row, or all of them.
      std::vector<uint32_t> run;
      for (uint32_t r = 0; r < rows; r += trial % 2 ? 2 : 1) run.push_back(r);
      std::vector<uint64_t> out(rows, 0);
      BsonType type = BsonType::kEOO;
      if (!arith->Evaluate(columns, run.data(), run.size(), out.data(), &type)) continue;
      ++computed;
      integers += type != BsonType::kDouble;
      const NumberColumn result{type, out.data(), nullptr};
      for (uint32_t r : run) {
        Variables vars(0);
        auto want = expr.value()->Evaluate(c.docs[r], vars);
        ASSERT_TRUE(want.ok()) << json << " row " << r << ": " << want.status().ToString();
        CellScratch scratch;
        const bson::BsonElement got = result.Element(r, scratch);
        ASSERT_EQ(got.type(), want.value().type()) << json << " row " << r;
        ASSERT_EQ(std::memcmp(got.value(), want.value().element().value(), got.ValueSize()), 0)
            << json << " row " << r << ": " << want.value().ToString();
      }
    }
  }
  // Most runs are computed, integer results among them.
  EXPECT_GT(computed, trials / 2);
  EXPECT_GT(integers, trials / 8);
}

// Runs whose per-row answers would not make one column are left to the per-row path.
TEST(ColumnArithTest, LeavesOverflowsAndZeroDivisorsToThePerRowPath) {
  auto evaluate = [](const char* json, BsonType column_type, std::vector<uint64_t> values,
                     BsonType* type) {
    const bson::BsonObj spec = Json(std::string("{\"e\": ") + json + "}");
    auto arith = ColumnArith::Compile(spec["e"]);
    EXPECT_TRUE(arith.has_value());
    const NumberColumn column{column_type, values.data(), nullptr};
    std::vector<uint32_t> run(values.size());
    for (uint32_t r = 0; r < run.size(); ++r) run[r] = r;
    std::vector<uint64_t> out(values.size());
    return arith->Evaluate({&column}, run.data(), run.size(), out.data(), type);
  };
  BsonType type = BsonType::kEOO;
  // int32 + int32 beyond int32 is a long in that row only.
  EXPECT_FALSE(evaluate(R"({"$add": ["$a", 1]})", BsonType::kInt32, {5, 2147483647}, &type));
  EXPECT_TRUE(evaluate(R"({"$add": ["$a", 1]})", BsonType::kInt32, {5, 2147483646}, &type));
  EXPECT_EQ(type, BsonType::kInt32);
  // int64 overflow becomes a double in that row only.
  EXPECT_FALSE(evaluate(R"({"$multiply": ["$a", 4]})", BsonType::kInt64,
                        {1, static_cast<uint64_t>(int64_t{1} << 62)}, &type));
  EXPECT_TRUE(evaluate(R"({"$multiply": ["$a", 4]})", BsonType::kInt64, {1, 2}, &type));
  EXPECT_EQ(type, BsonType::kInt64);
  // A zero divisor is an error the per-row path reports.
  EXPECT_FALSE(evaluate(R"({"$divide": [1, "$a"]})", BsonType::kInt32, {3, 0}, &type));
  EXPECT_TRUE(evaluate(R"({"$divide": [1, "$a"]})", BsonType::kInt32, {3, 4}, &type));
  EXPECT_EQ(type, BsonType::kDouble);
  // Dates and missing cells are not arithmetic of numbers here.
  EXPECT_FALSE(evaluate(R"({"$add": ["$a", 1]})", BsonType::kDate, {3, 4}, &type));
  // A $cond whose rows choose branches of two types.
  const char* two_types = R"({"$cond": [{"$gt": ["$a", 3]}, 1, 0.5]})";
  EXPECT_FALSE(evaluate(two_types, BsonType::kInt32, {3, 4}, &type));
  EXPECT_TRUE(evaluate(two_types, BsonType::kInt32, {5, 4}, &type));
  EXPECT_EQ(type, BsonType::kInt32);
  // A long beside a double compares exactly only within 2^53.
  const char* big = R"({"$cond": [{"$gt": ["$a", 0.5]}, 1, 0]})";
  EXPECT_FALSE(evaluate(big, BsonType::kInt64, {3, (uint64_t{1} << 53) + 1}, &type));
  EXPECT_TRUE(evaluate(big, BsonType::kInt64, {3, uint64_t{1} << 53}, &type));
}

}  // namespace
}  // namespace hourglass::pipeline
