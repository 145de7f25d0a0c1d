// MongoDB's canonical ordering of BSON values: first by type bracket (MinKey < Undefined < Null <
// numbers < String/Symbol < Object < Array < BinData < ObjectId < Bool < Date < Timestamp <
// Regex < DBPointer < Code < CodeWScope < MaxKey; Undefined ranks with EOO below Null, as in
// MongoDB's canonicalizeBSONType), then within the bracket. Numbers of different types compare by
// exact mathematical value (int32, int64, double, decimal128; NaN equals NaN and sorts below all
// other numbers; -0 == 0). Strings use the simple binary collation. Used by filters, sorts,
// min/max tracking and index key encoding (key_string.h), so they all agree. Details and the
// per-type rules: src/bson/README.md.
//
// Pure functions over borrowed views: thread-safe, no allocation except when a decimal128 is
// compared with a double. Every result is -1, 0 or 1.
#pragma once

#include "bson/bson.h"

namespace hourglass::bson {

// Rank of the type's bracket in the canonical order (types in one bracket share a rank).
int CanonicalTypeRank(BsonType t);

// <0, 0, >0 as a orders before, equal to, or after b. Field names are ignored. Objects and arrays
// compare element by element (field name and value, like CompareObjects).
int CompareElementValues(const BsonElement& a, const BsonElement& b);

// Compares two documents element by element: by canonical type rank, then field name, then value;
// a shorter document that is a prefix of a longer one orders first.
int CompareObjects(const BsonObj& a, const BsonObj& b);

// Two decimals by exact value, in the canonical order (NaN equal to NaN and below all others).
int CompareDecimals(const Decimal128& a, const Decimal128& b);

// Value equality in the canonical order (1 == 1.0 == NumberLong(1)).
inline bool ElementValuesEqual(const BsonElement& a, const BsonElement& b) {
  return CompareElementValues(a, b) == 0;
}

}  // namespace hourglass::bson
