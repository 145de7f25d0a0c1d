#include "timeseries/bucket_filter.h"

#include <gtest/gtest.h>

#include "collation/collator.h"
#include "query/matcher.h"

namespace hourglass::timeseries {
namespace {

using bson::BsonObj;

BsonObj J(std::string_view json) {
  auto r = bson::FromJson(json);
  EXPECT_TRUE(r.ok()) << json << ": " << r.status().ToString();
  return r.ok() ? r.value() : BsonObj();
}

BucketFilterSpec Spec(std::optional<std::string> meta = "tag") {
  BucketFilterSpec s;
  s.time_field = "t";
  s.meta_field = std::move(meta);
  s.bucket_max_span_seconds = 3600;
  return s;
}

BucketFilter Make(std::string_view filter, const BucketFilterSpec& spec = Spec()) {
  auto f = BucketFilter::Make(J(filter), spec);
  EXPECT_TRUE(f.ok()) << filter << ": " << f.status().ToString();
  return std::move(f).value();
}

// A bucket whose control.min / control.max are given; the data does not matter to the filter.
BsonObj Bucket(std::string_view min, std::string_view max, std::string_view meta = "") {
  std::string json = R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1,
      "min": )" + std::string(min) +
                     R"(, "max": )" + std::string(max) + "}";
  if (!meta.empty()) json += R"(, "meta": )" + std::string(meta);
  json += R"(, "data": {}})";
  return J(json);
}

struct Case {
  const char* filter;
  const char* min;
  const char* max;
  bool may_match;
};

void RunCases(const std::vector<Case>& cases, const BucketFilterSpec& spec = Spec()) {
  for (const Case& c : cases) {
    BucketFilter f = Make(c.filter, spec);
    EXPECT_EQ(f.MayMatch(Bucket(c.min, c.max)), c.may_match)
        << "filter " << c.filter << " min " << c.min << " max " << c.max << " bucket filter "
        << f.ToBson().ToJson();
  }
}

TEST(BucketFilterTest, EqualityUsesMinAndMax) {
  RunCases({
      {R"({"temp": 5})", R"({"temp": 1})", R"({"temp": 10})", true},
      {R"({"temp": 5})", R"({"temp": 5})", R"({"temp": 5})", true},
      {R"({"temp": {"$eq": 5}})", R"({"temp": 6})", R"({"temp": 10})", false},
      {R"({"temp": 5})", R"({"temp": 1})", R"({"temp": 4})", false},
      // 5 == 5.0 == NumberLong(5)
      {R"({"temp": {"$numberLong": "5"}})", R"({"temp": 5.0})", R"({"temp": 5.0})", true},
      // the field never appears in the bucket
      {R"({"temp": 5})", R"({"hum": 1})", R"({"hum": 9})", false},
      {R"({"name": "b"})", R"({"name": "a"})", R"({"name": "c"})", true},
      {R"({"name": "d"})", R"({"name": "a"})", R"({"name": "c"})", false},
  });
}

TEST(BucketFilterTest, RangeOperatorsUseOneSide) {
  RunCases({
      {R"({"temp": {"$gt": 5}})", R"({"temp": 1})", R"({"temp": 10})", true},
      {R"({"temp": {"$gt": 5}})", R"({"temp": 1})", R"({"temp": 5})", false},
      {R"({"temp": {"$gte": 5}})", R"({"temp": 1})", R"({"temp": 5})", true},
      {R"({"temp": {"$gte": 5}})", R"({"temp": 1})", R"({"temp": 4.5})", false},
      {R"({"temp": {"$lt": 5}})", R"({"temp": 1})", R"({"temp": 10})", true},
      {R"({"temp": {"$lt": 5}})", R"({"temp": 5})", R"({"temp": 10})", false},
      {R"({"temp": {"$lte": 5}})", R"({"temp": 5})", R"({"temp": 10})", true},
      {R"({"temp": {"$lte": 5}})", R"({"temp": 6})", R"({"temp": 10})", false},
      {R"({"temp": {"$gt": 2, "$lt": 4}})", R"({"temp": 5})", R"({"temp": 10})", false},
      {R"({"temp": {"$gt": 2, "$lt": 7}})", R"({"temp": 5})", R"({"temp": 10})", true},
      {R"({"temp": {"$gt": 5}})", R"({"hum": 1})", R"({"hum": 10})", false},
      {R"({"temp": {"$lt": 5}})", R"({"hum": 1})", R"({"hum": 10})", false},
  });
}

TEST(BucketFilterTest, MixedTypeMinMaxFollowCanonicalOrder) {
  RunCases({
      // Rows {temp: 7} and {temp: "s"}: max is the string (strings order after numbers). The row
      // 7 matches {$gt: 5}; a type-bracketed comparison of "s" with 5 would wrongly skip.
      {R"({"temp": {"$gt": 5}})", R"({"temp": 7})", R"({"temp": "s"})", true},
      // Rows {temp: 3}, {temp: "hot"}: no row matches, but the loose filter may keep it.
      {R"({"temp": {"$gt": 5}})", R"({"temp": 3})", R"({"temp": "hot"})", true},
      // Rows {temp: 10}, {temp: "x"}: nothing below 5 (a string is never $lt a number).
      {R"({"temp": {"$lt": 5}})", R"({"temp": 10})", R"({"temp": "x"})", false},
      // Rows {temp: null}, {temp: 2}: min is null, which orders before numbers.
      {R"({"temp": {"$lt": 5}})", R"({"temp": null})", R"({"temp": 2})", true},
      {R"({"temp": {"$gt": 8}})", R"({"temp": null})", R"({"temp": 7})", false},
      // Strings with numeric min: {$lt: "a"} may match a string row.
      {R"({"temp": {"$lt": "b"}})", R"({"temp": 10})", R"({"temp": "a"})", true},
      // Dates order after strings and numbers.
      {R"({"temp": {"$gt": 100}})", R"({"temp": 1})",
       R"({"temp": {"$date": {"$numberLong": "0"}}})", true},
      {R"({"temp": {"$eq": "q"}})", R"({"temp": 1})", R"({"temp": 50})", false},
  });
}

TEST(BucketFilterTest, InIsADisjunctionOfEqualities) {
  RunCases({
      {R"({"temp": {"$in": [5, 50]}})", R"({"temp": 1})", R"({"temp": 10})", true},
      {R"({"temp": {"$in": [5, 50]}})", R"({"temp": 20})", R"({"temp": 30})", false},
      {R"({"temp": {"$in": [5, 25]}})", R"({"temp": 20})", R"({"temp": 30})", true},
      // $in: [] matches nothing.
      {R"({"temp": {"$in": []}})", R"({"temp": 20})", R"({"temp": 30})", false},
      // null in $in matches rows missing the field: not pushed.
      {R"({"temp": {"$in": [5, null]}})", R"({"temp": 20})", R"({"temp": 30})", true},
      {R"({"temp": {"$in": [5, null]}})", R"({"hum": 1})", R"({"hum": 2})", true},
      // a regex in $in: not pushed.
      {R"({"temp": {"$in": [5, {"$regex": "a"}]}})", R"({"temp": 20})", R"({"temp": 30})", true},
  });
}

TEST(BucketFilterTest, NullEqualityIsNotPushedDown) {
  RunCases({
      // {temp: null} matches every row that lacks temp.
      {R"({"temp": null})", R"({"hum": 1})", R"({"hum": 2})", true},
      {R"({"temp": {"$eq": null}})", R"({"hum": 1})", R"({"hum": 2})", true},
      {R"({"temp": {"$gte": null}})", R"({"hum": 1})", R"({"hum": 2})", true},
      {R"({"temp": {"$lte": null}})", R"({"temp": 1})", R"({"temp": 2})", true},
  });
}

TEST(BucketFilterTest, UnsupportedOperatorsKeepEveryBucket) {
  const char* min = R"({"temp": 1})";
  const char* max = R"({"temp": 2})";
  const char* missing = R"({"hum": 1})";
  RunCases({
      {R"({"temp": {"$ne": 1}})", min, max, true},
      {R"({"temp": {"$nin": [1, 2]}})", min, max, true},
      {R"({"temp": {"$not": {"$gt": 0}}})", min, max, true},
      {R"({"$nor": [{"temp": {"$gt": 0}}]})", min, max, true},
      {R"({"temp": {"$exists": false}})", min, max, true},
      {R"({"temp": {"$type": "string"}})", missing, missing, true},
      {R"({"temp": {"$size": 2}})", missing, missing, true},
      {R"({"temp": {"$elemMatch": {"$gt": 50}}})", min, max, true},
      {R"({"temp": {"$regex": "^a"}})", min, max, true},
      {R"({"temp": {"$mod": [4, 3]}})", min, max, true},
      // object and array operands
      {R"({"loc": {"x": 1}})", missing, missing, true},
      {R"({"temp": [1, 2]})", R"({"temp": 5})", R"({"temp": 6})", true},
      {R"({"temp": {"$gt": [1]}})", R"({"temp": 5})", R"({"temp": 6})", true},
      {R"({"temp": {"$gt": {"$minKey": 1}}})", missing, missing, true},
  });
}

TEST(BucketFilterTest, ExistsTrueNeedsTheFieldInTheBucket) {
  RunCases({
      {R"({"temp": {"$exists": true}})", R"({"temp": 1})", R"({"temp": 2})", true},
      {R"({"temp": {"$exists": true}})", R"({"hum": 1})", R"({"hum": 2})", false},
  });
}

TEST(BucketFilterTest, AndPushesEachChildIndependently) {
  RunCases({
      {R"({"$and": [{"temp": {"$gt": 5}}, {"name": {"$regex": "x"}}]})", R"({"temp": 1})",
       R"({"temp": 4})", false},
      {R"({"$and": [{"temp": {"$gt": 5}}, {"name": {"$regex": "x"}}]})", R"({"temp": 1})",
       R"({"temp": 6})", true},
      {R"({"temp": {"$gt": 5}, "hum": {"$lt": 0}})", R"({"temp": 1, "hum": 1})",
       R"({"temp": 9, "hum": 3})", false},
  });
}

TEST(BucketFilterTest, OrIsPushedOnlyWhenEveryChildIs) {
  const char* min = R"({"temp": 1, "hum": 5})";
  const char* max = R"({"temp": 10, "hum": 9})";
  RunCases({
      {R"({"$or": [{"temp": {"$gt": 100}}, {"hum": {"$lt": 0}}]})", min, max, false},
      {R"({"$or": [{"temp": {"$gt": 100}}, {"hum": {"$lt": 6}}]})", min, max, true},
      {R"({"$or": [{"temp": {"$gt": 100}}, {"hum": {"$ne": 3}}]})", min, max, true},
      // a partially pushable child still bounds that child
      {R"({"$or": [{"temp": {"$gt": 100}, "x": {"$ne": 1}}, {"hum": 50}]})", min, max, false},
  });
}

TEST(BucketFilterTest, NestedPathsLookInsideControlObjects) {
  RunCases({
      {R"({"loc.x": {"$gt": 5}})", R"({"loc": {"x": 1, "y": 1}})", R"({"loc": {"x": 10, "y": 2}})",
       true},
      {R"({"loc.x": {"$gt": 5}})", R"({"loc": {"x": 1, "y": 1}})", R"({"loc": {"x": 3, "y": 2}})",
       false},
      {R"({"loc.z": 1})", R"({"loc": {"x": 1}})", R"({"loc": {"x": 3}})", false},
      // f.a on rows where f is a scalar never exists
      {R"({"loc.x": 1})", R"({"loc": 0})", R"({"loc": 9})", false},
      // arrays: {loc: [{x: 1}, {x: 10}]} matches loc.x > 5 through the array
      {R"({"loc.x": {"$gt": 5}})", R"({"loc": [{"x": 1}, {"x": 1}]})",
       R"({"loc": [{"x": 1}, {"x": 1}]})", true},
      // rows whose temp is an array [1, 10]: {temp: {$lt: 5}} matches element 1
      {R"({"temp": {"$lt": 5}})", R"({"temp": [1, 10]})", R"({"temp": [1, 10]})", true},
  });
}

TEST(BucketFilterTest, TimePredicatesUseControlTimeBounds) {
  // Bucket starting (rounded) at 1000 s, last measurement at 1500 s.
  const char* min = R"({"t": {"$date": {"$numberLong": "1000000"}}})";
  const char* max = R"({"t": {"$date": {"$numberLong": "1500000"}}})";
  RunCases({
      {R"({"t": {"$gt": {"$date": {"$numberLong": "1500000"}}}})", min, max, false},
      {R"({"t": {"$gte": {"$date": {"$numberLong": "1500000"}}}})", min, max, true},
      {R"({"t": {"$lt": {"$date": {"$numberLong": "1000000"}}}})", min, max, false},
      {R"({"t": {"$lte": {"$date": {"$numberLong": "1000000"}}}})", min, max, true},
      {R"({"t": {"$date": {"$numberLong": "1200000"}}})", min, max, true},
      {R"({"t": {"$date": {"$numberLong": "1600000"}}})", min, max, false},
      // the time field holds dates only: a number never matches
      {R"({"t": {"$lt": 5}})", min, max, false},
  });
}

TEST(BucketFilterTest, TimeBoundsInMillis) {
  BucketFilter f = Make(R"({"t": {"$gt": {"$date": {"$numberLong": "1000"}},
                                  "$lte": {"$date": {"$numberLong": "9000"}}}, "temp": 1})");
  EXPECT_EQ(f.min_time_millis(), 1001);
  EXPECT_EQ(f.max_time_millis(), 9000);

  f = Make(R"({"$and": [{"t": {"$gte": {"$date": {"$numberLong": "1000"}}}},
                       {"t": {"$gte": {"$date": {"$numberLong": "3000"}}}},
                       {"t": {"$lt": {"$date": {"$numberLong": "8000"}}}}]})");
  EXPECT_EQ(f.min_time_millis(), 3000);
  EXPECT_EQ(f.max_time_millis(), 7999);

  f = Make(R"({"t": {"$in": [{"$date": {"$numberLong": "7000"}},
                             {"$date": {"$numberLong": "2000"}}]}})");
  EXPECT_EQ(f.min_time_millis(), 2000);
  EXPECT_EQ(f.max_time_millis(), 7000);

  f = Make(R"({"t": {"$date": {"$numberLong": "4000"}}})");
  EXPECT_EQ(f.min_time_millis(), 4000);
  EXPECT_EQ(f.max_time_millis(), 4000);

  // An $or does not bound time; neither do predicates on other fields.
  f = Make(R"({"$or": [{"t": {"$gt": {"$date": {"$numberLong": "1000"}}}}, {"temp": 1}]})");
  EXPECT_FALSE(f.min_time_millis().has_value());
  EXPECT_FALSE(f.max_time_millis().has_value());
  f = Make(R"({"temp": {"$gt": {"$date": {"$numberLong": "1000"}}}})");
  EXPECT_FALSE(f.min_time_millis().has_value());
}

TEST(BucketFilterTest, ExtendedRangeDates) {
  // 1901-01-01 and 2200-01-01: outside what a 32-bit ObjectId timestamp can hold.
  const int64_t k1901 = -2177452800000;
  const int64_t k2200 = 7258118400000;
  BucketFilter f = Make(R"({"t": {"$gte": {"$date": {"$numberLong": "-2177452800000"}},
                                  "$lt": {"$date": {"$numberLong": "7258118400000"}}}})");
  EXPECT_EQ(f.min_time_millis(), k1901);
  EXPECT_EQ(f.max_time_millis(), k2200 - 1);
  // A bucket in 1900 ends before the range; one in 1950 is inside; one in 2200 after.
  EXPECT_FALSE(f.MayMatch(Bucket(R"({"t": {"$date": {"$numberLong": "-2208988800000"}}})",
                                 R"({"t": {"$date": {"$numberLong": "-2208985200000"}}})")));
  EXPECT_TRUE(f.MayMatch(Bucket(R"({"t": {"$date": {"$numberLong": "-631152000000"}}})",
                                R"({"t": {"$date": {"$numberLong": "-631151000000"}}})")));
  EXPECT_FALSE(f.MayMatch(Bucket(R"({"t": {"$date": {"$numberLong": "7258118400000"}}})",
                                 R"({"t": {"$date": {"$numberLong": "7258118401000"}}})")));
}

TEST(BucketFilterTest, MetaPredicatesAreRenamedAndExact) {
  BucketFilter f = Make(R"({"tag": "a"})");
  EXPECT_TRUE(f.meta_only());
  EXPECT_TRUE(f.meta_filter().BinaryEqual(J(R"({"meta": "a"})"))) << f.meta_filter().ToJson();
  EXPECT_TRUE(f.MayMatch(Bucket("{}", "{}", R"("a")")));
  EXPECT_FALSE(f.MayMatch(Bucket("{}", "{}", R"("b")")));
  EXPECT_FALSE(f.MayMatch(Bucket("{}", "{}")));

  f = Make(R"({"tag.site": {"$in": ["x", "y"]}, "temp": {"$gt": 5}, "tag.rack": {"$ne": 3}})");
  EXPECT_FALSE(f.meta_only());
  EXPECT_TRUE(f.meta_filter().BinaryEqual(
      J(R"({"meta.site": {"$in": ["x", "y"]}, "meta.rack": {"$ne": 3}})")))
      << f.meta_filter().ToJson();
  EXPECT_TRUE(f.MayMatch(Bucket(R"({"temp": 1})", R"({"temp": 9})", R"({"site": "x"})")));
  EXPECT_FALSE(f.MayMatch(Bucket(R"({"temp": 1})", R"({"temp": 9})", R"({"site": "z"})")));
  EXPECT_FALSE(
      f.MayMatch(Bucket(R"({"temp": 1})", R"({"temp": 9})", R"({"site": "x", "rack": 3})")));
  EXPECT_FALSE(f.MayMatch(Bucket(R"({"temp": 1})", R"({"temp": 4})", R"({"site": "x"})")));

  // Null and $exists on the meta field are exact: a bucket without meta holds measurements
  // without the meta field.
  f = Make(R"({"tag": null})");
  EXPECT_TRUE(f.MayMatch(Bucket("{}", "{}")));
  EXPECT_TRUE(f.MayMatch(Bucket("{}", "{}", "null")));
  EXPECT_FALSE(f.MayMatch(Bucket("{}", "{}", "1")));
  f = Make(R"({"tag": {"$exists": false}})");
  EXPECT_TRUE(f.meta_only());
  EXPECT_TRUE(f.MayMatch(Bucket("{}", "{}")));
  EXPECT_FALSE(f.MayMatch(Bucket("{}", "{}", "null")));

  // Paths inside $elemMatch are relative and keep their names.
  f = Make(R"({"tag": {"$elemMatch": {"tag": 1}}})");
  EXPECT_TRUE(f.meta_filter().BinaryEqual(J(R"({"meta": {"$elemMatch": {"tag": 1}}})")))
      << f.meta_filter().ToJson();
}

TEST(BucketFilterTest, MetaOnlyDetection) {
  EXPECT_TRUE(Make(R"({})").meta_only());
  EXPECT_TRUE(Make(R"({"tag": 1, "tag.a": {"$gt": 2}})").meta_only());
  EXPECT_TRUE(Make(R"({"$or": [{"tag": 1}, {"tag.b": 2}], "$comment": "x"})").meta_only());
  EXPECT_TRUE(Make(R"({"$and": [{"tag": 1}, {"$nor": [{"tag.b": 2}]}]})").meta_only());
  EXPECT_FALSE(Make(R"({"tag": 1, "temp": 2})").meta_only());
  EXPECT_FALSE(Make(R"({"$or": [{"tag": 1}, {"temp": 2}]})").meta_only());
  EXPECT_FALSE(Make(R"({"tags": 1})").meta_only());  // a prefix of the name is not the field
  EXPECT_FALSE(Make(R"({"t": {"$gt": {"$date": {"$numberLong": "0"}}}})").meta_only());
  EXPECT_FALSE(Make(R"({"tag": 1})", Spec(std::nullopt)).meta_only());

  BucketFilter f = Make(R"({"$or": [{"tag": "a"}, {"tag": "b"}]})");
  EXPECT_TRUE(f.meta_filter().BinaryEqual(J(R"({"$or": [{"meta": "a"}, {"meta": "b"}]})")))
      << f.meta_filter().ToJson();
  f = Make(R"({"$and": [{"tag": "a"}, {"tag": {"$ne": "b"}}]})");
  auto m = query::Matcher::Parse(f.meta_filter());
  ASSERT_TRUE(m.ok()) << f.meta_filter().ToJson();
  EXPECT_TRUE(m.value().Matches(J(R"({"meta": "a"})")));
  EXPECT_FALSE(m.value().Matches(J(R"({"meta": "c"})")));
}

TEST(BucketFilterTest, MetaInsideOrWithMeasurementChildren) {
  BucketFilter f = Make(R"({"$or": [{"tag": "a"}, {"temp": {"$gt": 50}}]})");
  EXPECT_FALSE(f.meta_only());
  EXPECT_TRUE(f.meta_filter().IsEmpty());
  EXPECT_TRUE(f.MayMatch(Bucket(R"({"temp": 1})", R"({"temp": 10})", R"("a")")));
  EXPECT_FALSE(f.MayMatch(Bucket(R"({"temp": 1})", R"({"temp": 10})", R"("b")")));
  EXPECT_TRUE(f.MayMatch(Bucket(R"({"temp": 1})", R"({"temp": 60})", R"("b")")));
  // An unpushable child makes the whole $or unpushable.
  f = Make(R"({"$or": [{"tag": "a"}, {"temp": {"$ne": 50}}]})");
  EXPECT_TRUE(f.MayMatch(Bucket(R"({"temp": 1})", R"({"temp": 10})", R"("b")")));
  // A child mixing meta and measurement predicates.
  f = Make(R"({"$or": [{"tag": "a", "temp": {"$gt": 5}}, {"hum": 1}]})");
  EXPECT_TRUE(
      f.MayMatch(Bucket(R"({"temp": 1, "hum": 2})", R"({"temp": 10, "hum": 3})", R"("a")")));
  EXPECT_FALSE(
      f.MayMatch(Bucket(R"({"temp": 1, "hum": 2})", R"({"temp": 10, "hum": 3})", R"("b")")));
  EXPECT_FALSE(
      f.MayMatch(Bucket(R"({"temp": 1, "hum": 2})", R"({"temp": 4, "hum": 3})", R"("a")")));
}

TEST(BucketFilterTest, MetaFieldNamedMeta) {
  BucketFilter f = Make(R"({"meta": 1, "meta.x": {"$gt": 2}})", Spec("meta"));
  EXPECT_TRUE(f.meta_only());
  EXPECT_TRUE(f.meta_filter().BinaryEqual(J(R"({"meta": 1, "meta.x": {"$gt": 2}})")));
  f = Make(R"({"meta.x": 3})", Spec("meta"));
  EXPECT_TRUE(f.MayMatch(Bucket("{}", "{}", R"({"x": 3})")));
  EXPECT_FALSE(f.MayMatch(Bucket("{}", "{}", R"({"x": 4})")));
}

TEST(BucketFilterTest, FieldLiterallyNamedMetaIsAMeasurementField) {
  // The metaField is "tag"; "meta" is an ordinary measurement field stored in data/control.
  BucketFilter f = Make(R"({"meta": 5})");
  EXPECT_FALSE(f.meta_only());
  EXPECT_TRUE(f.meta_filter().IsEmpty());
  // The bucket's own meta is 5 but no row has a field "meta".
  EXPECT_FALSE(f.MayMatch(Bucket(R"({"temp": 1})", R"({"temp": 2})", "5")));
  EXPECT_TRUE(f.MayMatch(Bucket(R"({"meta": 1})", R"({"meta": 9})", "0")));
  // Without any metaField the same holds.
  f = Make(R"({"meta": 5})", Spec(std::nullopt));
  EXPECT_FALSE(f.MayMatch(Bucket(R"({"temp": 1})", R"({"temp": 2})", "5")));
}

TEST(BucketFilterTest, MixedSchemaDisablesMeasurementPruningOnly) {
  BucketFilterSpec spec = Spec();
  spec.assume_no_mixed_schema = false;
  RunCases({{R"({"temp": {"$gt": 5}})", R"({"temp": 1})", R"({"temp": 4})", true},
            {R"({"t": {"$gt": {"$date": {"$numberLong": "5000"}}}})",
             R"({"t": {"$date": {"$numberLong": "0"}}})",
             R"({"t": {"$date": {"$numberLong": "10"}}})", false}},
           spec);
  BucketFilter f = Make(R"({"tag": 1, "temp": {"$gt": 5}})", spec);
  EXPECT_FALSE(f.MayMatch(Bucket(R"({"temp": 1})", R"({"temp": 9})", "2")));
}

TEST(BucketFilterTest, StringsReachControlOnlyUnderItsCollation) {
  auto numeric = collation::Collator::Make(J(R"({"locale": "en", "numericOrdering": true})"));
  auto lexical = collation::Collator::Make(J(R"({"locale": "en", "strength": 1})"));
  ASSERT_TRUE(numeric.ok() && lexical.ok());
  // Control computed under numeric ordering: "10" is the max of {"1", "5", "10"}.
  BucketFilterSpec same = Spec();
  same.expr_ctx.collator = numeric.value();
  same.control_collator = numeric.value();
  RunCases({{R"({"v": {"$gt": "4"}})", R"({"v": "1"})", R"({"v": "10"})", true},
            {R"({"v": {"$gt": "11"}})", R"({"v": "1"})", R"({"v": "10"})", false},
            {R"({"v": "05"})", R"({"v": "1"})", R"({"v": "10"})", true}},
           same);
  // A read under another collation (or none) cannot trust those bounds with a string, and
  // keeps the bucket; numbers compare alike under every collation.
  BucketFilterSpec other = same;
  other.expr_ctx.collator = lexical.value();
  BucketFilterSpec simple = same;
  simple.expr_ctx.collator = nullptr;
  for (const BucketFilterSpec& spec : {other, simple}) {
    RunCases({{R"({"v": {"$gt": "11"}})", R"({"v": "1"})", R"({"v": "10"})", true},
              {R"({"v": {"$in": ["99", 3]}})", R"({"v": "1"})", R"({"v": "10"})", true},
              {R"({"n": {"$gt": 11}})", R"({"n": 1})", R"({"n": 10})", false}},
             spec);
    EXPECT_TRUE(Make(R"({"v": {"$gt": "11"}})", spec).ToBson().IsEmpty());
  }
  // The meta is tested exactly, under the read's collation.
  BucketFilter f = Make(R"({"tag": "A"})", other);
  EXPECT_TRUE(f.MayMatch(Bucket(R"({"v": 1})", R"({"v": 1})", R"("a")")));
  EXPECT_FALSE(f.MayMatch(Bucket(R"({"v": 1})", R"({"v": 1})", R"("b")")));
}

TEST(BucketFilterTest, BucketsWithoutControlBoundsAreKept) {
  BucketFilter f = Make(R"({"temp": {"$gt": 5}})");
  EXPECT_TRUE(f.MayMatch(J(R"({"_id": 1, "data": {}})")));
}

TEST(BucketFilterTest, InvalidFilterFailsLikeTheMatcher) {
  auto f = BucketFilter::Make(J(R"({"temp": {"$foo": 1}})"), Spec());
  EXPECT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), ErrorCode::kBadValue);
  f = BucketFilter::Make(J(R"({"$or": []})"), Spec());
  EXPECT_EQ(f.status().code(), ErrorCode::kBadValue);
}

TEST(BucketFilterTest, ExplainShape) {
  EXPECT_TRUE(Make("{}").ToBson().IsEmpty());
  EXPECT_TRUE(Make(R"({"temp": {"$ne": 1}})").ToBson().IsEmpty());
  BucketFilter f = Make(R"({"temp": {"$gt": 5}, "tag": "a"})");
  EXPECT_TRUE(f.ToBson().BinaryEqual(J(R"({"$and": [{"meta": "a"},
      {"control.max.temp": {"$_internalExprGt": 5}}]})")))
      << f.ToBson().ToJson();
  f = Make(R"({"temp": 5})");
  EXPECT_TRUE(f.ToBson().BinaryEqual(J(R"({"$and": [
      {"control.min.temp": {"$_internalExprLte": 5}},
      {"control.max.temp": {"$_internalExprGte": 5}}]})")))
      << f.ToBson().ToJson();
  f = Make(R"({"$or": [{"temp": {"$lt": 1}}, {"hum": {"$gte": 2}}]})");
  EXPECT_TRUE(f.ToBson().BinaryEqual(J(R"({"$or": [
      {"control.min.temp": {"$_internalExprLt": 1}},
      {"control.max.hum": {"$_internalExprGte": 2}}]})")))
      << f.ToBson().ToJson();
}

}  // namespace
}  // namespace hourglass::timeseries

namespace hourglass::timeseries {
namespace {

TEST(BucketFilterTest, MatchesWholeBucketOnlyForTimeRangesCoveringIt) {
  const char* kMin = R"({"t": {"$date": "2024-01-01T10:00:00Z"}, "v": 1})";
  const char* kMax = R"({"t": {"$date": "2024-01-01T10:40:00Z"}, "v": 9})";
  struct WholeCase {
    const char* filter;
    bool whole;
    bool has_whole_filter;  // the filter has a whole-bucket form (time ranges only)
  };
  for (const WholeCase& c : std::vector<WholeCase>{
           {R"({})", true, false},
           {R"({"tag": "a"})", true, false},  // meta-only: decided on the bucket
           {R"({"t": {"$gte": {"$date": "2024-01-01T10:00:00Z"}}})", true, true},
           {R"({"t": {"$gt": {"$date": "2024-01-01T09:00:00Z"},
                      "$lte": {"$date": "2024-01-01T10:40:00Z"}}, "tag": "a"})",
            true, true},
           {R"({"t": {"$gt": {"$date": "2024-01-01T10:00:00Z"}}})", false,
            true},  // start is rounded
           {R"({"t": {"$lt": {"$date": "2024-01-01T10:40:00Z"}}})", false, true},
           {R"({"t": {"$gte": {"$date": "2024-01-01T09:00:00Z"}}, "v": {"$gt": 0}})", false, false},
           {R"({"t": {"$in": [{"$date": "2024-01-01T10:00:00Z"}]}})", false, false},
           {R"({"t": {"$ne": {"$date": "2024-01-01T11:00:00Z"}}})", false, false},
       }) {
    BucketFilter f = Make(c.filter);
    EXPECT_EQ(f.MatchesWholeBucket(Bucket(kMin, kMax, R"("a")")), c.whole) << c.filter;
    EXPECT_EQ(!f.WholeBucketFilterToBson().IsEmpty(), c.has_whole_filter) << c.filter;
  }
}

}  // namespace
}  // namespace hourglass::timeseries
