// Internal to src/query: one parsed update operation and the function applying it to a
// MutableDocument. See update.h for the contract.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "query/matcher.h"
#include "query/mutable_document.h"
#include "query/path.h"
#include "query/sort.h"

namespace hourglass::query {

enum class UpdateOpType {
  kSet,
  kSetOnInsert,
  kUnset,
  kInc,
  kMul,
  kMin,
  kMax,
  kRename,
  kCurrentDate,
  kPush,
  kAddToSet,
  kPop,
  kPull,
  kPullAll,
  kBit,
};

// One arrayFilters entry: `identifier` and the filter, tested against {<identifier>: element}.
struct ArrayFilter {
  std::string identifier;
  std::shared_ptr<const Matcher> matcher;
};

struct UpdateOp {
  UpdateOpType type;
  std::string op_name;  // "$set", ...
  std::string path;
  FieldPath parts;
  bool positional = false;  // parts has "$", "$[]" or "$[<id>]" components
  bson::BsonElement arg;
  // The update's collation ($min, $max, $addToSet, $pull, $pullAll and $push's $sort compare
  // strings under it; null: simple), kept alive by the UpdateDriver.
  std::shared_ptr<const bson::StringComparator> strings;

  // $push / $addToSet
  std::vector<bson::BsonElement> each;
  std::optional<int64_t> slice;
  std::optional<int64_t> position;
  int sort_whole = 0;  // 1 / -1: sort elements themselves
  std::shared_ptr<SortPattern> sort_pattern;
  // $pull with a condition or regex
  std::shared_ptr<ElementMatcher> pull_matcher;
  // $rename
  std::string to_path;
  FieldPath to_parts;
  // $currentDate
  bool timestamp = false;
};

// Applies `op` to `doc`; `original` is the document before the update (for error messages).
Status ApplyUpdateOp(const UpdateOp& op, const bson::BsonObj& original, MutableDocument* doc);

}  // namespace hourglass::query
