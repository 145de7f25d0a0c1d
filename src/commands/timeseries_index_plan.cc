#include "commands/timeseries_index_plan.h"

#include <map>
#include <string>
#include <unordered_set>

#include "bson/bson_compare.h"
#include "catalog/index_keys.h"
#include "commands/command_util.h"
#include "commands/query_planner.h"
#include "storage/record_id.h"
#include "timeseries/index_conversion.h"

namespace hourglass::commands {

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
  const catalog::IndexEntry* series = coll.buckets->BucketIndex();
  if (series != nullptr && series->spec["hidden"].Truthy()) series = nullptr;
  if (hint.type() == BsonType::kString) {
    if (series != nullptr && series->name() == hint.Str()) return std::optional<std::string>();
    if (coll.buckets->FindIndex(hint.Str()) == nullptr) return NoSuchIndex();
    return std::optional<std::string>(std::string(hint.Str()));
  }
  if (hint.type() != BsonType::kObject) return NoSuchIndex();
  BsonObj user_key = hint.Obj();
  if (series != nullptr) {
    auto series_key = timeseries::UserKeyFromBucketKey(series->key(), coll.options);
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
  const catalog::IndexEntry* series = coll.buckets->BucketIndex();
  const bool series_path =
      series != nullptr && !series->spec["hidden"].Truthy() && !bf.meta_filter().IsEmpty();
  const bool time_range = bf.min_time_millis() && bf.max_time_millis();
  const std::string min_t = "control.min." + coll.options.time_field;
  const std::string max_t = "control.max." + coll.options.time_field;
  for (const QueryPlan* scan : plan.Scans()) {
    for (BsonElement f : scan->bounds) {
      if (Unbounded(f)) continue;
      std::string_view name = f.FieldName();
      bool meta = name == "meta" || name.starts_with("meta.");
      bool time = name == min_t || name == max_t;
      if (meta && series_path) continue;
      if (time && time_range) continue;
      return true;
    }
  }
  return false;
}

// The $_internalExpr* bounds of the filter's top-level conjunctions, by bucket path.
struct ExprBound {
  std::string_view op;
  BsonElement value;
};
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
        out[std::string(e.FieldName())].push_back({op.FieldName(), op});
      }
    }
  }
}

// Whether an index key's decoded values meet the bounds on its fields (canonical BSON order, as
// $_internalExpr* compares). The planner bounds only a key prefix; this checks the other fields
// before the bucket is fetched, as an index scan's key filter would.
bool KeyMeetsBounds(const BsonObj& values,
                    const std::map<std::string, std::vector<ExprBound>>& bounds) {
  for (BsonElement v : values) {
    auto it = bounds.find(std::string(v.FieldName()));
    if (it == bounds.end()) continue;
    for (const ExprBound& b : it->second) {
      int c = bson::CompareElementValues(v, b.value);
      bool ok = b.op == "$_internalExprGt"    ? c > 0
                : b.op == "$_internalExprGte" ? c >= 0
                : b.op == "$_internalExprLt"  ? c < 0
                : b.op == "$_internalExprLte" ? c <= 0
                                              : true;
      if (!ok) return false;
    }
  }
  return true;
}

}  // namespace

StatusWith<std::optional<std::vector<int64_t>>> TimeseriesIndexedBuckets(
    const timeseries::TimeseriesCollection& coll, storage::KvEngine* engine,
    const timeseries::BucketFilter& bucket_filter, const BsonElement& hint) {
  using Result = std::optional<std::vector<int64_t>>;
  HG_ASSIGN_OR_RETURN(auto name, BucketHint(coll, hint));
  if (!name && !hint.eoo()) return Result();  // the default path was asked for
  if (!name && coll.buckets->Indexes().empty()) return Result();
  BsonObj filter = bucket_filter.ToBson();
  BsonBuilder hb;
  if (name) hb.AppendString("", *name);
  BsonObj hint_holder = hb.Obj();
  HG_ASSIGN_OR_RETURN(PlanChoice choice,
                      PlanQuery(*coll.buckets, filter, BsonObj(),
                                name ? hint_holder.FirstElement() : BsonElement()));
  const QueryPlan& plan = choice.winner;
  if (plan.IsCollScan()) return Result();
  // A wildcard index (on the metaField's subtree) is always planned as multikey.
  const bool multikey = plan.multikey && plan.wildcard_path.empty();
  if (!name && (multikey || !BetterThanDefault(coll, bucket_filter, plan))) return Result();
  std::map<std::string, std::vector<ExprBound>> bounds;
  CollectExprBounds(filter, bounds);
  std::vector<int64_t> rids;
  std::unordered_set<int64_t> seen;
  auto session = engine->NewSession();
  for (const QueryPlan* scan : plan.Scans()) {
    const catalog::SecondaryIndex& idx = *scan->index;
    // Hashed keys hold no values to compare; on a multikey index a key is one element only; a
    // wildcard key is (path, value), not the index's fields.
    const bool check_keys = !idx.desc.hashed && !scan->multikey && scan->wildcard_path.empty();
    HG_ASSIGN_OR_RETURN(auto cursor, session->OpenCursorOrError(idx.entry->ident));
    for (const KeyRange& r : scan->ranges) {
      HG_ASSIGN_OR_RETURN(bool more, r.start.empty() ? cursor->SeekFirst() : cursor->Seek(r.start));
      while (more && (!r.end || cursor->key() < std::string_view(*r.end))) {
        std::string_view key = cursor->key();
        // Non-unique index entries: key + RecordId (unique indexes are refused on time series).
        int64_t rid = storage::DecodeRecordId(key.substr(key.size() - 8));
        if (!seen.contains(rid) &&
            (!check_keys ||
             KeyMeetsBounds(catalog::IndexKeyValue(idx.desc.key, key.substr(0, key.size() - 8)),
                            bounds))) {
          seen.insert(rid);
          rids.push_back(rid);
        }
        HG_ASSIGN_OR_RETURN(more, cursor->Next());
      }
    }
  }
  RecordIndexUse(plan);  // $indexStats
  return Result(std::move(rids));
}

}  // namespace hourglass::commands
