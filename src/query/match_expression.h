// Internal to src/query: the tree a Matcher parses into. Two node families:
//  - ElemPred tests one value (an element reached along a path, or EOO for "missing"). The
//    parser of an operator document ({$gt: 1, $not: {...}}) produces And/Not trees of them.
//  - DocNode tests a whole document; PathNode joins the two by walking its path (path.h) and
//    matching when any value found satisfies its leaf predicate.
// All nodes are immutable after construction and borrow the filter bytes that the owning Matcher
// keeps alive.
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "query/expression_hooks.h"
#include "query/path.h"

namespace hourglass::query {

class ElemPred {
 public:
  enum class Kind { kLeaf, kAnd, kNot };
  virtual ~ElemPred() = default;
  // `e` is EOO when the path is missing.
  virtual bool Matches(const bson::BsonElement& e) const = 0;
  virtual Kind kind() const { return Kind::kLeaf; }
  // Whether a path ending at an array also offers each element to this predicate ($size and
  // $elemMatch look at the array itself only).
  virtual bool ExpandLeafArrays() const { return true; }
  // Whether one element of an array matches, for the positional operator: the element itself for
  // most predicates, the element as $elemMatch's candidate for $elemMatch.
  virtual bool MatchesArrayElement(const bson::BsonElement& e) const { return Matches(e); }

  std::vector<std::shared_ptr<const ElemPred>> children;  // for kAnd / kNot
};
using ElemPredPtr = std::shared_ptr<const ElemPred>;

class DocNode {
 public:
  virtual ~DocNode() = default;
  // Evaluation errors ($expr) count as no match here; MatchesChecked reports them.
  virtual bool Matches(const bson::BsonObj& doc) const = 0;
  // Like Matches, but the first evaluation error is stored in *error (left OK when none).
  virtual bool MatchesChecked(const bson::BsonObj& doc, Status* /*error*/) const {
    return Matches(doc);
  }
  // For the positional operator: when this node matches `doc` through an element of the array
  // at `array_path`, sets *index to that element's index (later clauses of an $and overwrite
  // earlier ones, as in MongoDB).
  virtual void FindArrayIndex(const bson::BsonObj& /*doc*/, const FieldPath& /*array_path*/,
                              std::optional<size_t>* /*index*/) const {}
  // The top-level field this node reads when it reads only one (a test of one field's value,
  // like {a: {$ne: 1}}); nullopt otherwise.
  virtual std::optional<std::string_view> OnlyField() const { return std::nullopt; }
  // For a node with OnlyField(): whether a document whose field is `value` (EOO: missing)
  // matches.
  virtual bool MatchesFieldValue(const bson::BsonElement& /*value*/) const { return false; }
};
using DocNodePtr = std::shared_ptr<const DocNode>;

// Where a filter is parsed: $expr, $jsonSchema and $where are allowed only in a whole-document
// filter (top level or under $and/$or/$nor), not in $elemMatch, $pull or arrayFilters.
struct FilterScope {
  bool top_level = false;
  ExpressionContext expr_ctx;
};

// Parses a filter document into a DocNode (an AND of its top-level clauses).
StatusWith<DocNodePtr> ParseFilterNode(const bson::BsonObj& filter, int depth,
                                       const FilterScope& scope = FilterScope());

// A $jsonSchema clause (json_schema.cc). Errors: FailedToParse (9) for unknown or unsupported
// keywords, TypeMismatch (14) / BadValue (2) for keywords with bad arguments.
StatusWith<DocNodePtr> ParseJsonSchema(const bson::BsonElement& schema);

// The BSON type named by a $type alias ("double", "string", ...); "number" sets *any_number.
// BadValue for unknown names.
StatusWith<bson::BsonType> TypeFromAlias(std::string_view s, bool* any_number);

// Parses an operator document ({$gt: 1, $lt: 5}) into an ElemPred tree applying to one value.
StatusWith<ElemPredPtr> ParseOperatorObject(const bson::BsonObj& ops, int depth);

// True when `obj` is an operator document for $elemMatch/$pull purposes: its first field is a
// query operator other than the top-level ones ($and, $or, $nor, $where, $expr, ...).
bool IsValueCondition(const bson::BsonObj& obj);

// A regex element predicate; also used by $in and $pull. Errors: kBadRegexCode/OptionCode.
StatusWith<ElemPredPtr> MakeRegexPred(std::string_view pattern, std::string_view options);

}  // namespace hourglass::query
