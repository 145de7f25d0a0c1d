// Accumulators with options: $firstN $lastN $minN $maxN ({n, input}), $top $bottom $topN
// $bottomN ({n, sortBy, output}), $median and $percentile ({input, p, method}); and
// ParseAccumulator, the parser for every accumulator spec.
#include <algorithm>
#include <cmath>
#include <deque>

#include "bson/field_check.h"
#include "pipeline/accumulator.h"
#include "pipeline/errors.h"
#include "query/sort.h"

namespace hourglass::pipeline {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

int64_t SizeOf(const Value& v) { return 16 + static_cast<int64_t>(v.element().size()); }

class FirstLastNAccumulator : public Accumulator {
 public:
  FirstLastNAccumulator(bool first, int64_t n) : first_(first), n_(n) {}
  Status Process(const Value& v) override {
    const Value x = v.missing() ? Value::Null() : v;
    if (static_cast<int64_t>(values_.size()) == n_) {
      if (first_) return Status::OK();
      bytes_ -= SizeOf(values_.front());
      values_.pop_front();
    }
    bytes_ += SizeOf(x);
    values_.push_back(x);
    return Status::OK();
  }
  Value Finalize() const override {
    return Value::Array(std::vector<Value>(values_.begin(), values_.end()));
  }
  int64_t ApproxBytes() const override { return 32 + bytes_; }
  Status MergePartial(const Value& partial) override {
    for (const Value& v : partial.ArrayValues()) HG_RETURN_IF_ERROR(Process(v));
    return Status::OK();
  }

 private:
  bool first_;
  int64_t n_;
  std::deque<Value> values_;
  int64_t bytes_ = 0;
};

// Keeps the n smallest ($minN) or largest ($maxN) non-null values; output in ascending ($minN)
// or descending ($maxN) order.
class MinMaxNAccumulator : public Accumulator {
 public:
  MinMaxNAccumulator(bool min, int64_t n, const bson::StringComparator* strings)
      : min_(min), n_(n), strings_(strings) {}
  Status Process(const Value& v) override {
    if (v.nullish()) return Status::OK();
    auto better = [this](const Value& a, const Value& b) {
      const int c = Compare(a, b, strings_);
      return min_ ? c < 0 : c > 0;
    };
    if (static_cast<int64_t>(values_.size()) == n_) {
      if (!better(v, values_.back())) return Status::OK();
      bytes_ -= SizeOf(values_.back());
      values_.pop_back();
    }
    values_.insert(std::upper_bound(values_.begin(), values_.end(), v, better), v);
    bytes_ += SizeOf(v);
    return Status::OK();
  }
  Value Finalize() const override { return Value::Array(values_); }
  int64_t ApproxBytes() const override { return 32 + bytes_; }
  Status MergePartial(const Value& partial) override {
    for (const Value& v : partial.ArrayValues()) HG_RETURN_IF_ERROR(Process(v));
    return Status::OK();
  }

 private:
  bool min_;
  int64_t n_;
  const bson::StringComparator* strings_;
  std::vector<Value> values_;  // best first
  int64_t bytes_ = 0;
};

// The per-document input of $top/$bottom: {k: <sort key of the document>, o: <output>}.
class TopBottomInput : public Expression {
 public:
  TopBottomInput(ExpressionPtr output, std::shared_ptr<const query::SortPattern> sort)
      : output_(std::move(output)), sort_(std::move(sort)) {}
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value o, output_->Evaluate(root, vars));
    bson::BsonBuilder b;
    b.AppendObject("k", sort_->ExtractKey(root));
    (o.missing() ? Value::Null() : o).AppendTo(b, "o");
    return Value::Object(b.Obj());
  }

 private:
  ExpressionPtr output_;
  std::shared_ptr<const query::SortPattern> sort_;
};

// $topN keeps the first n documents in sortBy order, $bottomN the last n; both output in sortBy
// order. $top/$bottom are the n = 1 forms returning the value itself.
class TopBottomAccumulator : public Accumulator {
 public:
  TopBottomAccumulator(bool top, bool single, int64_t n,
                       std::shared_ptr<const query::SortPattern> sort)
      : top_(top), single_(single), n_(n), sort_(std::move(sort)) {}
  Status Process(const Value& v) override {
    BsonObj in = v.Obj();
    Entry e{in.GetField("k").Obj().Owned(), Value::FromElement(in.GetField("o"))};
    auto less = [this](const Entry& a, const Entry& b) {
      return sort_->CompareKeys(a.key, b.key) < 0;
    };
    // Ties keep arrival order: a new entry goes after the entries equal to it.
    entries_.insert(std::upper_bound(entries_.begin(), entries_.end(), e, less), e);
    bytes_ += SizeOf(e.output) + e.key.size();
    if (static_cast<int64_t>(entries_.size()) > n_) {
      auto drop = top_ ? entries_.end() - 1 : entries_.begin();
      bytes_ -= SizeOf(drop->output) + drop->key.size();
      entries_.erase(drop);
    }
    return Status::OK();
  }
  Value Finalize() const override {
    if (single_) return entries_.empty() ? Value::Null() : entries_.front().output;
    std::vector<Value> out;
    for (const auto& e : entries_) out.push_back(e.output);
    return Value::Array(out);
  }
  int64_t ApproxBytes() const override { return 32 + bytes_; }
  // The kept entries as Process() inputs {k, o}, in sortBy order (ties in arrival order), so
  // merging them in input order keeps the same entries a single pass would.
  Value PartialState() const override {
    std::vector<Value> out;
    for (const auto& e : entries_) {
      bson::BsonBuilder b;
      b.AppendObject("k", e.key);
      e.output.AppendTo(b, "o");
      out.push_back(Value::Object(b.Obj()));
    }
    return Value::Array(out);
  }
  Status MergePartial(const Value& partial) override {
    for (const Value& v : partial.ArrayValues()) HG_RETURN_IF_ERROR(Process(v));
    return Status::OK();
  }

 private:
  struct Entry {
    BsonObj key;
    Value output;
  };
  bool top_, single_;
  int64_t n_;
  std::shared_ptr<const query::SortPattern> sort_;
  std::vector<Entry> entries_;
  int64_t bytes_ = 0;
};

// $median / $percentile over the numeric inputs. MongoDB 7.0 accepts only method
// 'approximate' (a t-digest); we compute the exact discrete percentile instead: the value at
// rank ceil(p * n) in ascending order.
class PercentileAccumulator : public Accumulator {
 public:
  PercentileAccumulator(std::vector<double> ps, bool median)
      : ps_(std::move(ps)), median_(median) {}
  Status Process(const Value& v) override {
    if (!v.numeric()) return Status::OK();
    const double d = v.NumberDouble();
    if (std::isnan(d)) return Status::OK();
    values_.push_back(d);
    return Status::OK();
  }
  // Block processing: a column of doubles or integers without a value per row.
  Status ProcessNumbers(const NumberColumn& col, const uint32_t* rows, size_t n) override {
    const bool doubles = col.type == BsonType::kDouble;
    if (!doubles && col.type != BsonType::kInt32 && col.type != BsonType::kInt64) {
      return Accumulator::ProcessNumbers(col, rows, n);
    }
    // Geometric growth: a reserve of exactly what a run adds would copy the values per run.
    if (values_.capacity() < values_.size() + n) {
      values_.reserve(std::max(values_.size() + n, 2 * values_.capacity()));
    }
    for (size_t i = 0; i < n; ++i) {
      const uint32_t r = rows[i];
      if (!col.Present(r)) continue;
      const double d = doubles ? col.Double(r) : static_cast<double>(col.Int(r));
      if (!std::isnan(d)) values_.push_back(d);
    }
    return Status::OK();
  }
  Value Finalize() const override {
    // Each rank by selection (linear), not a sort of every value. The selection reorders the
    // values in place: their order means nothing to a percentile.
    std::vector<double>& values = values_;
    std::vector<Value> out;
    for (double p : ps_) {
      if (values.empty()) {
        out.push_back(Value::Null());
        continue;
      }
      const double n = static_cast<double>(values.size());
      int64_t rank = static_cast<int64_t>(std::ceil(p * n)) - 1;
      rank = std::clamp<int64_t>(rank, 0, static_cast<int64_t>(values.size()) - 1);
      std::nth_element(values.begin(), values.begin() + rank, values.end());
      out.push_back(Value::Double(values[rank]));
    }
    if (median_) return out[0];
    return Value::Array(out);
  }
  int64_t ApproxBytes() const override { return 32 + 8 * static_cast<int64_t>(values_.size()); }
  Value PartialState() const override {
    std::vector<Value> out;
    out.reserve(values_.size());
    for (double d : values_) out.push_back(Value::Double(d));
    return Value::Array(out);
  }
  Status MergePartial(const Value& partial) override {
    for (const Value& v : partial.ArrayValues()) values_.push_back(v.NumberDouble());
    return Status::OK();
  }

 private:
  std::vector<double> ps_;
  bool median_;
  mutable std::vector<double> values_;
};

// Fills out->make for a constant n, else out->make_for_group, which evaluates n when a group
// starts with the group key as the root document (an empty one for a scalar key), as MongoDB
// does: {_id: {g: "$g"}, x: {$firstN: {n: {$cond: [{$eq: ["$g", 1]}, 1, 3]}, ...}}}.
Status SetFactories(std::shared_ptr<const Expression> n,
                    std::function<std::unique_ptr<Accumulator>(int64_t)> with_n,
                    ParsedAccumulator* out) {
  if (const Value* c = n->ConstantValue()) {
    HG_ASSIGN_OR_RETURN(int64_t count, ValidateAccumulatorN(*c));
    out->make = [with_n, count] { return with_n(count); };
    return Status::OK();
  }
  out->make_for_group = [n, with_n](const Value& key) -> StatusWith<std::unique_ptr<Accumulator>> {
    const BsonObj group_doc = key.IsObject() ? key.Obj() : BsonObj();
    Variables vars;
    HG_ASSIGN_OR_RETURN(Value v, n->Evaluate(group_doc, vars));
    HG_ASSIGN_OR_RETURN(int64_t count, ValidateAccumulatorN(v));
    return with_n(count);
  };
  return Status::OK();
}

StatusWith<ParsedAccumulator> ParseNAccumulator(std::string_view op, const BsonElement& arg,
                                                const ParseContext& ctx) {
  const bool minmax = op == "$minN" || op == "$maxN";
  if (arg.type() != BsonType::kObject) {
    return PipelineError(minmax ? 5787900 : 5787801, "specification must be an object; found " +
                                                         Value::FromElement(arg).ToString());
  }
  ExpressionPtr n, input;
  for (const auto& f : arg.Obj()) {
    if (f.FieldName() == "input") {
      HG_ASSIGN_OR_RETURN(input, Expression::ParseExpression(f, ctx));
    } else if (f.FieldName() == "n") {
      HG_ASSIGN_OR_RETURN(n, Expression::ParseExpression(f, ctx));
    } else {
      return PipelineError(5787901,
                           "Unknown argument for 'n' operator: " + std::string(f.FieldName()));
    }
  }
  if (!n) return PipelineError(5787906, "Missing value for 'n'");
  if (!input) return PipelineError(5787907, "Missing value for 'input'");
  std::string name(op);
  ParsedAccumulator out{std::move(input), nullptr, nullptr};
  HG_RETURN_IF_ERROR(SetFactories(
      std::move(n),
      [name, strings = ctx.strings()](int64_t count) {
        return MakeNAccumulator(name, count, strings);
      },
      &out));
  return out;
}

StatusWith<ParsedAccumulator> ParseTopBottom(std::string_view op, const BsonElement& arg,
                                             const ParseContext& ctx) {
  const bool single = op == "$top" || op == "$bottom";
  const bool top = op == "$top" || op == "$topN";
  if (arg.type() != BsonType::kObject) {
    return PipelineError(
        5788001, "specification must be an object; found " + Value::FromElement(arg).ToString());
  }
  ExpressionPtr n, output;
  BsonObj sort_spec;
  bool have_sort = false;
  for (const auto& f : arg.Obj()) {
    if (!single && f.FieldName() == "n") {
      HG_ASSIGN_OR_RETURN(n, Expression::ParseExpression(f, ctx));
    } else if (f.FieldName() == "output") {
      HG_ASSIGN_OR_RETURN(output, Expression::ParseExpression(f, ctx));
    } else if (f.FieldName() == "sortBy") {
      if (f.type() != BsonType::kObject) {
        return PipelineError(10065, "invalid parameter: expected an object (sortBy)");
      }
      sort_spec = f.Obj();
      have_sort = true;
    } else {
      return PipelineError(5788002, "Unknown argument to " + std::string(op) + " '" +
                                        std::string(f.FieldName()) + "'");
    }
  }
  if (!single && !n) return PipelineError(5788003, "Missing value for 'n'");
  if (!output) return PipelineError(5788004, "Missing value for 'output'");
  if (!have_sort) return PipelineError(5788005, "Missing value for 'sortBy'");
  HG_ASSIGN_OR_RETURN(query::SortPattern pattern, query::SortPattern::Parse(sort_spec));
  pattern.SetCollator(ctx.collator());
  auto sort = std::make_shared<const query::SortPattern>(std::move(pattern));
  ParsedAccumulator out{std::make_unique<TopBottomInput>(std::move(output), sort), nullptr,
                        nullptr};
  std::shared_ptr<const Expression> count =
      single ? Expression::MakeConstant(Value::Int(1)) : std::move(n);
  HG_RETURN_IF_ERROR(SetFactories(
      std::move(count),
      [top, single, sort](int64_t k) -> std::unique_ptr<Accumulator> {
        return std::make_unique<TopBottomAccumulator>(top, single, k, sort);
      },
      &out));
  return out;
}

StatusWith<ParsedAccumulator> ParsePercentile(std::string_view op, const BsonElement& arg,
                                              const ParseContext& ctx) {
  const bool median = op == "$median";
  if (arg.type() != BsonType::kObject) {
    return PipelineError(7429703, std::string(op) + " specification must be an object; found " +
                                      Value::FromElement(arg).ToString());
  }
  const std::string name(op);
  BsonElement input, p, method;
  for (const auto& f : arg.Obj()) {
    if (f.FieldName() == "input") {
      input = f;
    } else if (f.FieldName() == "p" && !median) {
      p = f;
    } else if (f.FieldName() == "method") {
      method = f;
    } else {
      return bson::UnknownField(name, f.FieldName());
    }
  }
  for (const auto& [e, field] : {std::pair<const BsonElement&, const char*>{input, "input"},
                                 std::pair<const BsonElement&, const char*>{p, "p"},
                                 std::pair<const BsonElement&, const char*>{method, "method"}}) {
    if (e.eoo() && !(median && std::string_view(field) == "p")) {
      return bson::MissingField(name, field);
    }
  }
  std::vector<double> ps = {0.5};
  if (!median) {
    // p must be constant: a literal array of literals, or a $literal.
    HG_ASSIGN_OR_RETURN(ExpressionPtr pe, Expression::ParseExpression(p, ctx));
    Value literal_array;
    const Value* pv = pe->ConstantValue();
    if (pv == nullptr && p.type() == BsonType::kArray) {
      bool literal = true;
      for (const auto& m : p.Obj()) {
        literal = literal && m.type() != BsonType::kObject && m.type() != BsonType::kArray &&
                  !(m.type() == BsonType::kString && m.Str().substr(0, 1) == "$");
      }
      if (literal) {
        literal_array = Value::FromElement(p);
        pv = &literal_array;
      }
    }
    if (pv == nullptr) {
      return PipelineError(7750300,
                           "The $percentile 'p' field must be an array of constant values, but "
                           "found value: " +
                               Value::FromElement(p).ToString() + ".");
    }
    const std::string msg =
        "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: ";
    if (!pv->IsArray() || pv->ArrayValues().empty()) {
      return PipelineError(7750301, msg + pv->ToString());
    }
    ps.clear();
    for (const auto& x : pv->ArrayValues()) {
      if (!x.numeric()) return PipelineError(7750302, msg + x.ToString());
      const double d = x.NumberDouble();
      if (!(d >= 0 && d <= 1)) return PipelineError(7750303, msg + x.ToString());
      ps.push_back(d);
    }
  }
  if (method.type() != BsonType::kString || method.Str() != "approximate") {
    return PipelineError(2, "Currently only 'approximate' can be used as a percentile 'method'.");
  }
  HG_ASSIGN_OR_RETURN(ExpressionPtr in, Expression::ParseExpression(input, ctx));
  return ParsedAccumulator{
      std::move(in), [ps, median] { return std::make_unique<PercentileAccumulator>(ps, median); },
      nullptr};
}

}  // namespace

StatusWith<int64_t> ValidateAccumulatorN(const Value& n) {
  if (!n.numeric()) {
    return PipelineError(5787902,
                         "Value for 'n' must be of integral type, but found " + n.ToString());
  }
  const double d = n.NumberDouble();
  if (!(d >= -9.2e18 && d <= 9.2e18) || static_cast<double>(n.NumberLong()) != d) {
    return PipelineError(5787903,
                         "Value for 'n' must be of integral type, but found " + n.ToString());
  }
  if (n.NumberLong() <= 0) {
    return PipelineError(5787908,
                         "'n' must be greater than 0, found " + std::to_string(n.NumberLong()));
  }
  return n.NumberLong();
}

std::unique_ptr<Accumulator> MakeNAccumulator(std::string_view op, int64_t n,
                                              const bson::StringComparator* strings) {
  if (op == "$firstN") return std::make_unique<FirstLastNAccumulator>(true, n);
  if (op == "$lastN") return std::make_unique<FirstLastNAccumulator>(false, n);
  if (op == "$minN") return std::make_unique<MinMaxNAccumulator>(true, n, strings);
  if (op == "$maxN") return std::make_unique<MinMaxNAccumulator>(false, n, strings);
  return nullptr;
}

bool IsAnyAccumulatorName(std::string_view op) {
  static const std::string_view kNames[] = {"$firstN", "$lastN",     "$minN", "$maxN",
                                            "$top",    "$bottom",    "$topN", "$bottomN",
                                            "$median", "$percentile"};
  for (auto n : kNames) {
    if (n == op) return true;
  }
  return IsAccumulatorName(op);
}

StatusWith<ParsedAccumulator> ParseAccumulator(std::string_view op, const BsonElement& arg,
                                               const ParseContext& ctx) {
  if (op == "$firstN" || op == "$lastN" || op == "$minN" || op == "$maxN") {
    return ParseNAccumulator(op, arg, ctx);
  }
  if (op == "$top" || op == "$bottom" || op == "$topN" || op == "$bottomN") {
    return ParseTopBottom(op, arg, ctx);
  }
  if (op == "$median" || op == "$percentile") return ParsePercentile(op, arg, ctx);
  if (!IsAccumulatorName(op)) {
    return PipelineError(15952, "unknown group operator '" + std::string(op) + "'");
  }
  HG_ASSIGN_OR_RETURN(ExpressionPtr input, Expression::ParseExpression(arg, ctx));
  std::string name(op);
  return ParsedAccumulator{
      std::move(input), [name, strings = ctx.strings()] { return MakeAccumulator(name, strings); },
      nullptr};
}

}  // namespace hourglass::pipeline
