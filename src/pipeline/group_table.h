// The groups of a $group, found by key and given back in key order.
//
// While the keys come in ascending order (input sorted on the key, such as a series' rows or
// the last points of series), a key is compared with the last group's only: equal finds it,
// greater starts a new group, and the groups are already in order. From the first key out of
// order on, groups are found by their key's key string (bson/key_string.h) under the stage's
// collation: the bytes are equal exactly for the keys $group deems one group (1, 1.0 and
// NumberLong(1); strings the collation calls equal) and order as the keys order, so a lookup is
// a hash and a byte comparison, and the output order one sort of byte strings. A group keeps
// the first key it was found by, as MongoDB's does.
//
// Not thread-safe. The accumulators a group holds stay where they are until Clear(); a pointer
// to a group's vector of them is valid until the next Add.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bson/bson_compare.h"
#include "pipeline/accumulator.h"
#include "pipeline/value.h"

namespace hourglass::pipeline {

class GroupTable {
 public:
  using Accs = std::vector<std::unique_ptr<Accumulator>>;
  struct Group {
    Value key;
    Accs accs;
    std::string key_bytes;  // set once the table finds groups by key string
  };

  // `strings` orders and equates strings (null: by their bytes); it must outlive the table.
  explicit GroupTable(const bson::StringComparator* strings) : strings_(strings) {}

  // The accumulators of the group of `key` (not missing), or null if there is none yet.
  Accs* Find(const Value& key);
  // Adds the group of `key`, which Find just did not find.
  Accs* Add(const Value& key, Accs accs);

  // The groups in key order (sorted on the first call after a change, unless they came in
  // order).
  const std::vector<const Group*>& Ordered();

  bool empty() const { return groups_.empty(); }
  void Clear();

 private:
  std::string KeyBytes(const Value& key) const;
  // Leaves the in-order mode: indexes every group by its key string.
  void IndexGroups();

  const bson::StringComparator* strings_;
  std::deque<Group> groups_;  // in order of creation
  bool in_order_ = true;      // every group's key is greater than the one before it
  // Out of order: every group, by its key_bytes (the groups do not move).
  std::unordered_map<std::string_view, Group*> by_bytes_;
  std::string pending_bytes_;  // the key string of the key Find last missed (out of order)
  std::vector<const Group*> ordered_;
  bool ordered_valid_ = false;
};

}  // namespace hourglass::pipeline
