#include "geo/sphere_index.h"

#include <s2/mutable_s2shape_index.h>
#include <s2/s2cell_id.h>
#include <s2/s2latlng.h>
#include <s2/s2metrics.h>
#include <s2/s2point_region.h>
#include <s2/s2point_vector_shape.h>
#include <s2/s2region.h>
#include <s2/s2region_coverer.h>
#include <s2/s2shape_index_region.h>

#include <algorithm>

namespace hourglass::geo {

using bson::BsonElement;
using bson::BsonType;

namespace {

// MongoDB's 2dsphere (version 3) parameters: a point is its leaf cell; other shapes are covered
// by about 20 cells (SphereIndexParams). A query region is covered by up to 20 cells of levels
// 0-23.
constexpr double kEarthRadiusMeters = 6378.1 * 1000;
constexpr int kQueryMaxCells = 20;
constexpr int kQueryFinestLevel = 23;

std::vector<S2CellId> Cover(const S2Region& region, int min_level, int max_level, int max_cells) {
  S2RegionCoverer::Options options;
  options.set_min_level(min_level);
  options.set_max_level(max_level);
  options.set_max_cells(max_cells);
  S2RegionCoverer coverer(options);
  std::vector<S2CellId> cells;
  coverer.GetCovering(region, &cells);
  return cells;
}

// A shape's cells in an index of `params`, sorted.
std::vector<int64_t> ShapeCells(const S2Region& region, const SphereIndexParams& params) {
  std::vector<int64_t> cells;
  for (S2CellId c : Cover(region, params.coarsest, params.finest, params.max_cells)) {
    cells.push_back(static_cast<int64_t>(c.id()));
  }
  std::sort(cells.begin(), cells.end());
  return cells;
}

// A point's cells: its leaf cell (version 3), or its covering as a shape's (before).
std::vector<int64_t> PointCells(double lng, double lat, const SphereIndexParams& params) {
  const S2Point p = S2LatLng::FromDegrees(lat, lng).ToPoint();
  if (params.version >= 3) return {static_cast<int64_t>(S2CellId(p).id())};
  return ShapeCells(S2PointRegion(p), params);
}

bool IsEmptyContainer(const BsonElement& value) {
  return (value.type() == BsonType::kArray || value.type() == BsonType::kObject) &&
         value.Obj().IsEmpty();
}

}  // namespace

SphereIndexParams SphereIndexParams::Default(int version) {
  static const SphereIndexParams v3{
      .version = 3,
      .coarsest = S2::kAvgEdge.GetClosestLevel(2000 * 1000 / kEarthRadiusMeters),
      .finest = S2::kAvgEdge.GetClosestLevel(110 / kEarthRadiusMeters),
      .max_cells = 20};
  static const SphereIndexParams v2{
      .version = 2,
      .coarsest = S2::kAvgEdge.GetClosestLevel(100 * 1000 / kEarthRadiusMeters),
      .finest = S2::kAvgEdge.GetClosestLevel(500 / kEarthRadiusMeters),
      .max_cells = 50};
  if (version >= 3) return v3;
  SphereIndexParams p = v2;
  p.version = version;
  return p;
}

StatusWith<SphereIndexParams> SphereIndexParams::FromSpec(const bson::BsonObj& spec) {
  const BsonElement version = spec["2dsphereIndexVersion"];
  SphereIndexParams p = Default(version.IsNumber() ? static_cast<int>(version.NumberLong()) : 3);
  if (const BsonElement c = spec["coarsestIndexedLevel"]; c.IsNumber()) {
    if (c.NumberLong() < 0) {
      return Status(static_cast<ErrorCode>(16747), "coarsestIndexedLevel must be >= 0");
    }
    p.coarsest = static_cast<int>(std::min<int64_t>(c.NumberLong(), S2CellId::kMaxLevel + 1));
  }
  if (const BsonElement f = spec["finestIndexedLevel"]; f.IsNumber()) {
    if (f.NumberLong() > S2CellId::kMaxLevel) {
      return Status(static_cast<ErrorCode>(16748), "finestIndexedLevel must be <= 30");
    }
    p.finest = static_cast<int>(std::max<int64_t>(f.NumberLong(), -1));
  }
  if (p.finest < p.coarsest) {
    return Status(static_cast<ErrorCode>(16749),
                  "finestIndexedLevel must be >= coarsestIndexedLevel");
  }
  return p;
}

std::string SphereCellToken(int64_t cell) {
  return S2CellId(static_cast<uint64_t>(cell)).ToString();
}

StatusWith<std::vector<int64_t>> SphereIndexCells(const BsonElement& value,
                                                  const SphereIndexParams& levels) {
  std::vector<int64_t> cells;
  if (value.eoo() || value.type() == BsonType::kNull || value.type() == BsonType::kUndefined ||
      IsEmptyContainer(value)) {
    return cells;
  }
  if (value.type() != BsonType::kArray && value.type() != BsonType::kObject) {
    return BadGeo("geo element must be an array or object: " + std::string(value.FieldName()) +
                  ": " + std::string(bson::TypeName(value.type())));
  }
  const bool geojson =
      value.type() == BsonType::kObject && value.Obj()["type"].type() == BsonType::kString;
  if (!geojson) {
    // A legacy pair (an array at the end of the path is one pair, never a list of them).
    const std::optional<FlatPoint> p = Geometry::PointLocation(value);
    if (!p) return BadGeo("Point must only contain numeric elements");
    if (!InLngLatBounds(p->x, p->y)) return LngLatOutOfBounds(p->x, p->y);
    return PointCells(p->x, p->y, levels);
  }
  HG_ASSIGN_OR_RETURN(Geometry g, Geometry::FromGeoJson(value.Obj()));
  if (g.strict_winding()) return BadGeo("can't index geometry with strict winding order");
  const std::string_view type = value.Obj()["type"].Str();
  if (levels.version == 1 && type != "Point" && type != "LineString" && type != "Polygon") {
    // Version 1 indexes only the simple geometries, as MongoDB's.
    return BadGeo("given geometry can't be indexed in the old index format");
  }
  if (type == "Point") {
    const auto& [lng, lat] = g.lng_lat_vertices().front();
    return PointCells(lng, lat, levels);
  }
  return ShapeCells(S2ShapeIndexRegion<MutableS2ShapeIndex>(&g.sphere()), levels);
}

namespace {
// A bucket value's point: nullopt for a value that is skipped; an error for one that is no point.
StatusWith<std::optional<FlatPoint>> BucketPoint(const BsonElement& v) {
  if (v.eoo() || v.type() == BsonType::kNull || v.type() == BsonType::kUndefined ||
      IsEmptyContainer(v)) {
    return std::optional<FlatPoint>();
  }
  const std::optional<FlatPoint> p = Geometry::PointLocation(v);
  if (!p) return BadGeo("Time-series collections '2dsphere' indexes only support point data");
  if (!InLngLatBounds(p->x, p->y)) return LngLatOutOfBounds(p->x, p->y);
  return p;
}
}  // namespace

Status CheckBucketPoint(const BsonElement& value) { return BucketPoint(value).status(); }

StatusWith<std::vector<int64_t>> SphereBucketCells(const std::vector<BsonElement>& values,
                                                   const SphereIndexParams& levels) {
  std::vector<S2Point> points;
  for (const BsonElement& v : values) {
    HG_ASSIGN_OR_RETURN(std::optional<FlatPoint> p, BucketPoint(v));
    if (p) points.push_back(S2LatLng::FromDegrees(p->y, p->x).ToPoint());
  }
  std::vector<int64_t> cells;
  if (points.empty()) return cells;
  MutableS2ShapeIndex index;
  index.Add(std::make_unique<S2PointVectorShape>(std::move(points)));
  return ShapeCells(S2ShapeIndexRegion<MutableS2ShapeIndex>(&index), levels);
}

std::optional<std::vector<CellInterval>> SphereQueryIntervals(const GeoQuery& q,
                                                              const SphereIndexParams& levels) {
  const std::unique_ptr<S2Region> region = q.SphereRegion();
  if (!region) return std::nullopt;
  std::vector<CellInterval> out;
  const int coarsest = levels.coarsest, finest = levels.finest;
  for (S2CellId c : Cover(*region, 0, kQueryFinestLevel, kQueryMaxCells)) {
    // Documents' cells inside c (a contiguous range of ids), then those containing it (shapes'
    // cells are no finer than `finest`; points' leaf cells are inside c).
    out.push_back(
        {static_cast<int64_t>(c.range_min().id()), static_cast<int64_t>(c.range_max().id())});
    for (int level = std::min(c.level() - 1, finest); level >= coarsest; --level) {
      const auto id = static_cast<int64_t>(c.parent(level).id());
      out.push_back({id, id});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const CellInterval& a, const CellInterval& b) { return a.lo < b.lo; });
  std::vector<CellInterval> merged;
  for (const CellInterval& iv : out) {
    if (!merged.empty() && iv.lo <= merged.back().hi) {
      merged.back().hi = std::max(merged.back().hi, iv.hi);
    } else {
      merged.push_back(iv);
    }
  }
  return merged;
}

std::optional<std::vector<TokenInterval>> SphereQueryTokenIntervals(
    const GeoQuery& q, const SphereIndexParams& params) {
  const std::unique_ptr<S2Region> region = q.SphereRegion();
  if (!region) return std::nullopt;
  // The same cells as SphereQueryIntervals, as tokens: a covering cell's descendants are the
  // tokens that extend its own (up to its last digit, incremented), its ancestors single tokens.
  std::vector<TokenInterval> out;
  for (S2CellId c : Cover(*region, 0, kQueryFinestLevel, kQueryMaxCells)) {
    std::string lo = c.ToString();
    std::string hi = lo;
    ++hi.back();
    out.push_back({std::move(lo), std::move(hi)});
    for (int level = std::min(c.level() - 1, params.finest); level >= params.coarsest; --level) {
      out.push_back({c.parent(level).ToString(), std::string()});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const TokenInterval& a, const TokenInterval& b) { return a.lo < b.lo; });
  std::vector<TokenInterval> merged;
  for (TokenInterval& iv : out) {
    if (!merged.empty()) {
      TokenInterval& last = merged.back();
      // A single token or range that starts inside the last range joins it.
      if (!last.hi.empty() && iv.lo < last.hi) {
        if (!iv.hi.empty() && iv.hi > last.hi) last.hi = iv.hi;
        continue;
      }
      if (last.hi.empty() && iv.lo == last.lo) {
        last.hi = iv.hi;  // the same token again, maybe as a range now
        continue;
      }
    }
    merged.push_back(std::move(iv));
  }
  return merged;
}

}  // namespace hourglass::geo
