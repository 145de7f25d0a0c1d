#include "catalog/series_directory.h"

#include <algorithm>
#include <map>

#include "bson/bson_compare.h"

namespace hourglass::catalog {

struct SeriesDirectory::PathIndex {
  struct ValueLess {
    bool operator()(const bson::BsonObj& a, const bson::BsonObj& b) const {
      return bson::CompareElementValues(a.FirstElement(), b.FirstElement()) < 0;
    }
  };
  std::shared_ptr<const std::vector<Series>> snapshot;               // what it was built for
  std::map<bson::BsonObj, std::vector<size_t>, ValueLess> by_value;  // {"": scalar} → series
  std::vector<size_t> undecided;  // the path crosses an array or ends at an object or array
};

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

std::vector<size_t> SeriesDirectory::Candidates(
    const std::shared_ptr<const std::vector<Series>>& snapshot, std::string_view path,
    const std::vector<bson::BsonElement>& values) {
  std::shared_ptr<const PathIndex> index;
  {
    std::lock_guard lk(mu_);
    auto it = path_indexes_.find(std::string(path));
    if (it != path_indexes_.end() && it->second->snapshot == snapshot) index = it->second;
  }
  if (!index) {
    auto built = std::make_shared<PathIndex>();
    built->snapshot = snapshot;
    std::vector<std::string_view> parts;
    for (size_t at = 0; at <= path.size();) {
      size_t dot = std::min(path.find('.', at), path.size());
      parts.push_back(path.substr(at, dot - at));
      at = dot + 1;
    }
    for (size_t i = 0; i < snapshot->size(); ++i) {
      bson::BsonElement e = (*snapshot)[i].meta.GetField(parts[0]);
      bool undecided = false;
      for (size_t p = 1; p < parts.size() && !e.eoo(); ++p) {
        if (e.type() == bson::BsonType::kArray) {
          undecided = true;
          break;
        }
        e = e.type() == bson::BsonType::kObject ? e.Obj().GetField(parts[p]) : bson::BsonElement();
      }
      if (!undecided && e.eoo()) continue;
      if (undecided || e.type() == bson::BsonType::kArray || e.type() == bson::BsonType::kObject) {
        built->undecided.push_back(i);
        continue;
      }
      bson::BsonBuilder key;
      key.AppendElementAs(e, "");
      built->by_value[key.Obj()].push_back(i);
    }
    index = built;
    std::lock_guard lk(mu_);
    path_indexes_[std::string(path)] = built;
  }
  std::vector<size_t> out = index->undecided;
  for (const bson::BsonElement& v : values) {
    bson::BsonBuilder key;
    key.AppendElementAs(v, "");
    auto it = index->by_value.find(key.Obj());
    if (it != index->by_value.end()) out.insert(out.end(), it->second.begin(), it->second.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace hourglass::catalog
