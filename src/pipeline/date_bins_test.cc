#include "pipeline/date_bins.h"

#include <gtest/gtest.h>

#include <random>

#include "pipeline/test_util.h"

namespace hourglass::pipeline {
namespace {

using testing::Json;

Value EvaluateAt(const Expression& e, int64_t date) {
  bson::BsonBuilder b;
  b.AppendDate("t", date);
  Variables vars(0);
  auto v = e.Evaluate(b.Obj(), vars);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? v.value() : Value();
}

struct BinCase {
  const char* expr;
  int64_t width;
  bool neighbours_differ;  // the value changes from one bin to the next
};

// Every date of a bin gives the expression's value at the bin's start, and (for parts that count
// within their bin's parent) the dates just outside it give other values: the bins are neither
// too wide nor misplaced.
TEST(DateBinsTest, PartsKeepOneValueInEachBin) {
  const BinCase cases[] = {
      {R"({"$hour": "$t"})", 3'600'000, true},
      {R"({"$minute": ["$t"]})", 60'000, true},
      {R"({"$hour": {"date": "$t", "timezone": "+05:30"}})", 3'600'000, true},
      {R"({"$dayOfMonth": {"date": "$t", "timezone": "-03:00"}})", 86'400'000, true},
      {R"({"$dayOfWeek": {"date": "$t", "timezone": "+0545"}})", 86'400'000, true},
      {R"({"$year": "$t"})", 86'400'000, false},
      {R"({"$isoWeek": {"date": "$t"}})", 86'400'000, false},
      {R"({"$dateToString": {"format": "%Y-%m-%d %H:%M", "date": "$t", "timezone": "-09:30"}})",
       60'000, true},
      {R"({"$dateToString": {"format": "%H h", "date": "$t", "onNull": "none"}})", 3'600'000, true},
      {R"({"$dateToString": {"format": "%G-%V %z", "date": "$t", "timezone": "+01"}})", 86'400'000,
       false},
  };
  std::mt19937_64 rng(3);
  for (const BinCase& c : cases) {
    const bson::BsonObj spec = Json(std::string("{\"e\": ") + c.expr + "}");
    auto bins = DatePartBinsOf(spec["e"].Obj());
    ASSERT_TRUE(bins.has_value()) << c.expr;
    EXPECT_EQ(bins->field, "t");
    EXPECT_EQ(bins->width, c.width) << c.expr;
    auto expr = Expression::ParseExpression(spec["e"], ParseContext());
    ASSERT_TRUE(expr.ok());
    for (int i = 0; i < 300; ++i) {
      // Dates from 1900 to 2100, some before 1970.
      const int64_t d = static_cast<int64_t>(rng() % 6'311'390'400'000ULL) - 2'208'988'800'000LL;
      int64_t lo = 0, hi = 0;
      bins->BinOf(d, &lo, &hi);
      ASSERT_LE(lo, d) << c.expr;
      ASSERT_LT(d, hi) << c.expr;
      ASSERT_EQ(hi - lo, c.width);
      const Value at_start = EvaluateAt(*expr.value(), lo);
      for (int64_t x : {d, hi - 1, lo + static_cast<int64_t>(rng() % c.width)}) {
        ASSERT_TRUE(ValuesEqual(EvaluateAt(*expr.value(), x), at_start))
            << c.expr << " at " << x << " in [" << lo << ", " << hi << ")";
        EXPECT_TRUE(bins->SameBin(lo, x));
      }
      if (c.neighbours_differ) {
        EXPECT_FALSE(ValuesEqual(EvaluateAt(*expr.value(), lo - 1), at_start)) << c.expr;
        EXPECT_FALSE(ValuesEqual(EvaluateAt(*expr.value(), hi), at_start)) << c.expr;
        EXPECT_FALSE(bins->SameBin(lo, hi));
      }
    }
  }
}

// Parts whose value may change within a minute, or whose bins are not fixed, have none.
TEST(DateBinsTest, NoBinsWhereTheValueCanChangeWithinThem) {
  for (const char* expr : {
           R"({"$second": "$t"})",
           R"({"$millisecond": "$t"})",
           R"({"$hour": {"date": "$t", "timezone": "$tz"}})",
           R"({"$hour": "$t.x"})",
           R"({"$hour": {"$add": ["$t", 1]}})",
           R"({"$dateToString": {"format": "%H:%M:%S", "date": "$t"}})",
           R"({"$dateToString": {"date": "$t"}})",
           R"({"$dateTrunc": {"date": "$t", "unit": "hour"}})",
       }) {
    const bson::BsonObj spec = Json(std::string("{\"e\": ") + expr + "}");
    EXPECT_FALSE(DatePartBinsOf(spec["e"].Obj()).has_value()) << expr;
  }
}

// In a named time zone a bin is the local one under the offset in force, cut where the offset
// changes: every date of it gives one value, also across DST changes of an hour and of half an
// hour, and it is never longer than the fixed width.
TEST(DateBinsTest, NamedZonesCutBinsWhereTheOffsetChanges) {
  const char* exprs[] = {
      R"({"$hour": {"date": "$t", "timezone": "America/New_York"}})",
      R"({"$dayOfMonth": {"date": "$t", "timezone": "America/New_York"}})",
      R"({"$minute": {"date": "$t", "timezone": "Australia/Lord_Howe"}})",
      R"({"$hour": {"date": "$t", "timezone": "Australia/Lord_Howe"}})",
      R"({"$dateToString": {"format": "%Y-%m-%d %H", "date": "$t", "timezone": "Asia/Kathmandu"}})",
      R"({"$dayOfWeek": {"date": "$t", "timezone": "Europe/Paris"}})",
  };
  // Around DST changes (New York 2024-03-10 and 2024-11-03, Lord Howe's half hour on 2024-04-07
  // and 2024-10-06, Kathmandu's move to +05:45 in 1986, Paris 2024-03-31), and 1900 to 2100.
  const int64_t changes[] = {1710054000000, 1730613600000, 1712415600000,
                             1728142200000, 504901800000,  1711846800000};
  std::mt19937_64 rng(5);
  for (const char* e : exprs) {
    const bson::BsonObj spec = Json(std::string("{\"e\": ") + e + "}");
    auto bins = DatePartBinsOf(spec["e"].Obj());
    ASSERT_TRUE(bins.has_value()) << e;
    auto expr = Expression::ParseExpression(spec["e"], ParseContext());
    ASSERT_TRUE(expr.ok());
    for (int i = 0; i < 600; ++i) {
      const int64_t d =
          i % 3 == 0 ? static_cast<int64_t>(rng() % 6'311'390'400'000ULL) - 2'208'988'800'000LL
                     : changes[rng() % std::size(changes)] +
                           static_cast<int64_t>(rng() % 345'600'000) - 172'800'000;
      int64_t lo = 0, hi = 0;
      bins->BinOf(d, &lo, &hi);
      ASSERT_LE(lo, d) << e;
      ASSERT_LT(d, hi) << e;
      ASSERT_LE(hi - lo, bins->width) << e;
      const Value at_start = EvaluateAt(*expr.value(), lo);
      for (int64_t x : {d, hi - 1, lo + static_cast<int64_t>(rng() % (hi - lo))}) {
        ASSERT_TRUE(ValuesEqual(EvaluateAt(*expr.value(), x), at_start))
            << e << " at " << x << " in [" << lo << ", " << hi << ")";
        EXPECT_TRUE(bins->SameBin(lo, x));
      }
      EXPECT_FALSE(bins->SameBin(lo, hi));
    }
  }
}

TEST(DateBinsTest, BinsAtTheEndsOfTime) {
  const bson::BsonObj spec = Json(R"({"e": {"$hour": {"date": "$t", "timezone": "+05:30"}}})");
  auto bins = DatePartBinsOf(spec["e"].Obj());
  ASSERT_TRUE(bins.has_value());
  int64_t lo = 0, hi = 0;
  bins->BinOf(INT64_MIN, &lo, &hi);
  EXPECT_EQ(lo, INT64_MIN);
  EXPECT_GT(hi, INT64_MIN);
  bins->BinOf(INT64_MAX, &lo, &hi);
  EXPECT_LE(lo, INT64_MAX);
  EXPECT_EQ(hi, INT64_MAX);
}

}  // namespace
}  // namespace hourglass::pipeline
