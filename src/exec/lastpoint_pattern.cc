#include "exec/lastpoint_pattern.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace hourglass::exec {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

bool IsMetaPath(std::string_view path, const std::string& meta) {
  return path == meta ||
         (path.size() > meta.size() && path.starts_with(meta) && path[meta.size()] == '.');
}

// Operators whose value is not a function of their arguments' field paths alone: they bind
// variables ($$this...), draw random numbers or read what the query attached.
bool IsOpaqueOperator(std::string_view op) {
  return op == "$let" || op == "$map" || op == "$filter" || op == "$reduce" || op == "$rand" ||
         op == "$function" || op == "$meta" || op == "$sampleRate";
}

}  // namespace

bool MetaOnlyExpression(const BsonElement& e, const std::string& meta) {
  switch (e.type()) {
    case BsonType::kString: {
      std::string_view s = e.Str();
      if (!s.starts_with('$')) return true;
      if (s.starts_with("$$")) return false;
      return IsMetaPath(s.substr(1), meta);
    }
    case BsonType::kArray:
      for (const BsonElement& x : e.Obj()) {
        if (!MetaOnlyExpression(x, meta)) return false;
      }
      return true;
    case BsonType::kObject: {
      BsonObj obj = e.Obj();
      if (obj.IsEmpty()) return true;
      BsonElement first = obj.FirstElement();
      if (first.FieldName().starts_with('$')) {
        if (obj.NumFields() != 1) return false;
        if (first.FieldName() == "$literal") return true;
        if (IsOpaqueOperator(first.FieldName())) return false;
        return MetaOnlyExpression(first, meta);
      }
      for (const BsonElement& x : obj) {
        if (!MetaOnlyExpression(x, meta)) return false;
      }
      return true;
    }
    default:
      return true;  // a constant
  }
}

namespace {

bool IsDirection(const BsonElement& e) {
  return e.IsNumber() && (e.NumberDouble() == 1 || e.NumberDouble() == -1);
}

// The direction of T in a sort specification whose keys before T are meta-only paths (the keys
// after it may be anything): 1 or -1, else 0.
int TimeDirectionAfterMeta(const BsonObj& sort, const std::string& time, const std::string& meta) {
  for (const BsonElement& k : sort) {
    if (!IsDirection(k)) return 0;
    if (k.FieldName() == time) {
      int dir = k.NumberDouble() > 0 ? 1 : -1;
      for (const BsonElement& rest : sort) {
        if (!IsDirection(rest)) return 0;  // e.g. {$meta: "textScore"} after T
      }
      return dir;
    }
    if (!IsMetaPath(k.FieldName(), meta)) return 0;
  }
  return 0;
}

// The path renamed onto the bucket document: M... → meta..., T → control.max.T.
std::string BucketPath(std::string_view path, const std::string& time, const std::string& meta) {
  if (path == time) return "control.max." + time;
  return "meta" + std::string(path.substr(meta.size()));
}

// `e` (a meta-only expression) with its field paths renamed onto the bucket document.
void AppendOnBuckets(BsonBuilder& b, std::string_view name, const BsonElement& e,
                     const std::string& time, const std::string& meta) {
  if (e.type() == BsonType::kString && e.Str().starts_with('$') && !e.Str().starts_with("$$")) {
    b.AppendString(name, "$" + BucketPath(e.Str().substr(1), time, meta));
    return;
  }
  if ((e.type() == BsonType::kObject || e.type() == BsonType::kArray) &&
      !(e.type() == BsonType::kObject && e.Obj().FirstElement().FieldName() == "$literal")) {
    size_t at = e.type() == BsonType::kObject ? b.OpenObject(name) : b.OpenArray(name);
    for (const BsonElement& x : e.Obj()) AppendOnBuckets(b, x.FieldName(), x, time, meta);
    b.Close(at);
    return;
  }
  b.AppendElementAs(e, name);
}

// The `n` of an accumulator's {n: ...} when it is a whole positive constant (the accumulator
// checks anything else itself, on the read without the rewrite).
std::optional<int64_t> ConstantN(const BsonObj& spec) {
  std::optional<int64_t> n = spec["n"].WholeNumber();
  if (!n || *n < 1) return std::nullopt;
  return n;
}

// How many of its group's latest measurements an accumulator picks (0: it is not of the family),
// given the direction of T in the $sort before the $group (0: no $sort). `top_bottom` counts
// $top/$bottom and their N forms.
int64_t PicksLatest(const BsonElement& field, int sorted_time_dir, const std::string& time,
                    const std::string& meta, int* top_bottom) {
  if (field.type() != BsonType::kObject || field.Obj().NumFields() != 1) return 0;
  BsonElement acc = field.Obj().FirstElement();
  std::string_view op = acc.FieldName();
  if (op == "$first") return sorted_time_dir == -1 ? 1 : 0;
  if (op == "$last") return sorted_time_dir == 1 ? 1 : 0;
  if (op == "$max") return acc.type() == BsonType::kString && acc.Str() == "$" + time ? 1 : 0;
  if (acc.type() != BsonType::kObject) return 0;
  const BsonObj spec = acc.Obj();
  if (op == "$firstN" || op == "$lastN") {
    if (sorted_time_dir != (op == "$firstN" ? -1 : 1)) return 0;
    return ConstantN(spec).value_or(0);
  }
  const bool single = op == "$top" || op == "$bottom";
  if (!single && op != "$topN" && op != "$bottomN") return 0;
  BsonElement sort_by = spec["sortBy"];
  if (sort_by.type() != BsonType::kObject) return 0;
  ++*top_bottom;
  const bool top = op == "$top" || op == "$topN";
  if (TimeDirectionAfterMeta(sort_by.Obj(), time, meta) != (top ? -1 : 1)) return 0;
  return single ? 1 : ConstantN(spec).value_or(0);
}

// The $group's _id, when it is meta-only and every accumulator picks latest measurements; `n`
// becomes the most any of them picks.
std::optional<BsonElement> LastpointGroupKey(const BsonObj& stage, int sorted_time_dir,
                                             const std::string& time, const std::string& meta,
                                             int64_t* n) {
  BsonElement g = stage.FirstElement();
  if (g.FieldName() != "$group" || g.type() != BsonType::kObject) return std::nullopt;
  std::optional<BsonElement> id;
  int top_bottom = 0;
  *n = 1;
  for (const BsonElement& f : g.Obj()) {
    if (f.FieldName() == "_id") {
      if (!MetaOnlyExpression(f, meta)) return std::nullopt;
      id = f;
    } else if (int64_t picks = PicksLatest(f, sorted_time_dir, time, meta, &top_bottom)) {
      *n = std::max(*n, picks);
    } else {
      return std::nullopt;
    }
  }
  // Without a $sort, a $group of {$max: T} alone is answered from control.max instead.
  if (sorted_time_dir == 0 && top_bottom == 0) return std::nullopt;
  return id;
}

}  // namespace

namespace {
// Sorts the conjuncts of `filter` into `meta` and `time`; false if one is neither.
bool CollectConjuncts(const BsonObj& filter, const std::string& time, const std::string& meta,
                      std::vector<BsonObj>* meta_tests, std::vector<BsonObj>* time_tests) {
  for (const BsonElement& e : filter) {
    const std::string_view name = e.FieldName();
    if (name == "$and" && e.type() == BsonType::kArray) {
      for (const BsonElement& x : e.Obj()) {
        if (x.type() != BsonType::kObject ||
            !CollectConjuncts(x.Obj(), time, meta, meta_tests, time_tests)) {
          return false;
        }
      }
      continue;
    }
    BsonBuilder one;
    one.AppendElement(e);
    if (name == time) {
      // Only operators, all lower bounds: {T: <date>} and {T: {$lt: ...}} keep older rows.
      if (e.type() != BsonType::kObject || e.Obj().IsEmpty()) return false;
      for (const BsonElement& op : e.Obj()) {
        if (op.FieldName() != "$gt" && op.FieldName() != "$gte") return false;
      }
      time_tests->push_back(one.Obj());
    } else if (IsMetaPath(name, meta)) {
      meta_tests->push_back(one.Obj());
    } else {
      return false;
    }
  }
  return true;
}

BsonObj Conjunction(const std::vector<BsonObj>& tests) {
  if (tests.size() <= 1) return tests.empty() ? BsonObj() : tests[0];
  BsonBuilder b;
  size_t a = b.OpenArray("$and");
  for (size_t i = 0; i < tests.size(); ++i) b.AppendObject(std::to_string(i), tests[i]);
  b.Close(a);
  return b.Obj();
}
}  // namespace

std::optional<int64_t> LatestTimeBound::MaxTime(const BsonObj& bucket) const {
  BsonElement t = bucket.GetPath("control.max." + time_);
  if (t.type() != BsonType::kDate) return std::nullopt;
  return t.DateMillis();
}

void LatestTimeBound::Add(const BsonObj& bucket) {
  std::optional<int64_t> max_time = MaxTime(bucket);
  if (!max_time) return;
  at_or_after_.emplace_back(*max_time, 1);
  BsonElement count = bucket.GetPath("control.count");
  BsonElement min_t = bucket.GetPath("control.min." + time_);
  if (count.IsNumber() && count.NumberLong() > 1 && min_t.type() == BsonType::kDate) {
    at_or_after_.emplace_back(std::min(min_t.DateMillis(), *max_time), count.NumberLong() - 1);
  }
  // The bound is the latest time with n measurements at or after it.
  std::sort(at_or_after_.begin(), at_or_after_.end(), std::greater<>());
  int64_t seen = 0;
  for (size_t i = 0; i < at_or_after_.size(); ++i) {
    seen += at_or_after_[i].second;
    if (seen >= n_) {
      bound_ = at_or_after_[i].first;
      // What lies below the bound can never raise it again.
      while (at_or_after_.size() > i + 1 && at_or_after_.back().first < *bound_) {
        at_or_after_.pop_back();
      }
      break;
    }
  }
}

std::optional<LastpointFilterParts> SplitLastpointFilter(const BsonObj& filter,
                                                         const std::string& time,
                                                         const std::string& meta) {
  std::vector<BsonObj> meta_tests, time_tests;
  if (!CollectConjuncts(filter, time, meta, &meta_tests, &time_tests)) return std::nullopt;
  return LastpointFilterParts{Conjunction(meta_tests), Conjunction(time_tests)};
}

std::optional<LastpointPattern> MatchLastpoint(const std::vector<BsonObj>& stages,
                                               const std::string& time, const std::string& meta) {
  if (stages.empty()) return std::nullopt;
  LastpointPattern pattern;
  BsonBuilder sort_by;
  std::optional<BsonElement> key;
  BsonElement s = stages[0].FirstElement();
  if (s.FieldName() == "$sort" && s.type() == BsonType::kObject) {
    const int dir = TimeDirectionAfterMeta(s.Obj(), time, meta);
    if (dir == 0 || stages.size() < 2) return std::nullopt;
    key = LastpointGroupKey(stages[1], dir, time, meta, &pattern.n);
    if (!key) return std::nullopt;
    pattern.stages = 2;
    for (const BsonElement& k : s.Obj()) {
      if (k.FieldName() == time) {
        sort_by.AppendInt32(BucketPath(time, time, meta), -1);
        break;  // what follows T only breaks ties among the latest measurements
      }
      sort_by.AppendElementAs(k, BucketPath(k.FieldName(), time, meta));
    }
  } else {
    key = LastpointGroupKey(stages[0], 0, time, meta, &pattern.n);
    if (!key) return std::nullopt;
    pattern.stages = 1;
    sort_by.AppendInt32(BucketPath(time, time, meta), -1);
  }
  BsonBuilder explain;
  explain.AppendObject("sortBy", sort_by.Obj());
  AppendOnBuckets(explain, "groupBy", *key, time, meta);
  if (pattern.n > 1) explain.AppendInt64("n", pattern.n);
  pattern.explain = explain.Obj();
  return pattern;
}

}  // namespace hourglass::exec
