#include "pipeline/group_table.h"

#include <algorithm>

#include "bson/key_string.h"

namespace hourglass::pipeline {

std::string GroupTable::KeyBytes(const Value& key) const {
  bson::KeyStringBuilder b;
  b.AppendElement(key.element(), /*descending=*/false, strings_);
  return b.Release();
}

void GroupTable::IndexGroups() {
  in_order_ = false;
  for (Group& g : groups_) {
    g.key_bytes = KeyBytes(g.key);
    by_bytes_.emplace(g.key_bytes, &g);
  }
}

GroupTable::Accs* GroupTable::Find(const Value& key) {
  if (in_order_) {
    if (groups_.empty()) return nullptr;
    const int c = bson::CompareElementValues(key.element(), groups_.back().key.element(), strings_);
    if (c == 0) return &groups_.back().accs;
    if (c > 0) return nullptr;
    IndexGroups();
  }
  pending_bytes_ = KeyBytes(key);
  auto it = by_bytes_.find(pending_bytes_);
  return it == by_bytes_.end() ? nullptr : &it->second->accs;
}

GroupTable::Accs* GroupTable::Add(const Value& key, Accs accs) {
  ordered_valid_ = false;
  Group& g = groups_.emplace_back(Group{key, std::move(accs), {}});
  if (!in_order_) {
    g.key_bytes = std::move(pending_bytes_);
    by_bytes_.emplace(g.key_bytes, &g);
  }
  return &g.accs;
}

const std::vector<const GroupTable::Group*>& GroupTable::Ordered() {
  if (ordered_valid_) return ordered_;
  ordered_.clear();
  ordered_.reserve(groups_.size());
  for (const Group& g : groups_) ordered_.push_back(&g);
  if (!in_order_) {
    std::sort(ordered_.begin(), ordered_.end(),
              [](const Group* a, const Group* b) { return a->key_bytes < b->key_bytes; });
  }
  ordered_valid_ = true;
  return ordered_;
}

void GroupTable::Clear() {
  groups_.clear();
  by_bytes_.clear();
  in_order_ = true;
  ordered_.clear();
  ordered_valid_ = false;
}

}  // namespace hourglass::pipeline
