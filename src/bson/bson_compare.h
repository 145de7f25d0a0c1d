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

#include <string>
#include <string_view>

#include "bson/bson.h"

namespace hourglass::bson {

// An order of strings other than the simple binary one: a collation (src/collation). Values
// compared under it compare their String and Symbol parts, at any depth, with Compare.
// Implementations are immutable and thread-safe.
class StringComparator {
 public:
  virtual ~StringComparator() = default;
  // <0, 0, >0 as `a` orders before, with, or after `b` (UTF-8).
  virtual int Compare(std::string_view a, std::string_view b) const = 0;
  // Bytes whose binary order is Compare's order (equal exactly when Compare says equal), with
  // no NUL byte: what sort keys and hashing use in place of the string.
  virtual std::string ComparisonKey(std::string_view s) const = 0;
};

// Rank of the type's bracket in the canonical order (types in one bracket share a rank).
int CanonicalTypeRank(BsonType t);

// <0, 0, >0 as a orders before, equal to, or after b. Field names are ignored. Objects and arrays
// compare element by element (field name and value, like CompareObjects).
int CompareElementValues(const BsonElement& a, const BsonElement& b);
// The same, with Strings and Symbols ordered by `strings` (null: the simple binary order).
int CompareElementValues(const BsonElement& a, const BsonElement& b,
                         const StringComparator* strings);

// Compares two documents element by element: by canonical type rank, then field name, then value;
// a shorter document that is a prefix of a longer one orders first.
int CompareObjects(const BsonObj& a, const BsonObj& b);
int CompareObjects(const BsonObj& a, const BsonObj& b, const StringComparator* strings);

// `e`'s value with every String and Symbol in it, at any depth, replaced by the String of its
// `strings` ComparisonKey, under the name `name`: the form whose simple order (and key string,
// key_string.h) is the order under `strings`, as MongoDB translates values for collated indexes.
void AppendComparisonForm(BsonBuilder& b, std::string_view name, const BsonElement& e,
                          const StringComparator& strings);
// Whether values of type `t` may order differently under a collation: strings and symbols, and
// the objects and arrays that may hold them (what AppendComparisonForm may change).
bool IsCollatable(BsonType t);

// Two decimals by exact value, in the canonical order (NaN equal to NaN and below all others).
int CompareDecimals(const Decimal128& a, const Decimal128& b);

// Value equality in the canonical order (1 == 1.0 == NumberLong(1)).
inline bool ElementValuesEqual(const BsonElement& a, const BsonElement& b) {
  return CompareElementValues(a, b) == 0;
}

}  // namespace hourglass::bson
