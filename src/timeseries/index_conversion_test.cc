#include "timeseries/index_conversion.h"

#include <gtest/gtest.h>

namespace hourglass::timeseries {
namespace {

using bson::BsonObj;

BsonObj J(std::string_view json) {
  auto r = bson::FromJson(json);
  EXPECT_TRUE(r.ok()) << json << ": " << r.status().ToString();
  return r.ok() ? r.value() : BsonObj();
}

TimeseriesOptions Options(bool with_meta = true) {
  TimeseriesOptions o;
  o.time_field = "t";
  if (with_meta) o.meta_field = "m";
  return o;
}

struct KeyCase {
  const char* user;
  const char* bucket;  // nullptr: BadValue
};

TEST(IndexConversionTest, UserKeyToBucketKeyAndBack) {
  const KeyCase cases[] = {
      {R"({"t": 1})", R"({"control.min.t": 1, "control.max.t": 1})"},
      {R"({"t": -1})", R"({"control.max.t": -1, "control.min.t": -1})"},
      {R"({"m": 1, "t": 1})", R"({"meta": 1, "control.min.t": 1, "control.max.t": 1})"},
      {R"({"m.a": -1, "t": -1})", R"({"meta.a": -1, "control.max.t": -1, "control.min.t": -1})"},
      {R"({"m": "hashed"})", R"({"meta": "hashed"})"},
      {R"({"m.loc": "2dsphere"})", R"({"meta.loc": "2dsphere"})"},
      {R"({"temp": 1})", R"({"control.min.temp": 1, "control.max.temp": 1})"},
      {R"({"temp": -1, "t": 1})",
       R"({"control.max.temp": -1, "control.min.temp": -1, "control.min.t": 1,
           "control.max.t": 1})"},
      {R"({"a.b": 1})", R"({"control.min.a.b": 1, "control.max.a.b": 1})"},
      {R"({"loc": "2dsphere"})", R"({"data.loc": "2dsphere_bucket"})"},
      // "mx" and "meta" are measurements, not the meta field "m".
      {R"({"mx": 1})", R"({"control.min.mx": 1, "control.max.mx": 1})"},
      {R"({"meta": 1})", R"({"control.min.meta": 1, "control.max.meta": 1})"},
      {R"({"t": "hashed"})", nullptr},
      {R"({"t": "2dsphere"})", nullptr},
      {R"({"temp": "hashed"})", nullptr},
      {R"({"temp": "2d"})", nullptr},
      {R"({})", nullptr},
  };
  for (const auto& c : cases) {
    auto got = BucketKeyFromUserKey(J(c.user), Options());
    if (c.bucket == nullptr) {
      ASSERT_FALSE(got.ok()) << c.user;
      EXPECT_EQ(got.status().code(), ErrorCode::kBadValue) << c.user;
      continue;
    }
    ASSERT_TRUE(got.ok()) << c.user << ": " << got.status().ToString();
    EXPECT_EQ(got.value().ToJson(), J(c.bucket).ToJson()) << c.user;
    auto back = UserKeyFromBucketKey(got.value(), Options());
    ASSERT_TRUE(back.has_value()) << c.user;
    EXPECT_EQ(back->ToJson(), J(c.user).ToJson()) << c.user;
  }
}

TEST(IndexConversionTest, MetaKeyWithoutMetaFieldIsMeasurement) {
  auto got = BucketKeyFromUserKey(J(R"({"m": 1})"), Options(false));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got.value().ToJson(), J(R"({"control.min.m": 1, "control.max.m": 1})").ToJson());
  EXPECT_FALSE(UserKeyFromBucketKey(J(R"({"meta": 1})"), Options(false)).has_value());
}

TEST(IndexConversionTest, BucketKeysWithoutUserMeaning) {
  const char* cases[] = {
      R"({"_id": 1})",
      R"({"control.min.temp": 1})",                          // lone measurement bound
      R"({"control.max.temp": 1, "control.min.temp": 1})",   // ascending in the wrong order
      R"({"control.min.temp": 1, "control.max.temp": -1})",  // mismatched directions
      R"({"data.temp": 1})",
      R"({"control.max.t": 1})",
      R"({})",
  };
  for (const char* c : cases) EXPECT_FALSE(UserKeyFromBucketKey(J(c), Options()).has_value()) << c;
  // The built-in series index lists as {m: 1, t: 1}.
  auto series = UserKeyFromBucketKey(J(R"({"meta": 1, "control.min.t": 1})"), Options());
  ASSERT_TRUE(series.has_value());
  EXPECT_EQ(series->ToJson(), J(R"({"m": 1, "t": 1})").ToJson());
}

struct SpecCase {
  const char* raw;       // the spec as given (CheckUserIndexSpec)
  ErrorCode code;        // kOk: accepted
  const char* expected;  // the bucket spec, when accepted
};

TEST(IndexConversionTest, SpecRulesAndRejections) {
  const SpecCase cases[] = {
      {R"({"v": 2, "key": {"m": 1, "t": -1}, "name": "x"})", ErrorCode::kOK,
       R"({"v": 2, "key": {"meta": 1, "control.max.t": -1, "control.min.t": -1}, "name": "x"})"},
      {R"({"v": 2, "key": {"temp": 1}, "name": "temp_1"})", ErrorCode::kOK,
       R"({"v": 2, "key": {"control.min.temp": 1, "control.max.temp": 1}, "name": "temp_1",
           "originalSpec": {"v": 2, "key": {"temp": 1}, "name": "temp_1"}})"},
      {R"({"v": 2, "key": {"m": 1}, "name": "m_1", "unique": false})", ErrorCode::kOK,
       R"({"v": 2, "key": {"meta": 1}, "name": "m_1", "unique": false})"},
      {R"({"v": 2, "key": {"t": 1}, "name": "t_1", "sparse": true, "hidden": true})",
       ErrorCode::kOK,
       R"({"v": 2, "key": {"control.min.t": 1, "control.max.t": 1}, "name": "t_1",
           "sparse": true, "hidden": true})"},
      {R"({"v": 2, "key": {"t": 1}, "name": "p", "partialFilterExpression": {"m.a": 5}})",
       ErrorCode::kOK,
       R"({"v": 2, "key": {"control.min.t": 1, "control.max.t": 1}, "name": "p",
           "partialFilterExpression": {"meta.a": 5},
           "originalSpec": {"v": 2, "key": {"t": 1}, "name": "p",
                            "partialFilterExpression": {"m.a": 5}}})"},
      {R"({"key": {"m": 1}, "name": "u", "unique": true})", ErrorCode::kInvalidOptions, nullptr},
      {R"({"key": {"d": "text"}, "name": "x"})", ErrorCode::kInvalidOptions, nullptr},
      {R"({"key": {"temp": 1}, "name": "x", "sparse": true})", ErrorCode::kInvalidOptions, nullptr},
      {R"({"key": {"t": 1}, "name": "x", "partialFilterExpression": {"m": 1},
           "collation": {"locale": "simple"}})",
       ErrorCode::kIndexOptionsConflict, nullptr},
      {R"({"key": {"t": "hashed"}, "name": "x"})", ErrorCode::kBadValue, nullptr},
      {R"({"key": {"temp": "hashed"}, "name": "x"})", ErrorCode::kBadValue, nullptr},
      {R"({"key": {"temp": 1}, "name": "x", "expireAfterSeconds": 10})", ErrorCode::kInvalidOptions,
       nullptr},
      {R"({"key": {"t": 1}, "name": "x", "expireAfterSeconds": 10})", ErrorCode::kInvalidOptions,
       nullptr},
      {R"({"key": {"t": 1}, "name": "x", "expireAfterSeconds": 10,
           "partialFilterExpression": {"temp": 1}})",
       ErrorCode::kInvalidOptions, nullptr},
      // A TTL index: keyed on the bucket start alone.
      {R"({"v": 2, "key": {"t": 1}, "name": "x", "expireAfterSeconds": 10,
           "partialFilterExpression": {"m": 1}})",
       ErrorCode::kOK,
       R"({"v": 2, "key": {"control.min.t": 1}, "name": "x", "expireAfterSeconds": 10,
           "partialFilterExpression": {"meta": 1},
           "originalSpec": {"v": 2, "key": {"t": 1}, "name": "x", "expireAfterSeconds": 10,
                            "partialFilterExpression": {"m": 1}}})"},
      {R"({"key": {"t": 1}, "name": "x", "partialFilterExpression": {"temp": {"$ne": 1}}})",
       ErrorCode::kLocation5916301, nullptr},
      {R"({"v": 2, "key": {"t": 1}, "name": "x",
           "partialFilterExpression": {"temp": {"$gt": 1}, "m": "a"}})",
       ErrorCode::kOK,
       R"({"v": 2, "key": {"control.min.t": 1, "control.max.t": 1}, "name": "x",
           "partialFilterExpression": {"$and": [{"meta": "a"},
                                                {"control.max.temp": {"$_internalExprGt": 1}}]},
           "originalSpec": {"v": 2, "key": {"t": 1}, "name": "x",
                            "partialFilterExpression": {"temp": {"$gt": 1}, "m": "a"}}})"},
  };
  for (const auto& c : cases) {
    BsonObj raw = J(c.raw);
    Status st = CheckUserIndexSpec(raw, Options());
    StatusWith<BsonObj> got = st;
    if (st.ok()) got = BucketIndexSpecFromUserSpec(raw, Options());
    if (c.code != ErrorCode::kOK) {
      ASSERT_FALSE(got.ok()) << c.raw;
      EXPECT_EQ(got.status().code(), c.code) << c.raw << ": " << got.status().ToString();
      continue;
    }
    ASSERT_TRUE(got.ok()) << c.raw << ": " << got.status().ToString();
    EXPECT_EQ(got.value().ToJson(), J(c.expected).ToJson()) << c.raw;
    // listIndexes on the view shows the user's spec again.
    auto back = UserIndexSpecFromBucketSpec(got.value(), Options());
    ASSERT_TRUE(back.has_value()) << c.raw;
    EXPECT_EQ(back->ToJson(), raw.ToJson()) << c.raw;
  }
}

}  // namespace
}  // namespace hourglass::timeseries
