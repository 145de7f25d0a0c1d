// Index descriptors and index key generation for secondary indexes of regular collections.
//
// An IndexDescriptor is the parsed form of a stored index spec ({v, key, name, unique, sparse,
// partialFilterExpression, hidden, expireAfterSeconds, wildcardProjection}); GenerateIndexKeys
// turns a document into the set of its keys for that index with MongoDB's rules: a missing field
// indexes as null, an array at the end of a path contributes one key per element (an empty array
// indexes as undefined), an array in the middle of a path is searched element by element (the index
// then becomes multikey), and a compound key may reach arrays through only one path (chain of
// nested paths): two arrays on unrelated paths fail with CannotIndexParallelArrays (171). A
// "hashed" component holds a 64-bit hash of the value's canonical encoding (arrays fail with
// 16766). A "2dsphere" component holds the S2 cells covering the field's geometry (one key per
// cell, geo/sphere_index.h); a document whose field is missing or null is left out of the index,
// one that is no geometry fails with Location16755. A "2dsphere_bucket" component (a time-series
// measurement's 2dsphere index, on "data.<f>") holds the cells covering every point of the
// bucket's column. A "2d" component holds the geohash of each point location (BinData 128, 8
// bytes); a document without one is left out of the index.
//
// An index with a collation (the spec's `collation`, normalized) keys the comparison form of each
// value (bson::AppendComparisonForm: every string replaced by its collation key), as MongoDB
// keys collated indexes: strings the collation deems equal are one key, and key order is the
// collation's order. Hashed components hash that form.
//
// The key bytes are bson/key_string.h encodings, one component per pattern field; the storage
// format of index tables (which appends the RecordId) is documented in src/storage/README.md.
//
// Thread-safety: pure functions; an IndexDescriptor is immutable and may be shared.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/wildcard_keys.h"
#include "collation/collator.h"
#include "geo/flat_index.h"
#include "geo/sphere_index.h"
#include "query/matcher.h"

namespace hourglass::catalog {

struct IndexDescriptor {
  bson::BsonObj spec;  // as stored
  bson::BsonObj key;   // the key pattern
  std::string name;
  bool unique = false;
  bool sparse = false;
  bool hidden = false;
  bool hashed = false;  // some component is "hashed"
  // Some component is "2dsphere", or a time-series bucket index's "2dsphere_bucket" on a
  // measurement's column: its keys are S2 cells (geo/sphere_index.h).
  bool sphere = false;
  // Its version and cells' levels (geo::SphereIndexParams::FromSpec), for a 2dsphere index.
  geo::SphereIndexParams sphere_params = geo::SphereIndexParams::Default();
  // A "2d" component's plane (geo/flat_index.h): its keys are geohashes.
  std::optional<geo::FlatIndexParams> flat;
  // An index of a time-series bucket collection: a key component on a measurement's bounds
  // (control.min.<f> / control.max.<f>) that meets an array fails with Location5930501, as
  // MongoDB's key generation for buckets does (set by the collection, not by FromSpec).
  bool timeseries_buckets = false;
  std::optional<query::Matcher> partial;
  std::optional<int64_t> expire_after_seconds;
  // A wildcard index (key {"$**": ±1} or {"<path>.$**": ±1}, catalog/wildcard_keys.h).
  std::optional<WildcardIndex> wildcard;
  // The index's collation (null: simple) and its normalized spec (empty: simple).
  std::shared_ptr<const collation::Collator> collator;
  bson::BsonObj collation;

  // Parses a stored (already validated) spec. BadValue if the partial filter does not parse; the
  // collation's errors (collation::Collator::Make) if it has an invalid one.
  static StatusWith<IndexDescriptor> FromSpec(const bson::BsonObj& spec);
};

struct IndexKeySet {
  std::vector<std::string> keys;         // sorted, distinct encodings (without RecordId)
  bool multikey = false;                 // some array was traversed
  std::vector<std::string> array_paths;  // wildcard indexes: the paths of those arrays
};

// The index plugins a key pattern field names: "hashed"; "2dsphere", or "2dsphere_bucket" (a
// time-series bucket index's 2dsphere field on a measurement's column, IsSphereBucketKey); "2d".
bool IsHashedKey(const bson::BsonElement& f);
bool IsSphereKey(const bson::BsonElement& f);
bool IsSphereBucketKey(const bson::BsonElement& f);
bool IsFlatKey(const bson::BsonElement& f);
inline bool IsGeoKey(const bson::BsonElement& f) { return IsSphereKey(f) || IsFlatKey(f); }

// The keys of `doc` for `desc` (none if the document is outside a sparse or partial index; a
// wildcard index's keys come from GenerateWildcardKeys).
// Errors: CannotIndexParallelArrays (171), Location16766 (array in a hashed field),
// Location16755 (a 2dsphere field that is no geometry), the 2d key errors of
// geo::FlatIndexHashes (16804, 13026, 13027).
StatusWith<IndexKeySet> GenerateIndexKeys(const IndexDescriptor& desc, const bson::BsonObj& doc);

// The hash a hashed index stores for `value` (EOO: missing, hashed as null). Values equal in
// index order (1, 1.0, NumberLong(1)) hash equally; under `strings` (an index's collation), so do
// strings it deems equal.
int64_t HashIndexValue(const bson::BsonElement& value,
                       const bson::StringComparator* strings = nullptr);

// {field: value, ...} for an encoded key of `pattern` (DuplicateKey's keyValue), using the
// canonical value forms of bson::DecodeIndexKey.
bson::BsonObj IndexKeyValue(const bson::BsonObj& pattern, std::string_view key_bytes);

// Whether two key patterns describe the same index keys: same fields in the same order, same
// direction (any positive number is ascending, any negative descending), same special types.
bool SameKeyPattern(const bson::BsonObj& a, const bson::BsonObj& b);

// The smallest byte string greater than every string that starts with `prefix` (the end of a
// key-prefix range), or nullopt when there is none (prefix empty or all 0xff bytes).
std::optional<std::string> PrefixSuccessor(std::string prefix);

// The default index name MongoDB gives a key pattern: "a_1_b_-1", "loc_2dsphere".
std::string DefaultIndexName(const bson::BsonObj& pattern);

}  // namespace hourglass::catalog
