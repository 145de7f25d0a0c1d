// SeriesDirectory: the distinct series of a bucket collection's series index, in memory, so that
// a read whose meta predicate cannot bound that index (a condition on a subfield of the
// metaField) tests each series once instead of walking every index entry to find the next one.
// At 4,000 series that walk was most of a one-host query, and twice as slow on entries written
// since the last restart, which WiredTiger keeps in insert lists rather than page rows.
//
// Every write of a series index entry tells the directory its series (Add) before its
// transaction commits, and the first read that walks the whole index adds what it saw and marks
// the directory complete; from then on a reader's snapshot holds no series the directory lacks.
// The directory may list a series the index no longer holds (its buckets deleted, its write
// rolled back): a read's seek then finds nothing. Past kMaxSeries series it gives up and reads
// walk the index again. Shared by every copy of the series index's IndexEntry. Thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bson/bson.h"

namespace hourglass::catalog {

class SeriesDirectory {
 public:
  static constexpr size_t kMaxSeries = 100'000;

  struct Series {
    std::string prefix;  // BucketIndexSeriesPrefix of its meta: every entry of it starts so
    bson::BsonObj meta;  // {meta: <value>}, or {} for buckets without one
  };

  // Records the series `prefix` whose bucket `meta` element (named "meta"; EOO for none) an
  // index entry is being written for.
  void Add(std::string_view prefix, const bson::BsonElement& meta);
  // Says that a walk of the whole index, in a snapshot begun after this directory was made,
  // has Added every series it saw.
  void MarkComplete();
  // Every series, if the directory is complete (in the index's order, the metas side by side in
  // one buffer); null otherwise.
  std::shared_ptr<const std::vector<Series>> Snapshot();

  // Positions in `snapshot` (ascending) of every series that may have one of `values` (scalars,
  // none null) at the dotted `path` of its meta document ({meta: ...}, so the path starts with
  // "meta"): those whose value there is one of them (compared as a filter's equality compares),
  // and those whose path crosses an array or ends at an object or array, which the caller's
  // matcher decides. A series without the path is left out: no non-null value equals missing.
  // Built once per snapshot and path, so that a one-series read at thousands of series tests a
  // few metas instead of all.
  std::vector<size_t> Candidates(const std::shared_ptr<const std::vector<Series>>& snapshot,
                                 std::string_view path,
                                 const std::vector<bson::BsonElement>& values);

 private:
  struct PathIndex;
  std::mutex mu_;
  std::unordered_set<std::string> prefixes_;    // guarded by mu_
  std::vector<Series> added_;                   // since `list_` was built; mu_
  std::shared_ptr<std::vector<Series>> list_ =  // guarded by mu_
      std::make_shared<std::vector<Series>>();
  bool complete_ = false;  // guarded by mu_
  bool gave_up_ = false;   // guarded by mu_: more than kMaxSeries
  // Per path, the index of the snapshot it was built for; mu_.
  std::unordered_map<std::string, std::shared_ptr<const PathIndex>> path_indexes_;
};

}  // namespace hourglass::catalog
