// The regions of MongoDB's geo query operators, tested against a document's geometry without an
// index: $geoWithin (also its old name $within) with $geometry (a GeoJSON Polygon or
// MultiPolygon, on the sphere), $centerSphere (a spherical cap), or the flat $box, $center and
// $polygon (which see point locations only, as MongoDB's do); and $geoIntersects with any
// GeoJSON $geometry. A value that is no geometry never matches.
//
// Thread-safety: a GeoQuery is immutable; Matches may run on several threads.
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "geo/geometry.h"

class S2Region;

namespace hourglass::geo {

class GeoQuery {
 public:
  // The argument of $geoWithin ({$geometry | $box | $center | $centerSphere | $polygon: ...}).
  // BadValue (2) for an unknown specifier, a malformed shape, or a $geometry that is not a
  // Polygon or MultiPolygon; the GeoJSON errors of Geometry::FromGeoJson.
  static StatusWith<GeoQuery> ParseWithin(const bson::BsonElement& arg);
  // The argument of $geoIntersects ({$geometry: GeoJSON}). BadValue (2) otherwise.
  static StatusWith<GeoQuery> ParseIntersects(const bson::BsonElement& arg);

  bool Matches(const bson::BsonElement& value) const;

  // The region on the sphere a 2dsphere index covers to find candidates (sphere_index.h), or
  // null for the flat shapes.
  std::unique_ptr<S2Region> SphereRegion() const;
  // A box of (x, y) holding every point location the query can match, for a 2d index
  // (flat_index.h): the flat shapes' bounds, and $centerSphere's in longitude and latitude (the
  // whole plane, {-inf, -inf, inf, inf}, when the cap reaches a pole or the antimeridian);
  // nullopt for a $geometry, which 2d indexes do not serve.
  std::optional<std::pair<FlatPoint, FlatPoint>> FlatBoundingBox() const;

 private:
  enum class Kind { kWithinGeometry, kIntersectsGeometry, kCenterSphere, kBox, kCenter, kPolygon };
  Kind kind_ = Kind::kBox;
  std::shared_ptr<const Geometry> region_;  // $geometry
  double cx_ = 0, cy_ = 0, radius_ = 0;     // $center, $centerSphere (radians)
  FlatPoint lo_, hi_;                       // $box
  std::vector<FlatPoint> polygon_;          // $polygon
};

}  // namespace hourglass::geo
