// Dotted field paths and MongoDB's query-time path traversal, shared by the matcher, sort and
// projection. See src/query/README.md for the rules (implicit array traversal, numeric
// components, how missing values surface). Stateless functions, safe from any thread; the
// elements handed to callbacks borrow the traversed document.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bson/bson.h"

namespace hourglass::query {

// A dotted path split into its components ("a.b.0" -> {"a", "b", "0"}).
using FieldPath = std::vector<std::string>;

FieldPath SplitPath(std::string_view dotted);
std::string JoinPath(const FieldPath& path, size_t begin = 0, size_t end = std::string::npos);

// Whether dotted path `path` is `prefix` or lies below it, comparing whole components:
// PathStartsWith("a.b", "a") and PathStartsWith("a", "a") hold; PathStartsWith("ab", "a") and
// PathStartsWith("a", "a.b") do not.
bool PathStartsWith(std::string_view path, std::string_view prefix);
// Whether `path` lies strictly below `prefix`: PathStartsWith without equality ("a.b" is below
// "a"; "a" is not below itself).
bool PathIsBelow(std::string_view path, std::string_view prefix);

// The array index named by `component` ("0", "17"), or nullopt when it is not a canonical
// non-negative decimal number (leading zeros, signs and empty strings are field names).
std::optional<size_t> ParseArrayIndex(std::string_view component);

// How a value reached along a path is reported.
struct PathValue {
  bson::BsonElement element;  // EOO when the path is missing at this branch
  bool whole_array = false;   // the array at the end of the path, reported before its elements
};

// Walks `path` through `doc` the way MongoDB's filters do and calls `fn` for every value found,
// stopping early when `fn` returns true (and then returning true):
//  - at an intermediate array, each object element is searched for the rest of the path (other
//    elements are skipped), and a numeric component also indexes the array;
//  - an intermediate scalar, or a missing field, reports one missing value (EOO);
//  - at the end of the path an array is reported whole and then, when `expand_leaf_arrays`, each
//    of its elements (one level only).
bool WalkPath(const bson::BsonObj& doc, const FieldPath& path, bool expand_leaf_arrays,
              const std::function<bool(const PathValue&)>& fn);

}  // namespace hourglass::query
