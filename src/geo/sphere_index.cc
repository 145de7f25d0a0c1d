#include "geo/sphere_index.h"

#include <s2/mutable_s2shape_index.h>
#include <s2/s2cell_id.h>
#include <s2/s2latlng.h>
#include <s2/s2metrics.h>
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
// by about 20 cells (SphereLevels). A query region is covered by up to 20 cells of levels 0-23.
constexpr double kEarthRadiusMeters = 6378.1 * 1000;
constexpr int kMaxCells = 20;
constexpr int kQueryFinestLevel = 23;

std::vector<S2CellId> Cover(const S2Region& region, int min_level, int max_level) {
  S2RegionCoverer::Options options;
  options.set_min_level(min_level);
  options.set_max_level(max_level);
  options.set_max_cells(kMaxCells);
  S2RegionCoverer coverer(options);
  std::vector<S2CellId> cells;
  coverer.GetCovering(region, &cells);
  return cells;
}

int64_t LeafCell(double lng, double lat) {
  return static_cast<int64_t>(S2CellId(S2LatLng::FromDegrees(lat, lng)).id());
}

bool IsEmptyContainer(const BsonElement& value) {
  return (value.type() == BsonType::kArray || value.type() == BsonType::kObject) &&
         value.Obj().IsEmpty();
}

}  // namespace

SphereLevels SphereLevels::Default() {
  static const SphereLevels levels{
      .coarsest = S2::kAvgEdge.GetClosestLevel(2000 * 1000 / kEarthRadiusMeters),
      .finest = S2::kAvgEdge.GetClosestLevel(110 / kEarthRadiusMeters)};
  return levels;
}

StatusWith<std::vector<int64_t>> SphereIndexCells(const BsonElement& value,
                                                  const SphereLevels& levels) {
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
    cells.push_back(LeafCell(p->x, p->y));
    return cells;
  }
  HG_ASSIGN_OR_RETURN(Geometry g, Geometry::FromGeoJson(value.Obj()));
  if (g.strict_winding()) return BadGeo("can't index geometry with strict winding order");
  if (value.Obj()["type"].Str() == "Point") {
    const auto& [lng, lat] = g.lng_lat_vertices().front();
    cells.push_back(LeafCell(lng, lat));
    return cells;
  }
  const S2ShapeIndexRegion<MutableS2ShapeIndex> region(&g.sphere());
  for (S2CellId c : Cover(region, levels.coarsest, levels.finest)) {
    cells.push_back(static_cast<int64_t>(c.id()));
  }
  std::sort(cells.begin(), cells.end());
  return cells;
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
                                                   const SphereLevels& levels) {
  std::vector<S2Point> points;
  for (const BsonElement& v : values) {
    HG_ASSIGN_OR_RETURN(std::optional<FlatPoint> p, BucketPoint(v));
    if (p) points.push_back(S2LatLng::FromDegrees(p->y, p->x).ToPoint());
  }
  std::vector<int64_t> cells;
  if (points.empty()) return cells;
  MutableS2ShapeIndex index;
  index.Add(std::make_unique<S2PointVectorShape>(std::move(points)));
  const S2ShapeIndexRegion<MutableS2ShapeIndex> region(&index);
  for (S2CellId c : Cover(region, levels.coarsest, levels.finest)) {
    cells.push_back(static_cast<int64_t>(c.id()));
  }
  std::sort(cells.begin(), cells.end());
  return cells;
}

std::optional<std::vector<CellInterval>> SphereQueryIntervals(const GeoQuery& q,
                                                              const SphereLevels& levels) {
  const std::unique_ptr<S2Region> region = q.SphereRegion();
  if (!region) return std::nullopt;
  std::vector<CellInterval> out;
  const int coarsest = levels.coarsest, finest = levels.finest;
  for (S2CellId c : Cover(*region, 0, kQueryFinestLevel)) {
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

}  // namespace hourglass::geo
