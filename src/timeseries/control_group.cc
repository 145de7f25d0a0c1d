#include "timeseries/control_group.h"

#include <algorithm>
#include <cstdint>

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
      if (e.type() == BsonType::kString && !e.Str().empty() && e.Str()[0] == '$') {
        // "$M" or "$M.sub": the same path under the summary's "m".
        std::string_view path = e.Str().substr(1);
        if (!meta_field || path.empty() || path[0] == '$') return std::nullopt;
        std::string_view top = path.substr(0, path.find('.'));
        if (top != *meta_field) return std::nullopt;
        g.id_uses_meta_ = true;
        merge.AppendString("_id", "$m" + std::string(path.substr(top.size())));
      } else if (e.type() == BsonType::kObject || e.type() == BsonType::kArray) {
        return std::nullopt;  // object ids may hold expressions: not analysed
      } else {
        merge.AppendElement(e);  // a constant
      }
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
  g.merge_group_ = merge.Obj();
  return g;
}

std::optional<BsonObj> ControlGroup::Summarize(const BsonObj& bucket) const {
  BsonElement control = bucket["control"];
  if (control.type() != BsonType::kObject) return std::nullopt;
  BsonElement min_e = control.Obj()["min"], max_e = control.Obj()["max"];
  if (min_e.type() != BsonType::kObject || max_e.type() != BsonType::kObject) return std::nullopt;
  BsonObj min = min_e.Obj(), max = max_e.Obj();
  BsonElement meta = bucket["meta"];
  BsonBuilder b;
  if (!meta.eoo()) b.AppendElementAs(meta, "m");
  for (size_t i = 0; i < accs_.size(); ++i) {
    const Acc& a = accs_[i];
    if (a.op == Op::kCount) {
      auto rows = BucketUnpacker::CountRows(bucket, time_field_);
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
      BsonElement data = bucket["data"];
      if (data.type() != BsonType::kObject) return std::nullopt;
      BsonElement col = data.Obj()[time_field_];
      if (col.type() != BsonType::kObject) return std::nullopt;
      std::optional<int64_t> lo;
      for (BsonElement t : col.Obj()) {
        if (t.type() != BsonType::kDate) return std::nullopt;
        lo = lo ? std::min(*lo, t.DateMillis()) : t.DateMillis();
      }
      if (lo) b.AppendDate(AccName(i), *lo);
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

BsonObj ControlGroup::SummarizeMeasurement(const BsonObj& measurement) const {
  BsonBuilder b;
  if (meta_field_) {
    BsonElement meta = measurement[*meta_field_];
    if (!meta.eoo()) b.AppendElementAs(meta, "m");
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
