// The query planner for regular collections: from a filter, a sort and a hint it chooses between
// a collection scan and an index scan over one of the collection's indexes (secondary indexes
// and `_id_`), and computes the index bounds.
//
// Bounds come from the filter's top-level predicates (and those inside top-level $and): equality
// on a value, $eq, $in (of values), and ranges ($gt, $gte, $lt, $lte) within one type bracket
// ($_internalExprGt/Gte/Lt/Lte, the bucket-level predicates of time-series reads, range across
// types up to MinKey/MaxKey);
// equality to null scans the null and undefined keys (missing fields index as null), so it never
// uses a sparse index. Other predicates ($ne, $regex, $exists, arrays...) give no bounds; the
// filter is always re-applied to fetched documents, so bounds only need to contain every match. On
// a multikey index only one predicate per field is used (two ranges on one field may be met by
// different array elements). Compound indexes: point intervals on leading fields are combined
// (cartesian product), the first non-point field ends the scanned prefix.
//
// Wildcard indexes give one candidate plan per filter field they cover (catalog/wildcard_keys.h):
// bounds on the path (the "$_path" component) and on the value, from an equality, $in or range
// as above, or for {$exists: true} every value of the path and of the paths below it. A null
// (missing fields have no key), a non-empty object (objects are not keys, their fields are) or
// any other predicate gives no wildcard plan. The index records which paths crossed arrays
// (catalog::MultikeyPaths): a scan of such a path (or an $exists scan, which meets a document
// under several paths) is multikey (one range per field, records deduplicated); on other paths
// ranges intersect, and a sort on the path alone over one range is provided by the scan.
//
// Choice: hidden indexes are never used; partial indexes only when the filter contains their
// filter's clauses verbatim; sparse ones only with bounds. When no index applies and the filter
// has a top-level $or whose every branch (with the filter's other clauses) has an index plan,
// the plan is the union of those scans. Usable indexes are ordered by rule: the most leading
// equality fields first, then a range on the next field, then one that provides the sort, then
// the fewer fields and creation order; when there are several, the callers let the multi-planner
// (multi_planner.h) pick among them by a trial run. `hint` by name or key pattern forces an index
// (a missing or hidden one fails with BadValue 2, and so does a hinted wildcard index that covers
// no filter field); {$natural: 1|-1} forces a collection scan.
//
// Geo indexes: a 2dsphere field is bounded by the S2 cells of a $geoWithin/$geoIntersects region
// (geo/sphere_index.h), a 2d field by the geohash ranges of a $geoWithin shape's box
// (geo/flat_index.h); such an index holds only documents with a geometry there, so it is used
// only with such bounds (or a hint), always deduplicated, never exact, never for a sort or
// DISTINCT_SCAN.
//
// Collations: an index with a collation keys strings by their collation keys. A read under the
// same collation gets bounds from its strings' collation keys (explain shows them as
// CollationKey(0x...), as MongoDB does) and the index's order; under another collation the index
// bounds only values no collation orders differently (numbers, dates...), provides no sort, and
// is never used as a partial index.
//
// Thread-safety: plans are values; they borrow the Collection (keep its shared_ptr alive).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/collection.h"

namespace hourglass::exec {

// A byte range of an index table: keys k with start <= k < end (no end: to the last key).
struct KeyRange {
  std::string start;
  std::optional<std::string> end;
};

struct QueryPlan {
  const catalog::SecondaryIndex* index = nullptr;  // nullptr: collection scan
  bool multikey = false;
  bool forward = true;
  std::vector<KeyRange> ranges;  // in ascending key order (scanned backwards when !forward)
  bson::BsonObj bounds;          // explain's indexBounds: {field: ["[1, 1]", ...]}
  bool provides_sort = false;
  int score = 0;
  bool natural_reverse = false;  // collection scan in reverse ({$natural: -1})
  // Whether the key ranges select exactly the documents the filter matches (single index, not
  // multikey, no hashed field, every filter clause a bound on a scanned field, no null): such a
  // scan needs no fetch to filter, so counts and covered projections can skip the documents.
  bool exact = false;
  size_t scanned_prefix = 0;  // leading key fields whose bounds the ranges apply
  // Set by the caller when the plan reads keys only: the key fields to output (empty: count).
  std::optional<std::vector<std::string>> covered_fields;
  // Set by the caller for find's showRecordId / returnKey: the scan appends the RecordId / the
  // index key to each document under the names of collection_scan.h's annotations.
  bool with_record_id = false;
  bool with_index_key = false;
  // A wildcard index scan reads the keys of one field path (catalog/wildcard_keys.h): that path,
  // and the key pattern explain and returnKey show for it, {"$_path": 1, "<path>": ±1}.
  std::string wildcard_path;
  bson::BsonObj wildcard_key_pattern;
  // A top-level $or whose every branch has an index plan: the union of the branches' scans
  // (index stays nullptr; records found by several branches are fetched once).
  std::vector<QueryPlan> or_branches;

  bool IsCollScan() const { return index == nullptr && or_branches.empty(); }
  // The pattern of the keys the scan reads: the index's, or wildcard_key_pattern.
  const bson::BsonObj& KeyPattern() const {
    return wildcard_path.empty() ? index->desc.key : wildcard_key_pattern;
  }
  bool IsOr() const { return !or_branches.empty(); }
  // The single-index scans to run: the branches of an $or, else this plan.
  std::vector<const QueryPlan*> Scans() const {
    std::vector<const QueryPlan*> out;
    if (IsOr()) {
      for (const auto& b : or_branches) out.push_back(&b);
    } else if (index != nullptr) {
      out.push_back(this);
    }
    return out;
  }
  // Explain's description of the access: {stage: COLLSCAN, direction} or
  // {stage: FETCH, inputStage: {stage: IXSCAN, keyPattern, indexName, ...}}; a covered plan is
  // the IXSCAN alone (COUNT_SCAN for a count over one key range).
  bson::BsonObj Describe(const bson::BsonObj& filter) const;
  // The plan as currentOp's planSummary names it ("COLLSCAN", "IXSCAN { a: 1 }").
  std::string Summary() const;
};

struct PlanChoice {
  QueryPlan winner;
  std::vector<QueryPlan> rejected;
};

// The fields (in key order) a covered read of `plan` outputs for `projection`, or nullopt when
// the plan cannot cover it: the plan must be exact, the projection an inclusion of top-level
// index fields only (`_id` excluded unless indexed), the sort empty or provided by the scan, and
// the index without a collation (its keys hold collation keys, not strings).
std::optional<std::vector<std::string>> CoveredFields(const QueryPlan& plan,
                                                      const bson::BsonObj& projection,
                                                      const bson::BsonObj& sort);

// Restricts `plan` (the plan of a hinted index) to find's `min` (inclusive) and `max`
// (exclusive) index keys, either of which may be empty. Errors: Location51173 when the plan is
// not a hinted index scan (`hinted` false or a collection scan), Location51174 when a bound's
// fields are not the index's key fields in order or hold a string (or an object or array) while
// the read's collation (`collator`, null: simple) is not the index's, Location51175 when min does
// not come before max in index order; CommandNotSupported (115) on hashed indexes.
Status ApplyMinMax(QueryPlan* plan, bool hinted, const bson::BsonObj& min, const bson::BsonObj& max,
                   const bson::StringComparator* collator = nullptr);

// A plan whose index scan can answer distinct(`key`, `filter`) by skipping from one key value to
// the next (DISTINCT_SCAN), for a read under the simple collation, or nullopt: an index (not
// hidden, not multikey, without a collation, not partial unless
// the filter implies it) whose first field is `key`, unhashed, and whose bounds answer the filter
// exactly (any such index for an empty filter). Never with a hint.
std::optional<QueryPlan> PlanDistinctScan(const catalog::Collection& coll,
                                          const bson::BsonObj& filter, std::string_view key,
                                          const bson::BsonElement& hint);

// Counts one use of each index `plan` reads ($indexStats accesses.ops): called once per query
// that runs the plan (explain does not).
void RecordIndexUse(const QueryPlan& plan);

// Plans a read of `coll` under `collator` (the read's collation; null: simple). `hint` may be EOO.
// An index of another collation gives no bounds for strings (or objects and arrays, which may hold
// them) and no sort; a partial one is not used. Errors: BadValue (2) "hint provided does not
// correspond to an existing index", or a key pattern hint that matches several indexes (one key
// pattern under several collations); TypeMismatch if the hint is neither a string nor an object.
StatusWith<PlanChoice> PlanQuery(const catalog::Collection& coll, const bson::BsonObj& filter,
                                 const bson::BsonObj& sort, const bson::BsonElement& hint,
                                 const bson::StringComparator* collator = nullptr);

// For namespaces without secondary indexes (time-series): a hint other than `_id_`, {_id: 1} or
// {$natural: ...} fails with BadValue (2) "hint provided does not correspond to an existing
// index". EOO passes.
Status CheckHintWithoutIndexes(const bson::BsonElement& hint);

}  // namespace hourglass::exec
