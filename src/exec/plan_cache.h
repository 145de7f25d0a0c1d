// The plan cache: for a collection and a query shape (the filter's fields, operators and value
// types, the sort and the projection, not the values), the index the multi-planner last chose and
// the works its trial took. A query of a cached shape runs the cached plan directly; if that plan
// needs more than ten times the cached works to produce its first batch (101 results, or the
// limit) or reach its end, the entry is dropped and the candidates run a new trial, as MongoDB's
// replanning does. Entries belong to a collection's index set: any index DDL (create, drop,
// hide) makes them stale, and stale entries are never used and no longer listed.
// `planCacheClear` clears a collection's entries (or one shape's); `$planCacheStats` lists them.
//
// Thread-safety: PlanCache is internally synchronised (one mutex, held only for map operations).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bson/bson.h"
#include "catalog/collection.h"

namespace hourglass::exec {

struct PlanCacheEntry {
  std::string shape;                      // the key within the collection (QueryShape)
  std::string index_set;                  // IndexSetSignature when the entry was made
  std::string index_name;                 // the winner's index
  std::string wildcard_path;              // the path the winner reads, for a wildcard index
  int64_t works = 0;                      // the winner's works in its trial
  bson::BsonObj query, sort, projection;  // the query that created the entry
  int64_t created_millis = 0;
};

class PlanCache {
 public:
  // The process's cache.
  static PlanCache& Instance();

  // The entry of `shape` on `ns` if it was made for `index_set`.
  std::optional<PlanCacheEntry> Lookup(const std::string& ns, const std::string& shape,
                                       const std::string& index_set);
  void Store(const std::string& ns, PlanCacheEntry entry);
  void Erase(const std::string& ns, const std::string& shape);
  void Clear(const std::string& ns);
  // The entries of `ns` made for `index_set`, by shape.
  std::vector<PlanCacheEntry> List(const std::string& ns, const std::string& index_set);

 private:
  std::mutex mu_;
  std::map<std::string, std::map<std::string, PlanCacheEntry>> entries_;  // guarded by mu_
};

// The shape of a query: field names, operators and value types of `filter`, then `sort` and
// `projection` (with values), then `extra` (what else changes the plan, e.g. "count").
std::string QueryShape(const bson::BsonObj& filter, const bson::BsonObj& sort,
                       const bson::BsonObj& projection, std::string_view extra = {});

// What the planner's choice depends on in `coll`'s index set: each index's ident, readiness and
// hidden flag.
std::string IndexSetSignature(const catalog::Collection& coll);

}  // namespace hourglass::exec
