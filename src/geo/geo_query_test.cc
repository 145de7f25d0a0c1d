// Geo regions against document geometries: GeoJSON on the sphere (containment and intersection
// through S2), legacy pairs on the flat plane, and the parse errors of bad shapes.
#include "geo/geo_query.h"

#include <gtest/gtest.h>

namespace hourglass::geo {
namespace {

using bson::BsonObj;

BsonObj J(const char* json) { return bson::FromJson(json).value(); }

bool Matches(const char* query, const char* doc_value) {
  BsonObj q = J(query);
  auto parsed = q.FirstElement().FieldName() == "$geoIntersects"
                    ? GeoQuery::ParseIntersects(q.FirstElement())
                    : GeoQuery::ParseWithin(q.FirstElement());
  EXPECT_TRUE(parsed.ok()) << query << ": " << parsed.status().ToString();
  if (!parsed.ok()) return false;
  BsonObj d = J((std::string(R"({"v": )") + doc_value + "}").c_str());
  return parsed.value().Matches(d.FirstElement());
}

int ParseCode(const char* query) {
  BsonObj q = J(query);
  auto parsed = q.FirstElement().FieldName() == "$geoIntersects"
                    ? GeoQuery::ParseIntersects(q.FirstElement())
                    : GeoQuery::ParseWithin(q.FirstElement());
  return parsed.ok() ? 0 : static_cast<int>(parsed.status().code());
}

constexpr const char* kSquare = R"({"$geoWithin": {"$geometry": {"type": "Polygon",
    "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]}}})";

TEST(GeoQueryTest, WithinAPolygonOnTheSphere) {
  EXPECT_TRUE(Matches(kSquare, R"({"type": "Point", "coordinates": [5, 5]})"));
  EXPECT_FALSE(Matches(kSquare, R"({"type": "Point", "coordinates": [15, 5]})"));
  EXPECT_TRUE(Matches(kSquare, "[5, 5]"));  // a legacy pair is a point too
  EXPECT_TRUE(Matches(kSquare, R"({"x": 5, "y": 5})"));
  EXPECT_TRUE(Matches(kSquare, R"({"type": "LineString", "coordinates": [[1, 1], [9, 9]]})"));
  EXPECT_FALSE(Matches(kSquare, R"({"type": "LineString", "coordinates": [[1, 1], [19, 9]]})"));
  EXPECT_TRUE(Matches(kSquare, R"({"type": "Polygon", "coordinates":
      [[[1, 1], [2, 1], [2, 2], [1, 2], [1, 1]]]})"));
  EXPECT_FALSE(Matches(kSquare, R"("5, 5")"));
  EXPECT_FALSE(Matches(kSquare, "5"));
  EXPECT_FALSE(Matches(kSquare, "[500, 5]"));  // not a longitude: only flat queries see it
  // A hole is outside.
  const char* holed = R"({"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [
      [[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]], [[4, 4], [6, 4], [6, 6], [4, 6], [4, 4]]]}}})";
  EXPECT_FALSE(Matches(holed, "[5, 5]"));
  EXPECT_TRUE(Matches(holed, "[2, 2]"));
}

TEST(GeoQueryTest, IntersectsAnyGeometry) {
  const char* line = R"({"$geoIntersects": {"$geometry": {"type": "LineString",
      "coordinates": [[-5, 5], [15, 5]]}}})";
  EXPECT_TRUE(Matches(line, R"({"type": "Polygon", "coordinates":
      [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]})"));
  EXPECT_FALSE(Matches(line, R"({"type": "Polygon", "coordinates":
      [[[0, 20], [10, 20], [10, 30], [0, 30], [0, 20]]]})"));
  EXPECT_TRUE(Matches(line, R"({"type": "MultiPoint", "coordinates": [[50, 50], [15, 5]]})"));
}

TEST(GeoQueryTest, CapsAndFlatShapes) {
  // 1 degree of arc around (0, 0): about 111 km.
  const char* cap = R"({"$geoWithin": {"$centerSphere": [[0, 0], 0.0175]}})";
  EXPECT_TRUE(Matches(cap, "[0.5, 0.5]"));
  EXPECT_FALSE(Matches(cap, "[2, 0]"));
  const char* box = R"({"$geoWithin": {"$box": [[0, 0], [100, 100]]}})";
  EXPECT_TRUE(Matches(box, "[100, 50]"));  // the edge is inside
  EXPECT_FALSE(Matches(box, "[150, 50]"));
  EXPECT_FALSE(Matches(box, "[170, 80]"));
  EXPECT_TRUE(Matches(R"({"$geoWithin": {"$box": [[0, 0], [200, 100]]}})", "[170, 80]"));
  // Flat shapes see point locations only: legacy pairs (any numbers) and valid GeoJSON Points.
  EXPECT_FALSE(Matches(box, R"({"type": "LineString", "coordinates": [[1, 1], [2, 2]]})"));
  EXPECT_TRUE(Matches(R"({"$geoWithin": {"$box": [[0, 0], [600, 10]]}})", "[500, 5]"));
  EXPECT_TRUE(Matches(box, R"({"type": "Point", "coordinates": [50, 50]})"));
  EXPECT_FALSE(Matches(box, R"({"type": "Point", "coordinates": [50, 95]})"));  // no latitude
  EXPECT_FALSE(Matches(box, R"({"type": "Point", "coordinates": ["50", 50]})"));
  const char* circle = R"({"$geoWithin": {"$center": [[0, 0], 5]}})";
  EXPECT_TRUE(Matches(circle, "[3, 4]"));
  EXPECT_FALSE(Matches(circle, "[4, 4]"));
  const char* tri = R"({"$geoWithin": {"$polygon": [[0, 0], [10, 0], [0, 10]]}})";
  EXPECT_TRUE(Matches(tri, "[2, 2]"));
  EXPECT_TRUE(Matches(tri, "[5, 5]"));  // on the hypotenuse
  EXPECT_FALSE(Matches(tri, "[6, 6]"));
}

TEST(GeoQueryTest, BadShapesAreBadValue) {
  for (const char* q : {
           R"({"$geoWithin": {"$geometry": {"type": "Point", "coordinates": [1, 2]}}})",
           R"({"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates":
               [[[0, 0], [1, 0], [1, 1], [0, 2]]]}}})",
           R"({"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates":
               [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]}}})",
           R"({"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates":
               [[[0, 0], [1, 0], [0, 0]]]}}})",
           R"({"$geoWithin": {"$foo": 1}})",
           R"({"$geoWithin": {"$box": [[0, 0]]}})",
           R"({"$geoWithin": {"$center": [[0, 0], -1]}})",
           R"({"$geoWithin": {"$polygon": [[0, 0], [1, 1]]}})",
           R"({"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": [200, 0]}}})",
           R"({"$geoIntersects": {"$box": [[0, 0], [1, 1]]}})",
           R"({"$geoIntersects": {"$geometry": {"type": "Blob", "coordinates": [1, 1]}}})",
       }) {
    EXPECT_EQ(ParseCode(q), 2) << q;
  }
  // Coordinate reference systems: WGS84's names, MongoDB's strict winding one for polygons.
  EXPECT_EQ(ParseCode(R"({"$geoIntersects": {"$geometry": {"type": "Point",
      "coordinates": [1, 1], "crs": {"type": "name"}}}})"),
            2);
  EXPECT_EQ(ParseCode(R"({"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": [1, 1],
      "crs": {"type": "name", "properties": {"name": "EPSG:3857"}}}}})"),
            2);
  EXPECT_EQ(ParseCode(R"({"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": [1, 1],
      "crs": {"type": "name", "properties": {"name": "EPSG:4326"}}}}})"),
            0);
  EXPECT_EQ(ParseCode(R"({"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": [1, 1],
      "crs": {"type": "name", "properties": {"name":
      "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}}}})"),
            2);  // strict winding: polygons only
}

// The same ring, clockwise: without a crs the smaller side is the inside; with MongoDB's strict
// winding CRS the left side is, here everything but the square.
TEST(GeoQueryTest, BigPolygonsFollowTheirWinding) {
  const std::string ring = R"("coordinates": [[[0, 0], [0, 10], [10, 10], [10, 0], [0, 0]]])";
  const std::string strict = R"({"$geoWithin": {"$geometry": {"type": "Polygon", )" + ring +
                             R"(, "crs": {"type": "name", "properties": {"name":
      "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}}}})";
  const std::string plain = R"({"$geoWithin": {"$geometry": {"type": "Polygon", )" + ring + "}}}";
  EXPECT_TRUE(Matches(plain.c_str(), "[5, 5]"));
  EXPECT_FALSE(Matches(plain.c_str(), "[50, 50]"));
  EXPECT_FALSE(Matches(strict.c_str(), "[5, 5]"));
  EXPECT_TRUE(Matches(strict.c_str(), "[50, 50]"));
  EXPECT_TRUE(Matches(strict.c_str(), "[-120, -45]"));
  // A stored big polygon never matches.
  const std::string stored = R"({"type": "Polygon", )" + ring +
                             R"(, "crs": {"type": "name", "properties": {"name":
      "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}})";
  EXPECT_FALSE(Matches(R"({"$geoIntersects": {"$geometry": {"type": "Point",
      "coordinates": [50, 50]}}})",
                       stored.c_str()));
  // One ring only.
  EXPECT_EQ(ParseCode(R"({"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [
      [[0, 0], [0, 10], [10, 10], [10, 0], [0, 0]], [[1, 1], [2, 1], [2, 2], [1, 1]]],
      "crs": {"type": "name", "properties": {"name":
      "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}}}})"),
            2);
}

}  // namespace
}  // namespace hourglass::geo
