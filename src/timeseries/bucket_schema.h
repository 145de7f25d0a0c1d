// BucketSchema: the shape of the measurements a time-series bucket holds, for the schema-change
// rollover (spec timeseries.md 4.2 item 5; MongoDB's bucket_catalog::Schema in flat_bson.cpp).
//
// Per field path the schema records one kind: object, array, or a scalar's canonical type bracket
// (bson::CanonicalTypeRank: int32/int64/double/decimal128 are one bracket, String and Symbol one,
// and null, undefined, string, bool, date, timestamp, objectId, binData, regex, ... each their
// own). A measurement is compatible when every path it has that the bucket has already seen keeps
// its kind; absent paths and new paths are always fine.
//  * Objects recurse: {a:{b:1}} then {a:{b:"x"}} is a change at a.b; {a:{c:"x"}} is fine.
//  * Arrays recurse too, by position, as MongoDB's Schema does (it walks arrays element-wise like
//    objects): [1, 2] then ["x"] is a change at position 0, while [1] then [2, "x"] is fine
//    (position 1 is new). An empty array fixes only the kind "array".
//  * `skip_field` (the metaField) is ignored at the top level only; the time field is a path like
//    any other (always a date, so it never causes a change).
//  * Duplicate field names inside one measurement are checked against the schema, not against
//    each other (MongoDB would flag {a:1, a:"x"} as a change; such documents are exotic).
//
// Not thread-safe: a bucket's owner serializes access. Copyable. Input documents must be valid
// BSON; nothing is borrowed past a call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::timeseries {

class BucketSchema {
 public:
  BucketSchema() = default;

  // Derives the schema of an existing bucket from its control.min and control.max (for
  // reopening; MongoDB's Schema::parseFromBSON does the same). Sound because kinds are totally
  // ordered: per path, min holds the lowest-ranked kind the rows had and max the highest, so the
  // rows agree on a path iff min and max do, and when both are objects (arrays) they summarize
  // exactly the rows' subfields (positions). Returns BadValue (2) when min and max disagree
  // somewhere: the bucket holds mixed-schema data (written before 5.2, or with
  // timeseriesBucketsMayHaveMixedSchemaData) and must not be reopened for inserts.
  static StatusWith<BucketSchema> FromBucket(const bson::BsonObj& min, const bson::BsonObj& max);

  // True if `measurement` keeps the kind of every path already seen (see above). Does not modify.
  bool IsCompatible(const bson::BsonObj& measurement, std::string_view skip_field) const;

  // Records the paths of `measurement`. Meant for compatible measurements: a path whose kind
  // differs keeps the kind recorded first (and its subtree is not visited).
  void Update(const bson::BsonObj& measurement, std::string_view skip_field);

  // IsCompatible, then Update if compatible; returns whether it was.
  bool UpdateIfCompatible(const bson::BsonObj& measurement, std::string_view skip_field) {
    if (!IsCompatible(measurement, skip_field)) return false;
    Update(measurement, skip_field);
    return true;
  }

  void Reset() { root_ = Node{}; }
  bool IsEmpty() const { return root_.fields.empty(); }

  // Approximate heap + inline bytes held, for the bucket catalog's memory accounting.
  size_t ApproxMemory() const;

 private:
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  struct Node {
    std::string name;
    int rank = 0;                // bson::CanonicalTypeRank of the kind (object/array included)
    std::vector<Node> fields;    // when an object: subfields, first-seen order
    std::vector<Node> elements;  // when an array: positions
    // Name -> index into `fields`, built once `fields` grows past kIndexThreshold.
    std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>> index;
  };

  static constexpr size_t kIndexThreshold = 16;

  static const Node* FindField(const Node& parent, std::string_view name, size_t cursor);
  // `doc` / `arr` point at an embedded document's bytes; `t` / `value` describe one element.
  static bool FieldsCompatible(const Node& parent, const char* doc, std::string_view skip_field);
  static bool ElementsCompatible(const Node& parent, const char* arr);
  static bool NodeCompatible(const Node& node, bson::BsonType t, const char* value);
  static void UpdateFields(Node& parent, const char* doc, std::string_view skip_field);
  static void UpdateElements(Node& parent, const char* arr);
  static void UpdateNode(Node& node, bson::BsonType t, const char* value, bool is_new);
  static size_t NodeMemory(const Node& node);

  Node root_;  // the top-level document
};

}  // namespace hourglass::timeseries
