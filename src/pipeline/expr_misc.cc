// Array operators with named arguments ($sortArray, $zip, and the expression forms of $firstN
// $lastN $minN $maxN, which reuse the accumulators), and $rand, $binarySize, $bsonSize.
#include <algorithm>
#include <random>

#include "pipeline/accumulator.h"
#include "pipeline/expression_internal.h"
#include "query/sort.h"

namespace hourglass::pipeline::internal {

namespace {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

// $sortArray {input, sortBy}: sortBy 1/-1 sorts whole values in canonical order; a document
// sorts by fields (non-document members compare as empty documents). Stable.
class SortArrayExpression : public Expression {
 public:
  ExpressionPtr input;
  int direction = 0;  // 1 / -1 for whole values, 0 for a pattern
  query::SortPattern pattern;
  const bson::StringComparator* strings = nullptr;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value in, input->Evaluate(root, vars));
    if (in.nullish()) return Value::Null();
    if (!in.IsArray()) {
      return PipelineError(
          2942504,
          "The input argument to $sortArray must be an array, but was of type: " + TypeNameOf(in));
    }
    std::vector<Value> items = in.ArrayValues();
    if (direction != 0) {
      std::stable_sort(items.begin(), items.end(), [this](const Value& a, const Value& b) {
        return direction * Compare(a, b, strings) < 0;
      });
      return Value::Array(items);
    }
    std::vector<std::pair<BsonObj, size_t>> keys;
    for (size_t i = 0; i < items.size(); ++i) {
      keys.emplace_back(pattern.ExtractKey(items[i].IsObject() ? items[i].Obj() : BsonObj()), i);
    }
    std::stable_sort(keys.begin(), keys.end(), [this](const auto& a, const auto& b) {
      return pattern.CompareKeys(a.first, b.first) < 0;
    });
    std::vector<Value> out;
    for (const auto& k : keys) out.push_back(items[k.second]);
    return Value::Array(out);
  }
};

StatusWith<ExpressionPtr> ParseSortArray(std::string_view, const BsonElement& operand,
                                         const ParseContext& ctx) {
  if (operand.type() != BsonType::kObject) {
    return PipelineError(2942500, "$sortArray requires an object as an argument, found: " +
                                      std::string(bson::TypeName(operand.type())));
  }
  auto e = std::make_unique<SortArrayExpression>();
  e->strings = ctx.strings();
  BsonElement sort_by;
  for (const auto& f : operand.Obj()) {
    if (f.FieldName() == "input") {
      HG_ASSIGN_OR_RETURN(e->input, Expression::ParseExpression(f, ctx));
    } else if (f.FieldName() == "sortBy") {
      sort_by = f;
    } else {
      return PipelineError(2942501,
                           "$sortArray found an unknown argument: " + std::string(f.FieldName()));
    }
  }
  if (!e->input) return PipelineError(2942502, "$sortArray requires 'input' to be specified");
  if (sort_by.eoo()) return PipelineError(2942503, "$sortArray requires 'sortBy' to be specified");
  if (sort_by.IsNumber()) {
    const double d = sort_by.NumberDouble();
    if (d != 1 && d != -1) {
      return PipelineError(2942506, "The $sort element value must be either 1 or -1");
    }
    e->direction = d > 0 ? 1 : -1;
  } else if (sort_by.type() == BsonType::kObject && !sort_by.Obj().IsEmpty()) {
    HG_ASSIGN_OR_RETURN(e->pattern, query::SortPattern::Parse(sort_by.Obj()));
    e->pattern.SetCollator(ctx.collator());
  } else {
    return PipelineError(2942507,
                         "The $sort is invalid: use 1/-1 to sort the whole element, or "
                         "{field:1/-1} to sort embedded fields");
  }
  return ExpressionPtr(std::move(e));
}

class ZipExpression : public Expression {
 public:
  std::vector<ExpressionPtr> inputs, defaults;
  bool longest = false;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    std::vector<std::vector<Value>> arrays;
    size_t min_len = SIZE_MAX, max_len = 0;
    for (const auto& in : inputs) {
      HG_ASSIGN_OR_RETURN(Value v, in->Evaluate(root, vars));
      if (v.nullish()) return Value::Null();
      if (!v.IsArray()) {
        return PipelineError(34468, "$zip found a non-array expression in input: " + v.ToString());
      }
      arrays.push_back(v.ArrayValues());
      min_len = std::min(min_len, arrays.back().size());
      max_len = std::max(max_len, arrays.back().size());
    }
    std::vector<Value> pad(arrays.size(), Value::Null());
    for (size_t i = 0; i < defaults.size(); ++i) {
      HG_ASSIGN_OR_RETURN(pad[i], defaults[i]->Evaluate(root, vars));
    }
    const size_t n = longest ? max_len : min_len;
    std::vector<Value> out;
    for (size_t r = 0; r < n; ++r) {
      std::vector<Value> row;
      for (size_t c = 0; c < arrays.size(); ++c) {
        row.push_back(r < arrays[c].size() ? arrays[c][r] : pad[c]);
      }
      out.push_back(Value::Array(row));
    }
    return Value::Array(out);
  }
};

StatusWith<ExpressionPtr> ParseZip(std::string_view, const BsonElement& operand,
                                   const ParseContext& ctx) {
  if (operand.type() != BsonType::kObject) {
    return PipelineError(34460, "$zip only supports an object as an argument, found " +
                                    std::string(bson::TypeName(operand.type())));
  }
  auto e = std::make_unique<ZipExpression>();
  bool have_defaults = false;
  for (const auto& f : operand.Obj()) {
    if (f.FieldName() == "inputs" || f.FieldName() == "defaults") {
      const bool is_inputs = f.FieldName() == "inputs";
      if (f.type() != BsonType::kArray) {
        return PipelineError(is_inputs ? 34461 : 34462,
                             std::string("$zip found a non-array expression in ") +
                                 (is_inputs ? "input" : "defaults") + ": " +
                                 Value::FromElement(f).ToString());
      }
      HG_ASSIGN_OR_RETURN(auto list, ParseArguments(f, ctx));
      (is_inputs ? e->inputs : e->defaults) = std::move(list);
      have_defaults = have_defaults || !is_inputs;
    } else if (f.FieldName() == "useLongestLength") {
      if (f.type() != BsonType::kBool) {
        return PipelineError(34463, "useLongestLength must be a bool, found " +
                                        std::string(bson::TypeName(f.type())));
      }
      e->longest = f.Truthy();
    } else {
      return PipelineError(34464, "$zip found an unknown argument: " + std::string(f.FieldName()));
    }
  }
  if (e->inputs.empty()) return PipelineError(34465, "$zip requires at least one input array");
  if (have_defaults && !e->longest) {
    return PipelineError(34466, "cannot specify defaults unless useLongestLength is true");
  }
  if (have_defaults && e->defaults.size() != e->inputs.size()) {
    return PipelineError(34467, "defaults and inputs must have the same length");
  }
  return ExpressionPtr(std::move(e));
}

// {$firstN|$lastN|$minN|$maxN: {n, input: <array>}}: the accumulator run over the array.
class NExpression : public Expression {
 public:
  std::string_view op;
  const bson::StringComparator* strings = nullptr;
  ExpressionPtr n, input;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value nv, n->Evaluate(root, vars));
    HG_ASSIGN_OR_RETURN(Value in, input->Evaluate(root, vars));
    HG_ASSIGN_OR_RETURN(int64_t count, ValidateAccumulatorN(nv));
    if (!in.IsArray()) return PipelineError(5788200, "Input must be an array");
    auto acc = MakeNAccumulator(op, count, strings);
    for (const auto& v : in.ArrayValues()) HG_RETURN_IF_ERROR(acc->Process(v));
    return acc->Finalize();
  }
};

StatusWith<ExpressionPtr> ParseN(std::string_view op, const BsonElement& operand,
                                 const ParseContext& ctx) {
  const bool minmax = op == "$minN" || op == "$maxN";
  if (operand.type() != BsonType::kObject) {
    return PipelineError(minmax ? 5787900 : 5787801, "specification must be an object; found " +
                                                         Value::FromElement(operand).ToString());
  }
  auto e = std::make_unique<NExpression>();
  e->op = op;
  e->strings = ctx.strings();
  for (const auto& f : operand.Obj()) {
    ExpressionPtr* slot = f.FieldName() == "n"       ? &e->n
                          : f.FieldName() == "input" ? &e->input
                                                     : nullptr;
    if (slot == nullptr) {
      return PipelineError(5787901,
                           "Unknown argument for 'n' operator: " + std::string(f.FieldName()));
    }
    HG_ASSIGN_OR_RETURN(*slot, Expression::ParseExpression(f, ctx));
  }
  if (!e->n) return PipelineError(5787906, "Missing value for 'n'");
  if (!e->input) return PipelineError(5787907, "Missing value for 'input'");
  return ExpressionPtr(std::move(e));
}

// $median / $percentile as expressions: the accumulator over the members of an array input (a
// scalar input is one value).
class AccumulatorExpression : public Expression {
 public:
  explicit AccumulatorExpression(ParsedAccumulator acc) : acc_(std::move(acc)) {}
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value in, acc_.input->Evaluate(root, vars));
    auto state = acc_.make();
    if (in.IsArray()) {
      for (const auto& v : in.ArrayValues()) HG_RETURN_IF_ERROR(state->Process(v));
    } else {
      HG_RETURN_IF_ERROR(state->Process(in));
    }
    return state->Finalize();
  }

 private:
  ParsedAccumulator acc_;
};

StatusWith<ExpressionPtr> ParseAccumulatorExpression(std::string_view op,
                                                     const BsonElement& operand,
                                                     const ParseContext& ctx) {
  HG_ASSIGN_OR_RETURN(ParsedAccumulator acc, ParseAccumulator(op, operand, ctx));
  return ExpressionPtr(std::make_unique<AccumulatorExpression>(std::move(acc)));
}

class RandExpression : public Expression {
 public:
  StatusWith<Value> Evaluate(const BsonObj&, Variables&) const override {
    thread_local std::mt19937_64 gen{std::random_device{}()};
    return Value::Double(std::uniform_real_distribution<double>(0.0, 1.0)(gen));
  }
};

StatusWith<ExpressionPtr> ParseRand(std::string_view, const BsonElement& operand,
                                    const ParseContext&) {
  if (operand.type() != BsonType::kObject || !operand.Obj().IsEmpty()) {
    return PipelineError(3040501, "$rand does not currently accept arguments");
  }
  return ExpressionPtr(std::make_unique<RandExpression>());
}

StatusWith<Value> BinarySize(std::string_view, const std::vector<Value>& args) {
  const Value& v = args[0];
  if (v.nullish()) return Value::Null();
  if (v.IsString()) return Value::IntOrLong(static_cast<int64_t>(v.Str().size()));
  if (v.type() == BsonType::kBinData) {
    return Value::IntOrLong(static_cast<int64_t>(v.element().BinData().size()));
  }
  return PipelineError(
      5155800, "$binarySize requires a string or BinData argument, found: " + TypeNameOf(v));
}

StatusWith<Value> BsonSize(std::string_view, const std::vector<Value>& args) {
  const Value& v = args[0];
  if (v.nullish()) return Value::Null();
  if (!v.IsObject()) {
    return PipelineError(31393, "$bsonSize requires a document input, found: " + TypeNameOf(v));
  }
  return Value::IntOrLong(v.Obj().size());
}

}  // namespace

void AddMiscOperators(std::vector<OperatorDef>& out) {
  out.push_back({"$sortArray", 0, 0, nullptr, &ParseSortArray});
  out.push_back({"$zip", 0, 0, nullptr, &ParseZip});
  for (std::string_view op : {"$firstN", "$lastN", "$minN", "$maxN"}) {
    out.push_back({op, 0, 0, nullptr, &ParseN});
  }
  out.push_back({"$median", 0, 0, nullptr, &ParseAccumulatorExpression});
  out.push_back({"$percentile", 0, 0, nullptr, &ParseAccumulatorExpression});
  out.push_back({"$rand", 0, 0, nullptr, &ParseRand});
  out.push_back({"$binarySize", 1, 1, &BinarySize, nullptr});
  out.push_back({"$bsonSize", 1, 1, &BsonSize, nullptr});
}

}  // namespace hourglass::pipeline::internal
