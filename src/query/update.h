// Update specifications ({$set: ..., $inc: ...} or a replacement document) parsed once and
// applied to documents with MongoDB's semantics: dotted paths create intermediate documents,
// numeric components index (and null-pad) arrays, updated fields stay in place and new fields are
// appended in path order (5.0+), _id is immutable. Operators: $set, $unset, $inc, $mul, $min,
// $max, $rename, $setOnInsert, $currentDate, $push ($each/$slice/$sort/$position), $addToSet
// ($each), $pop, $pull, $pullAll. Positional paths ("$", "$[]", "$[id]"), arrayFilters and
// pipeline updates are rejected as not supported yet. Immutable after Parse; Apply is const and
// safe from several threads. Error codes: FailedToParse (9) for unknown modifiers, BadValue,
// TypeMismatch (14), PathNotViable (28), ImmutableField (66), EmptyFieldName (56),
// DollarPrefixedFieldName (52), ConflictingUpdateOperators (40, pending: see query_errors.h).
#pragma once

#include <memory>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::query {

struct UpdateOp;

class UpdateDriver {
 public:
  // `update` is an operator document or a replacement document; `array_filters` must be empty
  // for now (an array of filter documents once arrayFilters are supported).
  static StatusWith<UpdateDriver> Parse(const bson::BsonObj& update,
                                        const bson::BsonObj& array_filters);
  // Pipeline-style updates (an array of stages): BadValue "not supported yet" for now.
  static StatusWith<UpdateDriver> ParsePipeline(const bson::BsonObj& stages);

  bool IsReplacement() const { return replacement_; }

  // The updated document. Replacements keep `doc`'s _id (and put it first). `is_upsert_insert`
  // enables $setOnInsert. *modified (may be null) is set to whether the result differs from
  // `doc` byte for byte, which is what MongoDB's nModified counts.
  StatusWith<bson::BsonObj> Apply(const bson::BsonObj& doc, bool is_upsert_insert,
                                  bool* modified) const;

 private:
  bson::BsonObj update_;  // owns the bytes the ops borrow
  bool replacement_ = false;
  std::shared_ptr<const std::vector<UpdateOp>> ops_;
};

}  // namespace hourglass::query
