#include "geo/geo_query.h"

#include <s2/mutable_s2shape_index.h>
#include <s2/s1angle.h>
#include <s2/s2boolean_operation.h>
#include <s2/s2cap.h>
#include <s2/s2latlng.h>
#include <s2/s2shape_index_region.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace hourglass::geo {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// A legacy [x, y] pair of a query shape.
StatusWith<FlatPoint> Pair(const BsonElement& e, std::string_view shape) {
  if (e.type() == BsonType::kArray || e.type() == BsonType::kObject) {
    BsonObj o = e.Obj();
    auto it = o.begin();
    if (it != o.end() && (*it).IsNumber()) {
      const double x = (*it).NumberDouble();
      ++it;
      if (it != o.end() && (*it).IsNumber()) return FlatPoint{x, (*it).NumberDouble()};
    }
  }
  return BadGeo("Point must only contain numeric elements in " + std::string(shape));
}

// The [[x, y], r] of $center and $centerSphere.
Status Circle(const BsonElement& e, std::string_view shape, FlatPoint* center, double* r) {
  if (e.type() != BsonType::kArray || e.Obj().NumFields() != 2) {
    return BadGeo(std::string(shape) + " requires an array of a center point and a radius");
  }
  auto it = e.Obj().begin();
  HG_ASSIGN_OR_RETURN(*center, Pair(*it, shape));
  ++it;
  if (!(*it).IsNumber() || !((*it).NumberDouble() >= 0)) {
    return BadGeo(std::string(shape) + " radius must be a non-negative number");
  }
  *r = (*it).NumberDouble();
  return Status::OK();
}

// Whether `p` is inside the flat polygon `poly` or on its boundary.
bool InFlatPolygon(const std::vector<FlatPoint>& poly, FlatPoint p) {
  bool inside = false;
  for (size_t i = 0, j = poly.size() - 1; i < poly.size(); j = i++) {
    const FlatPoint a = poly[i], b = poly[j];
    // On the edge a-b: collinear and within its bounding box.
    const double cross = (b.x - a.x) * (p.y - a.y) - (b.y - a.y) * (p.x - a.x);
    if (cross == 0 && p.x >= std::min(a.x, b.x) && p.x <= std::max(a.x, b.x) &&
        p.y >= std::min(a.y, b.y) && p.y <= std::max(a.y, b.y)) {
      return true;
    }
    if ((a.y > p.y) != (b.y > p.y) && p.x < (b.x - a.x) * (p.y - a.y) / (b.y - a.y) + a.x) {
      inside = !inside;
    }
  }
  return inside;
}

}  // namespace

StatusWith<GeoQuery> GeoQuery::ParseWithin(const BsonElement& arg) {
  if (arg.type() != BsonType::kObject || arg.Obj().IsEmpty()) {
    return BadGeo(
        "$geoWithin requires a shape: $geometry, $box, $center, $centerSphere or "
        "$polygon");
  }
  const BsonElement spec = arg.Obj().FirstElement();
  const std::string_view name = spec.FieldName();
  GeoQuery q;
  if (name == "$geometry") {
    if (spec.type() != BsonType::kObject) return BadGeo("$geometry must be a GeoJSON object");
    const BsonElement type = spec.Obj()["type"];
    if (type.type() != BsonType::kString ||
        (type.Str() != "Polygon" && type.Str() != "MultiPolygon")) {
      return BadGeo("$geoWithin not supported with provided geometry: " + spec.Obj().ToJson());
    }
    HG_ASSIGN_OR_RETURN(Geometry g, Geometry::FromGeoJson(spec.Obj()));
    q.kind_ = Kind::kWithinGeometry;
    q.region_ = std::make_shared<const Geometry>(std::move(g));
    return q;
  }
  if (name == "$box") {
    if (spec.type() != BsonType::kArray || spec.Obj().NumFields() != 2) {
      return BadGeo("$box requires an array of two points: bottom left and top right");
    }
    auto it = spec.Obj().begin();
    HG_ASSIGN_OR_RETURN(FlatPoint a, Pair(*it, "$box"));
    ++it;
    HG_ASSIGN_OR_RETURN(FlatPoint b, Pair(*it, "$box"));
    q.kind_ = Kind::kBox;
    q.lo_ = {std::min(a.x, b.x), std::min(a.y, b.y)};
    q.hi_ = {std::max(a.x, b.x), std::max(a.y, b.y)};
    return q;
  }
  if (name == "$center" || name == "$centerSphere") {
    FlatPoint c;
    HG_RETURN_IF_ERROR(Circle(spec, name, &c, &q.radius_));
    q.cx_ = c.x;
    q.cy_ = c.y;
    q.kind_ = name == "$center" ? Kind::kCenter : Kind::kCenterSphere;
    if (q.kind_ == Kind::kCenterSphere && !InLngLatBounds(c.x, c.y)) {
      return BadGeo("$centerSphere center is out of bounds, lng: " + std::to_string(c.x) +
                    " lat: " + std::to_string(c.y));
    }
    return q;
  }
  if (name == "$polygon") {
    if (spec.type() != BsonType::kArray) return BadGeo("$polygon requires an array of points");
    for (BsonElement p : spec.Obj()) {
      HG_ASSIGN_OR_RETURN(FlatPoint fp, Pair(p, "$polygon"));
      q.polygon_.push_back(fp);
    }
    if (q.polygon_.size() < 3) return BadGeo("Polygon must have at least 3 points");
    q.kind_ = Kind::kPolygon;
    return q;
  }
  return BadGeo("unknown geo specifier: " + std::string(name));
}

StatusWith<GeoQuery> GeoQuery::ParseIntersects(const BsonElement& arg) {
  if (arg.type() != BsonType::kObject || arg.Obj().IsEmpty() ||
      arg.Obj().FirstElement().FieldName() != "$geometry") {
    return BadGeo("$geoIntersects requires a $geometry");
  }
  const BsonElement spec = arg.Obj().FirstElement();
  if (spec.type() != BsonType::kObject) return BadGeo("$geometry must be a GeoJSON object");
  HG_ASSIGN_OR_RETURN(Geometry g, Geometry::FromGeoJson(spec.Obj()));
  GeoQuery q;
  q.kind_ = Kind::kIntersectsGeometry;
  q.region_ = std::make_shared<const Geometry>(std::move(g));
  return q;
}

bool GeoQuery::Matches(const BsonElement& value) const {
  // Flat shapes see point locations only: no need for the sphere's shapes (per document).
  if (kind_ == Kind::kBox || kind_ == Kind::kCenter || kind_ == Kind::kPolygon) {
    const std::optional<FlatPoint> p = Geometry::PointLocation(value);
    if (!p) return false;
    if (kind_ == Kind::kBox) {
      return p->x >= lo_.x && p->x <= hi_.x && p->y >= lo_.y && p->y <= hi_.y;
    }
    if (kind_ == Kind::kCenter) return std::hypot(p->x - cx_, p->y - cy_) <= radius_;
    return InFlatPolygon(polygon_, *p);
  }
  const std::optional<Geometry> g = Geometry::FromStored(value);
  if (!g) return false;
  switch (kind_) {
    case Kind::kWithinGeometry:
      return S2BooleanOperation::Contains(region_->sphere(), g->sphere());
    case Kind::kIntersectsGeometry:
      return S2BooleanOperation::Intersects(region_->sphere(), g->sphere());
    case Kind::kCenterSphere: {
      if (g->lng_lat_vertices().empty()) return false;
      const S2Cap cap(S2LatLng::FromDegrees(cy_, cx_).ToPoint(), S1Angle::Radians(radius_));
      return std::all_of(g->lng_lat_vertices().begin(), g->lng_lat_vertices().end(),
                         [&cap](const std::pair<double, double>& v) {
                           return cap.Contains(S2LatLng::FromDegrees(v.second, v.first).ToPoint());
                         });
    }
    default:  // the flat shapes, above
      break;
  }
  return false;
}

std::optional<std::pair<FlatPoint, FlatPoint>> GeoQuery::FlatBoundingBox() const {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  switch (kind_) {
    case Kind::kBox:
      return std::pair{lo_, hi_};
    case Kind::kCenter:
      return std::pair{FlatPoint{cx_ - radius_, cy_ - radius_},
                       FlatPoint{cx_ + radius_, cy_ + radius_}};
    case Kind::kPolygon: {
      FlatPoint lo{kInf, kInf}, hi{-kInf, -kInf};
      for (const FlatPoint& p : polygon_) {
        lo = {std::min(lo.x, p.x), std::min(lo.y, p.y)};
        hi = {std::max(hi.x, p.x), std::max(hi.y, p.y)};
      }
      return std::pair{lo, hi};
    }
    case Kind::kCenterSphere: {
      const double r = radius_ * 180 / M_PI;  // degrees of latitude
      const double lat_lo = cy_ - r, lat_hi = cy_ + r;
      if (std::max(std::fabs(lat_lo), std::fabs(lat_hi)) >= 90) {
        return std::pair{FlatPoint{-kInf, -kInf}, FlatPoint{kInf, kInf}};
      }
      // The cap's widest longitude offset from its center: asin(sin r / cos(center latitude)).
      const double dlng = std::asin(std::sin(radius_) / std::cos(cy_ * M_PI / 180)) * 180 / M_PI;
      if (cx_ - dlng < -180 || cx_ + dlng > 180) {
        return std::pair{FlatPoint{-kInf, lat_lo}, FlatPoint{kInf, lat_hi}};
      }
      return std::pair{FlatPoint{cx_ - dlng, lat_lo}, FlatPoint{cx_ + dlng, lat_hi}};
    }
    default:
      return std::nullopt;
  }
}

std::unique_ptr<S2Region> GeoQuery::SphereRegion() const {
  switch (kind_) {
    case Kind::kWithinGeometry:
    case Kind::kIntersectsGeometry:
      return std::make_unique<S2ShapeIndexRegion<MutableS2ShapeIndex>>(&region_->sphere());
    case Kind::kCenterSphere:
      return std::make_unique<S2Cap>(S2LatLng::FromDegrees(cy_, cx_).ToPoint(),
                                     S1Angle::Radians(radius_));
    default:
      return nullptr;
  }
}

}  // namespace hourglass::geo
