// Filters (MongoDB match expressions): parsing a filter document into an immutable tree and
// testing documents against it with MongoDB's semantics — dotted paths with implicit array
// traversal, {f: null} matching null, undefined and missing, type-bracketed comparisons, and the
// query operators listed in src/query/README.md. Parsed objects own a copy of the filter, are
// immutable and may be shared between threads. Parse errors carry MongoDB's codes (BadValue for
// almost everything; see each function).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "query/expression_hooks.h"
#include "query/path.h"

namespace hourglass::query {

class DocNode;

// One conjunct of a filter that tests a single top-level field ({a: {$gt: 1}}), evaluated on
// that field's value alone: for callers that hold values column by column (time-series buckets).
// Whether a filter's {f: v} with this value is an equality to one scalar: not an object
// (operators, or an exact subdocument), an array, null or undefined (which a missing field
// matches too), or a regular expression; EOO is none either.
bool IsEqualityScalar(const bson::BsonElement& v);

class FieldPredicate {
 public:
  const std::string& field() const { return field_; }
  // Whether a document whose field is `value` (EOO: missing) satisfies this conjunct: the
  // answer the filter's path rules give (an array is tested whole, then element by element).
  bool Matches(const bson::BsonElement& value) const;

 private:
  friend class Matcher;
  std::string field_;
  std::shared_ptr<const DocNode> node_;
  std::shared_ptr<const void> owner_;  // keeps the filter bytes the predicate borrows alive
};

class Matcher {
 public:
  // Parses a filter such as {a: 1, b: {$gt: 2}, $or: [...]}. Errors (BadValue unless noted):
  // "unknown top level operator: $foo", "unknown operator: $foo", "$in needs an array",
  // "$and/$or/$nor must be a nonempty array", "$not needs a regex or a document", bad $type
  // aliases/codes, invalid $regex patterns or options, bad $size/$mod/$bits arguments; $where
  // (no JavaScript) and $text are rejected; $near/$nearSphere/$geoNear fail with
  // Location5626500 (only find and count read by distance, exec/near_read.h). `$expr` is parsed
  // by the pipeline module's hook (expression_hooks.h) with `ctx` ($$NOW; the one-argument form
  // uses the wall clock), and fails with CommandNotSupported when no hook is installed.
  // `$jsonSchema` errors: FailedToParse (9) for unknown keywords.
  static StatusWith<Matcher> Parse(const bson::BsonObj& filter);
  static StatusWith<Matcher> Parse(const bson::BsonObj& filter, const ExpressionContext& ctx);

  // Whether `doc` matches; an evaluation error inside `$expr` counts as no match.
  bool Matches(const bson::BsonObj& doc) const;
  // Whether `doc` matches, or the first `$expr` evaluation error (e.g. $divide by zero, with
  // MongoDB's code): what find, count, update and delete use so such errors fail the command.
  StatusWith<bool> Evaluate(const bson::BsonObj& doc) const;
  // For the positional update/projection operator: the index, in the array at `array_path`
  // (reached through objects), of the element through which `doc` matched this filter; nullopt
  // when the match did not go through that array.
  std::optional<size_t> MatchedArrayIndex(const bson::BsonObj& doc,
                                          const FieldPath& array_path) const;
  // True for the empty filter {} (and filters made only of $comment).
  bool MatchesEverything() const;
  // The filter without the top-level elements `drop` selects ($comment is never offered), as
  // the AND of the remaining clauses of this one's parsed tree: a part of a filter, without
  // parsing it again.
  Matcher Without(const std::function<bool(const bson::BsonElement&)>& drop) const;
  // When the filter is a conjunction (implicit or $and) of conjuncts that each read one
  // top-level field ({a: 1}, {"a.b": {$ne: 2}}, an $or whose clauses all read `a`; not $expr,
  // $where or $jsonSchema), those conjuncts, whose AND is the filter; nullopt otherwise.
  std::optional<std::vector<FieldPredicate>> FieldConjuncts() const;

 private:
  struct State;
  std::shared_ptr<const State> state_;
};

// Tests single values the way $elemMatch, $pull and arrayFilters conditions do: a condition
// whose first field is a query operator ({$gte: 5, $lt: 9}) applies to the value itself; any
// other document ({score: {$gt: 8}}) is a filter that only object and array values can match.
class ElementMatcher {
 public:
  // `collator`: the collation the condition compares strings under (null: simple).
  static StatusWith<ElementMatcher> Parse(
      const bson::BsonObj& condition,
      std::shared_ptr<const bson::StringComparator> collator = nullptr);
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
