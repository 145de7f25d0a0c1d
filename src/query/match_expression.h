// Internal to src/query: the tree a Matcher parses into. Two node families:
//  - ElemPred tests one value (an element reached along a path, or EOO for "missing"). The
//    parser of an operator document ({$gt: 1, $not: {...}}) produces And/Not trees of them.
//  - DocNode tests a whole document; PathNode joins the two by walking its path (path.h) and
//    matching when any value found satisfies its leaf predicate.
// All nodes are immutable after construction and borrow the filter bytes that the owning Matcher
// keeps alive.
#pragma once

#include <memory>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
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

  std::vector<std::shared_ptr<const ElemPred>> children;  // for kAnd / kNot
};
using ElemPredPtr = std::shared_ptr<const ElemPred>;

class DocNode {
 public:
  virtual ~DocNode() = default;
  virtual bool Matches(const bson::BsonObj& doc) const = 0;
};
using DocNodePtr = std::shared_ptr<const DocNode>;

// Parses a filter document into a DocNode (an AND of its top-level clauses).
StatusWith<DocNodePtr> ParseFilterNode(const bson::BsonObj& filter, int depth);

// Parses an operator document ({$gt: 1, $lt: 5}) into an ElemPred tree applying to one value.
StatusWith<ElemPredPtr> ParseOperatorObject(const bson::BsonObj& ops, int depth);

// True when `obj` is an operator document for $elemMatch/$pull purposes: its first field is a
// query operator other than the top-level ones ($and, $or, $nor, $where, $expr, ...).
bool IsValueCondition(const bson::BsonObj& obj);

// A regex element predicate; also used by $in and $pull. Errors: kBadRegexCode/OptionCode.
StatusWith<ElemPredPtr> MakeRegexPred(std::string_view pattern, std::string_view options);

}  // namespace hourglass::query
