// Find-command projections: inclusion ({a: 1, "b.c": 1}) or exclusion ({a: 0}) of fields, _id
// included unless {_id: 0}, dotted paths applied to every element of the arrays they cross, plus
// the $slice and $elemMatch projection operators. Positional "a.$", $meta and 4.4-style
// expressions are rejected as not supported yet. Immutable after Parse; safe to share between
// threads. Errors: BadValue (with MongoDB's 31253/31254/31249 pending, see query_errors.h),
// Location28724 for a non-positive $slice limit.
#pragma once

#include <memory>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::query {

class Projection {
 public:
  static StatusWith<Projection> Parse(const bson::BsonObj& spec);
  // The projected document; fields keep the document's order ($elemMatch fields of an inclusion
  // projection come last, as in MongoDB 4.4+).
  bson::BsonObj Apply(const bson::BsonObj& doc) const;
  bool IsInclusion() const;

  struct Node;

 private:
  std::shared_ptr<const Node> root_;
  bool inclusion_ = false;
};

}  // namespace hourglass::query
