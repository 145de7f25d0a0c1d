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
// The filter before these stages may test M and its subfields in any way, and T with lower
// bounds ($gt, $gte): such a filter keeps a series' latest measurements exactly when it keeps any
// of its measurements, so the latest that pass are the series' latest (SplitLastpointFilter).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bson/bson.h"

namespace hourglass::exec {

struct LastpointPattern {
  size_t stages = 0;  // how many leading stages form the pattern (1 or 2); none is consumed
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

// Whether the leading `stages` (after such a filter) are a last-point pattern of a
// collection with time field `time` and metaField `meta`.
std::optional<LastpointPattern> MatchLastpoint(const std::vector<bson::BsonObj>& stages,
                                               const std::string& time, const std::string& meta);

}  // namespace hourglass::exec
