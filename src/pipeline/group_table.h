// The groups of a $group, found by key and given back in key order.
//
// A group is found by its key's key string (bson/key_string.h) under the stage's collation:
// the bytes are equal exactly for the keys $group deems one group (1, 1.0 and NumberLong(1);
// strings the collation calls equal) and order as the keys order. So a lookup is one hash and
// one byte comparison instead of a search comparing values, and the output order is one sort
// of byte strings. A group keeps the first key it was found by, as MongoDB's does.
//
// Not thread-safe; pointers to a group's accumulators stay valid until Clear().
#pragma once

#include <memory>
#include <string>
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
  };

  // `strings` orders and equates strings (null: by their bytes); it must outlive the table.
  explicit GroupTable(const bson::StringComparator* strings) : strings_(strings) {}

  // The accumulators of the group of `key` (not missing), or null if there is none yet; then
  // `*key_bytes` holds the key's key string for the Add that follows.
  Accs* Find(const Value& key, std::string* key_bytes);
  // Adds the group of `key` whose key string Find gave.
  Accs* Add(std::string key_bytes, const Value& key, Accs accs);

  // The groups in key order. Sorted on the first call after a change.
  const std::vector<const Group*>& Ordered();

  bool empty() const { return groups_.empty(); }
  void Clear();

 private:
  const bson::StringComparator* strings_;
  std::unordered_map<std::string, Group> groups_;
  std::vector<const Group*> ordered_;
  bool ordered_valid_ = false;
};

}  // namespace hourglass::pipeline
