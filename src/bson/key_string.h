// Order-preserving byte encoding of BSON values ("key strings") for index keys stored in
// WiredTiger tables with key_format=u and the default byte-wise collator.
//
// Contract: for any two values a and b,
//   sign(memcmp(Encode(a), Encode(b))) == sign(CompareElementValues(a, b))   (bson_compare.h)
// with shorter-is-smaller when one encoding is a prefix of the other (std::string comparison).
// Values that compare equal encode to identical bytes: 1, 1.0, NumberLong(1) and
// NumberDecimal("1.00") are the same key, as in a MongoDB index. Every component encoding is
// self-delimiting, so a compound key is the plain concatenation of its components and sorts
// lexicographically component by component; a descending component is the bitwise complement
// of its ascending encoding. The format is documented in src/bson/README.md; changing it
// invalidates every stored index.
//
// Decoding cannot recover the original numeric type (equal numbers share bytes) nor Symbol vs
// String; DecodeIndexKey documents the canonical forms it returns.
//
// Thread-safety: KeyStringBuilder is a plain value type (not synchronised); the free functions
// are pure and thread-safe. Encoding never fails on validated BSON.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson.h"
#include "bson/bson_compare.h"

namespace hourglass::bson {

// Appends one value after another; the result is the concatenation of the component encodings.
class KeyStringBuilder {
 public:
  // Encodes e's value (its field name is ignored). An EOO element encodes like a missing field.
  // `descending` complements the bytes of this component so that its order reverses.
  void AppendElement(const BsonElement& e, bool descending = false);
  // The key of a collated index: AppendElement of e's value with every String and Symbol in it,
  // at any depth, replaced by its `strings` ComparisonKey (AppendComparisonForm), so that the
  // bytes order as the collation orders. `strings` null: AppendElement.
  void AppendElement(const BsonElement& e, bool descending, const StringComparator* strings);
  // A missing field indexes as null (MongoDB behavior): identical to appending a null.
  void AppendMissing(bool descending = false);
  // Encodes the date `millis` (as AppendElement of a Date element).
  void AppendDate(int64_t millis, bool descending = false);

  const std::string& bytes() const { return bytes_; }
  std::string Release() { return std::move(bytes_); }
  void Reset() { bytes_.clear(); }

 private:
  std::string bytes_;
};

// Whether a key pattern field orders its values descending ({a: -1}; "hashed" and other
// strings ascend).
bool IsDescending(const BsonElement& pattern_field);

// Encodes the index key of `doc` for `key_pattern`: one component per pattern field, in pattern
// order, taken from the dotted path in `doc` (BsonObj::GetPath: no implicit array expansion;
// the caller produces one key per array element for multikey indexes). A missing path encodes
// as null. A pattern value that is a negative number makes the component descending; any other
// value is ascending (special index types such as "hashed" are the caller's business).
std::string EncodeIndexKey(const BsonObj& key_pattern, const BsonObj& doc);

// Decodes a key produced by EncodeIndexKey (or KeyStringBuilder with the pattern's directions)
// into a document of values with empty field names: {"": v1, "": v2, ...}. Canonical forms:
//   numbers: integral values in int32 range -> int32; other integral values in int64 range ->
//     int64; other values exactly representable as a double -> double; anything else (decimals
//     such as 0.1 or 1E+400) -> decimal128 with trailing zeros removed; NaN and +-Infinity ->
//     double; zero (including -0.0) -> int32 0.
//   Symbol -> string. Everything else returns with its own type and value.
// Returns BadValue (2) if the bytes are not a well-formed key for `key_pattern` (wrong number of
// components, truncated data, trailing bytes).
StatusWith<BsonObj> DecodeIndexKey(std::string_view bytes, const BsonObj& key_pattern);
// DecodeIndexKey appending the values (named "") to `out`, for callers that decode many keys
// into one reused builder. On error `out` may hold part of the key.
Status AppendDecodedIndexKey(std::string_view bytes, const BsonObj& key_pattern, BsonBuilder& out);

}  // namespace hourglass::bson
