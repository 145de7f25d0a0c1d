// Bulk work on the stored buckets of a time-series collection, shared by the TTL monitor and the
// commands that delete or update measurements: a walk over the bucket table in chunks of short
// transactions (so a pass over a large collection never holds one snapshot for long), and the
// transaction that writes a chunk's changes and keeps the collection's counts.
//
// A chunk's changes are computed from the buckets as read, outside the write: the write checks
// that each bucket it rewrites or removes still holds what was read, and runs alone among the
// collection's writes, so that the bucket catalog, which appends to stored buckets by byte-range
// edits, neither loses rows to it nor edits a bucket it rewrote (the catalog is told its layouts
// may be stale before any other write starts).
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

// What a chunk's function asks of the walk next.
enum class ChunkOutcome {
  kNext,       // the next chunk
  kStop,       // end the walk
  kReadAgain,  // the same chunk again, read anew (a bucket changed after it was read)
};

// Calls `fn` with up to 100 buckets at a time whose RecordId lies in `range` (its direction is
// ignored: the walk is forward) and for which `keep` is true, in RecordId (start time) order. A
// bucket collection dropped meanwhile ends the walk quietly. A chunk read again 100 times in a row
// ends it with WriteConflict (112).
Status ForEachBucketChunk(
    storage::KvEngine* engine, catalog::Collection& buckets, const catalog::RecordRange& range,
    const std::function<bool(const bson::BsonObj&)>& keep,
    const std::function<StatusWith<ChunkOutcome>(const std::vector<catalog::Record>&)>& fn);

// The writes of one chunk.
struct BucketChanges {
  std::vector<const catalog::Record*> removed;
  std::vector<std::pair<const catalog::Record*, bson::BsonObj>> rewritten;  // same _id
  std::vector<bson::BsonObj> inserted;                                      // new buckets
  // Whose removals these are (kTtl: the TTL monitor's, which rollups keep).
  catalog::Collection::WriteOrigin origin = catalog::Collection::WriteOrigin::kOther;
  // Called in the transaction before it commits (a retryable write records its statement).
  std::function<Status(storage::Session&)> before_commit;
  bool empty() const { return removed.empty() && rewritten.empty() && inserted.empty(); }
};

// In one transaction, while no other write transaction on `buckets` runs: removes `removed`,
// replaces each (old record, new document) of `rewritten`, inserts `inserted`, adjusts the
// collection's counts and calls `after_commit` (before another write may start). Returns the
// RecordIds of the inserted buckets; nullopt, having written nothing, when a removed or rewritten
// bucket no longer holds what was read (Record::doc) or is gone: the caller reads it again.
StatusWith<std::optional<std::vector<int64_t>>> ApplyBucketChanges(
    storage::KvEngine* engine, catalog::Collection& buckets, const BucketChanges& changes,
    const std::function<void()>& after_commit);

}  // namespace hourglass::timeseries
