#include "timeseries/control_group.h"

#include <algorithm>
#include <cstdint>

#include "timeseries/bucket_compression.h"
#include "timeseries/bucket_unpacker.h"

namespace hourglass::timeseries {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// Field names of the summary documents: "m" (the meta value), "a<i>" (accumulator i).
std::string AccName(size_t i) { return "a" + std::to_string(i); }

// "$f" with f a top-level name (no dots, not a variable), else empty.
std::string TopLevelPath(const BsonElement& e) {
  if (e.type() != BsonType::kString) return {};
  std::string_view s = e.Str();
  if (s.size() < 2 || s[0] != '$' || s[1] == '$' || s.find('.') != std::string_view::npos) {
    return {};
  }
  return std::string(s.substr(1));
}

// {$sum: 1} with an int 1: its result is an int (a long on overflow), as a sum of int counts is.
bool IsOne(const BsonElement& e) { return e.type() == BsonType::kInt32 && e.Int32() == 1; }

// A control bound that equals the accumulator's result (see the header comment).
bool Summarizable(const BsonElement& e) {
  switch (e.type()) {
    case BsonType::kNull:
    case BsonType::kUndefined:
    case BsonType::kMinKey:
    case BsonType::kMaxKey:
    case BsonType::kObject:
    case BsonType::kArray:
      return false;
    default:
      return true;
  }
}

}  // namespace

std::optional<ControlGroup> ControlGroup::Make(const BsonObj& group_spec,
                                               const std::string& time_field,
                                               const std::optional<std::string>& meta_field) {
  ControlGroup g;
  g.time_field_ = time_field;
  g.meta_field_ = meta_field;
  BsonBuilder merge;
  bool have_id = false;
  for (BsonElement e : group_spec) {
    std::string_view name = e.FieldName();
    if (name == "_id") {
      have_id = true;
      if (!g.RewriteKey(e, "_id", merge)) return std::nullopt;
      continue;
    }
    if (e.type() != BsonType::kObject || e.Obj().NumFields() != 1) return std::nullopt;
    BsonElement acc = e.Obj().FirstElement();
    std::string_view op = acc.FieldName();
    Acc a;
    if (op == "$min" || op == "$max") {
      a.op = op == "$min" ? Op::kMin : Op::kMax;
      a.field = TopLevelPath(acc);
      if (a.field.empty()) return std::nullopt;
    } else if ((op == "$sum" && IsOne(acc)) ||
               (op == "$count" && acc.type() == BsonType::kObject && acc.Obj().IsEmpty())) {
      a.op = Op::kCount;
    } else {
      return std::nullopt;
    }
    size_t i = g.accs_.size();
    size_t o = merge.OpenObject(name);
    merge.AppendString(a.op == Op::kMin   ? "$min"
                       : a.op == Op::kMax ? "$max"
                                          : "$sum",
                       "$" + AccName(i));
    merge.Close(o);
    if (!a.field.empty() &&
        std::find(g.fields_.begin(), g.fields_.end(), a.field) == g.fields_.end()) {
      g.fields_.push_back(a.field);
    }
    g.accs_.push_back(std::move(a));
  }
  if (!have_id) return std::nullopt;
  if (g.id_uses_meta_ &&
      std::find(g.fields_.begin(), g.fields_.end(), *meta_field) == g.fields_.end()) {
    g.fields_.push_back(*meta_field);
  }
  if (g.time_key_ && std::find(g.fields_.begin(), g.fields_.end(), time_field) == g.fields_.end()) {
    g.fields_.push_back(time_field);
  }
  g.merge_group_ = merge.Obj();
  return g;
}

bool ControlGroup::RewriteKey(const BsonElement& e, std::string_view name, BsonBuilder& out) {
  if (e.type() == BsonType::kString && !e.Str().empty() && e.Str()[0] == '$') {
    // "$M" or "$M.sub": the same path under the summary's "m".
    std::string_view path = e.Str().substr(1);
    if (!meta_field_ || path.empty() || path[0] == '$') return false;
    std::string_view top = path.substr(0, path.find('.'));
    if (top != *meta_field_) return false;
    id_uses_meta_ = true;
    out.AppendString(name, "$m" + std::string(path.substr(top.size())));
    return true;
  }
  if (e.type() == BsonType::kArray) return false;
  if (e.type() != BsonType::kObject) {
    out.AppendElement(e);  // a constant
    return true;
  }
  BsonObj obj = e.Obj();
  if (obj.IsEmpty()) {
    out.AppendElementAs(e, name);
    return true;
  }
  std::string_view first = obj.FirstElement().FieldName();
  if (first == "$dateTrunc" && obj.NumFields() == 1) {
    // {$dateTrunc: {date: "$T", unit, binSize, timezone, startOfWeek}} with constant options:
    // non-decreasing in the date, so equal at a bucket's earliest and latest time means equal
    // for all its measurements.
    BsonElement spec = obj.FirstElement();
    if (spec.type() != BsonType::kObject) return false;
    size_t o = out.OpenObject(name);
    size_t d = out.OpenObject("$dateTrunc");
    bool date_ok = false;
    for (BsonElement f : spec.Obj()) {
      if (f.FieldName() == "date") {
        if (f.type() != BsonType::kString || f.Str() != "$" + time_field_) return false;
        out.AppendString("date", "$tmin");
        date_ok = true;
        continue;
      }
      if (f.FieldName() != "unit" && f.FieldName() != "binSize" && f.FieldName() != "timezone" &&
          f.FieldName() != "startOfWeek") {
        return false;
      }
      if (f.IsObjectOrArray() ||
          (f.type() == BsonType::kString && !f.Str().empty() && f.Str()[0] == '$')) {
        return false;  // options must be constants
      }
      out.AppendElement(f);
    }
    out.Close(d);
    out.Close(o);
    time_key_ = true;
    return date_ok;
  }
  if (first[0] == '$') return false;  // other operators: not analysed
  // An object of keys {a: <key>, b: <key>...}.
  size_t o = out.OpenObject(name);
  for (BsonElement f : obj) {
    if (!RewriteKey(f, f.FieldName(), out)) return false;
  }
  out.Close(o);
  return true;
}

std::optional<BsonObj> ControlGroup::Summarize(const BsonObj& bucket,
                                               const SameKey& same_key) const {
  BsonElement control = bucket["control"];
  if (control.type() != BsonType::kObject) return std::nullopt;
  BsonElement min_e = control.Obj()["min"], max_e = control.Obj()["max"];
  if (min_e.type() != BsonType::kObject || max_e.type() != BsonType::kObject) return std::nullopt;
  BsonObj min = min_e.Obj(), max = max_e.Obj();
  BsonElement meta = bucket["meta"];
  // The time column's range and the row count, each walked at most once per bucket.
  std::optional<std::optional<std::pair<int64_t, int64_t>>> range_memo;
  auto time_range = [&]() -> const std::optional<std::pair<int64_t, int64_t>>& {
    if (!range_memo) range_memo = TimeRange(bucket);
    return *range_memo;
  };
  std::optional<StatusWith<int64_t>> rows_memo;
  auto row_count = [&]() -> const StatusWith<int64_t>& {
    if (!rows_memo) rows_memo = BucketUnpacker::CountRows(bucket, time_field_);
    return *rows_memo;
  };
  BsonBuilder b;
  if (!meta.eoo()) b.AppendElementAs(meta, "m");
  if (time_key_) {
    // The key reads the time: the bucket is one group only if its earliest and latest times
    // give the same key.
    const auto& range = time_range();
    if (!range) return std::nullopt;
    BsonBuilder lo, hi;
    if (!meta.eoo()) {
      lo.AppendElementAs(meta, "m");
      hi.AppendElementAs(meta, "m");
    }
    lo.AppendDate("tmin", range->first);
    hi.AppendDate("tmin", range->second);
    if (!same_key || !same_key(lo.Obj(), hi.Obj())) return std::nullopt;
    b.AppendDate("tmin", range->first);
  }
  for (size_t i = 0; i < accs_.size(); ++i) {
    const Acc& a = accs_[i];
    if (a.op == Op::kCount) {
      const StatusWith<int64_t>& rows = row_count();
      if (!rows.ok()) return std::nullopt;
      if (rows.value() > INT32_MAX) return std::nullopt;
      b.AppendInt32(AccName(i), static_cast<int32_t>(rows.value()));
      continue;
    }
    if (meta_field_ && a.field == *meta_field_) {
      // Every measurement of the bucket carries the bucket's meta value.
      if (!meta.eoo()) b.AppendElementAs(meta, AccName(i));
      continue;
    }
    if (a.field == time_field_ && a.op == Op::kMin) {
      // control.min of the time field is the rounded start: read the time column instead.
      const auto& range = time_range();
      if (!range) return std::nullopt;
      b.AppendDate(AccName(i), range->first);
      continue;
    }
    BsonElement lo = min[a.field], hi = max[a.field];
    if (lo.eoo() != hi.eoo()) return std::nullopt;
    if (lo.eoo()) continue;  // no measurement has the field: the accumulator skips them all
    if (!Summarizable(lo) || !Summarizable(hi)) return std::nullopt;
    b.AppendElementAs(a.op == Op::kMin ? lo : hi, AccName(i));
  }
  return b.Obj();
}

std::optional<std::pair<int64_t, int64_t>> ControlGroup::TimeRange(const BsonObj& bucket) const {
  if (IsCompressedBucket(bucket)) {
    // Only the time column is decoded. Version 3 is not sorted by time (and version 2's sort
    // is the writer's claim): the range is taken over every row either way.
    std::vector<BucketUnpacker::Column> cols;
    auto rows = BucketUnpacker::Columns(bucket, time_field_, {time_field_}, &cols);
    if (!rows.ok() || !cols[0].present) return std::nullopt;
    std::optional<std::pair<int64_t, int64_t>> range;
    for (const BsonElement& t : cols[0].cells) {
      if (t.type() != BsonType::kDate) return std::nullopt;
      int64_t v = t.DateMillis();
      range = range ? std::make_pair(std::min(range->first, v), std::max(range->second, v))
                    : std::make_pair(v, v);
    }
    return range;
  }
  BsonElement data = bucket["data"];
  if (data.type() != BsonType::kObject) return std::nullopt;
  BsonElement col = data.Obj()[time_field_];
  if (col.type() != BsonType::kObject) return std::nullopt;
  std::optional<std::pair<int64_t, int64_t>> range;
  for (BsonElement t : col.Obj()) {
    if (t.type() != BsonType::kDate) return std::nullopt;
    int64_t v = t.DateMillis();
    range = range ? std::make_pair(std::min(range->first, v), std::max(range->second, v))
                  : std::make_pair(v, v);
  }
  return range;
}

BsonObj ControlGroup::SummarizeMeasurement(const BsonObj& measurement) const {
  BsonBuilder b;
  if (meta_field_) {
    BsonElement meta = measurement[*meta_field_];
    if (!meta.eoo()) b.AppendElementAs(meta, "m");
  }
  if (time_key_) {
    BsonElement t = measurement[time_field_];
    if (!t.eoo()) b.AppendElementAs(t, "tmin");
  }
  for (size_t i = 0; i < accs_.size(); ++i) {
    const Acc& a = accs_[i];
    if (a.op == Op::kCount) {
      b.AppendInt32(AccName(i), 1);
      continue;
    }
    BsonElement v = measurement[a.field];
    if (!v.eoo()) b.AppendElementAs(v, AccName(i));
  }
  return b.Obj();
}

}  // namespace hourglass::timeseries
