// 2d index keys and query ranges: geohashes interleave x and y from the most significant bit,
// ranges hold every point of the query's box, and bad values get MongoDB's codes.
#include "geo/flat_index.h"

#include <gtest/gtest.h>

#include <random>

namespace hourglass::geo {
namespace {

using bson::BsonObj;

BsonObj J(const std::string& json) { return bson::FromJson(json).value(); }

std::vector<uint64_t> Hashes(const std::string& value_json, const FlatIndexParams& p = {}) {
  BsonObj d = J(R"({"v": )" + value_json + "}");
  auto h = FlatIndexHashes(d.FirstElement(), p);
  EXPECT_TRUE(h.ok()) << value_json << ": " << h.status().ToString();
  return h.ok() ? h.value() : std::vector<uint64_t>{};
}

TEST(FlatIndexTest, GeohashesInterleaveFromTheTop) {
  FlatIndexParams p;
  p.bits = 2;
  p.min = 0;
  p.max = 4;
  // x cell 2 (10b), y cell 1 (01b): x1 y0 x0 y1 = 1001b, left-aligned.
  EXPECT_EQ(Hashes("[2.5, 1.5]", p), std::vector<uint64_t>{uint64_t{0b1001} << 60});
  EXPECT_EQ(Hashes(R"({"a": 2.5, "b": 1.5})", p), Hashes("[2.5, 1.5]", p));
  EXPECT_EQ(Hashes("[4, 4]", p), std::vector<uint64_t>{uint64_t{0b1111} << 60});  // max: last
  EXPECT_EQ(Hashes("[[0, 0], [4, 4]]", p).size(), 2u);  // a list of locations
  for (const char* none : {R"("here")", "5", "null", "[]", "{}"}) {
    EXPECT_TRUE(Hashes(none).empty()) << none;
  }
}

TEST(FlatIndexTest, BadValuesAndOptions) {
  const std::pair<const char*, ErrorCode> cases[] = {
      {"[181, 0]", ErrorCode::kLocation13027},
      {R"({"type": "Point", "coordinates": [0, 0]})", ErrorCode::kLocation16804},
      {R"([1, "b"])", ErrorCode::kLocation13026},
      {R"(["a", "b"])", ErrorCode::kLocation16804},
  };
  for (const auto& [value, code] : cases) {
    BsonObj d = J(std::string(R"({"v": )") + value + "}");
    auto h = FlatIndexHashes(d.FirstElement(), FlatIndexParams{});
    ASSERT_FALSE(h.ok()) << value;
    EXPECT_EQ(h.status().code(), code) << value;
  }
  for (const char* spec : {R"({"bits": 0})", R"({"bits": 33})", R"({"min": 1, "max": 1})",
                           R"({"min": 2, "max": 1})"}) {
    auto p = FlatIndexParams::FromSpec(J(spec));
    ASSERT_FALSE(p.ok()) << spec;
    EXPECT_EQ(p.status().code(), ErrorCode::kInvalidOptions) << spec;
  }
}

TEST(FlatIndexTest, QueryRangesHoldEveryPointOfTheBox) {
  BsonObj box = J(R"({"$geoWithin": {"$box": [[-12.5, 3], [40, 7.25]]}})");
  const auto ranges = FlatQueryRanges(GeoQuery::ParseWithin(box.FirstElement()).value(), {});
  ASSERT_TRUE(ranges.has_value());
  ASSERT_FALSE(ranges->empty());
  EXPECT_LE(ranges->size(), 64u);
  auto contains = [&](uint64_t h) {
    for (const HashRange& r : *ranges) {
      if (h >= r.lo && h <= r.hi) return true;
    }
    return false;
  };
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> x(-12.5, 40), y(3, 7.25);
  for (int i = 0; i < 300; ++i) {
    const std::string p = "[" + std::to_string(x(rng)) + ", " + std::to_string(y(rng)) + "]";
    EXPECT_TRUE(contains(Hashes(p)[0])) << p;
  }
  EXPECT_FALSE(contains(Hashes("[100, -60]")[0]));
  // A $geometry is no 2d query.
  BsonObj geometry = J(R"({"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates":
      [[[0, 0], [1, 0], [1, 1], [0, 0]]]}}})");
  EXPECT_FALSE(FlatQueryRanges(GeoQuery::ParseWithin(geometry.FirstElement()).value(), {}));
}

}  // namespace
}  // namespace hourglass::geo
