// BucketFieldTree: what a time-series bucket knows of its measurements' fields, one node per field
// path — the schema behind the schema-change rollover (spec timeseries.md 4.2 item 5) and the
// running control.min / control.max summaries (spec 3.3) — so that staging a measurement walks
// it once to update both (MongoDB keeps them apart: bucket_catalog::Schema and MinMax in
// flat_bson.cpp).
//
// Schema, per field path: one kind — object, array, or a scalar's canonical type bracket
// (bson::CanonicalTypeRank: int32/int64/double/decimal128 are one bracket, String and Symbol one,
// and null, undefined, bool, date, timestamp, objectId, binData, regex, ... each their own). A
// measurement is compatible when every path it has that the schema has already seen keeps its
// kind; absent paths and new paths are always fine.
//  * Objects recurse: {a:{b:1}} then {a:{b:"x"}} is a change at a.b; {a:{c:"x"}} is fine.
//  * Arrays recurse too, by position, as MongoDB's Schema does: [1, 2] then ["x"] is a change at
//    position 0, while [1] then [2, "x"] is fine (position 1 is new). An empty array fixes only
//    the kind "array".
//  * Duplicate field names inside one measurement are checked against the schema, not against
//    each other (MongoDB would flag {a:1, a:"x"} as a change; such documents are exotic).
//  * Update records the paths of a measurement; meant for compatible ones: a path whose kind
//    differs keeps the kind recorded first, and the schema does not look below it.
//
// Min/max, per field path over all measurements fed to Update (modelled on MongoDB's MinMax):
//  * Scalars compare in the canonical BSON order of bson_compare.h (type bracket first; numbers
//    of any width compare by value, so min of {NumberLong(2), 1.5} is 1.5 and keeps its type).
//    Strings compare under the tree's collator (the collection's default collation, as MongoDB
//    computes them; null: simple binary order); of two equal under it, the one held is kept.
//    Field names are always compared by their bytes.
//  * Two objects merge: the result is an object holding the per-subfield min (max), recursively.
//    Two arrays merge the same way, keyed by position, and stay arrays.
//  * When a path holds different kinds in different rows (scalar / object / array), the winner is
//    decided by canonical type order, as in MongoDB: min of {5, {a:1}} is 5 and max is {a:1}.
//    Once a side (min or max) holds an object, later objects keep merging into it; when a side
//    switches kind (e.g. max goes from 5 to {a:1}, or from {a:1} to [1]), what it held below that
//    path is forgotten, so the new object/array starts from the row that made it win. Because
//    a side only ever moves down (min) or up (max) the type order, a kind it left never returns.
//  * Empty objects and arrays count: {a:{}} gives min {a:{}}.
//  * Fields appear in the order their min/max were first set; a field first seen in a later row
//    is appended after the existing ones. (MongoDB instead inserts such a field at the position
//    it walks in lock-step with the incoming document; field order inside control.min/max
//    carries no meaning for queries.) A node the schema knows but whose min/max is unset — after
//    ResetMinMax, or below a path whose kinds disagree — moves to the end when it gets its first
//    value, so the order is always the one a min/max fed only the same rows would have.
//  * The time field is a field like any other; the caller overwrites control.min.<time> with the
//    rounded bucket start (AppendMin's `date_field`).
//  `skip_field` (the metaField) is ignored at the top level only, by every walk.
//
// Per-measurement cost: IsCompatible is one read-only walk (it also hands each top-level field to
// the caller, which sizes the measurement in the same pass); Update one walk that updates schema
// and min/max together, with no allocation unless a field is new or a stored value outgrows its
// buffer (values are kept as their raw element bytes, short ones inline in the string's small
// buffer). Fields are matched in lock-step with the previous document's order; wide objects
// (> 16 fields) get a name index for out-of-order documents. A commit serializes the tree
// (AppendMin/AppendMax) instead of copying it.
//
// Not thread-safe: the bucket catalog's stripe mutex guards a bucket's tree. Copyable. Input
// documents must be valid BSON; nothing is borrowed past a call.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "bson/bson_compare.h"

namespace hourglass::timeseries {

class BucketFieldTree {
 public:
  BucketFieldTree() = default;

  // The tree of an existing bucket from its control.min and control.max (for reopening; MongoDB's
  // Schema::parseFromBSON and MinMax::parseFromBSON). Feeding the two documents as if they were
  // measurements gives back exactly min and max: per path, min's value sorts at or before max's,
  // kinds included. Min()/Max() then return documents equal to `min` and `max` (field order:
  // min's, then fields only present in max). The schema is sound because kinds are totally
  // ordered: the rows agree on a path iff min and max do. Returns BadValue (2) when min and max
  // disagree somewhere: the bucket holds mixed-schema data (written before 5.2, or with
  // timeseriesBucketsMayHaveMixedSchemaData) and must not be reopened for inserts.
  static StatusWith<BucketFieldTree> FromBucket(
      const bson::BsonObj& min, const bson::BsonObj& max,
      std::shared_ptr<const bson::StringComparator> strings);

  // The collation strings are compared under (null: simple); set before the first Update.
  void SetCollator(std::shared_ptr<const bson::StringComparator> strings) {
    strings_ = std::move(strings);
  }

  // True if `measurement` keeps the kind of every path the schema has seen. Does not modify.
  bool IsCompatible(const bson::BsonObj& measurement, std::string_view skip_field) const {
    return IsCompatible(measurement, skip_field, [](const bson::FieldView&) {});
  }
  // The same, calling `on_field(const bson::FieldView&)` for every top-level field but
  // `skip_field`, in order, whatever the answer (so one walk both checks and sizes a measurement).
  template <typename OnField>
  bool IsCompatible(const bson::BsonObj& measurement, std::string_view skip_field,
                    OnField&& on_field) const {
    bool compatible = true;
    size_t cursor = 0;
    for (bson::FieldCursor it(measurement.data()); it.Next();) {
      const bson::FieldView& e = it.field();
      if (!skip_field.empty() && e.name == skip_field) continue;
      on_field(e);
      if (compatible) compatible = FieldCompatible(root_, e, &cursor);
    }
    return compatible;
  }

  // Folds `measurement` into the schema and the min/max in one walk.
  void Update(const bson::BsonObj& measurement, std::string_view skip_field);

  // A measurement's shape: its field paths and their kinds (as the schema sees them), in order,
  // `skip_field` left out at the top level. Two measurements of one shape are compatible with
  // the same schemas, and folding one into a schema leaves it unchanged for the other: so the
  // tree remembers the shape of the last measurement UpdateRecordingShape folded, and a
  // measurement of that shape is known compatible, and needs only UpdateMinMax, without walking
  // the tree (a compare with a string instead of a walk of cold nodes per measurement, when a
  // series keeps its shape).
  //
  // Whether `measurement` has the shape last recorded (false if none), in one walk of it that
  // also calls `on_field` as IsCompatible does, for every top-level field whatever the answer.
  template <typename OnField>
  bool HasShapeOf(const bson::BsonObj& measurement, std::string_view skip_field,
                  OnField&& on_field) const {
    bool same = !last_shape_.empty();
    size_t pos = 0;
    for (bson::FieldCursor it(measurement.data()); it.Next();) {
      const bson::FieldView& e = it.field();
      if (!skip_field.empty() && e.name == skip_field) continue;
      on_field(e);
      same = same && MatchShape(e, &pos);
    }
    return same && pos == last_shape_.size();
  }
  bool HasShapeOf(const bson::BsonObj& measurement, std::string_view skip_field) const {
    return HasShapeOf(measurement, skip_field, [](const bson::FieldView&) {});
  }
  // Update, recording `measurement`'s shape as the last one folded.
  void UpdateRecordingShape(const bson::BsonObj& measurement, std::string_view skip_field);

  // IsCompatible, then Update if compatible; returns whether it was.
  bool UpdateIfCompatible(const bson::BsonObj& measurement, std::string_view skip_field) {
    if (!IsCompatible(measurement, skip_field)) return false;
    Update(measurement, skip_field);
    return true;
  }

  // The least and greatest value of each top-level field over a run of rows, in the canonical
  // order of the min/max (the first of equal values kept), gathered while the rows are walked
  // for another reason (a bucket document encoding them), so that FoldBounds folds a run with one
  // step per field instead of UpdateMinMax's walk per row. The caller numbers the fields, one
  // number per name, from 0 (a column's index). Holds views: the rows must outlive it.
  class RowBounds {
   public:
    void Add(size_t slot, const bson::FieldView& f) {
      if (slot >= fields_.size()) fields_.resize(slot + 1);
      Field& b = fields_[slot];
      if (f.type == bson::BsonType::kObject || f.type == bson::BsonType::kArray) {
        b.nested = true;  // FoldBounds declines the run: its bounds no longer matter
      } else if (!b.set) {
        b.set = true;
        b.min = b.max = f;
      } else if (Compare(f, b.min) < 0) {
        b.min = f;
      } else if (Compare(f, b.max) > 0) {
        b.max = f;
      }
    }

   private:
    friend class BucketFieldTree;
    struct Field {
      bson::FieldView min{}, max{};
      bool set = false;
      bool nested = false;  // an object or array in some row: only UpdateMinMax merges those
    };
    static int Compare(const bson::FieldView& a, const bson::FieldView& b) {
      if (a.type == bson::BsonType::kDouble && b.type == bson::BsonType::kDouble) {
        double x, y;
        std::memcpy(&x, a.value, 8);
        std::memcpy(&y, b.value, 8);
        if (x < y) return -1;
        if (x > y) return 1;
        if (x == y) return 0;  // else a NaN: the general rule
      }
      return CompareSlow(a, b);
    }
    static int CompareSlow(const bson::FieldView& a, const bson::FieldView& b);

    std::vector<Field> fields_;
  };
  // Folds `bounds` into the min/max as UpdateMinMax of each of its rows would, and returns true;
  // or returns false having changed nothing when that takes UpdateMinMax (a field the tree does
  // not hold with both sides set, an object or array in some row, or a collator: RowBounds
  // compares strings by their bytes).
  bool FoldBounds(const RowBounds& bounds);

  // Forgets every min/max but keeps the schema; UpdateMinMax then folds documents into the
  // min/max alone. For a bucket whose stored rows changed under it (rebuilt from what is stored,
  // or restarted empty): its measurements' schema stays what the bucket has accepted.
  void ResetMinMax();
  void UpdateMinMax(const bson::BsonObj& doc, std::string_view skip_field);

  // The current control.min / control.max documents ({} before the first Update).
  bson::BsonObj Min() const;
  bson::BsonObj Max() const;
  // Appends the fields of Min() / Max() to `b`; AppendMin writes the top-level `date_field`, if
  // it has a min, as the date `date_millis` instead (a bucket's control.min of its time field is
  // its rounded start).
  void AppendMin(bson::BsonBuilder& b, std::string_view date_field, int64_t date_millis) const;
  void AppendMax(bson::BsonBuilder& b) const;

  // Forgets everything (back to the state of a default-constructed object).
  void Reset();
  bool IsEmpty() const { return root_.fields.empty(); }

  // Approximate heap + inline bytes held, for the bucket catalog's memory accounting.
  size_t ApproxMemory() const;

 private:
  // What one side (min or max) of a path currently holds.
  enum class Kind : uint8_t { kUnset, kValue, kObject, kArray };
  // The rank of a node the schema has not seen (created by UpdateMinMax, or below a path whose
  // kind differed from the schema's).
  static constexpr int kNotInSchema = INT_MIN;

  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  // One field path. `min_value` / `max_value` hold, for kValue, the element with an empty name:
  // type byte, NUL, value bytes (a valid BsonElement starting at data()).
  struct Node {
    std::string name;
    int rank = kNotInSchema;  // schema: bson::CanonicalTypeRank of the kind (object/array too)
    Kind min_kind = Kind::kUnset;
    Kind max_kind = Kind::kUnset;
    std::string min_value;
    std::string max_value;
    std::vector<Node> fields;    // subfields, first-seen order
    std::vector<Node> elements;  // array positions
    // Name -> index into `fields`, built once `fields` grows past kIndexThreshold.
    std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>> index;
  };

  static constexpr size_t kIndexThreshold = 16;

  // Appends field `e`'s part of a shape: its kind's rank byte, its name and a NUL, then for an
  // object or array its fields' parts and kShapeEnd (no rank takes that value).
  static void AppendShape(const bson::FieldView& e, std::string* out);
  // Whether `e`'s part of a shape is what last_shape_ holds at *pos (advanced past it if so).
  bool MatchShape(const bson::FieldView& e, size_t* pos) const;
  static constexpr char kShapeEnd = 3;

  // Schema check of one field of `parent`'s object; `*cursor` is the lock-step position.
  static bool FieldCompatible(const Node& parent, const bson::FieldView& e, size_t* cursor);
  static bool FieldsCompatible(const Node& parent, const char* doc);
  static bool ElementsCompatible(const Node& parent, const char* arr);
  static bool NodeCompatible(const Node& node, bson::BsonType t, const char* value);

  // `doc` / `arr` point at an embedded document's bytes. The flags say which summaries the walk
  // updates below this point.
  void UpdateFields(Node& parent, const char* doc, bool do_min, bool do_max, bool do_schema,
                    std::string_view skip_field) const;
  void UpdateElements(Node& parent, const char* arr, bool do_min, bool do_max,
                      bool do_schema) const;
  void UpdateNode(Node& node, const bson::FieldView& e, bool do_min, bool do_max,
                  bool do_schema) const;
  static Node* FindField(Node& parent, std::string_view name, size_t cursor);
  static const Node* FindField(const Node& parent, std::string_view name, size_t cursor) {
    return FindField(const_cast<Node&>(parent), name, cursor);
  }
  static Node* AddField(Node& parent, std::string_view name);
  static Node* MoveToEnd(Node& parent, Node* node);
  static void ResetMinMax(Node& node);
  static void AppendFields(bson::BsonBuilder& b, const Node& parent, bool min,
                           std::string_view date_field, int64_t date_millis);
  static void AppendElements(bson::BsonBuilder& b, const Node& parent, bool min);
  static void AppendNode(bson::BsonBuilder& b, std::string_view name, const Node& node, bool min);
  static size_t NodeMemory(const Node& node);

  std::shared_ptr<const bson::StringComparator> strings_;  // see SetCollator
  Node root_;               // the top-level document; its own rank and kinds are unused
  std::string last_shape_;  // of the last measurement UpdateRecordingShape folded; empty: none
};

}  // namespace hourglass::timeseries
