// Array operators, including the iterating ones ($filter, $map, $reduce) that bind variables,
// and the expression forms of $sum/$avg/$min/$max.
#include <cmath>

#include "pipeline/accumulator.h"
#include "pipeline/expression_internal.h"

namespace hourglass::pipeline::internal {
namespace {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

bool IsInt32Integral(const Value& v) {
  double d = v.NumberDouble();
  return v.numeric() && d == std::trunc(d) && d >= -2147483648.0 && d <= 2147483647.0;
}

StatusWith<Value> Size(std::string_view, const std::vector<Value>& args) {
  if (!args[0].IsArray()) {
    return PipelineError(17124, "The argument to $size must be an array. Type of argument is: " +
                                    TypeNameOf(args[0]));
  }
  return Value::Int(args[0].Obj().NumFields());
}

StatusWith<Value> ArrayElemAt(std::string_view, const std::vector<Value>& args) {
  if (args[0].nullish() || args[1].nullish()) return Value::Null();
  if (!args[0].IsArray()) {
    return PipelineError(
        28689, "$arrayElemAt's first argument must be an array, but is " + TypeNameOf(args[0]));
  }
  if (!args[1].numeric()) {
    return PipelineError(28690, "$arrayElemAt's second argument must be a numeric value, but is " +
                                    TypeNameOf(args[1]));
  }
  if (!IsInt32Integral(args[1])) {
    return PipelineError(28691,
                         "$arrayElemAt's second argument must be representable as a "
                         "32-bit integer: " +
                             args[1].ToString());
  }
  auto items = args[0].ArrayValues();
  int64_t i = args[1].NumberLong();
  if (i < 0) i += static_cast<int64_t>(items.size());
  if (i < 0 || i >= static_cast<int64_t>(items.size())) return Value::Missing();
  return items[i];
}

StatusWith<Value> FirstLast(std::string_view op, const std::vector<Value>& args) {
  if (args[0].nullish()) return Value::Null();
  if (!args[0].IsArray()) {
    return PipelineError(
        28689, std::string(op) + "'s argument must be an array, but is " + TypeNameOf(args[0]));
  }
  auto items = args[0].ArrayValues();
  if (items.empty()) return Value::Missing();
  return op == "$first" ? items.front() : items.back();
}

StatusWith<Value> In(std::string_view, const std::vector<Value>& args,
                     const bson::StringComparator* strings) {
  if (!args[1].IsArray()) {
    return PipelineError(
        40081, "$in requires an array as a second argument, found: " + TypeNameOf(args[1]));
  }
  for (const auto& m : args[1].ArrayValues()) {
    if (ValuesEqual(m, args[0], strings)) return Value::Bool(true);
  }
  return Value::Bool(false);
}

StatusWith<Value> IsArray(std::string_view, const std::vector<Value>& args) {
  return Value::Bool(args[0].IsArray());
}

StatusWith<Value> ConcatArrays(std::string_view, const std::vector<Value>& args) {
  std::vector<Value> out;
  for (const auto& a : args) {
    if (a.nullish()) return Value::Null();
    if (!a.IsArray()) {
      return PipelineError(28664, "$concatArrays only supports arrays, not " + TypeNameOf(a));
    }
    for (auto& m : a.ArrayValues()) out.push_back(std::move(m));
  }
  return Value::Array(out);
}

StatusWith<Value> Slice(std::string_view, const std::vector<Value>& args) {
  for (const auto& a : args) {
    if (a.nullish()) return Value::Null();
  }
  if (!args[0].IsArray()) {
    return PipelineError(
        28724, "First argument to $slice must be an array, but is of type: " + TypeNameOf(args[0]));
  }
  auto items = args[0].ArrayValues();
  const int64_t size = static_cast<int64_t>(items.size());
  if (!IsInt32Integral(args[1])) {
    return PipelineError(28725,
                         "Second argument to $slice must be a numeric value, but is of "
                         "type: " +
                             TypeNameOf(args[1]));
  }
  int64_t start, count;
  if (args.size() == 2) {
    int64_t n = args[1].NumberLong();
    if (n >= 0) {
      start = 0;
      count = n;
    } else {
      start = std::max<int64_t>(0, size + n);
      count = size;
    }
  } else {
    if (!IsInt32Integral(args[2])) {
      return PipelineError(28727, "Third argument to $slice must be numeric, but is of type: " +
                                      TypeNameOf(args[2]));
    }
    count = args[2].NumberLong();
    if (count <= 0) {
      return PipelineError(28729,
                           "Third argument to $slice must be positive: " + args[2].ToString());
    }
    start = args[1].NumberLong();
    if (start < 0) start = std::max<int64_t>(0, size + start);
  }
  std::vector<Value> out;
  for (int64_t i = start; i < size && i - start < count; ++i) out.push_back(items[i]);
  return Value::Array(out);
}

StatusWith<Value> ReverseArray(std::string_view, const std::vector<Value>& args) {
  if (args[0].nullish()) return Value::Null();
  if (!args[0].IsArray()) {
    return PipelineError(34435,
                         "The argument to $reverseArray must be an array, but was of "
                         "type: " +
                             TypeNameOf(args[0]));
  }
  auto items = args[0].ArrayValues();
  return Value::Array(std::vector<Value>(items.rbegin(), items.rend()));
}

StatusWith<Value> IndexOfArray(std::string_view, const std::vector<Value>& args,
                               const bson::StringComparator* strings) {
  if (args[0].nullish()) return Value::Null();
  if (!args[0].IsArray()) {
    return PipelineError(40090, "$indexOfArray requires an array as a first argument, found: " +
                                    TypeNameOf(args[0]));
  }
  auto items = args[0].ArrayValues();
  int64_t from = args.size() > 2 ? args[2].NumberLong() : 0;
  int64_t to = args.size() > 3 ? args[3].NumberLong() : static_cast<int64_t>(items.size());
  for (int64_t i = std::max<int64_t>(from, 0);
       i < std::min<int64_t>(to, static_cast<int64_t>(items.size())); ++i) {
    if (ValuesEqual(items[i], args[1], strings)) return Value::IntOrLong(i);
  }
  return Value::Int(-1);
}

StatusWith<Value> Range(std::string_view, const std::vector<Value>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (!IsInt32Integral(args[i])) {
      return PipelineError(34443 + static_cast<int>(i) * 2,
                           "$range requires a numeric argument representable as a 32-bit "
                           "integer, found: " +
                               args[i].ToString());
    }
  }
  int64_t start = args[0].NumberLong(), end = args[1].NumberLong();
  int64_t step = args.size() > 2 ? args[2].NumberLong() : 1;
  if (step == 0) return PipelineError(34449, "$range requires a non-zero step value");
  std::vector<Value> out;
  for (int64_t i = start; step > 0 ? i < end : i > end; i += step) out.push_back(Value::Int(i));
  return Value::Array(out);
}

// $sum/$avg/$min/$max as expressions: one array argument means "over its members"; several
// arguments mean "over the arguments". Non-numbers are ignored by $sum/$avg; nulls by $min/$max.
StatusWith<Value> ArrayAccumulate(std::string_view op, const std::vector<Value>& args,
                                  const bson::StringComparator* strings) {
  std::vector<Value> items;
  if (args.size() == 1 && args[0].IsArray()) {
    items = args[0].ArrayValues();
  } else {
    items = args;
  }
  if (op == "$sum" || op == "$avg") {
    // The $group accumulators own the promotion rules (decimal totals included).
    auto acc = MakeAccumulator(op);
    for (const auto& v : items) HG_RETURN_IF_ERROR(acc->Process(v));
    return acc->Finalize();
  }
  Value best = Value::Missing();
  for (auto& v : items) {
    if (v.nullish()) continue;
    const int c = best.missing() ? 0 : Compare(v, best, strings);
    if (best.missing() || (op == "$min" ? c < 0 : c > 0)) best = v;
  }
  return best.missing() ? Value::Null() : best;
}

// $filter {input, as, cond, limit} and $map {input, as, in}.
class IterateExpression : public Expression {
 public:
  bool is_map = false;
  int slot = -1;
  ExpressionPtr input, body, limit;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value in, input->Evaluate(root, vars));
    if (in.nullish()) return Value::Null();
    if (!in.IsArray()) {
      if (is_map)
        return PipelineError(16883, "input to $map must be an array not " + TypeNameOf(in));
      return PipelineError(28651, "input to $filter must be an array not " + TypeNameOf(in));
    }
    int64_t max = -1;
    if (limit) {
      HG_ASSIGN_OR_RETURN(Value l, limit->Evaluate(root, vars));
      if (!l.nullish()) {
        if (!IsInt32Integral(l)) {
          return PipelineError(327391,
                               "$filter: limit must be represented as a 32-bit integral "
                               "value: " +
                                   l.ToString());
        }
        max = l.NumberLong();
        if (max < 1) {
          return PipelineError(327392, "$filter: limit must be greater than 0: " + l.ToString());
        }
      }
    }
    std::vector<Value> out;
    for (auto& m : in.ArrayValues()) {
      vars.Set(slot, m);
      HG_ASSIGN_OR_RETURN(Value r, body->Evaluate(root, vars));
      if (is_map) {
        out.push_back(std::move(r));
      } else if (r.Truthy()) {
        out.push_back(m);
        if (max > 0 && static_cast<int64_t>(out.size()) >= max) break;
      }
    }
    return Value::Array(out);
  }
};

StatusWith<ExpressionPtr> ParseIterate(std::string_view op, const BsonElement& operand,
                                       const ParseContext& ctx) {
  const bool is_map = op == "$map";
  if (operand.type() != BsonType::kObject) {
    return PipelineError(is_map ? 16878 : 28646,
                         std::string(op) + " only supports an object as its argument");
  }
  BsonElement input, as, body, limit;
  for (const auto& f : operand.Obj()) {
    std::string_view n = f.FieldName();
    if (n == "input") {
      input = f;
    } else if (n == "as") {
      as = f;
    } else if (n == (is_map ? "in" : "cond")) {
      body = f;
    } else if (!is_map && n == "limit") {
      limit = f;
    } else {
      return PipelineError(is_map ? 16879 : 28647,
                           "Unrecognized parameter to " + std::string(op) + ": " + std::string(n));
    }
  }
  if (input.eoo()) {
    return PipelineError(is_map ? 16880 : 28648, "Missing 'input' parameter to " + std::string(op));
  }
  if (body.eoo()) {
    return PipelineError(
        is_map ? 16882 : 28650,
        std::string("Missing '") + (is_map ? "in" : "cond") + "' parameter to " + std::string(op));
  }
  auto it = std::make_unique<IterateExpression>();
  it->is_map = is_map;
  HG_ASSIGN_OR_RETURN(it->input, Expression::ParseExpression(input, ctx));
  if (!limit.eoo()) {
    HG_ASSIGN_OR_RETURN(it->limit, Expression::ParseExpression(limit, ctx));
  }
  std::string name = as.eoo() ? "this" : std::string(as.Str());
  HG_RETURN_IF_ERROR(ValidateVariableName(name));
  ParseContext inner = ctx.WithVariable(name, &it->slot);
  HG_ASSIGN_OR_RETURN(it->body, Expression::ParseExpression(body, inner));
  return ExpressionPtr(std::move(it));
}

// $reduce {input, initialValue, in} with $$value and $$this.
class ReduceExpression : public Expression {
 public:
  int value_slot = -1, this_slot = -1;
  ExpressionPtr input, initial, in;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value arr, input->Evaluate(root, vars));
    if (arr.nullish()) return Value::Null();
    if (!arr.IsArray()) {
      return PipelineError(40080,
                           "$reduce requires 'input' to be an array, found: " + TypeNameOf(arr));
    }
    HG_ASSIGN_OR_RETURN(Value acc, initial->Evaluate(root, vars));
    for (auto& m : arr.ArrayValues()) {
      vars.Set(value_slot, acc);
      vars.Set(this_slot, m);
      HG_ASSIGN_OR_RETURN(acc, in->Evaluate(root, vars));
    }
    return acc;
  }
};

StatusWith<ExpressionPtr> ParseReduce(std::string_view, const BsonElement& operand,
                                      const ParseContext& ctx) {
  if (operand.type() != BsonType::kObject) {
    return PipelineError(40075, "$reduce requires an object as an argument");
  }
  auto r = std::make_unique<ReduceExpression>();
  ParseContext inner = ctx.WithVariable("value", &r->value_slot);
  inner = inner.WithVariable("this", &r->this_slot);
  for (const auto& f : operand.Obj()) {
    if (f.FieldName() == "input") {
      HG_ASSIGN_OR_RETURN(r->input, Expression::ParseExpression(f, ctx));
    } else if (f.FieldName() == "initialValue") {
      HG_ASSIGN_OR_RETURN(r->initial, Expression::ParseExpression(f, ctx));
    } else if (f.FieldName() == "in") {
      HG_ASSIGN_OR_RETURN(r->in, Expression::ParseExpression(f, inner));
    } else {
      return PipelineError(40076,
                           "$reduce found an unknown argument: " + std::string(f.FieldName()));
    }
  }
  if (!r->input) return PipelineError(40077, "$reduce requires 'input' to be specified");
  if (!r->initial) return PipelineError(40078, "$reduce requires 'initialValue' to be specified");
  if (!r->in) return PipelineError(40079, "$reduce requires 'in' to be specified");
  return ExpressionPtr(std::move(r));
}

}  // namespace

void AddArrayOperators(std::vector<OperatorDef>& out) {
  out.push_back({"$size", 1, 1, &Size, nullptr});
  out.push_back({"$arrayElemAt", 2, 2, &ArrayElemAt, nullptr});
  out.push_back({"$first", 1, 1, &FirstLast, nullptr});
  out.push_back({"$last", 1, 1, &FirstLast, nullptr});
  out.push_back({"$in", 2, 2, nullptr, nullptr, &In});
  out.push_back({"$isArray", 1, 1, &IsArray, nullptr});
  out.push_back({"$concatArrays", 0, kVariadic, &ConcatArrays, nullptr});
  out.push_back({"$slice", 2, 3, &Slice, nullptr});
  out.push_back({"$reverseArray", 1, 1, &ReverseArray, nullptr});
  out.push_back({"$indexOfArray", 2, 4, nullptr, nullptr, &IndexOfArray});
  out.push_back({"$range", 2, 3, &Range, nullptr});
  for (std::string_view op : {"$sum", "$avg", "$min", "$max"}) {
    out.push_back({op, 0, kVariadic, nullptr, nullptr, &ArrayAccumulate});
  }
  out.push_back({"$filter", 0, 0, nullptr, &ParseIterate});
  out.push_back({"$map", 0, 0, nullptr, &ParseIterate});
  out.push_back({"$reduce", 0, 0, nullptr, &ParseReduce});
}

}  // namespace hourglass::pipeline::internal
