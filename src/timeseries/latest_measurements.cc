#include "timeseries/latest_measurements.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace hourglass::timeseries {

using bson::BsonElement;
using bson::BsonObj;

namespace {

std::string KeyOf(const BsonElement& meta) {
  return meta.eoo() ? std::string() : std::string(meta.raw(), meta.size());
}

}  // namespace

void LatestMeasurements::Committed(const BsonElement& meta, int64_t /*time*/,
                                   std::vector<BsonObj> rows, uint64_t untracked_before,
                                   int64_t depth) {
  std::lock_guard lk(mu_);
  if (disabled_ || !active_) return;  // no reader yet: a first fill reads everything anyway
  if (untracked_before != untracked_ || depth < depth_) {
    // A write the cache does not follow committed around this one: the report may describe
    // rows that write removed, or the series it would go into are stale; or the report may lack
    // rows the cache's depth keeps. Either way no fill in progress may complete, and the cache
    // is no longer complete.
    complete_ = false;
    ++generation_;
    return;
  }
  MergeLocked(SeriesLocked(meta), std::move(rows));
  if (series_.size() > kMaxSeries) DisableLocked();
}

bool LatestMeasurements::Read(uint64_t untracked, int64_t n, bool will_fill,
                              const std::function<void(const Series&, int64_t)>& fn,
                              Ticket* ticket) {
  std::lock_guard lk(mu_);
  active_ = true;
  wanted_ = !disabled_;
  if (untracked > untracked_) {
    // Writes the cache does not follow have committed: what it holds may be gone.
    series_.clear();
    untracked_ = untracked;
    complete_ = false;
  }
  *ticket = Ticket{untracked, generation_, n};
  if (disabled_) return false;
  if (complete_ && untracked_ == untracked && n <= depth_) {
    std::vector<std::pair<const Series*, int64_t>> served;
    served.reserve(series_.size());
    std::vector<int64_t> times;
    for (const auto& [key, s] : series_) {
      const int64_t from = n == 1 ? s.time : NthLargest(s.times, n);
      if (n > 1) {
        // Served in another order than the buckets', ties could come out in another order.
        times.clear();
        for (int64_t t : s.times) {
          if (t >= from) times.push_back(t);
        }
        std::sort(times.begin(), times.end());
        if (std::adjacent_find(times.begin(), times.end()) != times.end()) return false;
      }
      served.emplace_back(&s, from);
    }
    for (const auto& [s, from] : served) fn(*s, from);
    return true;
  }
  if (will_fill && (!complete_ || n > depth_)) {
    // The fill to come sets the depth: deeper, what is held lacks the rows before each series'
    // latest times; shallower (only while incomplete), what is held is more than it needs.
    const int64_t want = std::min(n, kMaxDepth);
    if (want > depth_) {
      series_.clear();
      complete_ = false;
    }
    depth_ = want;
    ticket->fill_wanted = true;
  }
  return false;
}

void LatestMeasurements::Fill(const Ticket& ticket, uint64_t untracked_now,
                              std::vector<Series> found) {
  std::lock_guard lk(mu_);
  if (disabled_ || untracked_now != ticket.untracked || untracked_ != ticket.untracked ||
      generation_ != ticket.generation || ticket.n < depth_) {
    return;
  }
  for (Series& f : found) {
    MergeLocked(SeriesLocked(f.meta["meta"]), std::move(f.rows));
    if (disabled_) return;
  }
  if (series_.size() > kMaxSeries) {
    DisableLocked();
    return;
  }
  complete_ = true;
}

size_t LatestMeasurements::NumSeries() const {
  std::lock_guard lk(mu_);
  return series_.size();
}

LatestMeasurements::Series& LatestMeasurements::SeriesLocked(const BsonElement& meta) {
  auto [it, inserted] = series_.try_emplace(KeyOf(meta));
  if (inserted) {
    bson::BsonBuilder holder;
    if (!meta.eoo()) holder.AppendElementAs(meta, "meta");
    it->second.meta = holder.Obj();
    it->second.time = std::numeric_limits<int64_t>::min();
  }
  return it->second;
}

int64_t LatestMeasurements::NthLargest(std::vector<int64_t> times, int64_t n) {
  if (times.empty()) return std::numeric_limits<int64_t>::min();
  if (static_cast<int64_t>(times.size()) <= n) return *std::min_element(times.begin(), times.end());
  auto nth = times.begin() + (n - 1);
  std::nth_element(times.begin(), nth, times.end(), std::greater<>());
  return *nth;
}

void LatestMeasurements::MergeLocked(Series& s, std::vector<BsonObj> rows) {
  for (BsonObj& r : rows) {
    const int64_t t = r.FirstElement().DateMillis();
    if (depth_ == 1) {
      // A later time replaces, the same time adds, an earlier one stays out.
      if (t < s.time) continue;
      if (t > s.time) {
        s.rows.clear();
        s.times.clear();
      }
    }
    s.time = std::max(s.time, t);
    s.rows.push_back(r.Owned());
    s.times.push_back(t);
  }
  if (depth_ > 1 && !s.rows.empty()) {
    const int64_t cut = NthLargest(s.times, depth_);
    size_t kept = 0;
    for (size_t i = 0; i < s.rows.size(); ++i) {
      if (s.times[i] < cut) continue;
      if (kept != i) {
        s.rows[kept] = std::move(s.rows[i]);
        s.times[kept] = s.times[i];
      }
      ++kept;
    }
    s.rows.resize(kept);
    s.times.resize(kept);
  }
  if (s.rows.size() > kMaxRowsPerSeries) DisableLocked();
}

void LatestMeasurements::DisableLocked() {
  disabled_ = true;
  wanted_ = false;
  complete_ = false;
  series_.clear();
}

}  // namespace hourglass::timeseries
