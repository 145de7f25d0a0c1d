// Internals shared by the expression operator files (expr_*.cc). Not a public header.
//
// Most operators are "simple": evaluate every argument, then compute a result from the values.
// They register an OperatorDef with an arity range and a SimpleFn. Operators that need lazy or
// named arguments ($cond, $let, $map, $convert, ...) register a custom parser instead.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipeline/errors.h"
#include "pipeline/expression.h"

namespace hourglass::pipeline::internal {

using SimpleFn = StatusWith<Value> (*)(std::string_view op, const std::vector<Value>& args);
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
};

void AddArithmeticOperators(std::vector<OperatorDef>& out);  // expr_arith.cc
void AddLogicOperators(std::vector<OperatorDef>& out);       // expr_logic.cc
void AddStringOperators(std::vector<OperatorDef>& out);      // expr_string.cc
void AddArrayOperators(std::vector<OperatorDef>& out);       // expr_array.cc
void AddTypeOperators(std::vector<OperatorDef>& out);        // expr_type.cc
void AddDateOperators(std::vector<OperatorDef>& out);        // expr_date.cc

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
// A Decimal128 Value for `d` (arithmetic on decimals is carried out in double precision).
Value DecimalFromDouble(double d);
// `d` as a Value of kind `k` (int/long only when exactly representable, else double).
Value NumberOfKind(NumKind k, double d);

// "string", "int", ... MongoDB's type name for error messages ("missing" for missing).
std::string TypeNameOf(const Value& v);

// A "simple" expression whose arguments are all evaluated eagerly.
class SimpleExpression : public Expression {
 public:
  SimpleExpression(std::string_view op, SimpleFn fn, std::vector<ExpressionPtr> args)
      : op_(op), fn_(fn), args_(std::move(args)) {}
  StatusWith<Value> Evaluate(const bson::BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(auto values, EvaluateAll(args_, root, vars));
    return fn_(op_, values);
  }

 private:
  std::string_view op_;
  SimpleFn fn_;
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
// Parses the ISO-8601 forms MongoDB's $toDate accepts ("2018-03-03", "2018-03-03T12:00:00Z",
// with optional fractional seconds and "+hh:mm" offsets). False if the string is not a date.
bool ParseIsoDate(std::string_view s, int64_t* millis);

}  // namespace hourglass::pipeline::internal
