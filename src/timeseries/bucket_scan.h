// Bulk work on the stored buckets of a time-series collection, shared by the TTL monitor and the
// commands that delete or update measurements: a walk over the bucket table in chunks of short
// transactions (so a pass over a large collection never holds one snapshot for long), and the
// transaction that removes or rewrites a chunk's buckets and keeps the collection's counts.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "catalog/collection.h"
#include "catalog/record_store.h"
#include "storage/kv_engine.h"

namespace hourglass::timeseries {

// Calls `fn` with up to 100 buckets at a time whose RecordId lies in `range` (its direction is
// ignored: the walk is forward) and for which `keep` is true, in RecordId (start time) order. `fn`
// may set *stop to end the walk. A bucket collection dropped meanwhile ends the walk quietly.
Status ForEachBucketChunk(
    storage::KvEngine* engine, catalog::Collection& buckets, const catalog::RecordRange& range,
    const std::function<bool(const bson::BsonObj&)>& keep,
    const std::function<Status(const std::vector<catalog::Record>&, bool* stop)>& fn);

// In one transaction: removes `removed` and replaces each (old record, new document) of
// `rewritten`; then adjusts the collection's counts. Buckets already gone are skipped.
Status RemoveAndRewriteBuckets(
    storage::KvEngine* engine, catalog::Collection& buckets,
    const std::vector<const catalog::Record*>& removed,
    const std::vector<std::pair<const catalog::Record*, bson::BsonObj>>& rewritten);

}  // namespace hourglass::timeseries
