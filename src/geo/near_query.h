// Nearness: the distance from a query point to a document's geometry, and the bounds on it, for
// $near, $nearSphere and the $geoNear stage.
//
// On the sphere (a GeoJSON point, or $nearSphere / spherical with a legacy pair) the distance is
// to the closest point of the geometry (0 inside a polygon), in meters for a GeoJSON point and in
// radians for a legacy pair, as MongoDB measures them (an earth radius of 6378.1 km). On the
// flat plane (legacy $near, a 2d index) it is the Euclidean distance between point locations.
//
// Thread-safety: a NearQuery is immutable; Distance may run on several threads.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "bson/bson.h"
#include "geo/geo_query.h"
#include "geo/geometry.h"

namespace hourglass::geo {

class NearQuery {
 public:
  enum class Metric { kMeters, kRadians, kFlat };

  // The clause of a filter field: `op` is "$near" or "$nearSphere", `clause` the field's operator
  // object ({$near: <point>, $maxDistance: d, $minDistance: d}; the distances may also sit in
  // the GeoJSON form's object). BadValue (2) for a malformed point or distance.
  static StatusWith<NearQuery> ParseOperator(std::string_view op, const bson::BsonObj& clause);
  // $geoNear's near point (a GeoJSON Point or legacy pair), spherical option and distances
  // (NaN: none).
  static StatusWith<NearQuery> FromStage(const bson::BsonElement& near, bool spherical,
                                         double min_distance, double max_distance);

  // The distance to the closest part of a document's value (a geometry, or an array of them),
  // or nullopt when the value holds no geometry this metric measures.
  std::optional<double> Distance(const bson::BsonElement& value) const;
  // Whether a distance lies within the query's bounds.
  bool InRange(double distance) const {
    return distance >= min_distance_ && distance <= max_distance_;
  }

  Metric metric() const { return metric_; }
  // Whether the query point was given as GeoJSON (MongoDB then needs a 2dsphere index).
  bool geojson() const { return geojson_; }
  // The query point: (longitude, latitude) on the sphere, (x, y) on the plane.
  FlatPoint point() const { return point_; }
  // On the sphere, the maximum distance as an angle (π without one): a 2dsphere index finds
  // every document within it among the cells covering that cap.
  double MaxRadians() const;
  // On the plane, the maximum distance (the largest double without one).
  double MaxFlatDistance() const;
  // On the sphere, a distance in the query's units as an angle, and back.
  double ToRadians(double distance) const;
  double FromRadians(double radians) const;

 private:
  // The distance to one geometry.
  std::optional<double> DistanceToOne(const bson::BsonElement& value) const;
  // Reads a $maxDistance or $minDistance operand (`legacy`: the legacy form's error codes);
  // BadValue for any other field.
  Status ReadBound(const bson::BsonElement& e, bool legacy);

  Metric metric_ = Metric::kMeters;
  bool geojson_ = false;
  FlatPoint point_;  // the query point: (longitude, latitude) on the sphere
  double min_distance_ = 0;
  double max_distance_ = 0;  // +inf when none
};

}  // namespace hourglass::geo
