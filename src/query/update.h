// Update specifications ({$set: ..., $inc: ...} or a replacement document) parsed once and
// applied to documents with MongoDB's semantics: dotted paths create intermediate documents,
// numeric components index (and null-pad) arrays, updated fields stay in place and new fields are
// appended in path order (5.0+), _id is immutable. Operators: $set, $unset, $inc, $mul, $min,
// $max, $rename, $setOnInsert, $currentDate, $push ($each/$slice/$sort/$position), $addToSet
// ($each), $pop, $pull, $pullAll, with the positional path components "$" (the array element
// the query matched), "$[]" (every element) and "$[<id>]" (the elements arrayFilters select);
// and pipeline-style updates (an array of $addFields/$set/$project/$unset/$replaceRoot/
// $replaceWith stages, run by the pipeline module through query/expression_hooks.h). Immutable
// after Parse; Apply is const and safe from several threads. Error codes: FailedToParse (9) for
// unknown modifiers, bad or unused arrayFilters; BadValue (2) for undefined identifiers and
// positional paths that find no element; TypeMismatch (14), PathNotViable (28), ImmutableField
// (66), EmptyFieldName (56), DollarPrefixedFieldName (52), ConflictingUpdateOperators (40).
#pragma once

#include <memory>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "query/expression_hooks.h"

namespace hourglass::query {

struct UpdateOp;
struct ArrayFilter;
class Matcher;

class UpdateDriver {
 public:
  // `update` is an operator document or a replacement document; `array_filters` is the
  // command's arrayFilters (a BSON array of filter documents, or empty), one per identifier
  // used by "$[<id>]" paths. The operators that compare values ($min, $max, $addToSet, $pull,
  // $pullAll, $push's $sort) and the array filters compare strings under ctx.collator.
  static StatusWith<UpdateDriver> Parse(const bson::BsonObj& update,
                                        const bson::BsonObj& array_filters,
                                        const ExpressionContext& ctx = ExpressionContext());
  // Pipeline-style updates (an array of stages). arrayFilters are refused with them
  // (FailedToParse); stages other than the six allowed fail with InvalidOptions (72).
  // CommandNotSupported when the pipeline module is not linked.
  static StatusWith<UpdateDriver> ParsePipeline(
      const bson::BsonObj& stages, const bson::BsonObj& array_filters = {},
      const ExpressionContext& ctx = ExpressionContext::Now());

  bool IsReplacement() const { return replacement_; }

  // The updated document. Replacements keep `doc`'s _id (and put it first). `is_upsert_insert`
  // enables $setOnInsert. *modified (may be null) is set to whether the result differs from
  // `doc` byte for byte, which is what MongoDB's nModified counts. `query` (may be null) is the
  // filter that selected `doc`; the "$" positional component needs it.
  StatusWith<bson::BsonObj> Apply(const bson::BsonObj& doc, bool is_upsert_insert, bool* modified,
                                  const Matcher* query = nullptr) const;

 private:
  StatusWith<bson::BsonObj> ApplyOperators(const bson::BsonObj& doc, bool is_upsert_insert,
                                           const Matcher* query) const;

  bson::BsonObj update_;  // owns the bytes the ops borrow
  bson::BsonObj array_filters_;
  bool replacement_ = false;
  bool positional_ = false;  // some op path has "$", "$[]" or "$[<id>]"
  std::shared_ptr<const std::vector<UpdateOp>> ops_;
  std::shared_ptr<const std::vector<ArrayFilter>> filters_;
  DocumentTransformPtr pipeline_;
};

}  // namespace hourglass::query
