// Index choice for time-series reads: whether a user index of the bucket collection
// (timeseries/index_conversion.h) serves a read better than the default path of TimeseriesScan
// (the built-in series index for meta predicates, else the clustered scan narrowed by the time
// bounds), and the buckets it leads to.
//
// The bucket-level predicate (timeseries::BucketFilter::ToBson(): meta conjuncts,
// $_internalExpr* bounds on control.min/max, a measurement's geo predicates on data.<f>) is
// planned like a query on the bucket collection (query_planner.h). Without a hint, a user index
// is chosen when the planner picks one (not hidden, partial filter implied, not multikey unless it
// is a wildcard index on the metaField or a geo index) and it bounds some key field the default
// path cannot use: a measurement bound, a meta bound when the collection has no series index or
// the bound is a geo index's (2dsphere, 2d), or a time bound when the filter gives the default
// scan no time range. A hint on the time-series collection names a user index by name or by the
// user's key ({m: 1, v: 1}); `_id`, "_id_", {$natural: ±1} and the series index ({M: 1, T: 1} or
// its name; not when hidden) select the default path.
//
// Thread-safety: plain functions; the plan borrows the bucket collection of `coll`.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "storage/kv_engine.h"
#include "timeseries/bucket_catalog.h"
#include "timeseries/bucket_filter.h"

namespace hourglass::exec {

// What a user index yields for a read.
struct IndexedBuckets {
  std::vector<int64_t> rids;  // the buckets, each once, in index order
  bson::BsonObj plan;         // the index plan in explain's shape (FETCH over IXSCAN ...)
  int64_t keys_examined = 0;
};

// The buckets a user index yields for the read, or nullopt to use the default path. BadValue (2)
// "hint provided does not correspond to an existing index" for a hint naming no index of the
// collection (or a hidden one).
StatusWith<std::optional<IndexedBuckets>> TimeseriesIndexedBuckets(
    const timeseries::TimeseriesCollection& coll, storage::KvEngine* engine,
    const timeseries::BucketFilter& bucket_filter, const bson::BsonElement& hint);

}  // namespace hourglass::exec
