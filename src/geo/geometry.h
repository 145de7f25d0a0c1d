// Geometries of documents and of geo queries, on Google's S2 library (Debian's libs2-dev, the
// geometry library MongoDB's own geo queries use): GeoJSON objects on the sphere (WGS84
// longitude/latitude degrees) and legacy coordinate pairs on the flat plane.
//
// A document's geometry is a GeoJSON object ({type: "Point" | "LineString" | "Polygon" |
// "MultiPoint" | "MultiLineString" | "MultiPolygon" | "GeometryCollection", coordinates or
// geometries}) or a legacy pair ([x, y], or a document whose first two values are numbers). A
// legacy pair is also a point on the sphere when it is a valid longitude/latitude, so spherical
// queries ($geometry, $centerSphere) see it as MongoDB's do.
//
// Thread-safety: a Geometry is immutable once parsed; S2's const queries are thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"

class MutableS2ShapeIndex;

namespace hourglass::geo {

// A point of the flat plane (legacy coordinates).
struct FlatPoint {
  double x = 0, y = 0;
};

// BadValue (2) with `reason`: how every malformed geometry or query shape is answered.
Status BadGeo(std::string reason);

// BadValue (2) for a position that is not a longitude and a latitude, naming both.
Status LngLatOutOfBounds(double lng, double lat);

// Whether (lng, lat) is a longitude and a latitude in degrees.
inline bool InLngLatBounds(double lng, double lat) {
  return lng >= -180 && lng <= 180 && lat >= -90 && lat <= 90;
}

// The values a geo query or index sees at dotted `path` of `doc`: arrays along the way are
// searched element by element, the value at the end is kept whole (a legacy pair is an array).
std::vector<bson::BsonElement> GeoValuesAtPath(const bson::BsonObj& doc, std::string_view path);

class Geometry {
 public:
  Geometry();
  ~Geometry();
  Geometry(Geometry&&) noexcept;
  Geometry& operator=(Geometry&&) noexcept;

  // Parses a GeoJSON object. BadValue (2) naming what is wrong: an unknown type, coordinates of
  // the wrong shape, a longitude or latitude out of bounds, a LineString of fewer than two
  // distinct positions, a Polygon ring that is not closed, has fewer than four positions or
  // crosses itself, or a hole outside its polygon; a `crs` that is not WGS84's (EPSG:4326,
  // CRS84) or MongoDB's strict winding one (a Polygon of one ring only).
  static StatusWith<Geometry> FromGeoJson(const bson::BsonObj& obj);
  // A document's value as a geometry on the sphere (GeoJSON, or a legacy pair that is a
  // longitude and a latitude), or nullopt when it is none.
  static std::optional<Geometry> FromStored(const bson::BsonElement& value);
  // The point location of a document's value, what the flat $box, $center and $polygon test
  // (they see point locations only): a legacy pair, a GeoJSON Point's coordinates; nullopt for
  // anything else. Builds no shapes.
  static std::optional<FlatPoint> PointLocation(const bson::BsonElement& value);

  // The shapes on the sphere.
  const MutableS2ShapeIndex& sphere() const { return *index_; }
  // Every vertex on the sphere ($centerSphere's containment).
  const std::vector<std::pair<double, double>>& lng_lat_vertices() const { return vertices_; }
  // A big polygon: GeoJSON with MongoDB's strict winding CRS
  // (urn:x-mongodb:crs:strictwinding:EPSG:4326), one ring whose counterclockwise side is the
  // inside, which may be more than a hemisphere. Only queries use them.
  bool strict_winding() const { return strict_winding_; }

 private:
  std::unique_ptr<MutableS2ShapeIndex> index_;
  bool strict_winding_ = false;
  std::vector<std::pair<double, double>> vertices_;  // (longitude, latitude) degrees

  friend class GeometryBuilder;
};

}  // namespace hourglass::geo
