// Find-command projections: inclusion ({a: 1, "b.c": 1}) or exclusion ({a: 0}) of fields, _id
// included unless {_id: 0}, dotted paths applied to every element of the arrays they cross, plus
// the $slice and $elemMatch projection operators and the positional "a.$" (the element of `a`
// through which the query matched). A projection using aggregation expressions ({x: "$a.b"},
// {y: {$add: [...]}}, literals, nested objects) is run as a $project stage by the pipeline
// module through query/expression_hooks.h; mixing those with the find-only operators is refused
// (BadValue). $meta is rejected as not supported yet. Immutable after Parse; safe to share
// between threads. Errors: BadValue, Location31253/31254/31249 (see query_errors.h),
// Location28724 for a non-positive $slice limit, Location51246 when "a.$" finds no element.
#pragma once

#include <memory>
#include <optional>

#include "base/status.h"
#include "bson/bson.h"
#include "query/expression_hooks.h"
#include "query/path.h"

namespace hourglass::query {

class Matcher;

class Projection {
 public:
  // `query` is the filter of the find (needed by "a.$"); `ctx` gives expressions their $$NOW.
  static StatusWith<Projection> Parse(const bson::BsonObj& spec,
                                      const bson::BsonObj& query = bson::BsonObj(),
                                      const ExpressionContext& ctx = ExpressionContext::Now());
  // The projected document; fields keep the document's order ($elemMatch fields of an inclusion
  // projection come last, as in MongoDB 4.4+). Errors come from expressions and from "a.$".
  StatusWith<bson::BsonObj> Apply(const bson::BsonObj& doc) const;
  bool IsInclusion() const;

  struct Node;

 private:
  StatusWith<bson::BsonObj> NarrowToMatchedElement(const bson::BsonObj& doc) const;

  std::shared_ptr<const Node> root_;
  bool inclusion_ = false;
  DocumentTransformPtr transform_;            // expression projections
  std::shared_ptr<const Matcher> query_;      // for "a.$"
  std::optional<FieldPath> positional_path_;  // "a" of "a.$"
};

}  // namespace hourglass::query
