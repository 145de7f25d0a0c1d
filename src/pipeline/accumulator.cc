#include "pipeline/accumulator.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <unordered_set>
#include <vector>

#include "bson/bson_compare.h"
#include "bson/decimal128.h"
#include "bson/key_string.h"
#include "pipeline/double_double_sum.h"
#include "pipeline/errors.h"

namespace hourglass::pipeline {

using bson::BsonType;

namespace {

// $sum with $add's promotion: int until overflow, then long, then double; decimal if any decimal.
// As in MongoDB, the non-decimal numbers are summed as a double-double (DoubleDoubleSum: a
// double result is MongoDB's to the bit), decimals apart in decimal128, and the others join
// them at the end (an exact integer total exactly, a double-double's two parts to 34 digits).
class SumAccumulator : public Accumulator {
 public:
  explicit SumAccumulator(bool count_only = false) : count_only_(count_only) {}
  Status Process(const Value& v) override { return ProcessElement(v.element()); }
  Status ProcessElement(const bson::BsonElement& e) override {
    if (count_only_) {
      Add(BsonType::kInt32, 1, 1);
    } else if (e.type() == BsonType::kDecimal128) {
      decimal_ = true;
      dec_ = bson::decimal::Add(dec_, e.Decimal());
    } else if (e.IsNumber()) {  // $sum ignores non-numeric values
      Add(e.type(), e.NumberDouble(), e.NumberLong());
    }
    return Status::OK();
  }
  Status ProcessElements(const bson::BsonElement* cells, const uint32_t* rows, size_t n) override {
    for (size_t i = 0; i < n;) {
      const size_t doubles = count_only_ ? 0 : AddDoubles(cells, rows + i, n - i);
      i += doubles;
      if (doubles == 0) HG_RETURN_IF_ERROR(ProcessElement(cells[rows[i++]]));
    }
    return Status::OK();
  }
  Status ProcessNumbers(const NumberColumn& col, const uint32_t* rows, size_t n) override {
    if (count_only_) return Accumulator::ProcessNumbers(col, rows, n);
    AddNumbers(col, rows, n);
    return Status::OK();
  }
  Status ProcessRepeated(const Value& v, size_t n) override {
    if (!AddRepeated(count_only_ ? Value::Int(1) : v, n)) return Accumulator::ProcessRepeated(v, n);
    return Status::OK();
  }
  // Adds the integer v n times as one addition of v * n when that leaves the same state
  // (AddExactIntegers). Returns false (nothing added) otherwise.
  bool AddRepeated(const Value& v, size_t n) {
    if (v.type() != BsonType::kInt32 && v.type() != BsonType::kInt64) return false;
    int64_t total = 0;
    if (__builtin_mul_overflow(v.NumberLong(), static_cast<int64_t>(n), &total)) return false;
    return AddExactIntegers(v.type(), total, Magnitude(total), n);
  }
  // Adds `count` integers of type t, totalling `total` with magnitudes totalling `magnitude`, as
  // one addition of the total, when that leaves the state their single additions would: the
  // double-double holds an integer with no addend and every partial sum stays exact
  // (DoubleDoubleSum::ExactIntegerHeadroom; the exact integer total, when kept, is the same
  // integer, so it cannot overflow either). Returns false (nothing added) otherwise.
  bool AddExactIntegers(BsonType t, int64_t total, uint64_t magnitude, size_t count) {
    const int64_t room = dd_.ExactIntegerHeadroom();
    if (room < 0 || magnitude > static_cast<uint64_t>(room)) return false;
    if (count > 0) Add(t, static_cast<double>(total), total);
    return true;
  }
  static uint64_t Magnitude(int64_t v) {
    return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  }
  DoubleDoubleSum* DoubleLane() override { return count_only_ ? nullptr : &dd_; }
  void DoublesAdded(size_t n) override {
    if (n == 0) return;
    is_double_ = true;
    exact_ = false;
  }
  // Add() of each present number among col's rows[0..n), in order (dates are no numbers: none);
  // returns how many there were. Doubles are totalled in a register, as by AddDoubles.
  size_t AddNumbers(const NumberColumn& col, const uint32_t* rows, size_t n) {
    size_t count = 0;
    if (col.type == BsonType::kDouble) {
      DoubleDoubleSum total = dd_;
      if (col.present == nullptr) {
        for (size_t i = 0; i < n; ++i) total.Add(col.Double(rows[i]));
        count = n;
      } else {
        for (size_t i = 0; i < n; ++i) {
          if (!col.Present(rows[i])) continue;
          total.Add(col.Double(rows[i]));
          ++count;
        }
      }
      if (count > 0) {
        dd_ = total;
        is_double_ = true;
        exact_ = false;
      }
    } else if (col.type == BsonType::kInt32 || col.type == BsonType::kInt64) {
      if (AddIntegersAtOnce(col, rows, n, &count)) return count;
      for (size_t i = 0; i < n; ++i) {
        if (!col.Present(rows[i])) continue;
        const int64_t v = col.Int(rows[i]);
        Add(col.type, static_cast<double>(v), v);
        ++count;
      }
    }
    return count;
  }
  // Adds the integers of col's rows[0..n) as one addition of their total when that leaves the
  // same state (AddExactIntegers). Returns false (nothing added) otherwise; *count is the
  // integers added.
  bool AddIntegersAtOnce(const NumberColumn& col, const uint32_t* rows, size_t n, size_t* count) {
    const int64_t room = dd_.ExactIntegerHeadroom();
    if (room < 0) return false;
    int64_t total = 0;  // cannot overflow: its magnitude stays under 2^52
    uint64_t magnitude = 0;
    size_t present = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!col.Present(rows[i])) continue;
      const int64_t v = col.Int(rows[i]);
      magnitude += Magnitude(v);
      if (magnitude > static_cast<uint64_t>(room)) return false;
      total += v;
      ++present;
    }
    *count = present;
    return AddExactIntegers(col.type, total, magnitude, present);
  }
  // Adds the leading run of doubles among cells[rows[0..n)] and returns its length: Add() of
  // each, in order, with the total kept in registers rather than in the accumulator.
  size_t AddDoubles(const bson::BsonElement* cells, const uint32_t* rows, size_t n) {
    DoubleDoubleSum total = dd_;
    size_t i = 0;
    for (; i < n && cells[rows[i]].type() == BsonType::kDouble; ++i)
      total.Add(cells[rows[i]].Double());
    if (i > 0) {
      dd_ = total;
      is_double_ = true;
      exact_ = false;
    }
    return i;
  }
  Value Finalize() const override {
    if (decimal_) return Value::Decimal(DecimalTotal());
    if (is_double_ || !exact_) return Value::Double(dd_.Double());
    return is_long_ ? Value::Long(lng_) : Value::IntOrLong(lng_);
  }
  bool decimal() const { return decimal_; }
  // The non-decimal total as a double (as MongoDB's $avg divides it).
  double DoubleTotal() const { return dd_.Double(); }
  // The total as a decimal (any kind of sum).
  bson::Decimal128 DecimalTotal() const {
    namespace dec = bson::decimal;
    constexpr auto k34 = dec::DoubleDigits::k34;
    if (!is_double_ && exact_) return dec::Add(dec_, dec::FromInt64(lng_));
    if (!dd_.Finite()) return dec::Add(dec_, dec::FromDouble(dd_.Plain(), k34));
    return dec::Add(
        dec_, dec::Add(dec::FromDouble(dd_.Leading(), k34), dec::FromDouble(dd_.Addend(), k34)));
  }
  Value PartialState() const override {
    const int flags =
        (decimal_ ? 1 : 0) | (is_double_ ? 2 : 0) | (is_long_ ? 4 : 0) | (exact_ ? 8 : 0);
    const bool finite = dd_.Finite();
    return Value::Array({Value::Double(finite ? dd_.Leading() : dd_.Double()), Value::Long(lng_),
                         Value::Int(flags), Value::Decimal(dec_),
                         Value::Double(finite ? dd_.Addend() : 0)});
  }
  Status MergePartial(const Value& partial) override {
    const std::vector<Value> p = partial.ArrayValues();
    const int64_t flags = p[2].NumberLong();
    dd_.Add(p[0].NumberDouble());
    dd_.Add(p[4].NumberDouble());
    decimal_ = decimal_ || (flags & 1);
    is_double_ = is_double_ || (flags & 2);
    is_long_ = is_long_ || (flags & 4);
    if (exact_ && (flags & 8)) {
      exact_ = !__builtin_add_overflow(lng_, p[1].NumberLong(), &lng_);
    } else {
      exact_ = false;
    }
    dec_ = bson::decimal::Add(dec_, p[3].element().Decimal());
    return Status::OK();
  }

 private:
  // Adds a non-decimal number of type `t`, given as a double and (for integers) as an int64.
  void Add(BsonType t, double d, int64_t l) {
    if (t == BsonType::kInt64) {
      dd_.AddLong(l);
    } else {
      dd_.Add(d);
    }
    if (t == BsonType::kDouble) is_double_ = true;
    if (t == BsonType::kInt64) is_long_ = true;
    if (exact_ && (t == BsonType::kInt32 || t == BsonType::kInt64)) {
      exact_ = !__builtin_add_overflow(lng_, l, &lng_);
    } else {
      exact_ = false;
    }
  }
  bool count_only_;
  bool decimal_ = false, is_double_ = false, is_long_ = false, exact_ = true;
  int64_t lng_ = 0;
  DoubleDoubleSum dd_;
  bson::Decimal128 dec_ = bson::decimal::FromInt64(0);
};

// $avg: the $sum of the numbers over their count; a decimal when any number is a decimal.
class AvgAccumulator : public Accumulator {
 public:
  Status Process(const Value& v) override { return ProcessElement(v.element()); }
  Status ProcessElement(const bson::BsonElement& e) override {
    if (!e.IsNumber()) return Status::OK();
    ++n_;
    return sum_.ProcessElement(e);
  }
  Status ProcessElements(const bson::BsonElement* cells, const uint32_t* rows, size_t n) override {
    for (size_t i = 0; i < n;) {
      const size_t doubles = sum_.AddDoubles(cells, rows + i, n - i);
      n_ += static_cast<int64_t>(doubles);
      i += doubles;
      if (doubles == 0) HG_RETURN_IF_ERROR(ProcessElement(cells[rows[i++]]));
    }
    return Status::OK();
  }
  Status ProcessNumbers(const NumberColumn& col, const uint32_t* rows, size_t n) override {
    n_ += static_cast<int64_t>(sum_.AddNumbers(col, rows, n));
    return Status::OK();
  }
  Status ProcessRepeated(const Value& v, size_t n) override {
    if (!v.numeric() || !sum_.AddRepeated(v, n)) return Accumulator::ProcessRepeated(v, n);
    n_ += static_cast<int64_t>(n);
    return Status::OK();
  }
  DoubleDoubleSum* DoubleLane() override { return sum_.DoubleLane(); }
  void DoublesAdded(size_t n) override {
    sum_.DoublesAdded(n);
    n_ += static_cast<int64_t>(n);
  }
  Value Finalize() const override {
    if (n_ == 0) return Value::Null();
    if (sum_.decimal()) {
      return Value::Decimal(
          bson::decimal::Divide(sum_.DecimalTotal(), bson::decimal::FromInt64(n_)));
    }
    return Value::Double(sum_.DoubleTotal() / static_cast<double>(n_));
  }
  Value PartialState() const override {
    return Value::Array({sum_.PartialState(), Value::Long(n_)});
  }
  Status MergePartial(const Value& partial) override {
    const std::vector<Value> p = partial.ArrayValues();
    n_ += p[1].NumberLong();
    return sum_.MergePartial(p[0]);
  }

 private:
  SumAccumulator sum_;
  int64_t n_ = 0;
};

class MinMaxAccumulator : public Accumulator {
 public:
  MinMaxAccumulator(bool is_min, const bson::StringComparator* strings)
      : is_min_(is_min), strings_(strings) {}
  Status Process(const Value& v) override {
    if (v.nullish()) return Status::OK();  // $min/$max ignore null and missing
    const int c = best_.missing() ? 0 : Compare(v, best_, strings_);
    if (best_.missing() || (is_min_ ? c < 0 : c > 0)) best_ = v;
    return Status::OK();
  }
  Status ProcessElement(const bson::BsonElement& e) override {
    const BsonType t = e.type();
    if (t == BsonType::kEOO || t == BsonType::kNull || t == BsonType::kUndefined) {
      return Status::OK();
    }
    if (!best_.missing()) {
      const int c = bson::CompareElementValues(e, best_.element(), strings_);
      if (is_min_ ? c >= 0 : c <= 0) return Status::OK();
    }
    best_ = Value::FromElement(e);  // a copy only when it is the new extreme
    return Status::OK();
  }
  Status ProcessElements(const bson::BsonElement* cells, const uint32_t* rows, size_t n) override {
    // Runs of doubles are compared as doubles while the extreme so far is a double; NaN (the
    // least number in MongoDB's order) and other types go through ProcessElement.
    size_t i = 0;
    while (i < n) {
      const bson::BsonElement first = cells[rows[i]];
      if (first.type() == BsonType::kDouble && !std::isnan(first.Double()) &&
          best_.type() == BsonType::kDouble && !std::isnan(best_.element().Double())) {
        double best = best_.element().Double();
        bool changed = false;
        for (; i < n; ++i) {
          const bson::BsonElement& e = cells[rows[i]];
          if (e.type() != BsonType::kDouble) break;
          const double d = e.Double();
          if (std::isnan(d)) break;
          if (is_min_ ? d < best : d > best) {
            best = d;
            changed = true;
          }
        }
        if (changed) best_ = Value::Double(best);
        continue;
      }
      HG_RETURN_IF_ERROR(ProcessElement(first));
      ++i;
    }
    return Status::OK();
  }
  Status ProcessNumbers(const NumberColumn& col, const uint32_t* rows, size_t n) override {
    // While the extreme so far has the column's type (and, for doubles, is not NaN), the rows
    // are compared as numbers of that type; the first value, NaN and an extreme of another type
    // go through ProcessElement. Missing rows are ignored, as ProcessElement ignores them.
    const BsonType t = col.type;
    CellScratch scratch;
    size_t i = 0;
    while (i < n) {
      if (!col.Present(rows[i])) {
        ++i;
        continue;
      }
      if (best_.type() != t || (t == BsonType::kDouble && (std::isnan(best_.element().Double()) ||
                                                           std::isnan(col.Double(rows[i]))))) {
        HG_RETURN_IF_ERROR(ProcessElement(col.Element(rows[i++], scratch)));
        continue;
      }
      bool changed = false;
      if (t == BsonType::kDouble) {
        double best = best_.element().Double();
        for (; i < n; ++i) {
          if (!col.Present(rows[i])) continue;
          const double d = col.Double(rows[i]);
          if (std::isnan(d)) break;
          if (is_min_ ? d < best : d > best) {
            best = d;
            changed = true;
          }
        }
        if (changed) best_ = Value::Double(best);
        continue;
      }
      const bson::BsonElement e = best_.element();
      int64_t best = t == BsonType::kInt32   ? e.Int32()
                     : t == BsonType::kInt64 ? e.Int64()
                                             : e.DateMillis();
      for (; i < n; ++i) {
        if (!col.Present(rows[i])) continue;
        const int64_t v = col.Int(rows[i]);
        if (is_min_ ? v < best : v > best) {
          best = v;
          changed = true;
        }
      }
      if (changed) {
        best_ = t == BsonType::kInt32   ? Value::Int(static_cast<int32_t>(best))
                : t == BsonType::kInt64 ? Value::Long(best)
                                        : Value::Date(best);
      }
    }
    return Status::OK();
  }
  Value Finalize() const override { return best_.missing() ? Value::Null() : best_; }
  int64_t ApproxBytes() const override { return 32 + best_.element().size(); }
  Status MergePartial(const Value& partial) override { return Process(partial); }

 private:
  bool is_min_;
  const bson::StringComparator* strings_;
  Value best_;
};

class FirstLastAccumulator : public Accumulator {
 public:
  explicit FirstLastAccumulator(bool is_first) : is_first_(is_first) {}
  Status Process(const Value& v) override {
    if (is_first_ && seen_) return Status::OK();
    seen_ = true;
    value_ = v;
    return Status::OK();
  }
  // Of a run of rows only the first ($first) or the last ($last) counts.
  Status ProcessElements(const bson::BsonElement* cells, const uint32_t* rows, size_t n) override {
    if (n == 0 || (is_first_ && seen_)) return Status::OK();
    return ProcessElement(cells[rows[is_first_ ? 0 : n - 1]]);
  }
  Status ProcessNumbers(const NumberColumn& col, const uint32_t* rows, size_t n) override {
    if (n == 0 || (is_first_ && seen_)) return Status::OK();
    CellScratch scratch;
    return ProcessElement(col.Element(rows[is_first_ ? 0 : n - 1], scratch));
  }
  Value Finalize() const override { return value_.missing() ? Value::Null() : value_; }
  int64_t ApproxBytes() const override { return 32 + value_.element().size(); }
  // [seen, value] (a missing value, which Finalize turns into null anyway, is kept as null).
  Value PartialState() const override { return Value::Array({Value::Bool(seen_), Finalize()}); }
  Status MergePartial(const Value& partial) override {
    const std::vector<Value> p = partial.ArrayValues();
    if (!p[0].element().Bool()) return Status::OK();
    return Process(p[1]);
  }

 private:
  bool is_first_;
  bool seen_ = false;
  Value value_;
};

// $push keeps its values in input order; $addToSet keeps the first of each set of equal
// values (under the collation), found by their key strings (bson/key_string.h), in the order
// they came. The values are kept as the elements of the array being built, so that a value
// costs a copy of its bytes rather than a Value of its own.
class PushAccumulator : public Accumulator {
 public:
  PushAccumulator(bool unique, const bson::StringComparator* strings)
      : unique_(unique), strings_(strings) {}
  Status Process(const Value& v) override { return ProcessElement(v.element()); }
  Status ProcessElement(const bson::BsonElement& e) override {
    if (e.eoo()) return Status::OK();
    if (unique_) {
      bson::KeyStringBuilder key;
      key.AppendElement(e, /*descending=*/false, strings_);
      auto [it, inserted] = seen_.insert(key.Release());
      if (!inserted) return Status::OK();
      bytes_ += 32 + static_cast<int64_t>(it->size());
    }
    const std::string index = std::to_string(n_++);
    items_.AppendElementAs(e, index);
    bytes_ += 16 + static_cast<int64_t>(e.size());
    return Status::OK();
  }
  Value Finalize() const override {
    bson::BsonBuilder items = items_;
    bson::BsonBuilder holder;
    holder.AppendArray("", items.Obj());
    return Value::FromHolder(holder.Obj());
  }
  int64_t ApproxBytes() const override { return 32 + bytes_; }
  Status MergePartial(const Value& partial) override {
    for (const bson::BsonElement& e : partial.Obj()) HG_RETURN_IF_ERROR(ProcessElement(e));
    return Status::OK();
  }

 private:
  bool unique_;
  const bson::StringComparator* strings_;
  bson::BsonBuilder items_;  // {"0": v0, "1": v1, ...}
  int64_t n_ = 0;
  std::unordered_set<std::string> seen_;  // $addToSet: the key strings of the values kept
  int64_t bytes_ = 0;
};

// Welford's online variance.
class StdDevAccumulator : public Accumulator {
 public:
  explicit StdDevAccumulator(bool sample) : sample_(sample) {}
  Status Process(const Value& v) override { return ProcessElement(v.element()); }
  Status ProcessElement(const bson::BsonElement& e) override {
    if (e.IsNumber()) Add(e.NumberDouble());
    return Status::OK();
  }
  Status ProcessNumbers(const NumberColumn& col, const uint32_t* rows, size_t n) override {
    if (col.type == BsonType::kDouble || col.type == BsonType::kInt32 ||
        col.type == BsonType::kInt64) {
      for (size_t i = 0; i < n; ++i) {
        if (!col.Present(rows[i])) continue;
        Add(col.type == BsonType::kDouble ? col.Double(rows[i])
                                          : static_cast<double>(col.Int(rows[i])));
      }
      return Status::OK();
    }
    return Accumulator::ProcessNumbers(col, rows, n);
  }
  void Add(double x) {
    ++n_;
    double delta = x - mean_;
    mean_ += delta / static_cast<double>(n_);
    m2_ += delta * (x - mean_);
  }
  Value Finalize() const override {
    const int64_t d = sample_ ? n_ - 1 : n_;
    if (d <= 0) return Value::Null();
    return Value::Double(std::sqrt(m2_ / static_cast<double>(d)));
  }
  Value PartialState() const override {
    return Value::Array({Value::Long(n_), Value::Double(mean_), Value::Double(m2_)});
  }
  // Chan et al.'s pairwise combination of two (count, mean, M2) summaries.
  Status MergePartial(const Value& partial) override {
    const std::vector<Value> p = partial.ArrayValues();
    const int64_t nb = p[0].NumberLong();
    if (nb == 0) return Status::OK();
    const double mean_b = p[1].NumberDouble(), m2_b = p[2].NumberDouble();
    const int64_t n = n_ + nb;
    const double delta = mean_b - mean_;
    mean_ += delta * static_cast<double>(nb) / static_cast<double>(n);
    m2_ += m2_b + delta * delta * static_cast<double>(n_) * static_cast<double>(nb) /
                      static_cast<double>(n);
    n_ = n;
    return Status::OK();
  }

 private:
  bool sample_;
  int64_t n_ = 0;
  double mean_ = 0, m2_ = 0;
};

class MergeObjectsAccumulator : public Accumulator {
 public:
  Status Process(const Value& v) override {
    if (v.nullish()) return Status::OK();
    if (!v.IsObject()) {
      return PipelineError(40400, "$mergeObjects requires object inputs, but input " +
                                      v.ToString() + " is of type " +
                                      std::string(bson::TypeName(v.type())));
    }
    for (const auto& e : v.Obj()) {
      bool replaced = false;
      for (auto& [n, old] : fields_) {
        if (n == e.FieldName()) {
          old = Value::FromElement(e);
          replaced = true;
          break;
        }
      }
      if (!replaced) fields_.emplace_back(std::string(e.FieldName()), Value::FromElement(e));
    }
    return Status::OK();
  }
  Value Finalize() const override {
    bson::BsonBuilder b;
    for (const auto& [n, v] : fields_) v.AppendTo(b, n);
    return Value::Object(b.Obj());
  }
  Status MergePartial(const Value& partial) override { return Process(partial); }
  int64_t ApproxBytes() const override {
    int64_t n = 32;
    for (const auto& [name, v] : fields_) n += 16 + name.size() + v.element().size();
    return n;
  }

 private:
  std::vector<std::pair<std::string, Value>> fields_;
};

}  // namespace

Status Accumulator::MergePartial(const Value&) {
  return Status(ErrorCode::kInternalError, "this accumulator's state cannot be merged");
}

bool IsAccumulatorName(std::string_view op) {
  static const std::string_view kNames[] = {"$sum",   "$avg",       "$min",        "$max",
                                            "$first", "$last",      "$push",       "$addToSet",
                                            "$count", "$stdDevPop", "$stdDevSamp", "$mergeObjects"};
  for (auto n : kNames) {
    if (n == op) return true;
  }
  return false;
}

std::unique_ptr<Accumulator> MakeAccumulator(std::string_view op,
                                             const bson::StringComparator* strings) {
  if (op == "$sum") return std::make_unique<SumAccumulator>();
  if (op == "$count") return std::make_unique<SumAccumulator>(true);
  if (op == "$avg") return std::make_unique<AvgAccumulator>();
  if (op == "$min") return std::make_unique<MinMaxAccumulator>(true, strings);
  if (op == "$max") return std::make_unique<MinMaxAccumulator>(false, strings);
  if (op == "$first") return std::make_unique<FirstLastAccumulator>(true);
  if (op == "$last") return std::make_unique<FirstLastAccumulator>(false);
  if (op == "$push") return std::make_unique<PushAccumulator>(false, strings);
  if (op == "$addToSet") return std::make_unique<PushAccumulator>(true, strings);
  if (op == "$stdDevPop") return std::make_unique<StdDevAccumulator>(false);
  if (op == "$stdDevSamp") return std::make_unique<StdDevAccumulator>(true);
  if (op == "$mergeObjects") return std::make_unique<MergeObjectsAccumulator>();
  return nullptr;
}

}  // namespace hourglass::pipeline
