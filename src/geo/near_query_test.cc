// Nearness: distances on the sphere (meters for GeoJSON points, radians for legacy pairs with
// $nearSphere) and on the plane, the bounds, and the parse errors with MongoDB's codes.
#include "geo/near_query.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hourglass::geo {
namespace {

using bson::BsonObj;

BsonObj J(const std::string& json) { return bson::FromJson(json).value(); }

StatusWith<NearQuery> Parse(const std::string& clause_json) {
  BsonObj c = J(clause_json);
  return NearQuery::ParseOperator(c.FirstElement().FieldName(), c);
}

double DistanceTo(const NearQuery& q, const std::string& value_json) {
  BsonObj d = J(R"({"v": )" + value_json + "}");
  return q.Distance(d.FirstElement()).value_or(-1);
}

constexpr double kEarthRadius = 6378.1 * 1000;

TEST(NearQueryTest, GeoJsonPointsMeasureMeters) {
  auto q = Parse(R"({"$near": {"$geometry": {"type": "Point", "coordinates": [0, 0]},
      "$maxDistance": 200000, "$minDistance": 10}})");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q.value().metric(), NearQuery::Metric::kMeters);
  // One degree of longitude on the equator.
  const double degree = kEarthRadius * M_PI / 180;
  EXPECT_NEAR(DistanceTo(q.value(), "[1, 0]"), degree, 1e-6);
  EXPECT_NEAR(DistanceTo(q.value(), R"({"type": "Point", "coordinates": [0, 1]})"), degree, 1e-6);
  // A polygon around the point is at distance 0; a line is measured to its nearest point.
  EXPECT_EQ(DistanceTo(q.value(), R"({"type": "Polygon", "coordinates":
      [[[-1, -1], [1, -1], [1, 1], [-1, 1], [-1, -1]]]})"),
            0);
  EXPECT_NEAR(DistanceTo(q.value(), R"({"type": "LineString", "coordinates": [[2, -1], [2, 1]]})"),
              2 * degree, 1e-3);
  EXPECT_EQ(DistanceTo(q.value(), R"("no place")"), -1);
  EXPECT_TRUE(q.value().InRange(100000));
  EXPECT_FALSE(q.value().InRange(300000));
  EXPECT_FALSE(q.value().InRange(5));
  EXPECT_NEAR(q.value().MaxRadians(), 200000 / kEarthRadius, 1e-12);
}

TEST(NearQueryTest, LegacyPairsMeasureRadiansOrThePlane) {
  auto sphere = Parse(R"({"$nearSphere": [0, 0], "$maxDistance": 0.1})");
  ASSERT_TRUE(sphere.ok());
  EXPECT_EQ(sphere.value().metric(), NearQuery::Metric::kRadians);
  EXPECT_NEAR(DistanceTo(sphere.value(), "[0, 1]"), M_PI / 180, 1e-12);
  auto flat = Parse(R"({"$near": [0, 0, 5]})");  // the third value is the maximum distance
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat.value().metric(), NearQuery::Metric::kFlat);
  EXPECT_DOUBLE_EQ(DistanceTo(flat.value(), "[3, 4]"), 5);
  EXPECT_TRUE(flat.value().InRange(5));
  EXPECT_FALSE(flat.value().InRange(5.1));
}

TEST(NearQueryTest, BadClausesCarryMongoDbCodes) {
  const std::pair<const char*, ErrorCode> cases[] = {
      {R"({"$near": {"$geometry": {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}}})",
       ErrorCode::kBadValue},
      {R"({"$near": {"$geometry": {"type": "Point", "coordinates": [0, 0]},
          "$maxDistance": -1}})",
       ErrorCode::kBadValue},
      {R"({"$near": {"$geometry": {"type": "Point", "coordinates": [0, 0]}},
          "$maxDistance": 5})",
       ErrorCode::kBadValue},
      {R"({"$near": [0, 0], "$maxDistance": "far"})", ErrorCode::kLocation16895},
      {R"({"$near": [0, 0], "$maxDistance": -2})", ErrorCode::kLocation16896},
      {R"({"$near": [0, 0], "$minDistance": "near"})", ErrorCode::kLocation16893},
      {R"({"$near": [0, 0], "$minDistance": -2})", ErrorCode::kLocation16894},
      {R"({"$nearSphere": [200, 0]})", ErrorCode::kBadValue},
      {R"({"$near": "here"})", ErrorCode::kBadValue},
      {R"({"$near": {"type": "Point", "coordinates": [0, 0]}})", ErrorCode::kBadValue},
  };
  for (const auto& [clause, code] : cases) {
    auto q = Parse(clause);
    EXPECT_FALSE(q.ok()) << clause;
    if (!q.ok()) {
      EXPECT_EQ(q.status().code(), code) << clause;
    }
  }
}

TEST(NearQueryTest, TheStageForms) {
  BsonObj near = J(R"({"near": {"type": "Point", "coordinates": [0, 0]}})");
  auto q = NearQuery::FromStage(near.FirstElement(), false, NAN, 1000);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q.value().metric(), NearQuery::Metric::kMeters);  // GeoJSON: meters either way
  EXPECT_FALSE(q.value().InRange(1001));
  BsonObj legacy = J(R"({"near": [0, 0]})");
  EXPECT_EQ(NearQuery::FromStage(legacy.FirstElement(), true, NAN, NAN).value().metric(),
            NearQuery::Metric::kRadians);
  EXPECT_EQ(NearQuery::FromStage(legacy.FirstElement(), false, NAN, NAN).value().metric(),
            NearQuery::Metric::kFlat);
}

}  // namespace
}  // namespace hourglass::geo
