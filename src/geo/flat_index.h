// The keys of 2d indexes and the key ranges a flat query reads from them, as MongoDB's 2d index
// makes them: a point location (a legacy pair [x, y] or {a: x, b: y}) on a bounded plane
// ([min, max] on both axes, -180 to 180 by default) becomes a geohash of `bits` bits per axis
// (26 by default), x and y bits interleaved from the most significant, left-aligned in 64 bits
// and stored big-endian as BinData of subtype 128, so index order is geohash order. A query box
// is covered by the geohash cells it overlaps, each a range of hashes; the query's own test is
// applied to every document found.
//
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "geo/geo_query.h"

namespace hourglass::geo {

struct FlatIndexParams {
  int bits = 26;
  double min = -180, max = 180;

  // The spec's `bits`, `min` and `max` (already known to be numbers when present).
  // InvalidOptions (72) for bits outside 1-32, or a range without positive area.
  static StatusWith<FlatIndexParams> FromSpec(const bson::BsonObj& spec);
};

// The geohashes of a document's value for a 2d index, sorted: none for a value that is not an
// object or array (a string, a number, null, missing) or is empty; one for a point location; one
// per location of a list of them ([[x, y], ...], {home: [x, y], work: [x, y]}). Errors with
// MongoDB's codes (the caller adds the document): Location16804 for a GeoJSON object,
// Location13026 for non-numeric coordinates, Location13027 for a point outside [min, max].
StatusWith<std::vector<uint64_t>> FlatIndexHashes(const bson::BsonElement& value,
                                                  const FlatIndexParams& params);

// The bytes of a geohash key (BinData of subtype 128): big-endian, so byte order is hash order.
std::string FlatHashBytes(uint64_t hash);
inline constexpr uint8_t kFlatHashSubtype = 128;

// An inclusive range of geohashes.
struct HashRange {
  uint64_t lo = 0, hi = 0;
};

// The geohash ranges holding every point `q` can match, sorted and disjoint, or nullopt when a
// 2d index cannot bound it (a $geometry).
std::optional<std::vector<HashRange>> FlatQueryRanges(const GeoQuery& q,
                                                      const FlatIndexParams& params);

}  // namespace hourglass::geo
