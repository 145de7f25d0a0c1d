#include "timeseries/latest_measurements.h"

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

void LatestMeasurements::Committed(const BsonElement& meta, int64_t time, std::vector<BsonObj> rows,
                                   uint64_t untracked_before) {
  std::lock_guard lk(mu_);
  if (disabled_ || !active_) return;  // no reader yet: a first fill reads everything anyway
  if (untracked_before != untracked_) {
    // A write the cache does not follow committed around this one: the report may describe
    // rows that write removed, or the series it would go into are stale. Either way no fill in
    // progress may complete, and the cache is no longer complete.
    complete_ = false;
    ++generation_;
    return;
  }
  MergeLocked(SeriesLocked(meta), time, std::move(rows));
  if (series_.size() > kMaxSeries) DisableLocked();
}

bool LatestMeasurements::Read(uint64_t untracked, const std::function<void(const Series&)>& fn,
                              Ticket* ticket) {
  std::lock_guard lk(mu_);
  active_ = true;
  wanted_ = !disabled_;
  if (!disabled_ && complete_ && untracked_ == untracked) {
    for (const auto& [key, s] : series_) fn(s);
    return true;
  }
  if (untracked > untracked_) {
    // Writes the cache does not follow have committed: what it holds may be gone.
    series_.clear();
    untracked_ = untracked;
    complete_ = false;
  }
  *ticket = Ticket{untracked, generation_};
  return false;
}

void LatestMeasurements::Fill(const Ticket& ticket, uint64_t untracked_now,
                              std::vector<Series> found) {
  std::lock_guard lk(mu_);
  if (disabled_ || untracked_now != ticket.untracked || untracked_ != ticket.untracked ||
      generation_ != ticket.generation) {
    return;
  }
  for (Series& f : found) {
    MergeLocked(SeriesLocked(f.meta["meta"]), f.time, std::move(f.rows));
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

void LatestMeasurements::MergeLocked(Series& s, int64_t time, std::vector<BsonObj> rows) {
  if (time < s.time) return;
  if (time > s.time) {
    s.time = time;
    s.rows.clear();
  }
  for (BsonObj& r : rows) s.rows.push_back(r.Owned());
  if (s.rows.size() > kMaxRowsPerSeries) DisableLocked();
}

void LatestMeasurements::DisableLocked() {
  disabled_ = true;
  wanted_ = false;
  complete_ = false;
  series_.clear();
}

}  // namespace hourglass::timeseries
