#include "geo/geometry.h"

#include <s2/mutable_s2shape_index.h>
#include <s2/s2latlng.h>
#include <s2/s2loop.h>
#include <s2/s2point_vector_shape.h>
#include <s2/s2polygon.h>
#include <s2/s2polyline.h>

#include <cmath>

namespace hourglass::geo {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

Status BadGeo(std::string reason) { return Status(ErrorCode::kBadValue, std::move(reason)); }

namespace {

// A value as the error messages show it.
std::string Show(const BsonElement& e) {
  bson::BsonBuilder b;
  b.AppendElementAs(e, "v");
  const std::string json = b.Obj().ToJson();  // { "v" : <value> }
  return json.substr(8, json.size() - 10);
}

std::string Num(double d) {
  std::string s = std::to_string(d);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

namespace {
void CollectGeoValues(const BsonObj& obj, std::string_view path, std::vector<BsonElement>* out) {
  const size_t dot = path.find('.');
  const BsonElement e = obj.GetField(path.substr(0, dot));
  if (e.eoo()) return;
  if (dot == std::string_view::npos) {
    out->push_back(e);
  } else if (e.type() == BsonType::kObject) {
    CollectGeoValues(e.Obj(), path.substr(dot + 1), out);
  } else if (e.type() == BsonType::kArray) {
    for (BsonElement item : e.Obj()) {
      if (item.type() == BsonType::kObject) CollectGeoValues(item.Obj(), path.substr(dot + 1), out);
    }
  }
}
}  // namespace

std::vector<BsonElement> GeoValuesAtPath(const BsonObj& doc, std::string_view path) {
  std::vector<BsonElement> out;
  CollectGeoValues(doc, path, &out);
  return out;
}

Status LngLatOutOfBounds(double lng, double lat) {
  return BadGeo("longitude/latitude is out of bounds, lng: " + Num(lng) + " lat: " + Num(lat));
}

// Builds a Geometry from GeoJSON: each part becomes an S2 shape of the geometry's index.
class GeometryBuilder {
 public:
  GeometryBuilder() { g_.index_ = std::make_unique<MutableS2ShapeIndex>(); }

  Status Add(const BsonObj& obj, int depth) {
    BsonElement type = obj["type"];
    if (type.type() != BsonType::kString) return BadGeo("unknown GeoJSON type: " + obj.ToJson());
    const std::string_view t = type.Str();
    if (BsonElement crs = obj["crs"]; !crs.eoo()) {
      HG_ASSIGN_OR_RETURN(const bool strict, StrictWinding(crs));
      if (strict) {
        if (t != "Polygon") return BadGeo("Strict winding order is only supported by polygon");
        g_.strict_winding_ = true;
      }
    }
    if (t == "GeometryCollection") {
      BsonElement geometries = obj["geometries"];
      if (geometries.type() != BsonType::kArray || depth > 0) {
        return BadGeo("GeometryCollection geometries must be an array of geometries");
      }
      for (BsonElement g : geometries.Obj()) {
        if (g.type() != BsonType::kObject) return BadGeo("Element is not a geometry: " + Show(g));
        HG_RETURN_IF_ERROR(Add(g.Obj(), depth + 1));
      }
      return Status::OK();
    }
    BsonElement coords = obj["coordinates"];
    if (coords.type() != BsonType::kArray) {
      return BadGeo("GeoJSON coordinates must be an array: " + obj.ToJson());
    }
    const BsonObj c = coords.Obj();
    if (t == "Point") {
      HG_ASSIGN_OR_RETURN(S2Point p, Position(coords));
      g_.index_->Add(std::make_unique<S2PointVectorShape>(std::vector<S2Point>{p}));
      return Status::OK();
    }
    if (t == "MultiPoint") {
      std::vector<S2Point> points;
      for (BsonElement e : c) {
        HG_ASSIGN_OR_RETURN(S2Point p, Position(e));
        points.push_back(p);
      }
      if (points.empty()) return BadGeo("MultiPoint coordinates must have at least 1 element");
      g_.index_->Add(std::make_unique<S2PointVectorShape>(std::move(points)));
      return Status::OK();
    }
    if (t == "LineString") return AddLineString(coords);
    if (t == "MultiLineString") {
      if (c.IsEmpty()) return BadGeo("MultiLineString coordinates must have at least 1 element");
      for (BsonElement e : c) HG_RETURN_IF_ERROR(AddLineString(e));
      return Status::OK();
    }
    if (t == "Polygon") return AddPolygon(coords);
    if (t == "MultiPolygon") {
      if (c.IsEmpty()) return BadGeo("MultiPolygon coordinates must have at least 1 element");
      for (BsonElement e : c) HG_RETURN_IF_ERROR(AddPolygon(e));
      return Status::OK();
    }
    return BadGeo("unknown GeoJSON type: " + obj.ToJson());
  }

  Geometry Release() { return std::move(g_); }

 private:
  // A GeoJSON `crs` ({type: "name", properties: {name}}): whether it is MongoDB's strict winding
  // CRS (a "big polygon" whose ring's counterclockwise side is its inside); WGS84's names mean the
  // default. BadValue for anything else.
  static StatusWith<bool> StrictWinding(const BsonElement& crs) {
    if (crs.type() != BsonType::kObject) {
      return BadGeo("GeoJSON CRS must be an object, instead got type " +
                    std::string(bson::TypeName(crs.type())));
    }
    const BsonElement type = crs.Obj()["type"];
    if (type.type() != BsonType::kString || type.Str() != "name") {
      return BadGeo("GeoJSON CRS must have field \"type\": \"name\"");
    }
    const BsonElement properties = crs.Obj()["properties"];
    if (properties.type() != BsonType::kObject) {
      return BadGeo("CRS must have field \"properties\" which is an object, instead got type " +
                    std::string(bson::TypeName(properties.type())));
    }
    const BsonElement name = properties.Obj()["name"];
    if (name.type() != BsonType::kString) {
      return BadGeo("In CRS, \"properties.name\" must be a string, instead got type " +
                    std::string(bson::TypeName(name.type())));
    }
    if (name.Str() == "EPSG:4326" || name.Str() == "urn:ogc:def:crs:OGC:1.3:CRS84") return false;
    if (name.Str() == "urn:x-mongodb:crs:strictwinding:EPSG:4326") return true;
    return BadGeo("Unknown CRS name: " + std::string(name.Str()));
  }

  // A GeoJSON position [longitude, latitude (, altitude...)], in bounds.
  StatusWith<S2Point> Position(const BsonElement& e) {
    if (e.type() != BsonType::kArray) return BadGeo("Point must be an array: " + Show(e));
    BsonObj a = e.Obj();
    auto it = a.begin();
    if (it == a.end() || !(*it).IsNumber()) {
      return BadGeo("Point must only contain numeric elements");
    }
    const double lng = (*it).NumberDouble();
    ++it;
    if (it == a.end() || !(*it).IsNumber()) {
      return BadGeo("Point must only contain numeric elements");
    }
    const double lat = (*it).NumberDouble();
    if (!InLngLatBounds(lng, lat)) return LngLatOutOfBounds(lng, lat);
    g_.vertices_.emplace_back(lng, lat);
    return S2LatLng::FromDegrees(lat, lng).ToPoint();
  }

  // The positions of an array, with consecutive repeats dropped (they are not edges).
  StatusWith<std::vector<S2Point>> Positions(const BsonElement& e, std::string_view what) {
    if (e.type() != BsonType::kArray) {
      return BadGeo(std::string(what) + " coordinates must be an array");
    }
    std::vector<S2Point> out;
    for (BsonElement p : e.Obj()) {
      HG_ASSIGN_OR_RETURN(S2Point s, Position(p));
      if (out.empty() || out.back() != s) out.push_back(s);
    }
    return out;
  }

  Status AddLineString(const BsonElement& e) {
    HG_ASSIGN_OR_RETURN(std::vector<S2Point> pts, Positions(e, "LineString"));
    if (pts.size() < 2) return BadGeo("GeoJSON LineString must have at least 2 vertices");
    auto line = std::make_unique<S2Polyline>(pts, S2Debug::DISABLE);
    S2Error error;
    if (line->FindValidationError(&error)) {
      return BadGeo("Invalid GeoJSON LineString: " + error.text());
    }
    g_.index_->Add(std::make_unique<S2Polyline::OwningShape>(std::move(line)));
    return Status::OK();
  }

  // A ring: closed, at least 4 positions (3 distinct), not crossing itself; normalized to enclose
  // less than a hemisphere, as MongoDB reads polygons without a crs.
  StatusWith<std::unique_ptr<S2Loop>> Ring(const BsonElement& e) {
    if (e.type() != BsonType::kArray) return BadGeo("Polygon coordinates must be an array");
    if (e.Obj().NumFields() < 4) {
      return BadGeo("Loop must have at least 3 different vertices: " + Show(e));
    }
    HG_ASSIGN_OR_RETURN(std::vector<S2Point> pts, Positions(e, "Polygon"));
    BsonElement first = e.Obj().FirstElement();
    BsonElement last;
    for (BsonElement p : e.Obj()) last = p;
    if (!first.Obj().BinaryEqual(last.Obj()) && pts.front() != pts.back()) {
      return BadGeo("Loop is not closed, first vertex does not equal last vertex: " + Show(e));
    }
    if (pts.size() > 1 && pts.front() == pts.back()) pts.pop_back();
    if (pts.size() < 3) {
      return BadGeo("Loop must have at least 3 different vertices: " + Show(e));
    }
    auto loop = std::make_unique<S2Loop>(pts, S2Debug::DISABLE);
    S2Error error;
    if (loop->FindValidationError(&error)) {
      return BadGeo("Loop is not valid: " + Show(e) + " " + error.text());
    }
    // A big polygon's ring says its inside by its orientation; otherwise the smaller side is.
    if (!g_.strict_winding_) loop->Normalize();
    return loop;
  }

  Status AddPolygon(const BsonElement& e) {
    if (e.type() != BsonType::kArray || e.Obj().IsEmpty()) {
      return BadGeo("Polygon coordinates must be an array of at least one ring");
    }
    if (g_.strict_winding_ && e.Obj().NumFields() != 1) {
      return BadGeo("Only one simple loop is allowed in a big polygon, instead provided " +
                    std::to_string(e.Obj().NumFields()) + " loops");
    }
    std::vector<std::unique_ptr<S2Loop>> loops;
    for (BsonElement ring : e.Obj()) {
      HG_ASSIGN_OR_RETURN(auto loop, Ring(ring));
      if (!loops.empty() && !loops.front()->Contains(*loop)) {
        return BadGeo(
            "Secondary loops not contained by first exterior loop - secondary loops must be "
            "holes: " +
            Show(ring));
      }
      loops.push_back(std::move(loop));
    }
    auto polygon = std::make_unique<S2Polygon>();
    polygon->set_s2debug_override(S2Debug::DISABLE);
    polygon->InitNested(std::move(loops));
    S2Error error;
    if (polygon->FindValidationError(&error)) {
      return BadGeo("Polygon is not valid: " + Show(e) + " " + error.text());
    }
    g_.index_->Add(std::make_unique<S2Polygon::OwningShape>(std::move(polygon)));
    return Status::OK();
  }

  Geometry g_;
};

Geometry::Geometry() = default;
Geometry::~Geometry() = default;
Geometry::Geometry(Geometry&&) noexcept = default;
Geometry& Geometry::operator=(Geometry&&) noexcept = default;

StatusWith<Geometry> Geometry::FromGeoJson(const BsonObj& obj) {
  GeometryBuilder b;
  HG_RETURN_IF_ERROR(b.Add(obj, 0));
  return b.Release();
}

namespace {
// A legacy pair: the first two values of an array or document, both numbers.
std::optional<FlatPoint> LegacyPair(const BsonElement& value) {
  if (value.type() != BsonType::kArray && value.type() != BsonType::kObject) return std::nullopt;
  BsonObj o = value.Obj();
  auto it = o.begin();
  if (it == o.end() || !(*it).IsNumber()) return std::nullopt;
  const double x = (*it).NumberDouble();
  ++it;
  if (it == o.end() || !(*it).IsNumber()) return std::nullopt;
  return FlatPoint{x, (*it).NumberDouble()};
}

bool IsGeoJson(const BsonElement& value) {
  return value.type() == BsonType::kObject && value.Obj()["type"].type() == BsonType::kString;
}
}  // namespace

std::optional<FlatPoint> Geometry::PointLocation(const BsonElement& value) {
  if (!IsGeoJson(value)) return LegacyPair(value);
  // A valid GeoJSON Point only, as FromStored accepts it.
  const BsonObj o = value.Obj();
  if (o["type"].Str() != "Point" || !o["crs"].eoo() ||
      o["coordinates"].type() != BsonType::kArray) {
    return std::nullopt;
  }
  const std::optional<FlatPoint> p = LegacyPair(o["coordinates"]);
  if (!p || !InLngLatBounds(p->x, p->y)) return std::nullopt;
  return p;
}

std::optional<Geometry> Geometry::FromStored(const BsonElement& value) {
  if (IsGeoJson(value)) {
    auto g = FromGeoJson(value.Obj());
    // A stored big polygon never matches, as in MongoDB.
    if (!g.ok() || g.value().strict_winding()) return std::nullopt;
    return std::move(g).value();
  }
  // A legacy pair is a point on the sphere when it is a longitude and a latitude.
  const std::optional<FlatPoint> pair = LegacyPair(value);
  if (!pair || !InLngLatBounds(pair->x, pair->y)) return std::nullopt;
  Geometry g;
  g.index_ = std::make_unique<MutableS2ShapeIndex>();
  g.index_->Add(std::make_unique<S2PointVectorShape>(
      std::vector<S2Point>{S2LatLng::FromDegrees(pair->y, pair->x).ToPoint()}));
  g.vertices_.emplace_back(pair->x, pair->y);
  return g;
}

}  // namespace hourglass::geo
