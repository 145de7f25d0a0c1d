// Set operators: arrays treated as sets (duplicates ignored, equality by canonical BSON order, so
// 1 and 1.0 are one member; strings under the expression's collation). Results keep the first
// occurrence of each member in argument order; MongoDB leaves the order unspecified.
#include "pipeline/expression_internal.h"

namespace hourglass::pipeline::internal {

namespace {

using Strings = const bson::StringComparator*;

bool Contains(const std::vector<Value>& set, const Value& v, Strings strings) {
  for (const auto& x : set) {
    if (ValuesEqual(x, v, strings)) return true;
  }
  return false;
}

std::vector<Value> Unique(const std::vector<Value>& in, Strings strings) {
  std::vector<Value> out;
  for (const auto& v : in) {
    if (!Contains(out, v, strings)) out.push_back(v);
  }
  return out;
}

Status NotArray(int code, std::string_view op, const Value& v) {
  return PipelineError(code, "All operands of " + std::string(op) +
                                 " must be arrays. One argument is of type: " + TypeNameOf(v));
}

StatusWith<Value> SetUnion(std::string_view op, const std::vector<Value>& args, Strings strings) {
  std::vector<Value> out;
  for (const auto& a : args) {
    if (a.nullish()) return Value::Null();
    if (!a.IsArray()) return NotArray(17043, op, a);
    for (const auto& m : a.ArrayValues()) {
      if (!Contains(out, m, strings)) out.push_back(m);
    }
  }
  return Value::Array(out);
}

StatusWith<Value> SetIntersection(std::string_view op, const std::vector<Value>& args,
                                  Strings strings) {
  std::vector<Value> out;
  bool null_result = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const Value& a = args[i];
    if (a.nullish()) {
      null_result = true;
      continue;
    }
    if (!a.IsArray()) return NotArray(17047, op, a);
    if (null_result) continue;
    std::vector<Value> members = Unique(a.ArrayValues(), strings);
    if (i == 0) {
      out = std::move(members);
      continue;
    }
    std::vector<Value> kept;
    for (const auto& v : out) {
      if (Contains(members, v, strings)) kept.push_back(v);
    }
    out = std::move(kept);
  }
  if (null_result) return Value::Null();
  return Value::Array(out);
}

StatusWith<Value> SetDifference(std::string_view, const std::vector<Value>& args, Strings strings) {
  const Value& a = args[0];
  const Value& b = args[1];
  if (a.nullish() || b.nullish()) return Value::Null();
  if (!a.IsArray()) {
    return PipelineError(17048,
                         "both operands of $setDifference must be arrays. First argument "
                         "is of type: " +
                             TypeNameOf(a));
  }
  if (!b.IsArray()) {
    return PipelineError(17049,
                         "both operands of $setDifference must be arrays. Second "
                         "argument is of type: " +
                             TypeNameOf(b));
  }
  std::vector<Value> exclude = b.ArrayValues();
  std::vector<Value> out;
  for (const auto& v : Unique(a.ArrayValues(), strings)) {
    if (!Contains(exclude, v, strings)) out.push_back(v);
  }
  return Value::Array(out);
}

StatusWith<Value> SetEquals(std::string_view op, const std::vector<Value>& args, Strings strings) {
  if (args.size() < 2) {
    return PipelineError(
        17045, "$setEquals needs at least two arguments had: " + std::to_string(args.size()));
  }
  std::vector<Value> first;
  bool equal = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const Value& a = args[i];
    if (!a.IsArray()) return NotArray(17044, op, a);
    std::vector<Value> members = Unique(a.ArrayValues(), strings);
    if (i == 0) {
      first = std::move(members);
      continue;
    }
    if (members.size() != first.size()) {
      equal = false;
      continue;
    }
    for (const auto& v : members) equal = equal && Contains(first, v, strings);
  }
  return Value::Bool(equal);
}

StatusWith<Value> SetIsSubset(std::string_view, const std::vector<Value>& args, Strings strings) {
  const Value& a = args[0];
  const Value& b = args[1];
  if (!a.IsArray()) {
    return PipelineError(17310,
                         "both operands of $setIsSubset must be arrays. First argument is "
                         "of type: " +
                             TypeNameOf(a));
  }
  if (!b.IsArray()) {
    return PipelineError(17311,
                         "both operands of $setIsSubset must be arrays. Second argument "
                         "is of type: " +
                             TypeNameOf(b));
  }
  std::vector<Value> super = b.ArrayValues();
  for (const auto& v : a.ArrayValues()) {
    if (!Contains(super, v, strings)) return Value::Bool(false);
  }
  return Value::Bool(true);
}

StatusWith<Value> ElementsTrue(std::string_view op, const std::vector<Value>& args) {
  const Value& a = args[0];
  const bool all = op == "$allElementsTrue";
  if (!a.IsArray()) {
    return PipelineError(all ? 17040 : 17041,
                         std::string(op) + "'s argument must be an array, but is " + TypeNameOf(a));
  }
  for (const auto& v : a.ArrayValues()) {
    if (v.Truthy() != all) return Value::Bool(!all);
  }
  return Value::Bool(all);
}

}  // namespace

void AddSetOperators(std::vector<OperatorDef>& out) {
  out.push_back({"$setUnion", 0, kVariadic, nullptr, nullptr, &SetUnion});
  out.push_back({"$setIntersection", 0, kVariadic, nullptr, nullptr, &SetIntersection});
  out.push_back({"$setDifference", 2, 2, nullptr, nullptr, &SetDifference});
  out.push_back({"$setEquals", 0, kVariadic, nullptr, nullptr, &SetEquals});
  out.push_back({"$setIsSubset", 2, 2, nullptr, nullptr, &SetIsSubset});
  out.push_back({"$allElementsTrue", 1, 1, &ElementsTrue, nullptr});
  out.push_back({"$anyElementTrue", 1, 1, &ElementsTrue, nullptr});
}

}  // namespace hourglass::pipeline::internal
