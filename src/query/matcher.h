// Filters (MongoDB match expressions): parsing a filter document into an immutable tree and
// testing documents against it with MongoDB's semantics — dotted paths with implicit array
// traversal, {f: null} matching null, undefined and missing, type-bracketed comparisons, and the
// query operators listed in src/query/README.md. Parsed objects own a copy of the filter, are
// immutable and may be shared between threads. Parse errors carry MongoDB's codes (BadValue for
// almost everything; see each function).
#pragma once

#include <memory>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::query {

class DocNode;
class ElemPred;

class Matcher {
 public:
  // Parses a filter such as {a: 1, b: {$gt: 2}, $or: [...]}. Errors (BadValue unless noted):
  // "unknown top level operator: $foo", "unknown operator: $foo", "$in needs an array",
  // "$and/$or/$nor must be a nonempty array", "$not needs a regex or a document", bad $type
  // aliases/codes, invalid $regex patterns or options, bad $size/$mod/$bits arguments; $where,
  // $expr, $jsonSchema, $text and geo operators are rejected as not supported yet.
  static StatusWith<Matcher> Parse(const bson::BsonObj& filter);

  bool Matches(const bson::BsonObj& doc) const;
  // True for the empty filter {} (and filters made only of $comment).
  bool MatchesEverything() const;

 private:
  struct State;
  std::shared_ptr<const State> state_;
};

// Tests single values the way $elemMatch, $pull and arrayFilters conditions do: a condition
// whose first field is a query operator ({$gte: 5, $lt: 9}) applies to the value itself; any
// other document ({score: {$gt: 8}}) is a filter that only object and array values can match.
class ElementMatcher {
 public:
  static StatusWith<ElementMatcher> Parse(const bson::BsonObj& condition);
  bool Matches(const bson::BsonElement& value) const;

 private:
  struct State;
  std::shared_ptr<const State> state_;
};

// The document MongoDB seeds an upsert with: the equality predicates of `filter` (plain values,
// {$eq: v}, one-value $in, and those inside $and and single-clause $or), with dotted paths
// expanded into sub-documents and _id first. Two predicates on the same path, or on a path and
// its prefix, fail with NotSingleValueField (54).
StatusWith<bson::BsonObj> ExtractEqualityDocument(const bson::BsonObj& filter);

}  // namespace hourglass::query
