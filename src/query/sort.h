// Sort patterns ({a: 1, "b.c": -1}) and MongoDB's document order for them. For each key, an
// array-valued path contributes its smallest element to an ascending key and its largest to a
// descending key; a missing path sorts as null, and an empty array sorts before null. Ties on
// every key compare equal (callers wanting a stable order use a stable sort). Immutable after
// Parse and safe to share between threads. Errors: BadValue (MongoDB's 15975 for bad
// directions, see query_errors.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "bson/bson_compare.h"
#include "query/path.h"

namespace hourglass::query {

class SortPattern {
 public:
  SortPattern() = default;
  // Values must be 1 or -1 (any numeric type). {$meta: ...} is not supported yet. {} parses
  // into an empty pattern (IsEmpty()), meaning "no sort".
  static StatusWith<SortPattern> Parse(const bson::BsonObj& spec);

  // <0, 0, >0 as `a` sorts before, with, or after `b`.
  int Compare(const bson::BsonObj& a, const bson::BsonObj& b) const;

  // The sort key of `doc`, so repeated comparisons need not walk the documents again: one
  // BinData element holding the key string (bson/key_string.h) of the per-key sort values, the
  // descending ones complemented. Opaque: compare keys only with CompareKeys (a memcmp).
  bson::BsonObj ExtractKey(const bson::BsonObj& doc) const;
  int CompareKeys(const bson::BsonObj& ka, const bson::BsonObj& kb) const;

  bool IsEmpty() const { return keys_.empty(); }
  size_t NumKeys() const { return keys_.size(); }
  // Whether the pattern is the one key `dotted`; then `*ascending` is its direction.
  bool IsSingleKey(std::string_view dotted, bool* ascending) const {
    if (keys_.size() != 1 || keys_[0].dotted != dotted) return false;
    *ascending = keys_[0].ascending;
    return true;
  }

  // Whether the pattern is the keys "<prefix><name>" for `names`, in that order, all in one
  // direction; then `*ascending` is that direction.
  bool IsKeys(std::string_view prefix, const std::vector<std::string>& names,
              bool* ascending) const;
  // Whether the pattern has keys and each begins with `prefix`.
  bool AllKeysUnder(std::string_view prefix) const {
    for (const Key& k : keys_) {
      if (!k.dotted.starts_with(prefix)) return false;
    }
    return !keys_.empty();
  }

  // Orders strings under `collator` from now on (a collation; null: the simple order).
  void SetCollator(std::shared_ptr<const bson::StringComparator> collator) {
    collator_ = std::move(collator);
  }

 private:
  struct Key {
    std::string dotted;
    FieldPath path;
    bool ascending;
  };
  std::vector<Key> keys_;
  std::shared_ptr<const bson::StringComparator> collator_;
};

}  // namespace hourglass::query
