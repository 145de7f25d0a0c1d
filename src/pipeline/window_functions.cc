#include "pipeline/window_functions.h"

#include <algorithm>
#include <cmath>
#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>
#include <functional>
#include <set>
#include <utility>

#include "bson/decimal128.h"
#include "bson/field_check.h"
#include "pipeline/accumulator.h"
#include "pipeline/double_double_sum.h"
#include "pipeline/errors.h"

namespace hourglass::pipeline {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

using Window = WindowBounds;
using Bound = WindowBound;

Status ParseError(std::string reason) {
  return Status(ErrorCode::kFailedToParse, std::move(reason));
}

StatusWith<std::vector<Value>> EvaluateAll(const Expression& e, const WindowPartition& p,
                                           Variables& vars) {
  std::vector<Value> out;
  out.reserve(p.docs.size());
  for (size_t i = 0; i < p.docs.size(); ++i) {
    HG_ASSIGN_OR_RETURN(bson::BsonObj d, p.docs.Get(i));
    HG_ASSIGN_OR_RETURN(Value v, e.Evaluate(d, vars));
    out.push_back(std::move(v));
  }
  return out;
}

Value NullIfMissing(Value v) { return v.missing() ? Value::Null() : v; }

// ---- accumulator-style functions ----

// Population or sample covariance of [x, y] pairs; pairs with a non-number are skipped. In
// doubles until a decimal arrives; from then on in decimals (the state so far joining with 15
// digits, as $add coerces), and the result is a decimal, as MongoDB's decimal-aware sums give.
class CovarianceAccumulator : public Accumulator {
 public:
  explicit CovarianceAccumulator(bool sample) : sample_(sample) {}
  Status Process(const Value& v) override {
    namespace dec = bson::decimal;
    if (!v.IsArray()) return Status::OK();
    std::vector<Value> xy = v.ArrayValues();
    if (xy.size() != 2 || !xy[0].numeric() || !xy[1].numeric()) return Status::OK();
    ++n_;
    if (!decimal_ &&
        (xy[0].type() == BsonType::kDecimal128 || xy[1].type() == BsonType::kDecimal128)) {
      decimal_ = true;
      dmean_x_ = dec::FromDouble(mean_x_);
      dmean_y_ = dec::FromDouble(mean_y_);
      dc_ = dec::FromDouble(c_);
    }
    if (decimal_) {
      const bson::Decimal128 x = dec::FromNumber(xy[0].element());
      const bson::Decimal128 y = dec::FromNumber(xy[1].element());
      const bson::Decimal128 n = dec::FromInt64(n_);
      const bson::Decimal128 dx = dec::Subtract(x, dmean_x_);
      dmean_x_ = dec::Add(dmean_x_, dec::Divide(dx, n));
      dmean_y_ = dec::Add(dmean_y_, dec::Divide(dec::Subtract(y, dmean_y_), n));
      dc_ = dec::Add(dc_, dec::Multiply(dx, dec::Subtract(y, dmean_y_)));
      return Status::OK();
    }
    const double x = xy[0].NumberDouble(), y = xy[1].NumberDouble();
    const double dx = x - mean_x_;
    mean_x_ += dx / static_cast<double>(n_);
    mean_y_ += (y - mean_y_) / static_cast<double>(n_);
    c_ += dx * (y - mean_y_);
    return Status::OK();
  }
  Value Finalize() const override {
    const int64_t d = sample_ ? n_ - 1 : n_;
    if (d <= 0) return Value::Null();
    if (decimal_) {
      return Value::Decimal(bson::decimal::Divide(dc_, bson::decimal::FromInt64(d)));
    }
    return Value::Double(c_ / static_cast<double>(d));
  }

 private:
  bool sample_;
  int64_t n_ = 0;
  double mean_x_ = 0, mean_y_ = 0, c_ = 0;
  bool decimal_ = false;
  bson::Decimal128 dmean_x_, dmean_y_, dc_;
};

// Trapezoidal integral of [x, y] points in window order (validated numbers, see ParseIntegral).
// In doubles until a decimal point arrives; from then on the area is a decimal (the double area
// so far joining it with 15 digits, as $add coerces).
class IntegralAccumulator : public Accumulator {
 public:
  // The area is divided by `scale` (the unit's milliseconds when x are dates).
  explicit IntegralAccumulator(double scale) : scale_(scale) {}
  Status Process(const Value& v) override {
    namespace dec = bson::decimal;
    std::vector<Value> xy = v.ArrayValues();
    if (xy.size() != 2) return Status::OK();
    const bool decimal_point =
        xy[0].type() == BsonType::kDecimal128 || xy[1].type() == BsonType::kDecimal128;
    if (decimal_point && !decimal_) {
      decimal_ = true;
      decimal_area_ = dec::FromDouble(area_);
    }
    if (decimal_ && seen_) {
      const bson::Decimal128 dx =
          dec::Subtract(dec::FromNumber(xy[0].element()), dec::FromNumber(prev_x_.element()));
      const bson::Decimal128 sum_y =
          dec::Add(dec::FromNumber(xy[1].element()), dec::FromNumber(prev_y_.element()));
      decimal_area_ =
          dec::Add(decimal_area_, dec::Divide(dec::Multiply(dx, sum_y), dec::FromInt64(2)));
    }
    const double x = xy[0].NumberDouble(), y = xy[1].NumberDouble();
    if (seen_) area_ += (x - x_) * (y + y_) / 2;
    seen_ = true;
    x_ = x;
    y_ = y;
    prev_x_ = xy[0];
    prev_y_ = xy[1];
    return Status::OK();
  }
  Value Finalize() const override {
    if (!seen_) return Value::Null();
    if (decimal_) {
      return Value::Decimal(bson::decimal::Divide(
          decimal_area_, bson::decimal::FromInt64(static_cast<int64_t>(scale_))));
    }
    return Value::Double(area_ / scale_);
  }

 private:
  double scale_;
  bool seen_ = false, decimal_ = false;
  double x_ = 0, y_ = 0, area_ = 0;
  Value prev_x_, prev_y_;  // the previous point as given (converted once decimals appear)
  bson::Decimal128 decimal_area_{};
};

using AccumulatorFactory = std::function<std::unique_ptr<Accumulator>()>;
using InputBuilder =
    std::function<StatusWith<std::vector<Value>>(const WindowPartition&, Variables&)>;

// Folds each document's window through a fresh accumulator; a window whose lower bound is
// unbounded only grows, so one accumulator serves the whole partition.
class FoldFunction : public WindowFunction {
 public:
  // `order_free`: the accumulator's result does not depend on input order, so a window whose
  // upper bound is unbounded can be folded from the end of the partition.
  FoldFunction(AccumulatorFactory make, InputBuilder inputs, Window w, bool order_free)
      : make_(std::move(make)),
        inputs_(std::move(inputs)),
        w_(std::move(w)),
        order_free_(order_free) {}

  Status Compute(const WindowPartition& p, Variables& vars,
                 std::vector<Value>* out) const override {
    HG_ASSIGN_OR_RETURN(std::vector<Value> in, inputs_(p, vars));
    WindowIndexer ix(w_);
    HG_RETURN_IF_ERROR(ix.Prepare(p));
    const size_t n = p.docs.size();
    out->assign(n, Value::Null());
    if (w_.lower.kind == Bound::kUnbounded) {
      auto acc = make_();
      size_t fed = 0;
      for (size_t i = 0; i < n; ++i) {
        size_t lo, hi;
        ix.Bounds(i, &lo, &hi);
        while (fed < hi) HG_RETURN_IF_ERROR(acc->Process(in[fed++]));
        (*out)[i] = NullIfMissing(acc->Finalize());
      }
      return Status::OK();
    }
    if (order_free_ && w_.upper.kind == Bound::kUnbounded) {
      auto acc = make_();
      size_t fed_from = n;  // inputs [fed_from, n) are folded in
      for (size_t i = n; i-- > 0;) {
        size_t lo, hi;
        ix.Bounds(i, &lo, &hi);
        while (fed_from > lo) HG_RETURN_IF_ERROR(acc->Process(in[--fed_from]));
        (*out)[i] = NullIfMissing(acc->Finalize());
      }
      return Status::OK();
    }
    for (size_t i = 0; i < n; ++i) {
      size_t lo, hi;
      ix.Bounds(i, &lo, &hi);
      auto acc = make_();
      for (size_t j = lo; j < hi; ++j) HG_RETURN_IF_ERROR(acc->Process(in[j]));
      (*out)[i] = NullIfMissing(acc->Finalize());
    }
    return Status::OK();
  }

 private:
  AccumulatorFactory make_;
  InputBuilder inputs_;
  Window w_;
  bool order_free_;
};

// $sum, $count, $avg, $min and $max over windows bounded on both sides: the window slides
// (both ends only move forward), so values are added and removed instead of refolding each
// window. Sums of integers are exact; sums with doubles are double-doubles (DoubleDoubleSum, a
// removal adding the negated value), as MongoDB's removable sums are. A window
// holding a Decimal128 is folded afresh through the $group accumulator, which owns the decimal
// rules.
class SlidingFunction : public WindowFunction {
 public:
  // `strings`: $min and $max compare under the aggregate's collation.
  SlidingFunction(std::string op, InputBuilder inputs, Window w,
                  const bson::StringComparator* strings)
      : op_(std::move(op)), inputs_(std::move(inputs)), w_(std::move(w)), strings_(strings) {}

  Status Compute(const WindowPartition& p, Variables& vars,
                 std::vector<Value>* out) const override {
    HG_ASSIGN_OR_RETURN(std::vector<Value> in, inputs_(p, vars));
    WindowIndexer ix(w_);
    HG_RETURN_IF_ERROR(ix.Prepare(p));
    State st{.dsum = {}, .ordered = std::multiset<Value, ValueLess>(ValueLess{strings_})};
    st.track_order = op_ == "$min" || op_ == "$max";
    size_t cur_lo = 0, cur_hi = 0;
    out->assign(in.size(), Value::Null());
    for (size_t i = 0; i < in.size(); ++i) {
      size_t lo, hi;
      ix.Bounds(i, &lo, &hi);
      while (cur_hi < hi) st.Update(in[cur_hi++], +1);
      while (cur_lo < lo) st.Update(in[cur_lo++], -1);
      if (st.n_decimal > 0) {
        auto acc = MakeAccumulator(op_, strings_);
        for (size_t j = lo; j < hi; ++j) HG_RETURN_IF_ERROR(acc->Process(in[j]));
        (*out)[i] = acc->Finalize();
      } else {
        (*out)[i] = Result(st);
      }
    }
    return Status::OK();
  }

 private:
  struct State {
    int64_t n = 0, n_double = 0, n_long = 0, n_decimal = 0;
    __int128 isum = 0;
    DoubleDoubleSum dsum;                     // every number's, as a double-double
    std::multiset<Value, ValueLess> ordered;  // only for $min and $max (track_order)
    bool track_order = false;

    void Update(const Value& v, int sign) {
      if (track_order && !v.nullish()) {
        if (sign > 0) {
          ordered.insert(v);
        } else {
          ordered.erase(ordered.find(v));
        }
      }
      if (!v.numeric()) return;
      n += sign;
      switch (v.type()) {
        case BsonType::kDouble:
          n_double += sign;
          break;
        case BsonType::kDecimal128:
          n_decimal += sign;
          break;
        case BsonType::kInt64:
          n_long += sign;
          isum += sign * static_cast<__int128>(v.NumberLong());
          break;
        default:
          isum += sign * static_cast<__int128>(v.NumberLong());
          break;
      }
      if (v.type() == BsonType::kInt64) {
        dsum.AddLong(v.NumberLong(), sign < 0);
      } else {
        dsum.Add(sign * v.NumberDouble());
      }
    }
  };

  Value Result(const State& st) const {
    if (op_ == "$min" || op_ == "$max") {
      if (st.ordered.empty()) return Value::Null();
      return op_ == "$min" ? *st.ordered.begin() : *st.ordered.rbegin();
    }
    const bool integral = st.n_double == 0 && st.isum >= INT64_MIN && st.isum <= INT64_MAX;
    const double total = integral ? static_cast<double>(st.isum) : st.dsum.Double();
    if (op_ == "$avg") {
      return st.n == 0 ? Value::Null() : Value::Double(total / static_cast<double>(st.n));
    }
    if (!integral) return Value::Double(total);
    const auto sum = static_cast<int64_t>(st.isum);
    return st.n_long > 0 ? Value::Long(sum) : Value::IntOrLong(sum);
  }

  std::string op_;
  InputBuilder inputs_;
  Window w_;
  const bson::StringComparator* strings_;
};

InputBuilder PlainInputs(std::shared_ptr<Expression> e) {
  return [e](const WindowPartition& p, Variables& vars) { return EvaluateAll(*e, p, vars); };
}

// ---- $first / $last: the input at the window's first or last document ----

// Unlike the $group accumulators, a missing value stays missing (the output field is then
// absent); an empty window gives null.
class EndpointFunction : public WindowFunction {
 public:
  EndpointFunction(ExpressionPtr input, Window w, bool first)
      : input_(std::move(input)), w_(std::move(w)), first_(first) {}

  Status Compute(const WindowPartition& p, Variables& vars,
                 std::vector<Value>* out) const override {
    WindowIndexer ix(w_);
    HG_RETURN_IF_ERROR(ix.Prepare(p));
    out->assign(p.docs.size(), Value::Null());
    for (size_t i = 0; i < p.docs.size(); ++i) {
      size_t lo, hi;
      ix.Bounds(i, &lo, &hi);
      if (hi <= lo) continue;
      HG_ASSIGN_OR_RETURN(BsonObj d, p.docs.Get(first_ ? lo : hi - 1));
      HG_ASSIGN_OR_RETURN((*out)[i], input_->Evaluate(d, vars));
    }
    return Status::OK();
  }

 private:
  ExpressionPtr input_;
  Window w_;
  bool first_;
};

// ---- $median / $percentile ----

// Exact discrete percentiles of the window's numeric values (as doubles): the value of rank
// ceil(p * n) - 1 in ascending order, as MongoDB's window implementation computes them. Both
// window ends only move forward, so the values live in an order-statistics tree that the window
// slides over.
// The values $median and $percentile rank: numbers but NaN, as the $group accumulators take them
// (NaN would also break the ordered tree).
bool QuantileInput(const Value& v) { return v.numeric() && !std::isnan(v.NumberDouble()); }

class QuantileFunction : public WindowFunction {
 public:
  // An empty `ps` means $median (a scalar result); otherwise $percentile (an array).
  QuantileFunction(ExpressionPtr input, std::vector<double> ps, Window w)
      : input_(std::move(input)), ps_(std::move(ps)), w_(std::move(w)) {}

  Status Compute(const WindowPartition& p, Variables& vars,
                 std::vector<Value>* out) const override {
    HG_ASSIGN_OR_RETURN(std::vector<Value> in, EvaluateAll(*input_, p, vars));
    WindowIndexer ix(w_);
    HG_RETURN_IF_ERROR(ix.Prepare(p));
    // (value, position) pairs keep equal values distinct.
    using Tree = __gnu_pbds::tree<std::pair<double, size_t>, __gnu_pbds::null_type,
                                  std::less<std::pair<double, size_t>>, __gnu_pbds::rb_tree_tag,
                                  __gnu_pbds::tree_order_statistics_node_update>;
    Tree tree;
    size_t cur_lo = 0, cur_hi = 0;
    out->clear();
    for (size_t i = 0; i < in.size(); ++i) {
      size_t lo, hi;
      ix.Bounds(i, &lo, &hi);
      for (; cur_hi < hi; ++cur_hi) {
        if (QuantileInput(in[cur_hi])) tree.insert({in[cur_hi].NumberDouble(), cur_hi});
      }
      for (; cur_lo < lo; ++cur_lo) {
        if (QuantileInput(in[cur_lo])) tree.erase({in[cur_lo].NumberDouble(), cur_lo});
      }
      auto at = [&](double q) -> Value {
        const size_t n = tree.size();
        if (n == 0) return Value::Null();
        const double rank = q >= 1 ? static_cast<double>(n - 1)
                                   : std::max(0.0, std::ceil(static_cast<double>(n) * q) - 1);
        return Value::Double(tree.find_by_order(static_cast<size_t>(rank))->first);
      };
      if (ps_.empty()) {
        out->push_back(at(0.5));
      } else {
        std::vector<Value> r;
        for (double q : ps_) r.push_back(at(q));
        out->push_back(Value::Array(r));
      }
    }
    return Status::OK();
  }

 private:
  ExpressionPtr input_;
  std::vector<double> ps_;
  Window w_;
};

// {input, p, method} of $percentile, {input, method} of $median (MongoDB 7.0 accepts only
// method "approximate").
StatusWith<std::unique_ptr<WindowFunction>> ParseQuantile(std::string_view fn,
                                                          const BsonElement& arg, Window w,
                                                          const ParseContext& pc) {
  const bool median = fn == "$median";
  if (arg.type() != BsonType::kObject) {
    return PipelineError(median ? 7436100 : 7429700, "specification must be an object; found " +
                                                         Value::FromElement(arg).ToString());
  }
  BsonElement input, p, method;
  for (const auto& e : arg.Obj()) {
    std::string_view n = e.FieldName();
    if (n == "input") {
      input = e;
    } else if (n == "p" && !median) {
      p = e;
    } else if (n == "method") {
      method = e;
    } else {
      return bson::UnknownField(fn, n);
    }
  }
  const std::pair<BsonElement, const char*> required[] = {
      {input, "input"}, {p, "p"}, {method, "method"}};
  for (const auto& [e, name] : required) {
    if (e.eoo() && !(median && std::string_view(name) == "p")) {
      return bson::MissingField(fn, name);
    }
  }
  std::vector<double> ps;
  if (!median) {
    const std::string msg =
        "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: ";
    std::vector<Value> vals;
    if (p.type() == BsonType::kArray) {
      vals = Value::FromElement(p).ArrayValues();
    } else {
      HG_ASSIGN_OR_RETURN(ExpressionPtr e, Expression::ParseExpression(p, pc));
      if (e->ConstantValue() == nullptr) {
        return PipelineError(7750300,
                             "The $percentile 'p' field must be an array of constant values, but "
                             "found value: " +
                                 Value::FromElement(p).ToString() + ".");
      }
      if (!e->ConstantValue()->IsArray()) {
        return PipelineError(7750301, msg + e->ConstantValue()->ToString());
      }
      vals = e->ConstantValue()->ArrayValues();
    }
    if (vals.empty()) return PipelineError(7750301, msg + "[]");
    for (const Value& v : vals) {
      if (!v.numeric()) return PipelineError(7750302, msg + v.ToString());
      const double d = v.NumberDouble();
      if (!(d >= 0 && d <= 1)) return PipelineError(7750303, msg + v.ToString());
      ps.push_back(d);
    }
  }
  if (method.type() != BsonType::kString) {
    return bson::WrongTypeAtPath(std::string(fn) + ".method", method, "string");
  }
  if (method.Str() != "approximate") {
    return Status(ErrorCode::kBadValue,
                  "Currently only 'approximate' can be used as a percentile 'method'.");
  }
  HG_ASSIGN_OR_RETURN(ExpressionPtr in, Expression::ParseExpression(input, pc));
  return std::unique_ptr<WindowFunction>(
      std::make_unique<QuantileFunction>(std::move(in), std::move(ps), std::move(w)));
}

// ---- $derivative ----

class DerivativeFunction : public WindowFunction {
 public:
  DerivativeFunction(ExpressionPtr input, Window w, std::optional<int64_t> unit_ms)
      : input_(std::move(input)), w_(std::move(w)), unit_ms_(unit_ms) {}

  Status Compute(const WindowPartition& p, Variables& vars,
                 std::vector<Value>* out) const override {
    HG_ASSIGN_OR_RETURN(std::vector<Value> in, EvaluateAll(*input_, p, vars));
    WindowIndexer ix(w_);
    HG_RETURN_IF_ERROR(ix.Prepare(p));
    out->assign(p.docs.size(), Value::Null());
    for (size_t i = 0; i < p.docs.size(); ++i) {
      size_t lo, hi;
      ix.Bounds(i, &lo, &hi);
      if (hi <= lo) continue;
      const Value& xl = p.sort_values[lo];
      const Value& xr = p.sort_values[hi - 1];
      double run;
      if (unit_ms_) {
        if (!xl.IsDate() || !xr.IsDate()) {
          return PipelineError(5624900,
                               "$derivative with 'unit' expects the sortBy field to be a Date");
        }
        run = static_cast<double>(xr.DateMillis()) - static_cast<double>(xl.DateMillis());
      } else {
        if (xl.IsDate() || xr.IsDate()) {
          return PipelineError(5624901,
                               "$derivative where the sortBy is a Date requires an 'unit'");
        }
        if (!xl.numeric() || !xr.numeric()) {
          return PipelineError(5624902,
                               "$derivative (with no 'unit') expects the sortBy field to be "
                               "numeric");
        }
        run = xr.NumberDouble() - xl.NumberDouble();
      }
      const Value& yl = in[lo];
      const Value& yr = in[hi - 1];
      if (yl.nullish() || yr.nullish()) {
        return PipelineError(5624903, "$derivative input must not be null or missing");
      }
      if (!yl.numeric() || !yr.numeric()) {
        return PipelineError(16556, "cant $subtract a " + std::string(bson::TypeName(yl.type())) +
                                        " from a " + std::string(bson::TypeName(yr.type())));
      }
      if (run == 0) continue;
      const auto is_decimal = [](const Value& v) { return v.type() == BsonType::kDecimal128; };
      if (is_decimal(yl) || is_decimal(yr) || is_decimal(xl) || is_decimal(xr)) {
        // As $subtract and $divide compute it: in decimal.
        namespace dec = bson::decimal;
        const bson::Decimal128 rise =
            dec::Subtract(dec::FromNumber(yr.element()), dec::FromNumber(yl.element()));
        const bson::Decimal128 decimal_run =
            unit_ms_ ? dec::FromInt64(xr.DateMillis() - xl.DateMillis())
                     : dec::Subtract(dec::FromNumber(xr.element()), dec::FromNumber(xl.element()));
        bson::Decimal128 r = dec::Divide(rise, decimal_run);
        if (unit_ms_) r = dec::Multiply(r, dec::FromInt64(*unit_ms_));
        (*out)[i] = Value::Decimal(r);
        continue;
      }
      double r = (yr.NumberDouble() - yl.NumberDouble()) / run;
      if (unit_ms_) r *= static_cast<double>(*unit_ms_);
      (*out)[i] = Value::Double(r);
    }
    return Status::OK();
  }

 private:
  ExpressionPtr input_;
  Window w_;
  std::optional<int64_t> unit_ms_;
};

// ---- functions over the whole partition in order ----

// Doubles until the first decimal input; from then on the results are decimals, from an average
// also kept in decimal from the start (inputs coerced as $add coerces them).
class ExpMovingAvgFunction : public WindowFunction {
 public:
  ExpMovingAvgFunction(ExpressionPtr input, double alpha, bson::Decimal128 decimal_alpha)
      : input_(std::move(input)), alpha_(alpha), decimal_alpha_(decimal_alpha) {}
  Status Compute(const WindowPartition& p, Variables& vars,
                 std::vector<Value>* out) const override {
    namespace dec = bson::decimal;
    HG_ASSIGN_OR_RETURN(std::vector<Value> in, EvaluateAll(*input_, p, vars));
    out->assign(in.size(), Value::Null());
    const bson::Decimal128 keep = dec::Subtract(dec::FromInt64(1), decimal_alpha_);
    bool have = false, decimal = false;
    double avg = 0;
    bson::Decimal128 decimal_avg{};
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i].numeric()) {
        const double x = in[i].NumberDouble();
        const bson::Decimal128 dx = dec::FromNumber(in[i].element());
        avg = have ? x * alpha_ + avg * (1 - alpha_) : x;
        decimal_avg =
            have ? dec::Add(dec::Multiply(dx, decimal_alpha_), dec::Multiply(decimal_avg, keep))
                 : dx;
        decimal = decimal || in[i].type() == BsonType::kDecimal128;
        have = true;
      }
      if (have) (*out)[i] = decimal ? Value::Decimal(decimal_avg) : Value::Double(avg);
    }
    return Status::OK();
  }

 private:
  ExpressionPtr input_;
  double alpha_;
  bson::Decimal128 decimal_alpha_;
};

class ShiftFunction : public WindowFunction {
 public:
  ShiftFunction(ExpressionPtr output, int64_t by, Value dflt)
      : output_(std::move(output)), by_(by), default_(std::move(dflt)) {}
  Status Compute(const WindowPartition& p, Variables& vars,
                 std::vector<Value>* out) const override {
    const int64_t n = static_cast<int64_t>(p.docs.size());
    out->assign(p.docs.size(), default_);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = i + by_;
      if (j < 0 || j >= n) continue;
      HG_ASSIGN_OR_RETURN(BsonObj d, p.docs.Get(static_cast<size_t>(j)));
      HG_ASSIGN_OR_RETURN((*out)[i], output_->Evaluate(d, vars));
    }
    return Status::OK();
  }

 private:
  ExpressionPtr output_;
  int64_t by_;
  Value default_;
};

class RankFunction : public WindowFunction {
 public:
  enum Kind { kRank, kDenseRank, kDocumentNumber };
  // `strings`: sort values equal under the aggregate's collation are ties.
  RankFunction(Kind kind, const bson::StringComparator* strings) : kind_(kind), strings_(strings) {}
  Status Compute(const WindowPartition& p, Variables&, std::vector<Value>* out) const override {
    out->clear();
    int64_t rank = 0, dense = 0;
    for (size_t i = 0; i < p.docs.size(); ++i) {
      const bool tie = i > 0 && ValuesEqual(NullIfMissing(p.sort_values[i]),
                                            NullIfMissing(p.sort_values[i - 1]), strings_);
      if (!tie) {
        rank = static_cast<int64_t>(i) + 1;
        ++dense;
      }
      const int64_t r = kind_ == kRank        ? rank
                        : kind_ == kDenseRank ? dense
                                              : static_cast<int64_t>(i) + 1;
      out->push_back(Value::IntOrLong(r));
    }
    return Status::OK();
  }

 private:
  Kind kind_;
  const bson::StringComparator* strings_;
};

class LocfFunction : public WindowFunction {
 public:
  explicit LocfFunction(ExpressionPtr input) : input_(std::move(input)) {}
  Status Compute(const WindowPartition& p, Variables& vars,
                 std::vector<Value>* out) const override {
    HG_ASSIGN_OR_RETURN(std::vector<Value> in, EvaluateAll(*input_, p, vars));
    out->clear();
    Value last = Value::Null();
    for (Value& v : in) {
      if (!v.nullish()) last = std::move(v);
      out->push_back(last);
    }
    return Status::OK();
  }

 private:
  ExpressionPtr input_;
};

class LinearFillFunction : public WindowFunction {
 public:
  explicit LinearFillFunction(ExpressionPtr input) : input_(std::move(input)) {}
  Status Compute(const WindowPartition& p, Variables& vars,
                 std::vector<Value>* out) const override {
    HG_ASSIGN_OR_RETURN(std::vector<Value> in, EvaluateAll(*input_, p, vars));
    const size_t n = in.size();
    std::vector<double> xs(n);
    for (size_t i = 0; i < n; ++i) {
      if (!in[i].numeric() && !in[i].nullish()) {
        return Status(ErrorCode::kTypeMismatch,
                      "Value to be filled must be numeric or nullish, but found " +
                          std::string(bson::TypeName(in[i].type())));
      }
      const Value& x = p.sort_values[i];
      if (!x.numeric() && !x.IsDate()) {
        return Status(ErrorCode::kTypeMismatch,
                      "Value of the sortBy field must be numeric or a date, but found " +
                          std::string(bson::TypeName(x.type())));
      }
      if (i > 0) {
        if (ValuesEqual(x, p.sort_values[i - 1])) {
          return PipelineError(6050106, "There can be no repeated values in the sort field");
        }
        if (x.IsDate() != p.sort_values[i - 1].IsDate()) {
          return Status(ErrorCode::kTypeMismatch, "Conflicting sort value types");
        }
      }
      xs[i] = x.IsDate() ? static_cast<double>(x.DateMillis()) : x.NumberDouble();
    }
    out->assign(n, Value::Null());
    size_t prev = n;  // index of the last non-null value, n when none yet
    for (size_t i = 0; i < n; ++i) {
      if (!in[i].nullish()) {
        (*out)[i] = in[i];
        prev = i;
        continue;
      }
      if (prev == n) continue;
      size_t next = i + 1;
      while (next < n && in[next].nullish()) ++next;
      if (next == n) break;
      const auto is_decimal = [](const Value& v) { return v.type() == BsonType::kDecimal128; };
      const std::vector<Value>& xv = p.sort_values;
      if (is_decimal(in[prev]) || is_decimal(in[next]) || is_decimal(xv[i]) ||
          is_decimal(xv[prev]) || is_decimal(xv[next])) {
        // As $subtract/$multiply/$divide/$add compute it: in decimal.
        namespace dec = bson::decimal;
        const auto d = [](const Value& v) {
          return v.IsDate() ? dec::FromInt64(v.DateMillis()) : dec::FromNumber(v.element());
        };
        const bson::Decimal128 y1 = d(in[prev]);
        const bson::Decimal128 slope =
            dec::Divide(dec::Subtract(d(in[next]), y1), dec::Subtract(d(xv[next]), d(xv[prev])));
        (*out)[i] = Value::Decimal(
            dec::Add(y1, dec::Multiply(dec::Subtract(d(xv[i]), d(xv[prev])), slope)));
        continue;
      }
      const double y1 = in[prev].NumberDouble(), y2 = in[next].NumberDouble();
      (*out)[i] = Value::Double(y1 + (xs[i] - xs[prev]) * ((y2 - y1) / (xs[next] - xs[prev])));
    }
    return Status::OK();
  }

 private:
  ExpressionPtr input_;
};

// ---- parsing ----

// The accumulators with options, run over each window through the $group accumulator.
bool IsNaryFunction(std::string_view name) {
  static const std::string_view kNames[] = {"$top",    "$bottom", "$topN", "$bottomN",
                                            "$firstN", "$lastN",  "$minN", "$maxN"};
  for (auto n : kNames) {
    if (n == name) return true;
  }
  return false;
}

bool IsFoldFunction(std::string_view name) {
  static const std::string_view kNames[] = {
      "$sum",        "$avg",           "$min",           "$max",      "$count",
      "$first",      "$last",          "$push",          "$addToSet", "$stdDevPop",
      "$stdDevSamp", "$covariancePop", "$covarianceSamp"};
  for (auto n : kNames) {
    if (n == name) return true;
  }
  return false;
}

bool IsWindowFunctionName(std::string_view name) {
  static const std::string_view kOthers[] = {
      "$derivative",     "$integral", "$expMovingAvg", "$shift",  "$rank",      "$denseRank",
      "$documentNumber", "$locf",     "$linearFill",   "$median", "$percentile"};
  if (IsFoldFunction(name) || IsNaryFunction(name)) return true;
  for (auto n : kOthers) {
    if (n == name) return true;
  }
  return false;
}

// Splits {$fn: arg, window: {...}} into the function element and the optional window element.
Status SplitSpec(const BsonObj& spec, std::string_view fn, BsonElement* arg, BsonElement* window) {
  for (const auto& e : spec) {
    std::string_view n = e.FieldName();
    if (n == "window") {
      if (!window->eoo()) {
        return ParseError("saw multiple 'window' fields in '" + std::string(fn) + "' expression");
      }
      *window = e;
    } else if (n == fn) {
      *arg = e;
    } else if (IsWindowFunctionName(n)) {
      return ParseError("Cannot specify two functions in window function spec");
    } else {
      return ParseError("Window function found an unknown argument: " + std::string(n));
    }
  }
  return Status::OK();
}

Status RequireOneFieldSort(const WindowSortInfo& sort, std::string_view fn) {
  if (!sort.present) return ParseError(std::string(fn) + " requires a sortBy");
  if (sort.num_keys != 1) return ParseError(std::string(fn) + " requires a non-compound sortBy");
  return Status::OK();
}

StatusWith<std::unique_ptr<WindowFunction>> ParseFold(std::string_view fn, const BsonElement& arg,
                                                      Window w, const ParseContext& pc) {
  ExpressionPtr input;
  if (fn == "$count") {
    if (arg.type() != BsonType::kObject || !arg.Obj().IsEmpty()) {
      return ParseError("$count only accepts an empty object as input");
    }
    input = Expression::MakeConstant(Value::Int(1));
  } else if (fn == "$covariancePop" || fn == "$covarianceSamp") {
    if (arg.type() != BsonType::kArray || arg.Obj().NumFields() != 2) {
      return ParseError(std::string(fn) + " requires an array of two expressions");
    }
    HG_ASSIGN_OR_RETURN(input, Expression::ParseExpression(arg, pc));
  } else {
    if (arg.type() == BsonType::kArray) {
      return PipelineError(40237, "The " + std::string(fn) + " accumulator is a unary operator");
    }
    HG_ASSIGN_OR_RETURN(input, Expression::ParseExpression(arg, pc));
  }
  AccumulatorFactory make;
  if (fn == "$covariancePop" || fn == "$covarianceSamp") {
    const bool sample = fn == "$covarianceSamp";
    make = [sample] { return std::make_unique<CovarianceAccumulator>(sample); };
  } else {
    std::string op(fn);
    make = [op, strings = pc.strings()] { return MakeAccumulator(op, strings); };
  }
  InputBuilder inputs = PlainInputs(std::shared_ptr<Expression>(std::move(input)));
  const bool sliding = w.lower.kind != Bound::kUnbounded && w.upper.kind != Bound::kUnbounded;
  if (sliding && (fn == "$sum" || fn == "$count" || fn == "$avg" || fn == "$min" || fn == "$max")) {
    return std::unique_ptr<WindowFunction>(std::make_unique<SlidingFunction>(
        fn == "$count" ? "$sum" : std::string(fn), std::move(inputs), std::move(w), pc.strings()));
  }
  const bool order_free = fn != "$push" && fn != "$addToSet";
  return std::unique_ptr<WindowFunction>(
      std::make_unique<FoldFunction>(std::move(make), std::move(inputs), std::move(w), order_free));
}

// $top $bottom $topN $bottomN $firstN $lastN $minN $maxN: the $group accumulator (same options
// and errors, ParseAccumulator) folded over each window. There is no group key, so an `n` that
// is not constant is evaluated against an empty document.
StatusWith<std::unique_ptr<WindowFunction>> ParseNary(std::string_view fn, const BsonElement& arg,
                                                      Window w, const ParseContext& pc) {
  HG_ASSIGN_OR_RETURN(ParsedAccumulator parsed, ParseAccumulator(fn, arg, pc));
  AccumulatorFactory make = parsed.make;
  if (!make) {
    // Checks n once: it evaluates the same for every window.
    HG_RETURN_IF_ERROR(parsed.make_for_group(Value()).status());
    make = [f = parsed.make_for_group] { return f(Value()).value(); };
  }
  InputBuilder inputs = PlainInputs(std::shared_ptr<Expression>(std::move(parsed.input)));
  return std::unique_ptr<WindowFunction>(
      std::make_unique<FoldFunction>(std::move(make), std::move(inputs), std::move(w), false));
}

// {input: <expr>, unit: <string>} of $derivative and $integral.
Status ParseInputAndUnit(std::string_view fn, const BsonElement& arg, ExpressionPtr* input,
                         std::optional<int64_t>* unit_ms, const ParseContext& pc) {
  if (arg.type() != BsonType::kObject) {
    return ParseError(std::string(fn) + " expects an object, but got a " +
                      std::string(bson::TypeName(arg.type())));
  }
  for (const auto& e : arg.Obj()) {
    if (e.FieldName() == "input") {
      HG_ASSIGN_OR_RETURN(*input, Expression::ParseExpression(e, pc));
    } else if (e.FieldName() == "unit") {
      if (e.type() != BsonType::kString) return ParseError("'unit' must be a string");
      HG_ASSIGN_OR_RETURN(TimeUnit u, ParseTimeUnit(e.Str()));
      *unit_ms = FixedUnitMillis(u);
      if (!*unit_ms) return PipelineError(5490710, "unit must be 'week' or smaller");
    } else {
      return ParseError(std::string(fn) +
                        " got unexpected argument: " + std::string(e.FieldName()));
    }
  }
  if (!*input) return ParseError(std::string(fn) + " requires an 'input' expression");
  return Status::OK();
}

StatusWith<std::unique_ptr<WindowFunction>> ParseIntegral(const BsonElement& arg, Window w,
                                                          const ParseContext& pc) {
  ExpressionPtr input;
  std::optional<int64_t> unit_ms;
  HG_RETURN_IF_ERROR(ParseInputAndUnit("$integral", arg, &input, &unit_ms, pc));
  std::shared_ptr<Expression> e(std::move(input));
  InputBuilder inputs = [e, unit_ms](const WindowPartition& p,
                                     Variables& vars) -> StatusWith<std::vector<Value>> {
    HG_ASSIGN_OR_RETURN(std::vector<Value> ys, EvaluateAll(*e, p, vars));
    std::vector<Value> out;
    for (size_t i = 0; i < ys.size(); ++i) {
      const Value& x = p.sort_values[i];
      if (!ys[i].numeric() || !(x.numeric() || x.IsDate())) {
        return PipelineError(5423900,
                             "The input value of $integral window function must be a vector of 2 "
                             "value, the first value must be numeric or date type and the second "
                             "must be numeric.");
      }
      if (unit_ms && !x.IsDate()) {
        return PipelineError(5423901,
                             "$integral with 'outputUnit' expects the sortBy field to be a Date");
      }
      if (!unit_ms && !x.numeric()) {
        return PipelineError(5423902,
                             "$integral (with no 'outputUnit') expects the sortBy field to be "
                             "numeric");
      }
      const double xd = x.IsDate() ? static_cast<double>(x.DateMillis()) : x.NumberDouble();
      out.push_back(Value::Array({Value::Double(xd), ys[i]}));
    }
    return out;
  };
  const double scale = unit_ms ? static_cast<double>(*unit_ms) : 1.0;
  return std::unique_ptr<WindowFunction>(std::make_unique<FoldFunction>(
      [scale] { return std::make_unique<IntegralAccumulator>(scale); }, std::move(inputs),
      std::move(w), /*order_free=*/false));
}

StatusWith<std::unique_ptr<WindowFunction>> ParseExpMovingAvg(const BsonObj& spec,
                                                              const WindowSortInfo& sort,
                                                              const ParseContext& pc) {
  BsonElement arg = spec["$expMovingAvg"];
  if (spec.NumFields() != 1 || arg.type() != BsonType::kObject) {
    return ParseError("$expMovingAvg must have exactly one argument that is an object");
  }
  BsonObj sub = arg.Obj();
  if (sub.NumFields() != 2 || sub["input"].eoo()) {
    return ParseError(
        "$expMovingAvg sub object must have exactly two fields: An 'input' field, and either an "
        "'N' field or an 'alpha' field");
  }
  if (!sort.present) return ParseError("$expMovingAvg requires an explicit 'sortBy'");
  HG_ASSIGN_OR_RETURN(ExpressionPtr input, Expression::ParseExpression(sub["input"], pc));
  double alpha;
  bson::Decimal128 decimal_alpha{};
  if (BsonElement n = sub["N"]; !n.eoo()) {
    if (!n.IsNumber()) return ParseError("'N' field must be an integer");
    const double d = n.NumberDouble();
    if (d != std::floor(d)) {
      return ParseError(
          "'N' field must be an integer. To use a non-integer, use the 'alpha' "
          "argument instead");
    }
    if (d <= 0) return ParseError("'N' must be greater than zero");
    alpha = 2.0 / (d + 1);
    decimal_alpha = bson::decimal::Divide(bson::decimal::FromInt64(2),
                                          bson::decimal::FromInt64(n.NumberLong() + 1));
  } else if (BsonElement a = sub["alpha"]; !a.eoo()) {
    if (!a.IsNumber()) return ParseError("'alpha' must be a number");
    alpha = a.NumberDouble();
    if (!(alpha > 0 && alpha < 1)) return ParseError("'alpha' must be between 0 and 1 (exclusive)");
    decimal_alpha = bson::decimal::FromNumber(a);
  } else {
    return ParseError("Got unrecognized field in $expMovingAvg");
  }
  return std::unique_ptr<WindowFunction>(
      std::make_unique<ExpMovingAvgFunction>(std::move(input), alpha, decimal_alpha));
}

StatusWith<std::unique_ptr<WindowFunction>> ParseShift(const BsonObj& spec,
                                                       const WindowSortInfo& sort,
                                                       const ParseContext& pc) {
  BsonElement arg;
  for (const auto& e : spec) {
    if (e.FieldName() == "window") return ParseError("$shift does not accept a 'window' field");
    if (e.FieldName() == "$shift") {
      arg = e;
    } else if (IsWindowFunctionName(e.FieldName())) {
      return ParseError("Cannot specify multiple functions in window function spec");
    } else {
      return ParseError("Window function found an unknown argument: " + std::string(e.FieldName()));
    }
  }
  if (arg.type() != BsonType::kObject) return ParseError("Argument to $shift must be an object");
  ExpressionPtr output;
  Value dflt = Value::Null();
  std::optional<int64_t> by;
  for (const auto& e : arg.Obj()) {
    std::string_view n = e.FieldName();
    if (n == "output") {
      HG_ASSIGN_OR_RETURN(output, Expression::ParseExpression(e, pc));
    } else if (n == "default") {
      HG_ASSIGN_OR_RETURN(ExpressionPtr d, Expression::ParseExpression(e, pc));
      if (d->ConstantValue() == nullptr) {
        return ParseError("'$shift:default' expression must yield a constant value.");
      }
      dflt = NullIfMissing(*d->ConstantValue());
    } else if (n == "by") {
      const double d = e.IsNumber() ? e.NumberDouble() : 0.5;
      if (d != std::floor(d) || std::fabs(d) > 2147483647.0) {
        return ParseError("'$shift:by' field must be an integer, but found " +
                          Value::FromElement(e).ToString());
      }
      by = static_cast<int64_t>(d);
    } else {
      return ParseError("Unknown argument in $shift");
    }
  }
  if (!output) return ParseError("$shift requires an 'output' expression.");
  if (!by) return ParseError("$shift requires 'by' as an integer value.");
  if (!sort.present) return ParseError("'$shift' requires a sortBy");
  return std::unique_ptr<WindowFunction>(
      std::make_unique<ShiftFunction>(std::move(output), *by, std::move(dflt)));
}

StatusWith<std::unique_ptr<WindowFunction>> ParseRank(std::string_view fn, const BsonObj& spec,
                                                      const WindowSortInfo& sort,
                                                      const ParseContext& pc) {
  if (spec.NumFields() != 1) {
    return PipelineError(5371601, "Rank style window functions take no other arguments");
  }
  BsonElement arg = spec.FirstElement();
  if (arg.type() != BsonType::kObject || !arg.Obj().IsEmpty()) {
    return PipelineError(5371603, std::string(fn) + " must be specified with '{}' as the value");
  }
  if (!sort.present || sort.num_keys != 1) {
    return PipelineError(5371602, std::string(fn) +
                                      " must be specified with a top level sortBy expression "
                                      "with exactly one element");
  }
  auto kind = fn == "$rank"        ? RankFunction::kRank
              : fn == "$denseRank" ? RankFunction::kDenseRank
                                   : RankFunction::kDocumentNumber;
  return std::unique_ptr<WindowFunction>(std::make_unique<RankFunction>(kind, pc.strings()));
}

// $locf and $linearFill: one expression argument, no window.
StatusWith<std::unique_ptr<WindowFunction>> ParseFill(std::string_view fn, const BsonObj& spec,
                                                      const WindowSortInfo& sort,
                                                      const ParseContext& pc) {
  BsonElement arg, window;
  HG_RETURN_IF_ERROR(SplitSpec(spec, fn, &arg, &window));
  if (!window.eoo()) return ParseError("'window' field is not allowed in " + std::string(fn));
  HG_ASSIGN_OR_RETURN(ExpressionPtr input, Expression::ParseExpression(arg, pc));
  if (fn == "$locf")
    return std::unique_ptr<WindowFunction>(std::make_unique<LocfFunction>(std::move(input)));
  if (!sort.present || sort.num_keys != 1) {
    return PipelineError(605001, std::string(fn) +
                                     " must be specified with a top level sortBy expression "
                                     "with exactly one element");
  }
  return std::unique_ptr<WindowFunction>(std::make_unique<LinearFillFunction>(std::move(input)));
}

}  // namespace

StatusWith<std::unique_ptr<WindowFunction>> ParseWindowFunction(const BsonObj& spec,
                                                                const WindowSortInfo& sort,
                                                                const ParseContext& pc) {
  std::string_view fn;
  for (const auto& e : spec) {
    std::string_view n = e.FieldName();
    if (n.empty() || n[0] != '$') continue;
    if (!IsWindowFunctionName(n)) {
      return ParseError("Unrecognized window function, " + std::string(n));
    }
    fn = n;
    break;
  }
  if (fn.empty()) {
    return ParseError(
        "Expected a $-prefixed window function" +
        (spec.IsEmpty() ? std::string() : ", " + std::string(spec.FirstElement().FieldName())));
  }
  if (fn == "$rank" || fn == "$denseRank" || fn == "$documentNumber") {
    return ParseRank(fn, spec, sort, pc);
  }
  if (fn == "$expMovingAvg") return ParseExpMovingAvg(spec, sort, pc);
  if (fn == "$shift") return ParseShift(spec, sort, pc);
  if (fn == "$locf" || fn == "$linearFill") return ParseFill(fn, spec, sort, pc);

  BsonElement arg, window_elem;
  HG_RETURN_IF_ERROR(SplitSpec(spec, fn, &arg, &window_elem));
  if (fn == "$derivative" || fn == "$integral") {
    HG_RETURN_IF_ERROR(RequireOneFieldSort(sort, fn));
  }
  Window w;
  if (!window_elem.eoo()) {
    HG_ASSIGN_OR_RETURN(w, ParseWindowBounds(window_elem, sort));
  }
  if (fn == "$derivative") {
    ExpressionPtr input;
    std::optional<int64_t> unit_ms;
    HG_RETURN_IF_ERROR(ParseInputAndUnit(fn, arg, &input, &unit_ms, pc));
    if (window_elem.eoo()) return ParseError("$derivative requires explicit window bounds");
    return std::unique_ptr<WindowFunction>(
        std::make_unique<DerivativeFunction>(std::move(input), std::move(w), unit_ms));
  }
  if (fn == "$integral") return ParseIntegral(arg, std::move(w), pc);
  if (fn == "$median" || fn == "$percentile") return ParseQuantile(fn, arg, std::move(w), pc);
  if (fn == "$first" || fn == "$last") {
    if (arg.type() == BsonType::kArray) {
      return PipelineError(40237, "The " + std::string(fn) + " accumulator is a unary operator");
    }
    HG_ASSIGN_OR_RETURN(ExpressionPtr input, Expression::ParseExpression(arg, pc));
    return std::unique_ptr<WindowFunction>(
        std::make_unique<EndpointFunction>(std::move(input), std::move(w), fn == "$first"));
  }
  if (IsNaryFunction(fn)) return ParseNary(fn, arg, std::move(w), pc);
  return ParseFold(fn, arg, std::move(w), pc);
}

}  // namespace hourglass::pipeline
