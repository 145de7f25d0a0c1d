#include "timeseries/bucket_filter.h"

#include <algorithm>
#include <limits>
#include <set>
#include <vector>

#include "bson/bson_compare.h"
#include "collation/collator.h"
#include "query/matcher.h"
#include "query/path.h"

namespace hourglass::timeseries {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

enum class CmpOp { kEq, kGt, kGte, kLt, kLte, kExists };

// One node of the bucket-level predicate. kCmp nodes test control.min/max of a measurement path;
// kMeta nodes run an exact Matcher on the bucket (the filter renamed M -> meta). kGeo nodes (a
// measurement's $geoWithin/$geoIntersects) keep every bucket: they exist for ToBson, where they
// become {"data.<path>": {<op>: <region>}}, the bounds of a 2dsphere index on the measurement.
struct Pred {
  enum class Kind { kTrue, kFalse, kAnd, kOr, kCmp, kMeta, kGeo } kind = Kind::kTrue;
  std::vector<Pred> children;  // kAnd, kOr
  CmpOp op = CmpOp::kEq;       // kCmp
  std::string path;            // kCmp: the measurement path ("temp", "loc.x")
  query::FieldPath components;
  BsonElement operand;  // kCmp: borrows State::filter
  BsonObj meta_doc;     // kMeta: the renamed filter
  std::shared_ptr<const query::Matcher> meta_matcher;

  static Pred True() { return Pred{}; }
  static Pred False() {
    Pred p;
    p.kind = Kind::kFalse;
    return p;
  }
};

// AND/OR with constant folding and flattening, so "unpushable" (kTrue) children disappear from
// conjunctions and make disjunctions unpushable.
Pred MakeAnd(std::vector<Pred> children) {
  Pred out;
  out.kind = Pred::Kind::kAnd;
  for (Pred& c : children) {
    if (c.kind == Pred::Kind::kFalse) return Pred::False();
    if (c.kind == Pred::Kind::kTrue) continue;
    if (c.kind == Pred::Kind::kAnd) {
      for (Pred& g : c.children) out.children.push_back(std::move(g));
    } else {
      out.children.push_back(std::move(c));
    }
  }
  if (out.children.empty()) return Pred::True();
  if (out.children.size() == 1) return std::move(out.children[0]);
  return out;
}

Pred MakeOr(std::vector<Pred> children) {
  Pred out;
  out.kind = Pred::Kind::kOr;
  for (Pred& c : children) {
    if (c.kind == Pred::Kind::kTrue) return Pred::True();
    if (c.kind == Pred::Kind::kFalse) continue;
    if (c.kind == Pred::Kind::kOr) {
      for (Pred& g : c.children) out.children.push_back(std::move(g));
    } else {
      out.children.push_back(std::move(c));
    }
  }
  if (out.children.empty()) return Pred::False();
  if (out.children.size() == 1) return std::move(out.children[0]);
  return out;
}

bool IsLogical(std::string_view name) { return name == "$and" || name == "$or" || name == "$nor"; }

// Operands the control-based comparisons can use. Null matches missing fields, MinKey/MaxKey and
// undefined have special query semantics, objects/arrays match through array traversal and
// field-order-sensitive equality: none of them is pushed down (as in MongoDB).
bool PushableOperand(const BsonElement& v, bool strings_comparable) {
  switch (v.type()) {
    case BsonType::kString:
    case BsonType::kSymbol:
      return strings_comparable;
    case BsonType::kEOO:
    case BsonType::kObject:
    case BsonType::kArray:
    case BsonType::kNull:
    case BsonType::kUndefined:
    case BsonType::kRegex:
    case BsonType::kMinKey:
    case BsonType::kMaxKey:
      return false;
    default:
      return true;
  }
}

bool IsOperatorDoc(const BsonElement& v) {
  if (v.type() != BsonType::kObject) return false;
  BsonObj o = v.Obj();
  return !o.IsEmpty() && o.FirstElement().FieldName().starts_with('$');
}

// Where a path of control.min / control.max leads.
enum class Lookup { kMissing, kArray, kValue };

Lookup Find(const BsonObj& root, const query::FieldPath& path, BsonElement* out) {
  BsonElement e = root.GetField(path[0]);
  for (size_t i = 1; i < path.size(); ++i) {
    if (e.type() == BsonType::kArray) return Lookup::kArray;
    if (e.type() != BsonType::kObject) return Lookup::kMissing;
    e = e.Obj().GetField(path[i]);
  }
  if (e.eoo()) return Lookup::kMissing;
  if (e.type() == BsonType::kArray) return Lookup::kArray;
  *out = e;
  return Lookup::kValue;
}

// MongoDB's $_internalExpr* comparison of control.<min|max>.<path> against `v`: canonical order
// without type bracketing; a path meeting an array may match; a missing path never matches
// (the field is absent from every row of the bucket).
bool SideHolds(const BsonObj& side, const Pred& p, CmpOp op,
               const bson::StringComparator* strings) {
  BsonElement e;
  switch (Find(side, p.components, &e)) {
    case Lookup::kMissing:
      return false;
    case Lookup::kArray:
      return true;
    case Lookup::kValue:
      break;
  }
  if (op == CmpOp::kExists) return true;
  int c = bson::CompareElementValues(e, p.operand, strings);
  switch (op) {
    case CmpOp::kGt:
      return c > 0;
    case CmpOp::kGte:
      return c >= 0;
    case CmpOp::kLt:
      return c < 0;
    case CmpOp::kLte:
      return c <= 0;
    default:
      return true;
  }
}

bool Eval(const Pred& p, const BsonObj& bucket, const BsonObj* min, const BsonObj* max,
          const bson::StringComparator* strings) {
  switch (p.kind) {
    case Pred::Kind::kTrue:
      return true;
    case Pred::Kind::kFalse:
      return false;
    case Pred::Kind::kAnd:
      for (const Pred& c : p.children) {
        if (!Eval(c, bucket, min, max, strings)) return false;
      }
      return true;
    case Pred::Kind::kOr:
      for (const Pred& c : p.children) {
        if (Eval(c, bucket, min, max, strings)) return true;
      }
      return false;
    case Pred::Kind::kMeta:
      return p.meta_matcher->Matches(bucket);
    case Pred::Kind::kGeo:
      return true;
    case Pred::Kind::kCmp:
      if (min == nullptr || max == nullptr) return true;  // not a bucket we understand: keep
      switch (p.op) {
        case CmpOp::kEq:
          return SideHolds(*min, p, CmpOp::kLte, strings) &&
                 SideHolds(*max, p, CmpOp::kGte, strings);
        case CmpOp::kGt:
        case CmpOp::kGte:
          return SideHolds(*max, p, p.op, strings);
        case CmpOp::kLt:
        case CmpOp::kLte:
          return SideHolds(*min, p, p.op, strings);
        case CmpOp::kExists:
          return SideHolds(*min, p, p.op, strings) && SideHolds(*max, p, p.op, strings);
      }
  }
  return true;
}

void AppendCmp(BsonBuilder& b, const std::string& field, std::string_view op,
               const BsonElement& v) {
  size_t t = b.OpenObject(field);
  b.AppendElementAs(v, op);
  b.Close(t);
}

BsonObj PredToBson(const Pred& p) {
  BsonBuilder b;
  switch (p.kind) {
    case Pred::Kind::kTrue:
      b.AppendInt32("$alwaysTrue", 1);
      break;
    case Pred::Kind::kFalse:
      b.AppendInt32("$alwaysFalse", 1);
      break;
    case Pred::Kind::kAnd:
    case Pred::Kind::kOr: {
      size_t arr = b.OpenArray(p.kind == Pred::Kind::kAnd ? "$and" : "$or");
      int i = 0;
      for (const Pred& c : p.children) b.AppendObject(std::to_string(i++), PredToBson(c));
      b.Close(arr);
      break;
    }
    case Pred::Kind::kMeta:
      return p.meta_doc;
    case Pred::Kind::kGeo: {
      const size_t field = b.OpenObject("data." + p.path);
      b.AppendElement(p.operand);
      b.Close(field);
      break;
    }
    case Pred::Kind::kCmp: {
      std::string min_path = "control.min." + p.path;
      std::string max_path = "control.max." + p.path;
      auto one = [](const std::string& field, std::string_view op, const BsonElement& v) {
        BsonBuilder c;
        AppendCmp(c, field, op, v);
        return c.Obj();
      };
      switch (p.op) {
        case CmpOp::kEq: {
          size_t arr = b.OpenArray("$and");
          b.AppendObject("0", one(min_path, "$_internalExprLte", p.operand));
          b.AppendObject("1", one(max_path, "$_internalExprGte", p.operand));
          b.Close(arr);
          break;
        }
        case CmpOp::kExists: {
          BsonBuilder yes_doc;
          yes_doc.AppendBool("$exists", true);
          BsonObj yes = yes_doc.Obj();
          size_t arr = b.OpenArray("$and");
          BsonBuilder c0, c1;
          c0.AppendObject(min_path, yes);
          c1.AppendObject(max_path, yes);
          b.AppendObject("0", c0.Obj());
          b.AppendObject("1", c1.Obj());
          b.Close(arr);
          break;
        }
        case CmpOp::kGt:
          AppendCmp(b, max_path, "$_internalExprGt", p.operand);
          break;
        case CmpOp::kGte:
          AppendCmp(b, max_path, "$_internalExprGte", p.operand);
          break;
        case CmpOp::kLt:
          AppendCmp(b, min_path, "$_internalExprLt", p.operand);
          break;
        case CmpOp::kLte:
          AppendCmp(b, min_path, "$_internalExprLte", p.operand);
          break;
      }
      break;
    }
  }
  return b.Obj();
}

// Calls fn(element) for each top-level conjunct of `filter`, looking inside $and.
void ForEachConjunct(const BsonObj& filter, const std::function<void(const BsonElement&)>& fn) {
  for (BsonElement e : filter) {
    if (e.FieldName() == "$and" && e.type() == BsonType::kArray) {
      for (BsonElement child : e.Obj()) {
        if (child.type() == BsonType::kObject) ForEachConjunct(child.Obj(), fn);
      }
    } else {
      fn(e);
    }
  }
}

class Translator {
 public:
  explicit Translator(const BucketFilterSpec& spec) : spec_(spec) {}

  bool IsMetaPath(std::string_view path) const {
    if (!spec_.meta_field) return false;
    return query::PathStartsWith(path, *spec_.meta_field);
  }

  // Whether the conjunct `e` ({path: ...} or {$op: ...}) references no field but the meta field.
  bool RefsOnlyMeta(const BsonElement& e) const {
    std::string_view name = e.FieldName();
    if (!name.starts_with('$')) return IsMetaPath(name);
    if (name == "$comment" || name == "$alwaysTrue" || name == "$alwaysFalse") return true;
    if (!IsLogical(name) || e.type() != BsonType::kArray) return false;
    for (BsonElement child : e.Obj()) {
      if (child.type() != BsonType::kObject || !DocRefsOnlyMeta(child.Obj())) return false;
    }
    return true;
  }

  bool DocRefsOnlyMeta(const BsonObj& doc) const {
    for (BsonElement e : doc) {
      if (!RefsOnlyMeta(e)) return false;
    }
    return true;
  }

  // Appends the meta-only conjunct `e` with M renamed to `meta` in every path it names.
  void AppendRenamed(BsonBuilder& b, const BsonElement& e) const {
    std::string_view name = e.FieldName();
    if (IsLogical(name) && e.type() == BsonType::kArray) {
      size_t arr = b.OpenArray(name);
      int i = 0;
      for (BsonElement child : e.Obj()) {
        size_t obj = b.OpenObject(std::to_string(i++));
        for (BsonElement c : child.Obj()) AppendRenamed(b, c);
        b.Close(obj);
      }
      b.Close(arr);
    } else if (!name.starts_with('$') && IsMetaPath(name)) {
      b.AppendElementAs(e, "meta" + std::string(name.substr(spec_.meta_field->size())));
    } else {
      b.AppendElement(e);
    }
  }

  Pred MetaNode(const std::vector<BsonElement>& conjuncts) const {
    BsonBuilder b;
    for (const BsonElement& e : conjuncts) AppendRenamed(b, e);
    Pred p;
    p.kind = Pred::Kind::kMeta;
    p.meta_doc = b.Obj();
    auto m = query::Matcher::Parse(p.meta_doc, spec_.expr_ctx);
    if (!m.ok()) return Pred::True();  // cannot happen for a filter that parsed; stay loose
    p.meta_matcher = std::make_shared<const query::Matcher>(std::move(m).value());
    return p;
  }

  // A nested filter document (a child of $and / $or).
  Pred TranslateDoc(const BsonObj& doc) const {
    if (DocRefsOnlyMeta(doc)) {
      std::vector<BsonElement> all;
      for (BsonElement e : doc) {
        if (e.FieldName() != "$comment") all.push_back(e);
      }
      if (all.empty()) return Pred::True();
      return MetaNode(all);
    }
    std::vector<Pred> parts;
    for (BsonElement e : doc) parts.push_back(TranslateConjunct(e));
    return MakeAnd(std::move(parts));
  }

  Pred TranslateConjunct(const BsonElement& e) const {
    std::string_view name = e.FieldName();
    if (name == "$comment" || name == "$alwaysTrue") return Pred::True();
    if (name == "$alwaysFalse") return Pred::False();
    if (RefsOnlyMeta(e)) return MetaNode({e});
    if (name == "$and" || name == "$or") {
      if (e.type() != BsonType::kArray) return Pred::True();
      std::vector<Pred> parts;
      for (BsonElement child : e.Obj()) {
        if (child.type() != BsonType::kObject) return Pred::True();
        parts.push_back(TranslateDoc(child.Obj()));
      }
      return name == "$and" ? MakeAnd(std::move(parts)) : MakeOr(std::move(parts));
    }
    if (name.starts_with('$')) return Pred::True();  // $nor, $expr, $where, $text, ...
    return TranslatePath(name, e);
  }

  Pred TranslatePath(std::string_view path, const BsonElement& value) const {
    query::FieldPath components = query::SplitPath(path);
    if (components.empty()) return Pred::True();
    // Mixed-schema buckets may have min/max that do not bound every row's value; the time field
    // is a date in every row, so its bounds are always exact.
    if (!spec_.assume_no_mixed_schema && components[0] != spec_.time_field) return Pred::True();
    auto cmp = [&](CmpOp op, const BsonElement& operand) {
      if (op != CmpOp::kExists && !PushableOperand(operand, strings_comparable_)) {
        return Pred::True();
      }
      Pred p;
      p.kind = Pred::Kind::kCmp;
      p.op = op;
      p.path = std::string(path);
      p.components = components;
      p.operand = operand;
      return p;
    };
    if (!IsOperatorDoc(value)) return cmp(CmpOp::kEq, value);
    std::vector<Pred> parts;
    for (BsonElement op : value.Obj()) {
      std::string_view o = op.FieldName();
      if (o == "$eq") {
        parts.push_back(cmp(CmpOp::kEq, op));
      } else if (o == "$gt") {
        parts.push_back(cmp(CmpOp::kGt, op));
      } else if (o == "$gte") {
        parts.push_back(cmp(CmpOp::kGte, op));
      } else if (o == "$lt") {
        parts.push_back(cmp(CmpOp::kLt, op));
      } else if (o == "$lte") {
        parts.push_back(cmp(CmpOp::kLte, op));
      } else if (o == "$exists") {
        if (op.Truthy()) parts.push_back(cmp(CmpOp::kExists, op));
      } else if (o == "$geoWithin" || o == "$within" || o == "$geoIntersects") {
        Pred p;
        p.kind = Pred::Kind::kGeo;
        p.path = std::string(path);
        p.operand = op;
        parts.push_back(std::move(p));
      } else if (o == "$in" && op.type() == BsonType::kArray) {
        std::vector<Pred> alternatives;
        bool pushable = true;
        for (BsonElement v : op.Obj()) {
          if (!PushableOperand(v, strings_comparable_)) {
            pushable = false;
            break;
          }
          alternatives.push_back(cmp(CmpOp::kEq, v));
        }
        if (pushable) parts.push_back(MakeOr(std::move(alternatives)));  // [] -> false
      }
      // Anything else ($ne, $nin, $not, $regex, $type, $size, $elemMatch, $mod, $all, ...)
      // stays with the event filter.
    }
    return MakeAnd(std::move(parts));
  }

 private:
  const BucketFilterSpec& spec_;
  // Whether control.min/max order strings as the filter does (the same collation).
  const bool strings_comparable_ =
      collation::SameCollation(spec_.expr_ctx.collator.get(), spec_.control_collator.get());
};

int64_t SaturatingAdd(int64_t v, int64_t d) {
  if (d > 0 && v > std::numeric_limits<int64_t>::max() - d)
    return std::numeric_limits<int64_t>::max();
  if (d < 0 && v < std::numeric_limits<int64_t>::min() - d)
    return std::numeric_limits<int64_t>::min();
  return v + d;
}

// A date value or {$eq/$gt/$gte/$lt/$lte: <date>...}: exactly the range TimeBoundsFrom derives.
bool IsDateRange(const BsonElement& value) {
  if (value.type() == BsonType::kDate) return true;
  if (!IsOperatorDoc(value)) return false;
  for (BsonElement op : value.Obj()) {
    std::string_view o = op.FieldName();
    if (op.type() != BsonType::kDate) return false;
    if (o != "$eq" && o != "$gt" && o != "$gte" && o != "$lt" && o != "$lte") return false;
  }
  return true;
}

}  // namespace

struct BucketFilter::State {
  BucketFilterSpec spec;
  BsonObj filter;  // owned; kCmp operands point into it
  BsonObj meta_filter;
  std::optional<query::Matcher> meta_matcher;
  std::optional<query::Matcher> residual;  // the parsed filter, or its part off the meta field
  BsonObj residual_filter;
  Pred control;
  std::vector<BsonObj> meta_conjuncts;  // for ToBson
  bool meta_only = true;
  // Every conjunct not on the meta field is a date range on the time field ($eq/$gt/$gte/$lt/
  // $lte with date operands): a bucket whose control.min/max time lies inside it matches whole.
  bool time_ranges_only = true;
  std::optional<int64_t> min_time;
  std::optional<int64_t> max_time;

  void NarrowTime(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    if (lo) min_time = min_time ? std::max(*min_time, *lo) : *lo;
    if (hi) max_time = max_time ? std::min(*max_time, *hi) : *hi;
  }

  void TimeBoundsFrom(const BsonElement& value) {
    if (value.type() == BsonType::kDate) {
      NarrowTime(value.DateMillis(), value.DateMillis());
      return;
    }
    if (!IsOperatorDoc(value)) return;
    for (BsonElement op : value.Obj()) {
      std::string_view o = op.FieldName();
      if (o == "$in" && op.type() == BsonType::kArray) {
        // Time values are always dates: other $in members cannot match and are ignored.
        std::optional<int64_t> lo, hi;
        for (BsonElement v : op.Obj()) {
          if (v.type() != BsonType::kDate) continue;
          lo = lo ? std::min(*lo, v.DateMillis()) : v.DateMillis();
          hi = hi ? std::max(*hi, v.DateMillis()) : v.DateMillis();
        }
        if (lo) NarrowTime(lo, hi);
        continue;
      }
      if (op.type() != BsonType::kDate) continue;
      int64_t d = op.DateMillis();
      if (o == "$eq") {
        NarrowTime(d, d);
      } else if (o == "$gt") {
        NarrowTime(SaturatingAdd(d, 1), std::nullopt);
      } else if (o == "$gte") {
        NarrowTime(d, std::nullopt);
      } else if (o == "$lt") {
        NarrowTime(std::nullopt, SaturatingAdd(d, -1));
      } else if (o == "$lte") {
        NarrowTime(std::nullopt, d);
      }
    }
  }
};

StatusWith<BucketFilter> BucketFilter::Make(const BsonObj& filter, const BucketFilterSpec& spec) {
  HG_ASSIGN_OR_RETURN(query::Matcher parsed, query::Matcher::Parse(filter, spec.expr_ctx));
  return Make(filter, parsed, spec);
}

StatusWith<BucketFilter> BucketFilter::Make(const BsonObj& filter, const query::Matcher& parsed,
                                            const BucketFilterSpec& spec) {
  auto state = std::make_shared<State>();
  state->spec = spec;
  state->filter = filter.Owned();
  Translator tr(state->spec);

  std::vector<BsonElement> meta_conjuncts;
  std::vector<Pred> control;
  ForEachConjunct(state->filter, [&](const BsonElement& e) {
    if (e.FieldName() == "$comment") return;
    if (tr.RefsOnlyMeta(e)) {
      meta_conjuncts.push_back(e);
      return;
    }
    state->meta_only = false;
    if (e.FieldName() != spec.time_field || !IsDateRange(e)) state->time_ranges_only = false;
    control.push_back(tr.TranslateConjunct(e));
    if (e.FieldName() == spec.time_field) state->TimeBoundsFrom(e);
  });
  state->control = MakeAnd(std::move(control));

  // The meta filter as one document; $and-wrapped only when two conjuncts share a name.
  std::set<std::string_view> names;
  bool duplicate = false;
  for (const BsonElement& e : meta_conjuncts) duplicate |= !names.insert(e.FieldName()).second;
  BsonBuilder mb;
  if (duplicate) {
    size_t arr = mb.OpenArray("$and");
    int i = 0;
    for (const BsonElement& e : meta_conjuncts) {
      size_t obj = mb.OpenObject(std::to_string(i++));
      tr.AppendRenamed(mb, e);
      mb.Close(obj);
    }
    mb.Close(arr);
  } else {
    for (const BsonElement& e : meta_conjuncts) tr.AppendRenamed(mb, e);
  }
  state->meta_filter = mb.Obj();
  for (const BsonElement& e : meta_conjuncts) {
    BsonBuilder one;
    tr.AppendRenamed(one, e);
    state->meta_conjuncts.push_back(one.Obj());
  }
  if (!meta_conjuncts.empty()) {
    auto m = query::Matcher::Parse(state->meta_filter, spec.expr_ctx);
    if (!m.ok()) return m.status();
    state->meta_matcher = std::move(m).value();
  }
  // The residual drops what MayMatch decides exactly: the top-level elements on the meta field.
  state->residual = parsed;
  state->residual_filter = state->filter;
  if (state->meta_matcher && !state->meta_only) {
    const std::string& meta = *spec.meta_field;
    auto on_meta = [&](const BsonElement& e) { return query::PathStartsWith(e.FieldName(), meta); };
    state->residual = parsed.Without(on_meta);
    BsonBuilder b;
    for (BsonElement e : state->filter) {
      if (!on_meta(e)) b.AppendElement(e);
    }
    state->residual_filter = b.Obj();
  }

  BucketFilter out;
  out.state_ = std::move(state);
  return out;
}

bool BucketFilter::MayMatch(const BsonObj& bucket) const {
  const State& s = *state_;
  if (s.meta_matcher && !s.meta_matcher->Matches(bucket)) return false;
  BsonElement control = bucket["control"];
  BsonObj min, max;
  bool have_bounds = false;
  if (control.type() == BsonType::kObject) {
    BsonElement min_e = control.Obj()["min"];
    BsonElement max_e = control.Obj()["max"];
    if (min_e.type() == BsonType::kObject && max_e.type() == BsonType::kObject) {
      min = min_e.Obj();
      max = max_e.Obj();
      have_bounds = true;
    }
  }
  return Eval(s.control, bucket, have_bounds ? &min : nullptr, have_bounds ? &max : nullptr,
              s.spec.expr_ctx.collator.get());
}

const bson::StringComparator* BucketFilter::collator() const {
  return state_->spec.expr_ctx.collator.get();
}

bool BucketFilter::MatchesWholeBucket(const BsonObj& bucket) const {
  const State& s = *state_;
  if (s.meta_only) return true;
  if (!s.time_ranges_only) return false;
  BsonElement control = bucket["control"];
  if (control.type() != BsonType::kObject) return false;
  // control.min.<time> is the bucket's rounded start, at or below its earliest measurement, so
  // "start >= lo" proves every measurement is; control.max.<time> is exact.
  BsonElement min = control.Obj()["min"], max = control.Obj()["max"];
  if (min.type() != BsonType::kObject || max.type() != BsonType::kObject) return false;
  BsonElement lo = min.Obj()[s.spec.time_field];  // (a time field name holds no dots)
  BsonElement hi = max.Obj()[s.spec.time_field];
  if (lo.type() != BsonType::kDate || hi.type() != BsonType::kDate) return false;
  if (s.min_time && lo.DateMillis() < *s.min_time) return false;
  if (s.max_time && hi.DateMillis() > *s.max_time) return false;
  return true;
}

BsonObj BucketFilter::WholeBucketFilterToBson() const {
  const State& s = *state_;
  if (s.meta_only || !s.time_ranges_only) return BsonObj();
  BsonBuilder b;
  size_t arr = b.OpenArray("$and");
  int i = 0;
  auto bound = [&](std::string_view side, std::string_view op, int64_t millis) {
    size_t o = b.OpenObject(std::to_string(i++));
    size_t f = b.OpenObject("control." + std::string(side) + "." + s.spec.time_field);
    b.AppendDate(op, millis);
    b.Close(f);
    b.Close(o);
  };
  if (s.min_time) bound("min", "$_internalExprGte", *s.min_time);
  if (s.max_time) bound("max", "$_internalExprLte", *s.max_time);
  b.Close(arr);
  return b.Obj();
}

std::optional<int64_t> BucketFilter::min_time_millis() const { return state_->min_time; }
std::optional<int64_t> BucketFilter::max_time_millis() const { return state_->max_time; }
bool BucketFilter::meta_only() const { return state_->meta_only; }
const BsonObj& BucketFilter::meta_filter() const { return state_->meta_filter; }
const query::Matcher* BucketFilter::meta_matcher() const {
  return state_->meta_matcher ? &*state_->meta_matcher : nullptr;
}
const query::Matcher& BucketFilter::residual() const { return *state_->residual; }
const BsonObj& BucketFilter::residual_filter() const { return state_->residual_filter; }

BsonObj BucketFilter::ToBson() const {
  const State& s = *state_;
  std::vector<BsonObj> parts = s.meta_conjuncts;
  if (s.control.kind == Pred::Kind::kAnd) {
    for (const Pred& c : s.control.children) parts.push_back(PredToBson(c));
  } else if (s.control.kind != Pred::Kind::kTrue) {
    parts.push_back(PredToBson(s.control));
  }
  if (parts.empty()) return BsonObj();
  if (parts.size() == 1) return parts[0];
  BsonBuilder b;
  size_t arr = b.OpenArray("$and");
  int i = 0;
  for (const BsonObj& p : parts) b.AppendObject(std::to_string(i++), p);
  b.Close(arr);
  return b.Obj();
}

}  // namespace hourglass::timeseries
