#include "geo/near_query.h"

#include <s2/mutable_s2shape_index.h>
#include <s2/s1angle.h>
#include <s2/s2closest_edge_query.h>
#include <s2/s2latlng.h>

#include <cmath>
#include <limits>

namespace hourglass::geo {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr double kEarthRadiusMeters = 6378.1 * 1000;

// A distance operand: a non-negative finite number. The legacy form's errors carry their own
// codes in MongoDB; the GeoJSON form's are BadValue.
StatusWith<double> DistanceOperand(const BsonElement& e, std::string_view name, bool legacy) {
  const bool min = name == "$minDistance";
  if (!e.IsNumber()) {
    return Status(!legacy ? ErrorCode::kBadValue
                  : min   ? ErrorCode::kLocation16893
                          : ErrorCode::kLocation16895,
                  std::string(name) + " must be a number");
  }
  const double d = e.NumberDouble();
  if (!(d >= 0) || std::isinf(d)) {
    return Status(!legacy ? ErrorCode::kBadValue
                  : min   ? ErrorCode::kLocation16894
                          : ErrorCode::kLocation16896,
                  std::string(name) + " must be non-negative");
  }
  return d;
}

bool IsGeoJsonObject(const BsonElement& e) {
  return e.type() == BsonType::kObject && e.Obj()["type"].type() == BsonType::kString;
}

}  // namespace

Status NearQuery::ReadBound(const BsonElement& e, bool legacy) {
  const std::string_view name = e.FieldName();
  if (name == "$maxDistance") {
    HG_ASSIGN_OR_RETURN(max_distance_, DistanceOperand(e, name, legacy));
  } else if (name == "$minDistance") {
    HG_ASSIGN_OR_RETURN(min_distance_, DistanceOperand(e, name, legacy));
  } else {
    return BadGeo("invalid argument in geo near query: " + std::string(name));
  }
  return Status::OK();
}

StatusWith<NearQuery> NearQuery::ParseOperator(std::string_view op, const BsonObj& clause) {
  NearQuery q;
  q.max_distance_ = std::numeric_limits<double>::infinity();
  const BsonElement point = clause[op];
  if (point.type() == BsonType::kObject && point.Obj()["$geometry"].type() == BsonType::kObject) {
    // {$near: {$geometry: <GeoJSON Point>, $maxDistance: m, $minDistance: m}}: meters.
    for (BsonElement e : clause) {
      if (e.FieldName() != op) {
        return BadGeo(
            "geo near accepts just one argument when querying for a GeoJSON point. Extra field "
            "found: " +
            std::string(e.FieldName()));
      }
    }
    for (BsonElement e : point.Obj()) {
      if (e.FieldName() != "$geometry") HG_RETURN_IF_ERROR(q.ReadBound(e, false));
    }
    const BsonObj geometry = point.Obj()["$geometry"].Obj();
    if (geometry["type"].type() != BsonType::kString || geometry["type"].Str() != "Point") {
      return BadGeo("$near requires geojson point, given " + geometry.ToJson());
    }
    auto parsed = Geometry::FromGeoJson(geometry);
    if (!parsed.ok()) {
      return BadGeo("invalid point in geo near query $geometry argument: " + geometry.ToJson() +
                    "  " + parsed.status().reason());
    }
    const auto& [lng, lat] = parsed.value().lng_lat_vertices().front();
    q.point_ = {lng, lat};
    q.geojson_ = true;
    q.metric_ = Metric::kMeters;
    return q;
  }
  // Legacy: {$near: [x, y] | {x, y} | [x, y, max], $maxDistance: d, $minDistance: d}.
  const std::optional<FlatPoint> p =
      point.type() == BsonType::kArray || point.type() == BsonType::kObject
          ? Geometry::PointLocation(point)
          : std::nullopt;
  if (IsGeoJsonObject(point)) return BadGeo("$geometry is required for geo near query");
  if (!p) return BadGeo("invalid argument in geo near query: " + std::string(op));
  q.point_ = *p;
  if (point.type() == BsonType::kArray) {
    auto it = point.Obj().begin();
    ++it;
    ++it;
    if (it != point.Obj().end()) {
      HG_ASSIGN_OR_RETURN(q.max_distance_, DistanceOperand(*it, "$maxDistance", true));
    }
  }
  for (BsonElement e : clause) {
    if (e.FieldName() != op) HG_RETURN_IF_ERROR(q.ReadBound(e, true));
  }
  if (op == "$nearSphere") {
    if (!InLngLatBounds(q.point_.x, q.point_.y)) {
      return BadGeo("Legacy point is out of bounds for spherical query");
    }
    q.metric_ = Metric::kRadians;
  } else {
    q.metric_ = Metric::kFlat;
  }
  return q;
}

StatusWith<NearQuery> NearQuery::FromStage(const BsonElement& near, bool spherical,
                                           double min_distance, double max_distance) {
  BsonObj clause;
  {
    bson::BsonBuilder b;
    if (IsGeoJsonObject(near)) {
      const size_t o = b.OpenObject(spherical ? "$nearSphere" : "$near");
      b.AppendElementAs(near, "$geometry");
      b.Close(o);
    } else {
      b.AppendElementAs(near, spherical ? "$nearSphere" : "$near");
    }
    clause = b.Obj();
  }
  HG_ASSIGN_OR_RETURN(NearQuery q, ParseOperator(clause.FirstElement().FieldName(), clause));
  if (!std::isnan(min_distance)) q.min_distance_ = min_distance;
  q.max_distance_ =
      std::isnan(max_distance) ? std::numeric_limits<double>::infinity() : max_distance;
  return q;
}

std::optional<double> NearQuery::Distance(const BsonElement& value) const {
  if (value.type() == BsonType::kArray && !Geometry::PointLocation(value)) {
    // An array of geometries (a 2d index's list of locations): the nearest of them.
    std::optional<double> nearest;
    for (BsonElement e : value.Obj()) {
      const std::optional<double> d = DistanceToOne(e);
      if (d && (!nearest || *d < *nearest)) nearest = d;
    }
    return nearest;
  }
  return DistanceToOne(value);
}

std::optional<double> NearQuery::DistanceToOne(const BsonElement& value) const {
  if (metric_ == Metric::kFlat) {
    const std::optional<FlatPoint> p = Geometry::PointLocation(value);
    if (!p) return std::nullopt;
    return std::hypot(p->x - point_.x, p->y - point_.y);
  }
  const S2Point at = S2LatLng::FromDegrees(point_.y, point_.x).ToPoint();
  // A point, the usual value, is measured directly: no shapes to build per document.
  if (const std::optional<FlatPoint> p = Geometry::PointLocation(value);
      p && InLngLatBounds(p->x, p->y)) {
    return FromRadians(S1Angle(at, S2LatLng::FromDegrees(p->y, p->x).ToPoint()).radians());
  }
  const std::optional<Geometry> g = Geometry::FromStored(value);
  if (!g) return std::nullopt;
  S2ClosestEdgeQuery query(&g->sphere());
  S2ClosestEdgeQuery::PointTarget target(at);
  return FromRadians(query.GetDistance(&target).ToAngle().radians());
}

double NearQuery::MaxFlatDistance() const {
  return std::isinf(max_distance_) ? std::numeric_limits<double>::max() : max_distance_;
}

double NearQuery::ToRadians(double distance) const {
  return metric_ == Metric::kMeters ? distance / kEarthRadiusMeters : distance;
}

double NearQuery::FromRadians(double radians) const {
  return metric_ == Metric::kMeters ? radians * kEarthRadiusMeters : radians;
}

double NearQuery::MaxRadians() const {
  if (std::isinf(max_distance_)) return M_PI;
  return std::min(ToRadians(max_distance_), M_PI);
}

}  // namespace hourglass::geo
