// LatestMeasurements: for one time-series collection, the measurements at each series' latest
// time, so that a last-point query ($sort {meta: 1, time: -1} + $group $first, or $top/$bottom by
// time; spec §6.3) is answered without reading a bucket.
//
// What keeps it current. The bucket catalog reports each commit of measurements (Committed); it
// is the only writer the cache follows. Every other write to the bucket collection (a direct
// write to the buckets, a time-series update or delete, a TTL expiry) is counted by the
// collection when it commits (catalog::Collection::UntrackedWrites), and the cache serves only
// while that count is the one it was filled at. A reader that finds it stale reads the newest
// buckets itself and offers what it found (Fill); the offer is taken only if no write the cache
// cannot follow committed in the meantime. Writers keep their reports coming while the cache is
// stale, so that a fill merges what the reader saw with what was committed after it looked.
// Until a first reader comes, reports are dropped: a collection never read this way holds nothing.
//
// A series is its bucket `meta` element (the normalized meta value, named "meta"; EOO when the
// buckets have none). Its measurements are stored as unpacking the bucket yields them: the time
// field, the meta field, then the bucket's columns in order. Ties at the latest time keep every
// measurement (the pattern's $first/$top/$bottom picks one of them whichever order they come in).
//
// Bounds: beyond kMaxSeries series or kMaxRowsPerSeries measurements at one series' latest time
// the cache gives up for good (readers read the buckets).
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "bson/bson.h"

namespace hourglass::timeseries {

class LatestMeasurements {
 public:
  static constexpr size_t kMaxSeries = 100'000;
  static constexpr size_t kMaxRowsPerSeries = 64;

  struct Series {
    bson::BsonObj meta;  // {meta: <value>}, or {} for buckets without meta
    int64_t time = 0;    // the latest time, millis
    std::vector<bson::BsonObj> rows;
  };

  // A writer's report, once its commit succeeded: `rows` are stored in the series of bucket meta
  // `meta` at `time`, the latest time among what it wrote. `untracked_before` is the bucket
  // collection's UntrackedWrites() read before its transaction began.
  void Committed(const bson::BsonElement& meta, int64_t time, std::vector<bson::BsonObj> rows,
                 uint64_t untracked_before);

  // What a reader needs to offer a fill.
  struct Ticket {
    uint64_t untracked = 0;
    uint64_t generation = 0;
  };
  // When the cache is complete and current for `untracked` (the collection's UntrackedWrites()
  // now): calls fn for every series and returns true. Otherwise returns false and sets *ticket
  // for a Fill by this reader, who must read the buckets after this call.
  bool Read(uint64_t untracked, const std::function<void(const Series&)>& fn, Ticket* ticket);
  // The latest measurements of every series, as the reader holding `ticket` found them in the
  // buckets. Taken, making the cache complete, unless a write it cannot follow committed since
  // the ticket was issued (`untracked_now` differs from the ticket's, or a writer's report could
  // not be applied).
  void Fill(const Ticket& ticket, uint64_t untracked_now, std::vector<Series> found);

  size_t NumSeries() const;
  // Whether reports are kept: a reader has come and the cache has not given up. Writers skip
  // building their reports while it is false.
  bool Wanted() const { return wanted_.load(std::memory_order_relaxed); }

 private:
  // The series of bucket meta `meta`, added (empty) if new. Under mu_.
  Series& SeriesLocked(const bson::BsonElement& meta);
  // Takes (time, rows) into `s`: a later time replaces, the same time adds. Under mu_.
  void MergeLocked(Series& s, int64_t time, std::vector<bson::BsonObj> rows);
  // Beyond the bounds: give up for good. Under mu_.
  void DisableLocked();

  mutable std::mutex mu_;
  std::unordered_map<std::string, Series> series_;  // by the meta element's bytes
  uint64_t untracked_ = 0;           // the UntrackedWrites() count series_ is consistent with
  uint64_t generation_ = 0;          // advanced when a report could not be applied: open fills fail
  std::atomic<bool> wanted_{false};  // active_ && !disabled_
  bool active_ = false;              // a reader has come: writers' reports are kept from then on
  bool complete_ = false;            // series_ holds every series of the collection
  bool disabled_ = false;
};

}  // namespace hourglass::timeseries
