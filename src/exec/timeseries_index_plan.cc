#include "exec/timeseries_index_plan.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <unordered_set>

#include "bson/bson_compare.h"
#include "bson/key_string.h"
#include "catalog/index_keys.h"
#include "exec/index_scan.h"
#include "exec/query_planner.h"
#include "timeseries/index_conversion.h"

namespace hourglass::exec {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

Status NoSuchIndex() {
  return Status(ErrorCode::kBadValue, "hint provided does not correspond to an existing index");
}

// The hint for the bucket collection's planner: the name of the user index the user's hint
// designates, or nullopt for the default path.
StatusWith<std::optional<std::string>> BucketHint(const timeseries::TimeseriesCollection& coll,
                                                  const BsonElement& hint) {
  if (hint.eoo() || CheckHintWithoutIndexes(hint).ok()) return std::optional<std::string>();
  const catalog::SecondaryIndex* series = coll.buckets->SeriesIndex();
  if (series != nullptr && series->desc.hidden) series = nullptr;
  if (hint.type() == BsonType::kString) {
    if (series != nullptr && series->desc.name == hint.Str()) return std::optional<std::string>();
    if (coll.buckets->FindIndex(hint.Str()) == nullptr) return NoSuchIndex();
    return std::optional<std::string>(std::string(hint.Str()));
  }
  if (hint.type() != BsonType::kObject) return NoSuchIndex();
  BsonObj user_key = hint.Obj();
  if (series != nullptr) {
    auto series_key = timeseries::UserKeyFromBucketKey(series->desc.key, coll.options);
    if (series_key && catalog::SameKeyPattern(*series_key, user_key)) {
      return std::optional<std::string>();
    }
  }
  for (const auto& idx : coll.buckets->Indexes()) {
    auto user = timeseries::UserIndexSpecFromBucketSpec(idx.desc.spec, coll.options);
    if (user && catalog::SameKeyPattern((*user)["key"].Obj(), user_key)) {
      return std::optional<std::string>(idx.desc.name);
    }
  }
  return NoSuchIndex();
}

bool Unbounded(const BsonElement& intervals) {
  if (intervals.type() != BsonType::kArray) return true;
  for (BsonElement iv : intervals.Obj()) {
    if (iv.type() != BsonType::kString) return false;
    if (iv.Str() != "[MinKey, MaxKey]" && iv.Str() != "[MaxKey, MinKey]") return false;
  }
  return true;
}

// Whether `plan` bounds a key field the default path does not (see the header).
bool BetterThanDefault(const timeseries::TimeseriesCollection& coll,
                       const timeseries::BucketFilter& bf, const QueryPlan& plan) {
  const catalog::SecondaryIndex* series = coll.buckets->SeriesIndex();
  const bool series_path = series != nullptr && !series->desc.hidden && !bf.meta_filter().IsEmpty();
  const bool time_range = bf.min_time_millis() && bf.max_time_millis();
  const std::string min_t = "control.min." + coll.options.time_field;
  const std::string max_t = "control.max." + coll.options.time_field;
  for (const QueryPlan* scan : plan.Scans()) {
    for (BsonElement f : scan->bounds) {
      if (Unbounded(f)) continue;
      std::string_view name = f.FieldName();
      bool meta = name == "meta" || name.starts_with("meta.");
      bool time = name == min_t || name == max_t;
      // The series index cannot bound a geo predicate on the meta; a geo index can.
      if (meta && series_path && !catalog::IsGeoKey(scan->index->desc.key[name])) continue;
      if (time && time_range) continue;
      return true;
    }
  }
  return false;
}

// The $_internalExpr* bounds of the filter's top-level conjunctions, by bucket path.
struct ExprBound {
  enum class Op { kGt, kGte, kLt, kLte, kOther } op;  // resolved once, tested per index key
  BsonElement value;
};
ExprBound::Op ExprBoundOp(std::string_view name) {
  return name == "$_internalExprGt"    ? ExprBound::Op::kGt
         : name == "$_internalExprGte" ? ExprBound::Op::kGte
         : name == "$_internalExprLt"  ? ExprBound::Op::kLt
         : name == "$_internalExprLte" ? ExprBound::Op::kLte
                                       : ExprBound::Op::kOther;
}
void CollectExprBounds(const BsonObj& filter, std::map<std::string, std::vector<ExprBound>>& out,
                       int depth = 0) {
  for (BsonElement e : filter) {
    if (e.FieldName() == "$and" && e.type() == BsonType::kArray && depth < 20) {
      for (BsonElement c : e.Obj()) {
        if (c.type() == BsonType::kObject) CollectExprBounds(c.Obj(), out, depth + 1);
      }
      continue;
    }
    if (e.type() != BsonType::kObject) continue;
    for (BsonElement op : e.Obj()) {
      if (op.FieldName().starts_with("$_internalExpr")) {
        out[std::string(e.FieldName())].push_back({ExprBoundOp(op.FieldName()), op});
      }
    }
  }
}

// The bounds on each field of `key_pattern`, by position (null: none); empty when no field has
// one.
using FieldBounds = std::vector<const std::vector<ExprBound>*>;
FieldBounds BoundsByKeyField(const BsonObj& key_pattern,
                             const std::map<std::string, std::vector<ExprBound>>& bounds) {
  FieldBounds out;
  bool any = false;
  for (BsonElement f : key_pattern) {
    auto it = bounds.find(std::string(f.FieldName()));
    out.push_back(it == bounds.end() ? nullptr : &it->second);
    any = any || it != bounds.end();
  }
  if (!any) out.clear();
  return out;
}

// Whether an index key's decoded values ({"": v, ...} in key pattern order) meet the bounds on
// their fields (canonical BSON order, as $_internalExpr* compares). The planner bounds only a
// key prefix; this checks the other fields before the bucket is fetched, as an index scan's key
// filter would.
bool KeyMeetsBounds(const BsonObj& values, const FieldBounds& field_bounds) {
  size_t i = 0;
  for (BsonElement v : values) {
    if (i >= field_bounds.size()) break;
    const std::vector<ExprBound>* on_field = field_bounds[i++];
    if (on_field == nullptr) continue;
    for (const ExprBound& b : *on_field) {
      int c = bson::CompareElementValues(v, b.value);
      bool ok = b.op == ExprBound::Op::kGt    ? c > 0
                : b.op == ExprBound::Op::kGte ? c >= 0
                : b.op == ExprBound::Op::kLt  ? c < 0
                : b.op == ExprBound::Op::kLte ? c <= 0
                                              : true;
      if (!ok) return false;
    }
  }
  return true;
}

}  // namespace

StatusWith<std::optional<IndexedBuckets>> TimeseriesIndexedBuckets(
    const timeseries::TimeseriesCollection& coll, storage::KvEngine* engine,
    const timeseries::BucketFilter& bucket_filter, const BsonElement& hint) {
  using Result = std::optional<IndexedBuckets>;
  HG_ASSIGN_OR_RETURN(auto name, BucketHint(coll, hint));
  if (!name && !hint.eoo()) return Result();  // the default path was asked for
  if (!name && coll.buckets->Indexes().empty()) return Result();
  BsonObj filter = bucket_filter.ToBson();
  BsonBuilder hb;
  if (name) hb.AppendString("", *name);
  BsonObj hint_holder = hb.Obj();
  HG_ASSIGN_OR_RETURN(
      PlanChoice choice,
      PlanQuery(*coll.buckets, filter, BsonObj(), name ? hint_holder.FirstElement() : BsonElement(),
                bucket_filter.collator()));
  const QueryPlan& plan = choice.winner;
  if (plan.IsCollScan()) return Result();
  // A wildcard index (on the metaField's subtree) is always planned as multikey; a 2dsphere
  // index holds several cells per bucket (and finds each bucket once, deduplicated below).
  const bool multikey = plan.multikey && plan.wildcard_path.empty() &&
                        !(plan.index != nullptr && plan.index->desc.sphere);
  if (!name && (multikey || !BetterThanDefault(coll, bucket_filter, plan))) return Result();
  std::map<std::string, std::vector<ExprBound>> bounds;
  CollectExprBounds(filter, bounds);
  std::vector<int64_t> rids;
  // A bucket has one entry per index unless the index is multikey (a wildcard index may hold
  // several on a path); an $or's branches may meet.
  bool dedupe = plan.multikey || plan.IsOr();
  for (const QueryPlan* scan : plan.Scans()) dedupe = dedupe || !scan->wildcard_path.empty();
  std::unordered_set<int64_t> seen;
  BsonBuilder values;  // every key is decoded into this one buffer
  int64_t keys_examined = 0;
  auto session = engine->NewSession();
  for (const QueryPlan* scan : plan.Scans()) {
    const catalog::SecondaryIndex& idx = *scan->index;
    // Hashed keys hold no values to compare, nor do a collated index's strings (collation
    // keys); on a multikey index a key is one element only; a wildcard key is (path, value), not
    // the index's fields.
    const FieldBounds field_bounds =
        idx.desc.hashed || idx.desc.collator || scan->multikey || !scan->wildcard_path.empty()
            ? FieldBounds()
            : BoundsByKeyField(idx.desc.key, bounds);
    IndexScanPosition pos;
    HG_RETURN_IF_ERROR(ScanIndexEntries(
        *session, *scan, pos, std::numeric_limits<int64_t>::max(),
        [&](int64_t rid, bool*) -> Status {
          if (!field_bounds.empty()) {
            values.Reset();
            // An undecodable key is not filtered here: the bucket filter still applies.
            if (bson::AppendDecodedIndexKey(pos.key, idx.desc.key, values).ok() &&
                !KeyMeetsBounds(values.View(), field_bounds)) {
              return Status::OK();
            }
          }
          if (dedupe && !seen.insert(rid).second) return Status::OK();
          rids.push_back(rid);
          return Status::OK();
        },
        &keys_examined));
  }
  RecordIndexUse(plan);  // $indexStats
  return Result(IndexedBuckets{std::move(rids), plan.Describe(filter), keys_examined});
}

}  // namespace hourglass::exec
