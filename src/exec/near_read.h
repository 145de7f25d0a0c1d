// Reads ordered by distance: find's and count's $near / $nearSphere, and aggregate's $geoNear.
//
// A near clause sits at the top of a filter (or in its top-level $and); the rest of the filter
// selects documents as usual, and the near read then keeps those whose distance from the query
// point lies within the clause's bounds, nearest first. As in MongoDB, the read needs a geo
// index on the clause's field that can measure its distance (a 2dsphere index for GeoJSON points
// and $nearSphere; flat legacy $near needs a 2d index), else NoQueryExecutionPlans (291); the
// index bounds the scan to the cells within the maximum distance.
//
// Thread-safety: values and a stream owned by one reader.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/collection.h"
#include "geo/near_query.h"
#include "pipeline/pipeline.h"

namespace hourglass::exec {

struct NearRead {
  std::string field;  // the geo field's dotted path
  geo::NearQuery query;
  // $geoNear's output: the distance (times `multiplier`) at `distance_field`, the location it
  // was measured to at `include_locs` (empty: not written).
  std::string distance_field;
  std::string include_locs;
  double multiplier = 1;
};

// Splits a find or count filter into its near clause and the rest (*rest). nullopt without one.
// BadValue (2): "geoNear must be top-level expr" for a $near/$nearSphere below $or, $nor, $not,
// $elemMatch or a nested $and; "Too many geoNear expressions" for two; the clause's own parse
// errors (geo::NearQuery::ParseOperator).
StatusWith<std::optional<NearRead>> ExtractNear(const bson::BsonObj& filter, bson::BsonObj* rest);

// The filter the planner sees for a near read: `rest` and a $geoWithin of the maximum distance
// around the point on the field ($centerSphere on the sphere, $center on the plane), which a geo
// index turns into bounds. `max`: another maximum than the query's (in its units).
bson::BsonObj NearPlanningFilter(const NearRead& near, const bson::BsonObj& rest,
                                 std::optional<double> max = std::nullopt);

// OK when `coll` has a ready, visible index that can answer `near` (see the header comment);
// NoQueryExecutionPlans (291) otherwise.
Status CheckNearIndex(const catalog::Collection& coll, const NearRead& near);

// The geo field $geoNear reads without a `key`: that of the collection's only 2dsphere index.
// IndexNotFound (27) when there is none or more than one, as MongoDB answers.
StatusWith<std::string> GeoNearField(const catalog::Collection& coll);

// `in`'s documents within the distance bounds, nearest first (ties in input order), with
// $geoNear's output fields written.
std::unique_ptr<pipeline::DocumentStream> MakeNearStream(
    std::unique_ptr<pipeline::DocumentStream> in, NearRead near);

// A read of the documents within a distance (in the query's units) of the near point.
using NearScan =
    std::function<StatusWith<std::unique_ptr<pipeline::DocumentStream>>(double max_distance)>;

// The distances a ring-by-ring read of `near` over `coll` starts from and ends at: on the
// sphere about 20 km and the maximum distance (or the antipode); on a 2d index's plane 1/1024 of
// its side and the maximum distance (or the plane's farthest corner). nullopt without a 2d index
// for a flat read.
struct RingBounds {
  double first = 0, last = 0;
};
std::optional<RingBounds> RingsOf(const catalog::Collection& coll, const NearRead& near);

// The same order read ring by ring, as MongoDB's geo near search reads it: the documents within
// `rings.first` first, then within twice that, and so on to `rings.last`, each ring ordered and
// passed on before the next is read, so a reader that wants the nearest few stops after the first
// rings.
std::unique_ptr<pipeline::DocumentStream> MakeRingNearStream(NearScan scan, NearRead near,
                                                             RingBounds rings);

}  // namespace hourglass::exec
