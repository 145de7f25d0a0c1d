// Internals shared by the expression operator files (expr_*.cc). Not a public header.
//
// Most operators are "simple": evaluate every argument, then compute a result from the values.
// They register an OperatorDef with an arity range and a SimpleFn. Operators that need lazy or
// named arguments ($cond, $let, $map, $convert, ...) register a custom parser instead.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/errors.h"
#include "pipeline/expression.h"

namespace hourglass::pipeline::internal {

using SimpleFn = StatusWith<Value> (*)(std::string_view op, const std::vector<Value>& args);
// A simple operator that compares values: it receives the collation it was parsed under.
using CollatingFn = StatusWith<Value> (*)(std::string_view op, const std::vector<Value>& args,
                                          const bson::StringComparator* strings);
using CustomParser = StatusWith<ExpressionPtr> (*)(std::string_view op,
                                                   const bson::BsonElement& operand,
                                                   const ParseContext& ctx);

constexpr int kVariadic = -1;

struct OperatorDef {
  std::string_view name;
  int min_args = 0;
  int max_args = kVariadic;
  SimpleFn fn = nullptr;
  CustomParser parser = nullptr;
  CollatingFn collating_fn = nullptr;  // instead of fn
};

void AddArithmeticOperators(std::vector<OperatorDef>& out);  // expr_arith.cc
void AddLogicOperators(std::vector<OperatorDef>& out);       // expr_logic.cc
void AddStringOperators(std::vector<OperatorDef>& out);      // expr_string.cc
void AddArrayOperators(std::vector<OperatorDef>& out);       // expr_array.cc
void AddTypeOperators(std::vector<OperatorDef>& out);        // expr_type.cc
void AddDateOperators(std::vector<OperatorDef>& out);        // expr_date.cc
void AddSetOperators(std::vector<OperatorDef>& out);         // expr_set.cc
void AddRegexOperators(std::vector<OperatorDef>& out);       // expr_regex.cc
void AddMiscOperators(std::vector<OperatorDef>& out);        // expr_misc.cc

// Positional arguments: an array operand gives one expression per member, anything else a
// single argument.
StatusWith<std::vector<ExpressionPtr>> ParseArguments(const bson::BsonElement& operand,
                                                      const ParseContext& ctx);
// 16020 / 28667 / 16021 arity errors in MongoDB's wording.
Status CheckArity(std::string_view op, size_t n, int min_args, int max_args);

// Evaluates each expression in order.
StatusWith<std::vector<Value>> EvaluateAll(const std::vector<ExpressionPtr>& args,
                                           const bson::BsonObj& root, Variables& vars);

// Numeric kinds in promotion order: int < long < double < decimal.
enum class NumKind { kInt = 0, kLong = 1, kDouble = 2, kDecimal = 3 };
NumKind KindOf(const Value& v);  // v must be numeric
// A numeric `v` as a decimal, the way MongoDB coerces operands once one of them is a decimal:
// int32/int64 exactly, doubles to 15 significant digits, decimals as they are.
bson::Decimal128 ToDecimal(const Value& v);

// "string", "int", ... MongoDB's type name for error messages ("missing" for missing).
std::string TypeNameOf(const Value& v);

// A "simple" expression whose arguments are all evaluated eagerly.
class SimpleExpression : public Expression {
 public:
  SimpleExpression(const OperatorDef& def, const bson::StringComparator* strings,
                   std::vector<ExpressionPtr> args)
      : op_(def.name),
        fn_(def.fn),
        collating_fn_(def.collating_fn),
        strings_(strings),
        args_(std::move(args)) {}
  StatusWith<Value> Evaluate(const bson::BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(auto values, EvaluateAll(args_, root, vars));
    return collating_fn_ != nullptr ? collating_fn_(op_, values, strings_) : fn_(op_, values);
  }

 private:
  std::string_view op_;
  SimpleFn fn_;
  CollatingFn collating_fn_;
  const bson::StringComparator* strings_;
  std::vector<ExpressionPtr> args_;
};

}  // namespace hourglass::pipeline::internal

namespace hourglass::pipeline::internal {

// UTC calendar fields of a date (proleptic Gregorian; expr_date.cc).
struct CivilTime {
  int64_t year;
  int month;  // 1-12
  int day;    // 1-31
  int hour, minute, second, millis;
  int day_of_week;  // 1 (Sunday) - 7 (Saturday), as $dayOfWeek
  int day_of_year;  // 1-366
};
CivilTime ToCivil(int64_t millis);
int64_t FromCivil(int64_t year, int month, int day, int hour, int minute, int second, int millis);
// "2018-03-03T12:34:56.789Z".
std::string FormatIsoDate(int64_t millis);
int64_t FloorDiv(int64_t a, int64_t b);
int64_t DaysFromCivil(int64_t y, int m, int d);
int DaysInMonth(int64_t y, int m);

// A time zone argument of the date operators: UTC, a fixed offset ("+05:30") or an Olson zone
// from the system tz database ("America/New_York"). Cheap to copy; zones live for the process.
class TimeZone {
 public:
  TimeZone() = default;  // UTC
  // UTC offset (ms, east positive) in force at the UTC instant `utc_ms`.
  int64_t OffsetAt(int64_t utc_ms) const;
  // OffsetAt, and the UTC instants [*from, *until) over which that offset is in force (the whole
  // range of dates for a fixed offset).
  int64_t OffsetAt(int64_t utc_ms, int64_t* from, int64_t* until) const;
  int64_t ToLocal(int64_t utc_ms) const { return utc_ms + OffsetAt(utc_ms); }
  // The UTC instant of a local wall-clock time. In a DST gap the offset before the gap applies
  // (02:30 on a spring-forward day becomes 03:30 daylight time); an ambiguous time takes the
  // earlier instant.
  int64_t FromLocal(int64_t local_ms) const;
  // True for UTC and fixed offsets: no DST transitions.
  bool fixed() const { return zone_ == nullptr; }
  bool utc() const { return zone_ == nullptr && fixed_ms_ == 0; }

 private:
  friend StatusWith<TimeZone> ParseTimeZone(const Value& tz);
  const void* zone_ = nullptr;  // a date::time_zone from the process-wide tz database
  int64_t fixed_ms_ = 0;
};
// An Olson name or "+hh:mm"/"+hhmm"/"+hh" offset: 40517 when not a string, 40485 when unknown.
StatusWith<TimeZone> ParseTimeZone(const Value& tz);
// ParseTimeZone for an optional timezone expression: *null_result is set when it evaluates to
// null or missing (the operator then returns null).
StatusWith<TimeZone> EvaluateTimeZone(const Expression* tz, const bson::BsonObj& root,
                                      Variables& vars, bool* null_result);

// A date, timestamp or ObjectId argument as milliseconds since the epoch (16006 otherwise).
StatusWith<int64_t> DateMillisOf(std::string_view op, const Value& v);

// Units of $dateAdd/$dateDiff/$dateTrunc, of $setWindowFields range windows and of $densify.
enum class TimeUnit { kYear, kQuarter, kMonth, kWeek, kDay, kHour, kMinute, kSecond, kMillisecond };
// The unit named `name` ("year" ... "millisecond"), or nullopt.
std::optional<TimeUnit> TimeUnitFromName(std::string_view name);
// The fixed length of `unit` in milliseconds (a day is 24 hours, as in UTC); nullopt for month,
// quarter and year.
std::optional<int64_t> FixedUnitMillis(TimeUnit unit);
// 5439013 when not a string, 5439014 when not a unit name.
StatusWith<TimeUnit> ParseTimeUnit(std::string_view op, const Value& v);
// 0 = Sunday ... 6 = Saturday; 5439015 when not a string, 5439016 when not a day name.
StatusWith<int> ParseDayOfWeek(std::string_view op, const Value& v);
// dateAdd in `tz`: day and larger units move the local wall clock (month ends clamp), smaller
// units add elapsed time.
StatusWith<int64_t> DateAdd(int64_t utc_ms, TimeUnit unit, int64_t amount, const TimeZone& tz);
// Number of `unit` boundaries crossed from start to end in `tz` (start_dow for weeks).
int64_t DateDiff(int64_t start, int64_t end, TimeUnit unit, const TimeZone& tz, int start_dow);

// Named-argument parsing ({name: <expr>, ...}): 18629-style `not_object_code` when the operand is
// not an object, `unknown_code` for an unknown name.
Status ParseNamedArgs(std::string_view op, const bson::BsonElement& operand,
                      const ParseContext& ctx,
                      std::initializer_list<std::pair<std::string_view, ExpressionPtr*>> slots,
                      int not_object_code = 18629, int unknown_code = 18534);
// A parsed ISO-8601 string: local wall time plus the offset it named, if any ("Z", "+hh:mm").
struct IsoDateParts {
  int64_t local_ms = 0;
  bool has_offset = false;
  int64_t offset_ms = 0;
};
bool ParseIsoDateParts(std::string_view s, IsoDateParts* out);
// ISO 8601 week date of a local time: weeks start on Monday (day 1), week 1 holds January 4th.
struct IsoWeekDate {
  int64_t year;
  int64_t week;
  int64_t day_of_week;
};
IsoWeekDate ToIsoWeek(int64_t local_ms);
// Local midnight of an ISO week date (out-of-range weeks and days carry over).
int64_t FromIsoWeek(int64_t iso_year, int64_t week, int64_t iso_dow);
void AddDateArithmeticOperators(std::vector<OperatorDef>& out);  // expr_date_arith.cc
// Parses the ISO-8601 forms MongoDB's $toDate accepts ("2018-03-03", "2018-03-03T12:00:00Z",
// with optional fractional seconds and "+hh:mm" offsets). False if the string is not a date.
bool ParseIsoDate(std::string_view s, int64_t* millis);

}  // namespace hourglass::pipeline::internal
