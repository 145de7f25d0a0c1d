#include "catalog/series_directory.h"

#include <algorithm>

namespace hourglass::catalog {

namespace {
// Copies the series' metas into one buffer, in order. A read that tests every series' meta
// touches all of them; metas allocated one at a time while buckets were written lie scattered
// across the heap, and at 4,000 series testing them took twice as long as testing the metas a
// walk of the index allocates together after a restart.
void PackMetas(std::vector<SeriesDirectory::Series>& list) {
  size_t total = 0;
  for (const auto& one : list) total += one.meta.bytes().size();
  auto buffer = std::make_shared<std::string>();
  buffer->reserve(total);
  for (const auto& one : list) buffer->append(one.meta.bytes());
  std::shared_ptr<const std::string> packed = std::move(buffer);
  const char* at = packed->data();
  for (auto& one : list) {
    const size_t size = one.meta.bytes().size();
    one.meta = bson::BsonObj(packed, at);
    at += size;
  }
}
}  // namespace

void SeriesDirectory::Add(std::string_view prefix, const bson::BsonElement& meta) {
  std::lock_guard lk(mu_);
  if (gave_up_ || prefixes_.contains(std::string(prefix))) return;
  if (prefixes_.size() >= kMaxSeries) {
    gave_up_ = true;
    prefixes_.clear();
    added_.clear();
    list_.reset();
    return;
  }
  prefixes_.emplace(prefix);
  bson::BsonBuilder b;
  if (!meta.eoo()) b.AppendElement(meta);
  added_.push_back({std::string(prefix), b.Obj()});
}

void SeriesDirectory::MarkComplete() {
  std::lock_guard lk(mu_);
  complete_ = true;
}

std::shared_ptr<const std::vector<SeriesDirectory::Series>> SeriesDirectory::Snapshot() {
  std::lock_guard lk(mu_);
  if (!complete_ || gave_up_) return nullptr;
  if (!added_.empty()) {
    // Readers may still hold the old list: the new series go into a copy.
    auto next = std::make_shared<std::vector<Series>>(*list_);
    next->insert(next->end(), std::make_move_iterator(added_.begin()),
                 std::make_move_iterator(added_.end()));
    // In the index's order, so that reads return buckets in the order a walk of it would.
    std::sort(next->begin(), next->end(),
              [](const Series& a, const Series& b) { return a.prefix < b.prefix; });
    PackMetas(*next);
    added_.clear();
    list_ = std::move(next);
  }
  return list_;
}

}  // namespace hourglass::catalog
