// LatestMeasurements: for one time-series collection, the measurements at each series' latest
// times, so that a last-point query ($sort {meta: 1, time: -1} + $group $first, or $top/$bottom by
// time; spec §6.3), or one for the latest n per series ($topN, $firstN...), is answered without
// reading a bucket.
//
// Depth. The cache keeps each series' measurements at or after its depth-th latest time: depth 1
// (its latest time) until a reader asks for more (up to kMaxDepth), which empties it for a fill at
// that depth. Writers build their reports at the Depth() they read; one built for less than the
// cache now keeps cannot be merged, and counts as a write the cache cannot follow.
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
// field (first, always a date), the meta field, then the bucket's columns in order. Ties at the
// latest time keep every measurement (the pattern's $first/$top/$bottom picks one of them
// whichever order they come in). For n > 1 the cache does not keep the order the buckets would
// give, so it serves only series whose n latest measurements have distinct times.
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
  static constexpr int64_t kMaxDepth = 16;

  struct Series {
    bson::BsonObj meta;  // {meta: <value>}, or {} for buckets without meta
    int64_t time = 0;    // the latest time, millis
    std::vector<bson::BsonObj> rows;
    // The rows' times, in their order (kept by the cache, so that choosing rows reads no row;
    // ignored in what a Fill is given).
    std::vector<int64_t> times;
  };

  // A writer's report, once its commit succeeded: `rows` are stored in the series of bucket meta
  // `meta`, `time` the latest time among them; they are what it wrote at or after its
  // `depth`-th latest time (Depth(), read before building them). `untracked_before` is the
  // bucket collection's UntrackedWrites() read before its transaction began.
  void Committed(const bson::BsonElement& meta, int64_t time, std::vector<bson::BsonObj> rows,
                 uint64_t untracked_before, int64_t depth);

  // What a reader needs to offer a fill.
  struct Ticket {
    uint64_t untracked = 0;
    uint64_t generation = 0;
    int64_t n = 1;  // the reader's
    // Whether a fill by this reader could make the cache complete (Read set no ticket for a
    // fill that would change nothing: the cache is current but a tie kept it from serving n).
    bool fill_wanted = false;
  };
  // For a reader of each series' measurements at or after its `n`-th latest time (1 <= n <=
  // kMaxDepth). When the cache is complete and current for `untracked` (the collection's
  // UntrackedWrites() now) and can serve n: calls fn(series, from) for every series, `from`
  // the time at or after which its rows are the reader's, and returns true. Otherwise returns
  // false and sets *ticket for a Fill by this reader, who must read the buckets after this call.
  // Only a reader that `will_fill` makes the cache keep more than it does (then it starts over).
  bool Read(uint64_t untracked, int64_t n, bool will_fill,
            const std::function<void(const Series&, int64_t from)>& fn, Ticket* ticket);
  // The measurements of every series at or after its ticket.n-th latest time, as the reader
  // holding `ticket` found them in the buckets (any number of Series per series). Taken, making
  // the cache complete, unless a write it cannot follow committed since the ticket was issued
  // (`untracked_now` differs from the ticket's, or a writer's report could not be applied), or
  // the cache now keeps more than ticket.n.
  void Fill(const Ticket& ticket, uint64_t untracked_now, std::vector<Series> found);

  size_t NumSeries() const;
  // Whether reports are kept: a reader has come and the cache has not given up. Writers skip
  // building their reports while it is false.
  bool Wanted() const { return wanted_.load(std::memory_order_relaxed); }
  // How many of its latest times per series the cache keeps, so writers report as many.
  int64_t Depth() const { return depth_.load(std::memory_order_relaxed); }
  // The n-th largest of `times` (the smallest when there are fewer; INT64_MIN when none): the
  // time at or after which they hold their n latest.
  static int64_t NthLargest(std::vector<int64_t> times, int64_t n);

 private:
  // The series of bucket meta `meta`, added (empty) if new. Under mu_.
  Series& SeriesLocked(const bson::BsonElement& meta);
  // Takes `rows` into `s`, keeping those at or after its depth_-th latest time. Under mu_.
  void MergeLocked(Series& s, std::vector<bson::BsonObj> rows);
  // Beyond the bounds: give up for good. Under mu_.
  void DisableLocked();

  mutable std::mutex mu_;
  std::unordered_map<std::string, Series> series_;  // by the meta element's bytes
  uint64_t untracked_ = 0;           // the UntrackedWrites() count series_ is consistent with
  uint64_t generation_ = 0;          // advanced when a report could not be applied: open fills fail
  std::atomic<bool> wanted_{false};  // active_ && !disabled_
  std::atomic<int64_t> depth_{1};    // changed under mu_
  bool active_ = false;              // a reader has come: writers' reports are kept from then on
  bool complete_ = false;            // series_ holds every series of the collection
  bool disabled_ = false;
};

}  // namespace hourglass::timeseries
