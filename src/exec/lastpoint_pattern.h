// The last-point family of a time-series pipeline (issue 17): leading stages whose answer depends,
// for each series, only on the measurements at the series' latest time. Such a pipeline gives the
// same documents when the read passes on only those measurements (exec/timeseries_read.h's
// last-point rewrite), whatever the stages compute from them.
//
// Recognized, with M the metaField and T the timeField; "meta-only" means a value that is the
// same for every measurement of a series: M, a path under M, a constant, or an object or an
// expression of those:
//  * $sort whose keys are meta-only paths and T (-1), then $group whose _id is meta-only and
//    whose accumulators each pick a latest measurement: $first (after T: -1), $last (after
//    T: 1), or any of the forms below;
//  * $group (meta-only _id) whose accumulators are all $top {sortBy: {<meta-only>..., T: -1,
//    ...}}, $bottom {sortBy: {<meta-only>..., T: 1, ...}} or {$max: "$T"}.
// The first measurement of a group in such an order is the first of some series of the group, so
// it is at that series' latest time: the rows at each series' latest time hold every answer.
// Several series may share a group key (a key on a subfield of M): the answer is the latest
// across them, as the stages compute it.
//
// $firstN/$lastN (after $sort) and $topN/$bottomN of the same orders with a constant n pick the
// first n measurements of their group instead, all of them among each series' n latest (with the
// ties at the n-th latest time): the pattern's `n` is the most any accumulator picks.
//
// The filter before these stages may test M and its subfields in any way, and T with lower
// bounds ($gt, $gte): such a filter keeps a series' latest measurements exactly when it keeps any
// of its measurements, so the latest that pass are the series' latest (SplitLastpointFilter).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bson/bson.h"

namespace hourglass::exec {

struct LastpointPattern {
  size_t stages = 0;  // how many leading stages form the pattern (1 or 2); none is consumed
  int64_t n = 1;      // how many latest measurements of each series the answer may need
  // For explain: {sortBy: <the order on bucket fields>, groupBy: <the key on bucket fields>}.
  bson::BsonObj explain;
};

// A filter the last-point rewrite may run beneath, in two parts: its tests of the metaField (which
// the read of the buckets applies) and its lower bounds on time (which the rows at each series'
// latest time must pass); each {} when it has none.
struct LastpointFilterParts {
  bson::BsonObj meta;
  bson::BsonObj time;
};
// `filter`'s parts when it is a conjunction (at the top level and in $and) of tests of the
// metaField `meta` (or its subfields) and of lower bounds on the time field `time`.
std::optional<LastpointFilterParts> SplitLastpointFilter(const bson::BsonObj& filter,
                                                         const std::string& time,
                                                         const std::string& meta);

// A lower bound on a series' n-th latest time, from the controls of its buckets: a bucket holds a
// measurement at control.max.<time> and its others at or after control.min.<time>, and (when it
// has control.count) that many in all. A bucket whose control.max is below the bound holds none
// of the series' n latest measurements.
class LatestTimeBound {
 public:
  LatestTimeBound(int64_t n, std::string time) : n_(n), time_(std::move(time)) {}
  // The bucket's control.max.<time>, or nullopt when that is not a date.
  std::optional<int64_t> MaxTime(const bson::BsonObj& bucket) const;
  // Counts a bucket (whose MaxTime is a date) of the series in.
  void Add(const bson::BsonObj& bucket);
  // A time at or below the series' n-th latest, once the buckets counted hold n measurements.
  std::optional<int64_t> Bound() const { return bound_; }
  bool MayHold(int64_t max_time) const { return !bound_ || max_time >= *bound_; }

 private:
  int64_t n_;
  std::string time_;
  std::vector<std::pair<int64_t, int64_t>> at_or_after_;  // (time, measurements at or after it)
  std::optional<int64_t> bound_;
};

// Whether the expression `e` has one value for every measurement of a series: its field paths
// are all the metaField `meta` or under it, and it reads no variable. Conservative: what it
// cannot tell is false.
bool MetaOnlyExpression(const bson::BsonElement& e, const std::string& meta);

// Whether the leading `stages` (after such a filter) are a last-point pattern of a
// collection with time field `time` and metaField `meta`.
std::optional<LastpointPattern> MatchLastpoint(const std::vector<bson::BsonObj>& stages,
                                               const std::string& time, const std::string& meta);

}  // namespace hourglass::exec
