// 2dsphere keys and the key intervals of queries: a point is its leaf cell, other shapes are
// covered by cells of MongoDB's levels, a query's intervals hold the cells of every geometry it
// can match, and values that are no geometry are refused with a reason.
#include "geo/sphere_index.h"

#include <gtest/gtest.h>

#include <random>

namespace hourglass::geo {
namespace {

using bson::BsonObj;

BsonObj J(const std::string& json) { return bson::FromJson(json).value(); }

// The level of a cell id: its lowest set bit sits at 2 * (30 - level).
int Level(int64_t id) { return 30 - __builtin_ctzll(static_cast<uint64_t>(id)) / 2; }

std::vector<int64_t> Cells(const std::string& value_json) {
  BsonObj d = J(R"({"v": )" + value_json + "}");
  auto cells = SphereIndexCells(d.FirstElement(), SphereIndexParams::Default());
  EXPECT_TRUE(cells.ok()) << value_json << ": " << cells.status().ToString();
  return cells.ok() ? cells.value() : std::vector<int64_t>{};
}

bool Contains(const std::vector<CellInterval>& ivs, int64_t cell) {
  for (const CellInterval& iv : ivs) {
    if (cell >= iv.lo && cell <= iv.hi) return true;
  }
  return false;
}

std::vector<CellInterval> Intervals(const std::string& query_json) {
  BsonObj q = J(query_json);
  auto parsed = q.FirstElement().FieldName() == "$geoIntersects"
                    ? GeoQuery::ParseIntersects(q.FirstElement())
                    : GeoQuery::ParseWithin(q.FirstElement());
  EXPECT_TRUE(parsed.ok()) << query_json;
  auto ivs = SphereQueryIntervals(parsed.value(), SphereIndexParams::Default());
  EXPECT_TRUE(ivs.has_value()) << query_json;
  return ivs.value_or(std::vector<CellInterval>{});
}

TEST(SphereIndexTest, PointsAreLeafCellsAndShapesAreCovered) {
  for (const char* p : {R"({"type": "Point", "coordinates": [2.35, 48.85]})", "[2.35, 48.85]",
                        R"({"x": 2.35, "y": 48.85})"}) {
    auto cells = Cells(p);
    ASSERT_EQ(cells.size(), 1u) << p;
    EXPECT_EQ(Level(cells[0]), 30);
    EXPECT_EQ(cells, Cells("[2.35, 48.85]"));  // every spelling of one point, one key
  }
  auto cells = Cells(R"({"type": "Polygon", "coordinates":
      [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]})");
  ASSERT_FALSE(cells.empty());
  for (int64_t c : cells) {
    EXPECT_GE(Level(c), 2);
    EXPECT_LE(Level(c), 16);
  }
  EXPECT_TRUE(std::is_sorted(cells.begin(), cells.end()));
  // Faces 4 and 5 come out negative, as MongoDB's NumberLong keys do.
  EXPECT_LT(Cells("[-170, -80]")[0], 0);
}

TEST(SphereIndexTest, AnIndexsLevelsBoundItsShapesCellsAndItsQueries) {
  const SphereIndexParams levels{.coarsest = 6, .finest = 8};
  EXPECT_EQ(SphereIndexParams::Default().coarsest, 2);
  EXPECT_EQ(SphereIndexParams::Default().finest, 16);
  BsonObj d = J(R"({"v": {"type": "LineString", "coordinates": [[0, 0], [3, 1]]}})");
  auto cells = SphereIndexCells(d.FirstElement(), levels);
  ASSERT_TRUE(cells.ok());
  ASSERT_FALSE(cells.value().empty());
  for (int64_t c : cells.value()) {
    EXPECT_GE(Level(c), 6);
    EXPECT_LE(Level(c), 8);
  }
  // A query around a point on the line reaches one of those cells (an ancestor of its covering,
  // no coarser than level 6), and no ancestor coarser than that.
  BsonObj q = J(R"({"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": [1.5,
      0.5]}}})");
  auto ivs = SphereQueryIntervals(GeoQuery::ParseIntersects(q.FirstElement()).value(), levels);
  ASSERT_TRUE(ivs.has_value());
  bool reached = false;
  for (int64_t c : cells.value()) reached = reached || Contains(*ivs, c);
  EXPECT_TRUE(reached);
  for (const CellInterval& iv : *ivs) {
    if (iv.lo == iv.hi) {
      EXPECT_GE(Level(iv.lo), 6);
    }
  }
  // A point stays its leaf cell whatever the levels.
  BsonObj p = J(R"({"v": [1.5, 0.5]})");
  EXPECT_EQ(Level(SphereIndexCells(p.FirstElement(), levels).value()[0]), 30);
}

TEST(SphereIndexTest, VersionsOneAndTwoKeyTokensAndCoverPointsLikeShapes) {
  const SphereIndexParams v2 = SphereIndexParams::Default(2);
  EXPECT_EQ(v2.coarsest, 7);
  EXPECT_EQ(v2.finest, 14);
  EXPECT_EQ(v2.max_cells, 50);
  EXPECT_EQ(SphereIndexParams::Default(1).version, 1);
  // A point is covered at the finest level, not by its leaf cell.
  BsonObj p = J(R"({"v": [2.35, 48.85]})");
  auto cells = SphereIndexCells(p.FirstElement(), v2);
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells.value().size(), 1u);
  EXPECT_EQ(Level(cells.value()[0]), 14);
  // A token is "<face>/<one digit per level>".
  const std::string token = SphereCellToken(cells.value()[0]);
  EXPECT_EQ(token.size(), 2u + 14u) << token;
  EXPECT_EQ(token[1], '/');
  // A query around the point holds its token, in a range or as a single one.
  BsonObj q = J(R"({"$geoWithin": {"$centerSphere": [[2.35, 48.85], 0.0001]}})");
  auto ivs = SphereQueryTokenIntervals(GeoQuery::ParseWithin(q.FirstElement()).value(), v2);
  ASSERT_TRUE(ivs.has_value());
  bool held = false;
  for (const TokenInterval& iv : *ivs) {
    held = held || (iv.hi.empty() ? token == iv.lo : (token >= iv.lo && token < iv.hi));
  }
  EXPECT_TRUE(held);
  for (size_t i = 1; i < ivs->size(); ++i) EXPECT_LT((*ivs)[i - 1].lo, (*ivs)[i].lo);
}

TEST(SphereIndexTest, MissingAndEmptyValuesHaveNoCells) {
  for (const char* v : {"null", "[]", "{}"}) EXPECT_TRUE(Cells(v).empty()) << v;
  EXPECT_TRUE(SphereIndexCells(bson::BsonElement(), SphereIndexParams::Default()).value().empty());
}

TEST(SphereIndexTest, ValuesThatAreNoGeometryAreRefused) {
  for (const char* v : {R"("paris")", "5", "[200, 10]", "[[1, 2], [3, 4]]",
                        R"({"type": "Point", "coordinates": [0, 95]})",
                        R"({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1]]]})",
                        R"({"type": "Nowhere", "coordinates": [0, 0]})"}) {
    BsonObj d = J(std::string(R"({"v": )") + v + "}");
    auto cells = SphereIndexCells(d.FirstElement(), SphereIndexParams::Default());
    EXPECT_FALSE(cells.ok()) << v;
    if (!cells.ok()) {
      EXPECT_EQ(cells.status().code(), ErrorCode::kBadValue) << v;
    }
  }
}

TEST(SphereIndexTest, ABucketsPointsAreCoveredTogether) {
  BsonObj values = J(R"({"a": [2.35, 48.85], "b": null, "c": {"type": "Point",
      "coordinates": [2.36, 48.86]}, "d": {}})");
  std::vector<bson::BsonElement> elems;
  for (bson::BsonElement e : values) elems.push_back(e);
  auto cells = SphereBucketCells(elems, SphereIndexParams::Default());
  ASSERT_TRUE(cells.ok()) << cells.status().ToString();
  ASSERT_FALSE(cells.value().empty());
  for (int64_t c : cells.value()) EXPECT_LE(Level(c), 16);
  EXPECT_TRUE(
      SphereBucketCells({values["b"], values["d"]}, SphereIndexParams::Default()).value().empty());
  for (const char* bad :
       {R"({"type": "LineString", "coordinates": [[0, 0], [1, 1]]})", R"("here")", "[200, 0]"}) {
    BsonObj d = J(std::string(R"({"v": )") + bad + "}");
    EXPECT_FALSE(CheckBucketPoint(d.FirstElement()).ok()) << bad;
    EXPECT_FALSE(SphereBucketCells({d.FirstElement()}, SphereIndexParams::Default()).ok()) << bad;
  }
  EXPECT_TRUE(CheckBucketPoint(values["a"]).ok());
  EXPECT_TRUE(CheckBucketPoint(values["b"]).ok());
}

TEST(SphereIndexTest, QueryIntervalsHoldEveryMatchingGeometry) {
  const std::string square = R"({"$geoWithin": {"$geometry": {"type": "Polygon",
      "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]}}})";
  const auto ivs = Intervals(square);
  ASSERT_FALSE(ivs.empty());
  for (size_t i = 1; i < ivs.size(); ++i) EXPECT_LT(ivs[i - 1].hi, ivs[i].lo);  // disjoint
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> in(0.01, 9.99), out(20, 170);
  for (int i = 0; i < 200; ++i) {
    const std::string p = "[" + std::to_string(in(rng)) + ", " + std::to_string(in(rng)) + "]";
    EXPECT_TRUE(Contains(ivs, Cells(p)[0])) << p;
  }
  int outside = 0;
  for (int i = 0; i < 200; ++i) {
    const std::string p = "[" + std::to_string(out(rng)) + ", " + std::to_string(in(rng)) + "]";
    if (!Contains(ivs, Cells(p)[0])) ++outside;
  }
  EXPECT_EQ(outside, 200);  // far points fall outside the covering
  // A shape's cells meet the intervals of a query it intersects (through an ancestor or a
  // descendant of a covering cell).
  const auto shape = Cells(R"({"type": "Polygon", "coordinates":
      [[[-20, -20], [20, -20], [20, 20], [-20, 20], [-20, -20]]]})");
  const auto point_query = Intervals(R"({"$geoIntersects": {"$geometry":
      {"type": "Point", "coordinates": [1, 1]}}})");
  bool met = false;
  for (int64_t c : shape) met = met || Contains(point_query, c);
  EXPECT_TRUE(met);
  // Flat shapes have no sphere intervals.
  BsonObj box = J(R"({"$geoWithin": {"$box": [[0, 0], [1, 1]]}})");
  EXPECT_FALSE(SphereQueryIntervals(GeoQuery::ParseWithin(box.FirstElement()).value(),
                                    SphereIndexParams::Default()));
}

}  // namespace
}  // namespace hourglass::geo
