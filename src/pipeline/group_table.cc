#include "pipeline/group_table.h"

#include <algorithm>

#include "bson/key_string.h"

namespace hourglass::pipeline {

GroupTable::Accs* GroupTable::Find(const Value& key, std::string* key_bytes) {
  bson::KeyStringBuilder b;
  b.AppendElement(key.element(), /*descending=*/false, strings_);
  *key_bytes = b.Release();
  auto it = groups_.find(*key_bytes);
  return it == groups_.end() ? nullptr : &it->second.accs;
}

GroupTable::Accs* GroupTable::Add(std::string key_bytes, const Value& key, Accs accs) {
  ordered_valid_ = false;
  auto [it, inserted] = groups_.try_emplace(std::move(key_bytes), Group{key, std::move(accs)});
  return &it->second.accs;
}

const std::vector<const GroupTable::Group*>& GroupTable::Ordered() {
  if (ordered_valid_) return ordered_;
  std::vector<std::pair<const std::string*, const Group*>> by_bytes;
  by_bytes.reserve(groups_.size());
  for (const auto& [bytes, group] : groups_) by_bytes.emplace_back(&bytes, &group);
  std::sort(by_bytes.begin(), by_bytes.end(),
            [](const auto& a, const auto& b) { return *a.first < *b.first; });
  ordered_.clear();
  ordered_.reserve(by_bytes.size());
  for (const auto& [bytes, group] : by_bytes) ordered_.push_back(group);
  ordered_valid_ = true;
  return ordered_;
}

void GroupTable::Clear() {
  groups_.clear();
  ordered_.clear();
  ordered_valid_ = false;
}

}  // namespace hourglass::pipeline
