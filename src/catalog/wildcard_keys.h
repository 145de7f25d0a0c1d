// Wildcard indexes ({"$**": 1}, {"a.b.$**": 1}, optionally with a wildcardProjection): what part
// of a document they index and the keys they generate, with MongoDB's rules.
//
// The indexed part of a document is the document after a projection: {"a.b": 1} for a subtree
// key "a.b.$**"; the wildcardProjection (inclusion or exclusion, applied by query::Projection)
// for "$**"; `_id` is left out unless the projection includes it explicitly. That part is walked
// field by field: an object is descended into (an empty one is a value: {}), an array's elements
// are indexed under the array's own path (array positions never appear in paths; an empty array
// is indexed as undefined, an array directly inside an array as a value), anything else is a
// value. Each (dotted path, value) pair is one key: the key_string encoding of the path as a
// string, then of the value (complemented for {"$**": -1}). A document without indexed fields has
// no keys (wildcard indexes are sparse). Field names containing '.' cannot be queried and are
// skipped.
//
// Thread-safety: WildcardIndex is immutable once parsed and may be shared; functions are pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "query/projection.h"

namespace hourglass::catalog {

struct WildcardIndex {
  std::string root;  // "a.b" for "a.b.$**"; empty for "$**"
  bool descending = false;
  query::Projection projection;  // what is indexed (see above)
  bool inclusion = true;
  // The projection's paths, `_id` included when the index leaves it out: with `inclusion`,
  // the included subtrees; otherwise the excluded ones.
  std::vector<std::string> paths;

  // Parses the wildcard key field (`"$**"` or `"<path>.$**"`) and the spec's wildcardProjection
  // (EOO: none). Errors are those of the projection parser (Location31253/31254/31249/31250) and
  // Location7246207 for a projection value that is neither a number nor a bool.
  static StatusWith<WildcardIndex> Parse(const bson::BsonElement& key_field,
                                         const bson::BsonElement& projection);

  // Whether every value a query on the dotted `path` compares with is indexed under `path`: the
  // path lies in an included subtree (and in no excluded one, nor above one).
  bool Covers(std::string_view path) const;
};

// Whether a key pattern field name is a wildcard one ("$**" or ending in ".$**").
bool IsWildcardFieldName(std::string_view name);

// The keys of `doc` (sorted, distinct, without RecordId). The paths of the arrays walked (not
// those indexed as values) are added to *array_paths: a path is multikey when it or one of its
// ancestors is among them.
// `strings`: the index's collation (null: simple), keys as GenerateIndexKeys makes them.
std::vector<std::string> GenerateWildcardKeys(const WildcardIndex& index, const bson::BsonObj& doc,
                                              std::vector<std::string>* array_paths,
                                              const bson::StringComparator* strings = nullptr);

// Whether dotted `path` is one of `array_paths` or lies below one of them.
bool PathIsMultikey(std::string_view path, const std::vector<std::string>& array_paths);

// The encoding of `path` that starts every key of that path (a prefix: values follow).
std::string EncodeWildcardPath(std::string_view path);

}  // namespace hourglass::catalog
