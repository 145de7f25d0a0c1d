#include "exec/query_planner.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>

#include "bson/bson_compare.h"
#include "bson/key_string.h"
#include "collation/collator.h"
#include "exec/plan_summary.h"
#include "geo/flat_index.h"
#include "geo/sphere_index.h"

namespace hourglass::exec {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr size_t kMaxPointCombinations = 4096;

// One bound value: an element of a filter or of a holder document, with its display.
struct Bound {
  BsonElement value;
  bool inclusive = true;
};

// An interval on one field in value order (low <= high).
struct ValueInterval {
  Bound low, high;
  bool collatable = false;  // a bound comes from a string (its order depends on the collation)
  bool IsPoint() const {
    return low.inclusive && high.inclusive &&
           bson::CompareElementValues(low.value, high.value) == 0;
  }
};

// Holders for the bracket edges (they must outlive the plans: static).
const BsonObj& Edges() {
  static const BsonObj edges = [] {
    BsonBuilder b;
    b.AppendMinKey("minkey");
    b.AppendMaxKey("maxkey");
    b.AppendDouble("ninf", -std::numeric_limits<double>::infinity());
    b.AppendDouble("pinf", std::numeric_limits<double>::infinity());
    b.AppendString("emptystr", "");
    b.AppendObject("emptyobj", BsonObj());
    b.AppendDate("mindate", std::numeric_limits<int64_t>::min());
    b.AppendDate("maxdate", std::numeric_limits<int64_t>::max());
    bson::ObjectId lo{}, hi{};
    std::memset(hi.bytes, 0xff, sizeof(hi.bytes));
    b.AppendObjectId("minoid", lo);
    b.AppendObjectId("maxoid", hi);
    b.AppendBool("false", false);
    b.AppendBool("true", true);
    b.AppendTimestamp("mints", 0);
    b.AppendTimestamp("maxts", std::numeric_limits<uint64_t>::max());
    b.AppendUndefined("undefined");
    return b.Obj();
  }();
  return edges;
}
BsonElement Edge(std::string_view name) { return Edges()[name]; }

// The bracket [lo, hi] of values comparable with `v` by $gt/$lt, or false if we do not use an
// index for ranges of this type.
bool TypeBracket(const BsonElement& v, ValueInterval* out) {
  switch (v.type()) {
    case BsonType::kInt32:
    case BsonType::kInt64:
    case BsonType::kDouble:
    case BsonType::kDecimal128:
      if (v.type() == BsonType::kDouble && std::isnan(v.Double())) return false;
      if (v.type() == BsonType::kDecimal128 && v.Decimal().IsNaN()) return false;
      *out = {{Edge("ninf"), true}, {Edge("pinf"), true}};
      return true;
    case BsonType::kString:
      *out = {{Edge("emptystr"), true}, {Edge("emptyobj"), false}};
      return true;
    case BsonType::kDate:
      *out = {{Edge("mindate"), true}, {Edge("maxdate"), true}};
      return true;
    case BsonType::kObjectId:
      *out = {{Edge("minoid"), true}, {Edge("maxoid"), true}};
      return true;
    case BsonType::kBool:
      *out = {{Edge("false"), true}, {Edge("true"), true}};
      return true;
    case BsonType::kTimestamp:
      *out = {{Edge("mints"), true}, {Edge("maxts"), true}};
      return true;
    default:
      return false;
  }
}

// Whether a value's order depends on the collation (bson::IsCollatable).
bool Collatable(const BsonElement& v) { return bson::IsCollatable(v.type()); }

bool PointValue(const BsonElement& v) {
  switch (v.type()) {
    case BsonType::kEOO:
    case BsonType::kArray:
    case BsonType::kRegex:
    case BsonType::kUndefined:
    case BsonType::kMinKey:
    case BsonType::kMaxKey:
      return false;
    default:
      return true;
  }
}

// The predicates of one path that give bounds, in filter order.
struct FieldPredicates {
  std::vector<std::vector<BsonElement>> point_sets;  // each: $eq / value / $in
  std::vector<ValueInterval> ranges;
  bool exists = false;           // {$exists: true} (bounds only for wildcard indexes)
  std::vector<BsonElement> geo;  // $geoWithin / $within / $geoIntersects (geo indexes)
};

void AddOperatorPredicates(const BsonObj& ops, FieldPredicates& fp) {
  for (BsonElement op : ops) {
    std::string_view name = op.FieldName();
    if (name == "$exists") {
      if (op.Truthy()) fp.exists = true;
    } else if (name == "$geoWithin" || name == "$within" || name == "$geoIntersects") {
      fp.geo.push_back(op);
    } else if (name == "$eq") {
      if (PointValue(op)) fp.point_sets.push_back({op});
    } else if (name == "$in") {
      if (op.type() != BsonType::kArray) continue;
      std::vector<BsonElement> points;
      bool ok = true;
      for (BsonElement v : op.Obj()) {
        if (!PointValue(v)) ok = false;
        points.push_back(v);
      }
      if (ok) fp.point_sets.push_back(std::move(points));
    } else if (name == "$gt" || name == "$gte" || name == "$lt" || name == "$lte") {
      ValueInterval bracket;
      if (!TypeBracket(op, &bracket)) continue;
      bool incl = name.size() == 4;
      if (name[1] == 'g') {
        bracket.low = {op, incl};
      } else {
        bracket.high = {op, incl};
      }
      bracket.collatable = Collatable(op);
      fp.ranges.push_back(bracket);
    } else if (name.starts_with("$_internalExpr") && PointValue(op) &&
               (name == "$_internalExprGt" || name == "$_internalExprGte" ||
                name == "$_internalExprLt" || name == "$_internalExprLte")) {
      // Bucket-level predicates of time-series reads (timeseries/bucket_filter.h) compare in
      // canonical BSON order across types: the range runs to MinKey or MaxKey.
      ValueInterval iv{{Edge("minkey"), true}, {Edge("maxkey"), true}};
      iv.collatable = Collatable(op);
      bool incl = name.ends_with('e');
      if (name.starts_with("$_internalExprG")) {
        iv.low = {op, incl};
      } else {
        iv.high = {op, incl};
      }
      fp.ranges.push_back(iv);
    }
  }
}

void CollectPredicates(const BsonObj& filter, std::map<std::string, FieldPredicates>& out,
                       int depth = 0) {
  for (BsonElement e : filter) {
    std::string_view name = e.FieldName();
    if (name == "$and" && e.type() == BsonType::kArray && depth < 20) {
      for (BsonElement clause : e.Obj()) {
        if (clause.type() == BsonType::kObject) CollectPredicates(clause.Obj(), out, depth + 1);
      }
      continue;
    }
    if (name.empty() || name.front() == '$') continue;
    FieldPredicates& fp = out[std::string(name)];
    if (e.type() == BsonType::kObject && !e.Obj().IsEmpty() &&
        e.Obj().FirstElement().FieldName().starts_with("$")) {
      AddOperatorPredicates(e.Obj(), fp);
    } else if (PointValue(e)) {
      fp.point_sets.push_back({e});
    }
  }
}

using Predicates = std::map<std::string, FieldPredicates>;

// The predicates of a read under `query` (a collation; null: simple) that an index under `index`
// can bound. Under the same collation, every value that holds strings becomes its comparison
// form, as the index keys it (owned by `holders`). Under another collation a string orders
// differently in the index than in the read: a point set or range with such a value gives no
// bounds (*dropped is set), the others keep theirs (numbers, dates... order the same).
Predicates PredicatesFor(const Predicates& preds, const bson::StringComparator* query,
                         const bson::StringComparator* index, std::deque<BsonObj>& holders,
                         bool* dropped) {
  const bool same = collation::SameCollation(query, index);
  if (same && index == nullptr) return preds;
  auto translate = [&](const BsonElement& v) {
    if (!Collatable(v)) return v;
    BsonBuilder b;
    bson::AppendComparisonForm(b, v.FieldName(), v, *index);
    holders.push_back(b.Obj());
    return holders.back().FirstElement();
  };
  Predicates out;
  for (const auto& [path, fp] : preds) {
    FieldPredicates& o = out[path];
    o.exists = fp.exists;
    for (const auto& set : fp.point_sets) {
      if (same) {
        std::vector<BsonElement> t;
        for (const BsonElement& v : set) t.push_back(translate(v));
        o.point_sets.push_back(std::move(t));
      } else if (std::none_of(set.begin(), set.end(), Collatable)) {
        o.point_sets.push_back(set);
      } else {
        *dropped = true;
      }
    }
    for (const ValueInterval& r : fp.ranges) {
      if (!r.collatable) {
        o.ranges.push_back(r);
      } else if (same) {
        ValueInterval t = r;
        t.low.value = translate(r.low.value);
        t.high.value = translate(r.high.value);
        o.ranges.push_back(t);
      } else {
        *dropped = true;
      }
    }
  }
  return out;
}

// True if the path has a numeric component (positional semantics differ between the matcher and
// the index: such paths get no bounds).
bool HasNumericComponent(std::string_view path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string_view c =
        path.substr(start, dot == std::string_view::npos ? path.npos : dot - start);
    if (!c.empty() &&
        std::all_of(c.begin(), c.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      return true;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return false;
}

// A holder for hashed point values.
struct HashHolder {
  std::vector<BsonObj> objs;
  BsonElement Add(int64_t h) {
    BsonBuilder b;
    b.AppendInt64("", h);
    objs.push_back(b.Obj());
    return objs.back().FirstElement();
  }
  BsonElement Add(const std::string& s) {
    BsonBuilder b;
    b.AppendString("", s);
    objs.push_back(b.Obj());
    return objs.back().FirstElement();
  }
};

std::string Encode(const BsonElement& v, bool descending) {
  bson::KeyStringBuilder k;
  k.AppendElement(v, descending);
  return k.Release();
}

// An interval in the byte order of one component.
struct ByteInterval {
  std::string lo, hi;
  bool lo_incl, hi_incl;
  std::string display;
};

// A bound as explain shows it; in a collated index a string is a collation key, shown as MongoDB
// shows it: CollationKey(0x<hex>).
std::string DisplayValue(const BsonElement& v, bool collated) {
  if (collated && v.type() == BsonType::kString)
    return "CollationKey(0x" + bson::LowerHex(v.Str()) + ")";
  switch (v.type()) {
    case BsonType::kMinKey:
      return "MinKey";
    case BsonType::kMaxKey:
      return "MaxKey";
    case BsonType::kNull:
      return "null";
    case BsonType::kUndefined:
      return "undefined";
    case BsonType::kInt32:
      return std::to_string(v.Int32());
    case BsonType::kInt64:
      return std::to_string(v.Int64());
    case BsonType::kDouble: {
      double d = v.Double();
      if (std::isinf(d)) return d > 0 ? "inf.0" : "-inf.0";
      if (std::isnan(d)) return "nan.0";
      if (d == std::floor(d) && std::fabs(d) < 1e15) {
        return std::to_string(static_cast<int64_t>(d)) + ".0";
      }
      BsonBuilder b;
      b.AppendElementAs(v, "v");
      std::string json = b.Obj().ToJson();
      return json.substr(8, json.size() - 10);
    }
    case BsonType::kString:
      return "\"" + std::string(v.Str()) + "\"";
    case BsonType::kObject:
      if (v.Obj().IsEmpty()) return "{}";
      [[fallthrough]];
    default: {
      BsonBuilder b;
      b.AppendElementAs(v, "v");
      std::string json = b.Obj().ToJson();  // { "v" : <value> }
      return json.substr(8, json.size() - 10);
    }
  }
}

ByteInterval ToBytes(const ValueInterval& iv, bool descending, bool collated = false) {
  ByteInterval b;
  const Bound& first = descending ? iv.high : iv.low;
  const Bound& last = descending ? iv.low : iv.high;
  b.lo = Encode(first.value, descending);
  b.hi = Encode(last.value, descending);
  b.lo_incl = first.inclusive;
  b.hi_incl = last.inclusive;
  b.display = std::string(b.lo_incl ? "[" : "(") + DisplayValue(first.value, collated) + ", " +
              DisplayValue(last.value, collated) + (b.hi_incl ? "]" : ")");
  return b;
}

ByteInterval FullInterval(bool descending) {
  return ToBytes({{Edge("minkey"), true}, {Edge("maxkey"), true}}, descending);
}

using catalog::IsFlatKey;
using catalog::IsHashedKey;
using catalog::IsSphereKey;

// A BinData(128) geohash key value as catalog/index_keys.cc writes them, held by `holder`.
BsonElement FlatHashKey(uint64_t h, HashHolder& holder) {
  BsonBuilder b;
  b.AppendBinData("", geo::kFlatHashSubtype, geo::FlatHashBytes(h));
  holder.objs.push_back(b.Obj());
  return holder.objs.back().FirstElement();
}

// The intervals of a 2d field: the geohash ranges of its first geo predicate's box
// (geo/flat_index.h), or nullopt (no geo predicate, or a $geometry).
std::optional<std::vector<ByteInterval>> FlatIntervals(const FieldPredicates& fp,
                                                       const geo::FlatIndexParams& params,
                                                       HashHolder& holder) {
  for (const BsonElement& op : fp.geo) {
    if (op.FieldName() == "$geoIntersects") continue;
    auto q = geo::GeoQuery::ParseWithin(op);
    if (!q.ok()) continue;  // the filter's own parse reports it
    const auto ranges = geo::FlatQueryRanges(q.value(), params);
    if (!ranges) continue;
    std::vector<ByteInterval> out;
    for (const geo::HashRange& r : *ranges) {
      out.push_back(
          ToBytes({{FlatHashKey(r.lo, holder), true}, {FlatHashKey(r.hi, holder), true}}, false));
    }
    return out;
  }
  return std::nullopt;
}

// The intervals of a 2dsphere field: the cells of its first geo predicate's region
// (geo/sphere_index.h), or nullopt (no geo predicate, or a flat shape).
std::optional<std::vector<ByteInterval>> SphereIntervals(const FieldPredicates& fp,
                                                         const geo::SphereIndexParams& params,
                                                         HashHolder& holder) {
  for (const BsonElement& op : fp.geo) {
    auto q = op.FieldName() == "$geoIntersects" ? geo::GeoQuery::ParseIntersects(op)
                                                : geo::GeoQuery::ParseWithin(op);
    if (!q.ok()) continue;  // the filter's own parse reports it
    if (params.version < 3) {
      // Token keys: a range of a cell's descendants ([its token, the next), or one token.
      const auto tokens = geo::SphereQueryTokenIntervals(q.value(), params);
      if (!tokens) continue;
      std::vector<ByteInterval> out;
      for (const geo::TokenInterval& t : *tokens) {
        const BsonElement lo = holder.Add(t.lo);
        out.push_back(t.hi.empty() ? ToBytes({{lo, true}, {lo, true}}, false)
                                   : ToBytes({{lo, true}, {holder.Add(t.hi), false}}, false));
      }
      return out;
    }
    const auto cells = geo::SphereQueryIntervals(q.value(), params);
    if (!cells) continue;
    std::vector<ByteInterval> out;
    for (const geo::CellInterval& c : *cells) {
      out.push_back(ToBytes({{holder.Add(c.lo), true}, {holder.Add(c.hi), true}}, false));
    }
    return out;
  }
  return std::nullopt;
}

// The intervals of one field of the index `index` from its predicates, or nullopt for "no
// bounds". A collated index's strings: the predicates' are already collation keys.
std::optional<std::vector<ByteInterval>> FieldIntervals(const FieldPredicates& fp,
                                                        const BsonElement& field, bool multikey,
                                                        HashHolder& hashes, bool* matches_null,
                                                        const catalog::IndexDescriptor& index) {
  const bool collated = index.collator != nullptr;
  if (IsSphereKey(field)) return SphereIntervals(fp, index.sphere_params, hashes);
  if (IsFlatKey(field)) {
    return index.flat ? FlatIntervals(fp, *index.flat, hashes) : std::nullopt;
  }
  bool desc = bson::IsDescending(field);
  if (!fp.point_sets.empty()) {
    std::vector<ByteInterval> out;
    auto add = [&](const BsonElement& v) {
      BsonElement key = IsHashedKey(field) ? hashes.Add(catalog::HashIndexValue(v)) : v;
      out.push_back(ToBytes({{key, true}, {key, true}}, desc, collated));
    };
    for (BsonElement v : fp.point_sets.front()) {
      add(v);
      // {f: null} also matches missing fields (indexed as null) and undefined (an empty array
      // indexes as undefined too; the filter drops it again).
      if (v.type() == BsonType::kNull) {
        *matches_null = true;
        add(Edge("undefined"));
      }
    }
    std::sort(out.begin(), out.end(),
              [](const ByteInterval& a, const ByteInterval& b) { return a.lo < b.lo; });
    out.erase(
        std::unique(out.begin(), out.end(),
                    [](const ByteInterval& a, const ByteInterval& b) { return a.lo == b.lo; }),
        out.end());
    return out;
  }
  if (fp.ranges.empty() || IsHashedKey(field)) return std::nullopt;
  ValueInterval iv = fp.ranges.front();
  if (!multikey) {
    for (size_t i = 1; i < fp.ranges.size(); ++i) {
      const ValueInterval& r = fp.ranges[i];
      int c = bson::CompareElementValues(r.low.value, iv.low.value);
      if (c > 0 || (c == 0 && !r.low.inclusive)) iv.low = r.low;
      c = bson::CompareElementValues(r.high.value, iv.high.value);
      if (c < 0 || (c == 0 && !r.high.inclusive)) iv.high = r.high;
    }
    int c = bson::CompareElementValues(iv.low.value, iv.high.value);
    if (c > 0 || (c == 0 && !(iv.low.inclusive && iv.high.inclusive))) {
      return std::vector<ByteInterval>{};  // empty: nothing can match
    }
  }
  return std::vector<ByteInterval>{ToBytes(iv, desc, collated)};
}

bool ElementsBinaryEqual(const BsonElement& a, const BsonElement& b) {
  return a.size() == b.size() && std::memcmp(a.raw(), b.raw(), a.size()) == 0;
}

// Whether `filter` contains every top-level clause of `partial` verbatim.
bool ImpliesPartialFilter(const BsonObj& filter, const BsonObj& partial) {
  std::vector<BsonElement> clauses;
  std::function<void(const BsonObj&)> collect = [&](const BsonObj& f) {
    for (BsonElement e : f) {
      if (e.FieldName() == "$and" && e.type() == BsonType::kArray) {
        for (BsonElement c : e.Obj()) {
          if (c.type() == BsonType::kObject) collect(c.Obj());
        }
      } else {
        clauses.push_back(e);
      }
    }
  };
  collect(filter);
  for (BsonElement p : partial) {
    bool found = std::any_of(clauses.begin(), clauses.end(),
                             [&](const BsonElement& c) { return ElementsBinaryEqual(c, p); });
    if (!found) return false;
  }
  return true;
}

// Whether the clause `value` on one field is a form whose bounds are exact: a non-null point
// value, $eq of one, $in of them, or ranges. Counts its point sets and ranges.
bool ExactClause(const BsonElement& value, int* point_sets, int* ranges) {
  auto point = [](const BsonElement& v) {
    return PointValue(v) && v.type() != BsonType::kNull && v.type() != BsonType::kObject;
  };
  if (value.type() == BsonType::kObject && !value.Obj().IsEmpty() &&
      value.Obj().FirstElement().FieldName().starts_with("$")) {
    for (BsonElement op : value.Obj()) {
      std::string_view name = op.FieldName();
      ValueInterval bracket;
      if (name == "$eq") {
        if (!point(op)) return false;
        ++*point_sets;
      } else if (name == "$in") {
        if (op.type() != BsonType::kArray) return false;
        for (BsonElement v : op.Obj()) {
          if (!point(v)) return false;
        }
        ++*point_sets;
      } else if (name == "$gt" || name == "$gte" || name == "$lt" || name == "$lte") {
        if (!TypeBracket(op, &bracket)) return false;
        ++*ranges;
      } else {
        return false;
      }
    }
    return true;
  }
  if (!point(value)) return false;
  ++*point_sets;
  return true;
}

// See QueryPlan::exact.
bool BoundsAreExact(const QueryPlan& plan, const BsonObj& filter) {
  if (plan.index == nullptr || plan.multikey || plan.index->desc.hashed ||
      plan.index->desc.sphere || plan.index->desc.flat) {
    return false;
  }
  std::vector<std::string_view> scanned;
  for (BsonElement f : plan.index->desc.key) {
    if (scanned.size() == plan.scanned_prefix) break;
    scanned.push_back(f.FieldName());
  }
  std::map<std::string_view, std::pair<int, int>> counts;  // field -> (point sets, ranges)
  std::function<bool(const BsonObj&, int)> check = [&](const BsonObj& f, int depth) {
    for (BsonElement e : f) {
      std::string_view name = e.FieldName();
      if (name == "$and" && e.type() == BsonType::kArray && depth < 20) {
        for (BsonElement c : e.Obj()) {
          if (c.type() != BsonType::kObject || !check(c.Obj(), depth + 1)) return false;
        }
        continue;
      }
      if (std::find(scanned.begin(), scanned.end(), name) == scanned.end()) return false;
      auto& [points, ranges] = counts[name];
      if (!ExactClause(e, &points, &ranges)) return false;
    }
    return true;
  };
  if (!check(filter, 0)) return false;
  for (const auto& [field, c] : counts) {
    // Only the first point set of a field becomes bounds; ranges intersect (not multikey).
    if (c.first > 1 || (c.first == 1 && c.second > 0)) return false;
  }
  return true;
}

// Builds the plan of `idx` for the predicates (PredicatesFor the index); `forced`: usable even
// without bounds; `same_collation`: the read's collation is the index's (else the index cannot
// give the read's order).
std::optional<QueryPlan> PlanIndex(const catalog::SecondaryIndex& idx,
                                   const std::map<std::string, FieldPredicates>& preds,
                                   const BsonObj& sort, bool forced, bool same_collation = true) {
  QueryPlan plan;
  plan.index = &idx;
  // A geo index holds several cells (or geohashes) of one document or bucket: always
  // deduplicated.
  plan.multikey = idx.entry->multikey->load() || idx.desc.sphere || idx.desc.flat;
  HashHolder hashes;
  std::vector<std::vector<ByteInterval>> fields;
  std::vector<bool> has_bounds;
  bool matches_null = false;  // a null point: documents missing the field must be in the index
  for (BsonElement f : idx.desc.key) {
    auto it = preds.find(std::string(f.FieldName()));
    std::optional<std::vector<ByteInterval>> iv;
    if (it != preds.end() && !HasNumericComponent(f.FieldName())) {
      iv = FieldIntervals(it->second, f, plan.multikey, hashes, &matches_null, idx.desc);
    }
    has_bounds.push_back(iv.has_value());
    fields.push_back(iv ? std::move(*iv)
                        : std::vector<ByteInterval>{FullInterval(bson::IsDescending(f))});
  }
  BsonBuilder bounds;
  {
    size_t i = 0;
    for (BsonElement f : idx.desc.key) {
      size_t arr = bounds.OpenArray(f.FieldName());
      int n = 0;
      for (const auto& iv : fields[i]) {
        bounds.AppendString(std::to_string(n++), iv.display);
      }
      bounds.Close(arr);
      ++i;
    }
  }
  plan.bounds = bounds.Obj();
  // Leading point fields, then at most one range field.
  size_t points = 0;
  while (points < fields.size() && has_bounds[points] && !fields[points].empty() &&
         std::all_of(fields[points].begin(), fields[points].end(), [](const ByteInterval& b) {
           return b.lo == b.hi && b.lo_incl && b.hi_incl;
         })) {
    ++points;
  }
  bool any_empty = false;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (has_bounds[i] && fields[i].empty()) any_empty = true;
  }
  // Cartesian product of the point prefix (bounded).
  std::vector<std::string> prefixes{""};
  size_t used_points = 0;
  for (; used_points < points; ++used_points) {
    if (prefixes.size() * fields[used_points].size() > kMaxPointCombinations) break;
    std::vector<std::string> next;
    for (const auto& p : prefixes) {
      for (const auto& iv : fields[used_points]) next.push_back(p + iv.lo);
    }
    prefixes = std::move(next);
  }
  bool range_field = used_points == points && points < fields.size() && has_bounds[points];
  plan.scanned_prefix = used_points + (range_field ? 1 : 0);
  if (!any_empty) {
    for (const auto& p : prefixes) {
      if (range_field) {
        for (const auto& iv : fields[points]) {
          KeyRange r;
          r.start =
              iv.lo_incl ? p + iv.lo : catalog::PrefixSuccessor(p + iv.lo).value_or(std::string());
          r.end = iv.hi_incl ? catalog::PrefixSuccessor(p + iv.hi)
                             : std::optional<std::string>(p + iv.hi);
          plan.ranges.push_back(std::move(r));
        }
      } else {
        plan.ranges.push_back({p, p.empty() ? std::nullopt : catalog::PrefixSuccessor(p)});
      }
    }
  }
  bool bounded = has_bounds[0];
  if (idx.desc.sphere || idx.desc.flat) {
    // Documents without a geometry are not in the index: only a geo predicate may use it.
    bool geo_bounded = false;
    size_t i = 0;
    for (BsonElement f : idx.desc.key) {
      if (catalog::IsGeoKey(f) && has_bounds[i]) geo_bounded = true;
      ++i;
    }
    if (!geo_bounded && !forced) return std::nullopt;
    bounded = true;
  }
  // Sort: the sort fields must be index fields j..j+m with j within the single-point prefix.
  if (!sort.IsEmpty() && same_collation && !plan.multikey && !idx.desc.hashed &&
      plan.ranges.size() <= 1) {
    std::vector<BsonElement> key_fields, sort_fields;
    for (BsonElement f : idx.desc.key) key_fields.push_back(f);
    for (BsonElement f : sort) sort_fields.push_back(f);
    size_t single_points = 0;
    while (single_points < points && fields[single_points].size() == 1) ++single_points;
    for (size_t j = 0; j <= single_points && j + sort_fields.size() <= key_fields.size(); ++j) {
      int dir = 0;  // +1 same, -1 reversed
      bool ok = true;
      for (size_t k = 0; k < sort_fields.size() && ok; ++k) {
        const BsonElement& kf = key_fields[j + k];
        const BsonElement& sf = sort_fields[k];
        if (kf.FieldName() != sf.FieldName() || !sf.IsNumber() || !kf.IsNumber()) {
          ok = false;
          break;
        }
        int d = (bson::IsDescending(kf) == (sf.NumberDouble() < 0)) ? 1 : -1;
        if (dir == 0) dir = d;
        if (d != dir) ok = false;
      }
      if (ok) {
        plan.provides_sort = true;
        plan.forward = dir >= 0;
        break;
      }
    }
  }
  if (!bounded && !forced && !plan.provides_sort) return std::nullopt;
  if (!bounded && !forced && (idx.desc.sparse || idx.desc.partial)) return std::nullopt;
  if (matches_null && idx.desc.sparse && !forced) return std::nullopt;
  plan.score = static_cast<int>(points) * 10 + (range_field ? 5 : 0) +
               (plan.provides_sort ? 3 : 0) +
               (idx.desc.unique && points == fields.size() && !plan.multikey ? 20 : 0);
  if (any_empty) plan.score += 100;  // proven empty: cheapest of all
  return plan;
}

// The plan of wildcard index `idx` for the predicates on `path` (see the header), or nullopt.
std::optional<QueryPlan> PlanWildcard(const catalog::SecondaryIndex& idx, const std::string& path,
                                      const FieldPredicates& fp, const BsonObj& sort,
                                      bool same_collation) {
  if (path.empty() || HasNumericComponent(path) || !idx.desc.wildcard->Covers(path)) {
    return std::nullopt;
  }
  const bool path_multikey = catalog::PathIsMultikey(path, idx.entry->multikey_paths->Snapshot());
  FieldPredicates used;
  if (!fp.point_sets.empty()) {
    for (const BsonElement& v : fp.point_sets.front()) {
      if (v.type() == BsonType::kNull || (v.type() == BsonType::kObject && !v.Obj().IsEmpty())) {
        return std::nullopt;
      }
    }
    used.point_sets.push_back(fp.point_sets.front());
  } else {
    for (const ValueInterval& r : fp.ranges) {
      // Ranges across types would take in objects and arrays, which are not keys.
      if (r.low.value.type() != BsonType::kMinKey && r.high.value.type() != BsonType::kMaxKey) {
        used.ranges.push_back(r);
      }
    }
    if (used.ranges.empty() && !fp.exists) return std::nullopt;
  }
  QueryPlan plan;
  plan.index = &idx;
  // An $exists scan meets a document under several paths: it is deduplicated as multikey.
  plan.multikey = path_multikey || (used.point_sets.empty() && used.ranges.empty());
  plan.wildcard_path = path;
  const BsonElement field = idx.desc.key.FirstElement();
  {
    BsonBuilder kp;
    kp.AppendInt32("$_path", 1);
    kp.AppendElementAs(field, path);
    plan.wildcard_key_pattern = kp.Obj();
  }
  const std::string prefix = catalog::EncodeWildcardPath(path);
  BsonBuilder bounds;
  size_t arr = bounds.OpenArray("$_path");
  bounds.AppendString("0", "[\"" + path + "\", \"" + path + "\"]");
  if (used.point_sets.empty() && used.ranges.empty()) {
    // {$exists: true}: every value of the path, and every path below it ("a." <= p < "a/").
    bounds.AppendString("1", "[\"" + path + ".\", \"" + path + "/\")");
    bounds.Close(arr);
    size_t values = bounds.OpenArray(path);
    bounds.AppendString("0", "[MinKey, MaxKey]");
    bounds.Close(values);
    plan.ranges.push_back({prefix, catalog::PrefixSuccessor(prefix)});
    plan.ranges.push_back(
        {catalog::EncodeWildcardPath(path + "."), catalog::EncodeWildcardPath(path + "/")});
    plan.score = 2;
  } else {
    bounds.Close(arr);
    HashHolder hashes;
    bool matches_null = false;
    auto intervals = FieldIntervals(used, field, plan.multikey, hashes, &matches_null, idx.desc);
    size_t values = bounds.OpenArray(path);
    int n = 0;
    for (const ByteInterval& iv : *intervals) {
      bounds.AppendString(std::to_string(n++), iv.display);
      KeyRange r;
      r.start = iv.lo_incl ? prefix + iv.lo
                           : catalog::PrefixSuccessor(prefix + iv.lo).value_or(std::string());
      r.end = iv.hi_incl ? catalog::PrefixSuccessor(prefix + iv.hi)
                         : std::optional<std::string>(prefix + iv.hi);
      plan.ranges.push_back(std::move(r));
    }
    bounds.Close(values);
    plan.score = used.point_sets.empty() ? 5 : 10;
    if (intervals->empty()) plan.score += 100;  // proven empty
    // A sort on the path alone, over one range of a path no array crosses: key order.
    BsonElement s = sort.FirstElement();
    if (same_collation && !plan.multikey && plan.ranges.size() <= 1 && sort.NumFields() == 1 &&
        s.FieldName() == path && s.IsNumber()) {
      plan.provides_sort = true;
      plan.forward = bson::IsDescending(field) == (s.NumberDouble() < 0);
      plan.score += 3;
    }
  }
  plan.bounds = bounds.Obj();
  return plan;
}

BsonObj DescribeIndexScan(const QueryPlan& p, std::string_view stage = "IXSCAN") {
  BsonBuilder b;
  b.AppendString("stage", stage);
  b.AppendObject("keyPattern", p.KeyPattern());
  b.AppendString("indexName", p.index->desc.name);
  if (p.wildcard_path.empty()) {
    b.AppendBool("isMultiKey", p.multikey);
    size_t mk = b.OpenObject("multiKeyPaths");
    for (BsonElement f : p.KeyPattern()) b.AppendArray(f.FieldName(), BsonObj());
    b.Close(mk);
  } else {
    // A wildcard index knows which paths crossed arrays: those above or at the scanned path.
    std::vector<std::string> arrays;
    for (auto& a : p.index->entry->multikey_paths->Snapshot()) {
      if (catalog::PathIsMultikey(p.wildcard_path, {a})) arrays.push_back(std::move(a));
    }
    std::sort(arrays.begin(), arrays.end());
    b.AppendBool("isMultiKey", !arrays.empty());
    size_t mk = b.OpenObject("multiKeyPaths");
    b.AppendArray("$_path", BsonObj());
    size_t arr = b.OpenArray(p.wildcard_path);
    for (size_t i = 0; i < arrays.size(); ++i) b.AppendString(std::to_string(i), arrays[i]);
    b.Close(arr);
    b.Close(mk);
  }
  b.AppendBool("isUnique", p.index->desc.unique);
  b.AppendBool("isSparse", p.index->desc.sparse);
  b.AppendBool("isPartial", p.index->desc.partial.has_value());
  b.AppendInt32("indexVersion", 2);
  b.AppendString("direction", p.forward ? "forward" : "backward");
  b.AppendObject("indexBounds", p.bounds);
  return b.Obj();
}

}  // namespace

BsonObj QueryPlan::Describe(const BsonObj& filter) const {
  BsonBuilder b;
  if (IsCollScan()) {
    b.AppendString("stage", "COLLSCAN");
    if (!filter.IsEmpty()) b.AppendObject("filter", filter);
    b.AppendString("direction", natural_reverse ? "backward" : "forward");
    return b.Obj();
  }
  if (covered_fields && !IsOr()) {
    // Keys only: a count over one key range is MongoDB's COUNT_SCAN.
    return DescribeIndexScan(
        *this, covered_fields->empty() && ranges.size() <= 1 ? "COUNT_SCAN" : "IXSCAN");
  }
  b.AppendString("stage", "FETCH");
  if (!filter.IsEmpty()) b.AppendObject("filter", filter);
  if (IsOr()) {
    size_t in = b.OpenObject("inputStage");
    b.AppendString("stage", "OR");
    size_t arr = b.OpenArray("inputStages");
    int i = 0;
    for (const auto& branch : or_branches) {
      b.AppendObject(std::to_string(i++), DescribeIndexScan(branch));
    }
    b.Close(arr);
    b.Close(in);
    return b.Obj();
  }
  b.AppendObject("inputStage", DescribeIndexScan(*this));
  return b.Obj();
}

std::string QueryPlan::Summary() const {
  if (IsCollScan()) return "COLLSCAN";
  if (IsOr()) {
    std::string out;
    for (const auto& branch : or_branches) {
      out += (out.empty() ? "" : ", ") + PlanSummary("IXSCAN", branch.KeyPattern());
    }
    return out;
  }
  const bool count_scan = covered_fields && covered_fields->empty() && ranges.size() <= 1;
  return PlanSummary(count_scan ? "COUNT_SCAN" : "IXSCAN", KeyPattern());
}

namespace {
// The union plan of a filter's top-level $or (see the header), or nullopt.
std::optional<QueryPlan> PlanOr(const catalog::Collection& coll, const BsonObj& filter,
                                const BsonObj& sort, const bson::StringComparator* collator) {
  BsonElement or_clause = filter["$or"];
  if (or_clause.type() != BsonType::kArray || or_clause.Obj().IsEmpty()) return std::nullopt;
  QueryPlan out;
  for (BsonElement branch : or_clause.Obj()) {
    if (branch.type() != BsonType::kObject) return std::nullopt;
    // The branch and the filter's other clauses: {$and: [branch, {other clauses}]}.
    BsonBuilder b;
    size_t arr = b.OpenArray("$and");
    b.AppendObject("0", branch.Obj());
    size_t rest = b.OpenObject("1");
    for (BsonElement e : filter) {
      if (e.FieldName() != "$or") b.AppendElement(e);
    }
    b.Close(rest);
    b.Close(arr);
    auto sub = PlanQuery(coll, b.Obj(), sort, BsonElement(), collator);
    if (!sub.ok() || sub.value().winner.IsCollScan() || sub.value().winner.IsOr()) {
      return std::nullopt;
    }
    QueryPlan p = std::move(sub.value().winner);
    p.provides_sort = false;
    p.forward = true;
    out.score += p.score;
    out.multikey = out.multikey || p.multikey;
    out.or_branches.push_back(std::move(p));
  }
  return out;
}
}  // namespace

std::optional<std::vector<std::string>> CoveredFields(const QueryPlan& plan,
                                                      const BsonObj& projection,
                                                      const BsonObj& sort) {
  if (!plan.exact || projection.IsEmpty()) return std::nullopt;
  if (!sort.IsEmpty() && !plan.provides_sort) return std::nullopt;
  // A collated index holds its strings' collation keys: the values must come from documents.
  if (plan.index->desc.collator) return std::nullopt;
  std::vector<std::string> included;
  bool id_included = true;
  for (BsonElement e : projection) {
    std::string_view name = e.FieldName();
    if (name.empty() || name.front() == '$' || name.find('.') != std::string_view::npos) {
      return std::nullopt;
    }
    bool on;
    if (e.type() == BsonType::kBool) {
      on = e.Bool();
    } else if (e.IsNumber()) {
      on = e.NumberDouble() != 0;
    } else {
      return std::nullopt;  // expressions, $slice, $elemMatch...
    }
    if (name == "_id") {
      id_included = on;
      continue;
    }
    if (!on) return std::nullopt;  // an exclusion projection needs the whole document
    included.emplace_back(name);
  }
  if (included.empty() && !id_included) return std::nullopt;
  if (id_included) included.emplace_back("_id");
  std::vector<std::string> out;
  for (BsonElement f : plan.index->desc.key) {
    auto it = std::find(included.begin(), included.end(), f.FieldName());
    if (it == included.end()) continue;
    out.emplace_back(f.FieldName());
    included.erase(it);
  }
  if (!included.empty()) return std::nullopt;  // a field the index does not hold
  return out;
}

Status ApplyMinMax(QueryPlan* plan, bool hinted, const BsonObj& min, const BsonObj& max,
                   const bson::StringComparator* collator) {
  if (!hinted || plan->index == nullptr || plan->IsOr()) {
    return Status(ErrorCode::kLocation51173,
                  "When using min()/max() a hint of which index to use must be provided");
  }
  const BsonObj& pattern = plan->index->desc.key;
  const bson::StringComparator* index_collator = plan->index->desc.collator.get();
  const bool same_collation = collation::SameCollation(collator, index_collator);
  auto encode = [&](const BsonObj& bound) -> StatusWith<std::string> {
    if (bound.NumFields() != pattern.NumFields()) {
      return Status(ErrorCode::kLocation51174, "The index chosen is not compatible with min/max");
    }
    bson::KeyStringBuilder k;
    auto v = bound.begin();
    for (BsonElement f : pattern) {
      // A value that compares under a collation bounds the index's keys only under its own.
      const BsonType t = (*v).type();
      const bool collatable = t == BsonType::kString || t == BsonType::kSymbol ||
                              t == BsonType::kObject || t == BsonType::kArray;
      if ((*v).FieldName() != f.FieldName() || (collatable && !same_collation)) {
        return Status(ErrorCode::kLocation51174, "The index chosen is not compatible with min/max");
      }
      k.AppendElement(*v, bson::IsDescending(f), index_collator);
      ++v;
    }
    return k.Release();
  };
  if (plan->index->desc.hashed || plan->index->desc.wildcard) {
    return Status(ErrorCode::kCommandNotSupported,
                  "min/max on a hashed or wildcard index is not supported yet");
  }
  KeyRange r;
  if (!min.IsEmpty()) {
    HG_ASSIGN_OR_RETURN(r.start, encode(min));
  }
  if (!max.IsEmpty()) {
    HG_ASSIGN_OR_RETURN(std::string end, encode(max));
    if (!min.IsEmpty() && r.start >= end) {
      return Status(ErrorCode::kLocation51175,
                    "The value provided for min() does not come before the value provided for "
                    "max() in the hinted index");
    }
    r.end = std::move(end);
  }
  plan->ranges = {std::move(r)};
  plan->forward = true;
  plan->provides_sort = false;
  plan->exact = false;
  BsonBuilder bounds;
  if (!min.IsEmpty()) bounds.AppendObject("min", min);
  if (!max.IsEmpty()) bounds.AppendObject("max", max);
  plan->bounds = bounds.Obj();
  return Status::OK();
}

std::optional<QueryPlan> PlanDistinctScan(const catalog::Collection& coll, const BsonObj& filter,
                                          std::string_view key, const BsonElement& hint) {
  if (!hint.eoo() || coll.IsClustered()) return std::nullopt;
  auto leads = [&](QueryPlan& p) {
    // A collated index holds collation keys, not the values.
    // (A geo index leaves out documents without a geometry.)
    if (p.index == nullptr || p.IsOr() || p.multikey || p.index->desc.collator ||
        p.index->desc.sphere || p.index->desc.flat) {
      return false;
    }
    BsonElement first = p.index->desc.key.FirstElement();
    if (first.FieldName() != key || first.type() == BsonType::kString) return false;
    p.covered_fields = std::vector<std::string>{std::string(key)};  // reads keys only
    return true;
  };
  if (filter.IsEmpty()) {
    std::vector<const catalog::SecondaryIndex*> indexes;
    if (const auto* id = coll.IdIndex()) indexes.push_back(id);
    for (const auto& idx : coll.Indexes()) {
      if (idx.entry->ready && !idx.desc.hidden && !idx.desc.partial) indexes.push_back(&idx);
    }
    for (const auto* idx : indexes) {
      QueryPlan p = *PlanIndex(*idx, {}, BsonObj(), true);
      if (leads(p)) return p;
    }
    return std::nullopt;
  }
  auto choice = PlanQuery(coll, filter, BsonObj(), hint);
  if (!choice.ok()) return std::nullopt;
  if (choice.value().winner.exact && leads(choice.value().winner)) {
    return std::move(choice.value().winner);
  }
  for (auto& p : choice.value().rejected) {
    if (p.exact && leads(p)) return std::move(p);
  }
  return std::nullopt;
}

void RecordIndexUse(const QueryPlan& plan) {
  std::vector<const catalog::IndexEntry*> seen;
  for (const QueryPlan* scan : plan.Scans()) {
    const catalog::IndexEntry* e = scan->index->entry;
    if (std::find(seen.begin(), seen.end(), e) != seen.end()) continue;
    seen.push_back(e);
    e->usage->ops.fetch_add(1);
  }
}

StatusWith<PlanChoice> PlanQuery(const catalog::Collection& coll, const BsonObj& filter,
                                 const BsonObj& sort, const BsonElement& hint,
                                 const bson::StringComparator* collator) {
  Predicates all_preds;
  CollectPredicates(filter, all_preds);
  std::deque<BsonObj> holders;  // comparison forms of the filter's strings
  // The predicates `idx` can bound; *exact_ok false when some could not be used.
  auto preds_for = [&](const catalog::SecondaryIndex& idx, bool* exact_ok) {
    bool dropped = false;
    Predicates p = PredicatesFor(all_preds, collator, idx.desc.collator.get(), holders, &dropped);
    *exact_ok = !dropped;
    return p;
  };
  auto same_collation = [&](const catalog::SecondaryIndex& idx) {
    return collation::SameCollation(collator, idx.desc.collator.get());
  };
  std::vector<const catalog::SecondaryIndex*> indexes;
  if (const auto* id = coll.IdIndex()) indexes.push_back(id);
  for (const auto& idx : coll.Indexes()) {
    if (idx.entry->ready) indexes.push_back(&idx);
  }
  PlanChoice choice;
  if (coll.IsClustered() && !hint.eoo() && CheckHintWithoutIndexes(hint).ok()) {
    // Bucket collections: records sit in _id order, so an `_id` or $natural hint is a
    // collection scan. Their series index is not planned here; their user indexes (converted
    // time-series indexes) are.
    return choice;
  }
  if (!hint.eoo()) {
    const catalog::SecondaryIndex* forced = nullptr;
    if (hint.type() == BsonType::kString) {
      for (const auto* idx : indexes) {
        if (idx->desc.name == hint.Str()) forced = idx;
      }
    } else if (hint.type() == BsonType::kObject) {
      BsonObj h = hint.Obj();
      if (h.IsEmpty()) {
        forced = nullptr;
      } else if (h.FirstElement().FieldName() == "$natural") {
        choice.winner.natural_reverse =
            h.FirstElement().IsNumber() && h.FirstElement().NumberDouble() < 0;
        return choice;
      } else {
        for (const auto* idx : indexes) {
          if (!catalog::SameKeyPattern(idx->desc.key, h)) continue;
          if (forced != nullptr) {
            // Indexes on one key pattern with different collations.
            return Status(ErrorCode::kBadValue,
                          "Hint matched multiple indexes, must hint by index name. Matched: " +
                              forced->desc.spec.ToJson() + " and " + idx->desc.spec.ToJson());
          }
          forced = idx;
        }
      }
      if (!forced && !h.IsEmpty()) {
        return Status(ErrorCode::kBadValue,
                      "hint provided does not correspond to an existing index");
      }
    } else {
      return Status(ErrorCode::kBadValue, "hint must be a string or an object");
    }
    if (hint.type() == BsonType::kString && !forced) {
      return Status(ErrorCode::kBadValue, "hint provided does not correspond to an existing index");
    }
    if (forced) {
      if (forced->desc.hidden) {
        return Status(ErrorCode::kBadValue,
                      "hint provided does not correspond to an existing index");
      }
      bool exact_ok = true;
      const Predicates preds = preds_for(*forced, &exact_ok);
      if (forced->desc.wildcard) {
        for (const auto& [path, fp] : preds) {
          if (auto p = PlanWildcard(*forced, path, fp, sort, same_collation(*forced))) {
            choice.winner = std::move(*p);
            return choice;
          }
        }
        return Status(ErrorCode::kBadValue,
                      "hint provided does not correspond to an existing index: the wildcard "
                      "index covers no field of the filter");
      }
      choice.winner = *PlanIndex(*forced, preds, sort, true, same_collation(*forced));
      choice.winner.exact = exact_ok && BoundsAreExact(choice.winner, filter);
      return choice;
    }
  }
  std::vector<QueryPlan> candidates;
  for (const auto* idx : indexes) {
    if (idx->desc.hidden) continue;
    // A partial index holds what its filter matches under its collation: only a read under the
    // same collation knows it asks for a part of that.
    if (idx->desc.partial &&
        (!same_collation(*idx) ||
         !ImpliesPartialFilter(filter, idx->desc.spec["partialFilterExpression"].Obj()))) {
      continue;
    }
    bool exact_ok = true;
    const Predicates preds = preds_for(*idx, &exact_ok);
    if (idx->desc.wildcard) {
      for (const auto& [path, fp] : preds) {
        if (auto p = PlanWildcard(*idx, path, fp, sort, same_collation(*idx))) {
          candidates.push_back(std::move(*p));
        }
      }
      continue;
    }
    if (auto p = PlanIndex(*idx, preds, sort, false, same_collation(*idx))) {
      p->exact = exact_ok && BoundsAreExact(*p, filter);
      candidates.push_back(std::move(*p));
    }
  }
  if (candidates.empty()) {
    if (auto union_plan = PlanOr(coll, filter, sort, collator)) {
      choice.winner = std::move(*union_plan);
    }
    return choice;  // the union, or a collection scan
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const QueryPlan& a, const QueryPlan& b) {
                     if (a.score != b.score) return a.score > b.score;
                     return a.index->desc.key.NumFields() < b.index->desc.key.NumFields();
                   });
  choice.winner = std::move(candidates.front());
  for (size_t i = 1; i < candidates.size(); ++i)
    choice.rejected.push_back(std::move(candidates[i]));
  return choice;
}

Status CheckHintWithoutIndexes(const BsonElement& hint) {
  if (hint.eoo()) return Status::OK();
  bool known = false;
  if (hint.type() == BsonType::kString) {
    known = hint.Str() == "_id_";
  } else if (hint.type() == BsonType::kObject) {
    BsonObj h = hint.Obj();
    BsonElement only = h.FirstElement();
    known = h.IsEmpty() ||
            (h.NumFields() == 1 && (only.FieldName() == "_id" || only.FieldName() == "$natural") &&
             only.IsNumber());
  }
  if (!known) {
    return Status(ErrorCode::kBadValue, "hint provided does not correspond to an existing index");
  }
  return Status::OK();
}

}  // namespace hourglass::exec
