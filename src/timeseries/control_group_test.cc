#include "timeseries/control_group.h"

#include <gtest/gtest.h>

#include "timeseries/bucket_compression.h"

namespace hourglass::timeseries {
namespace {

using bson::BsonObj;

BsonObj J(std::string_view json) {
  auto r = bson::FromJson(json);
  EXPECT_TRUE(r.ok()) << json << ": " << r.status().ToString();
  return r.ok() ? r.value() : BsonObj();
}

std::optional<ControlGroup> Make(std::string_view spec) {
  return ControlGroup::Make(J(spec), "t", std::string("tag"));
}

// Three rows; temp holds numbers only, mixed holds a null, obj holds objects.
constexpr const char* kBucket = R"({
  "_id": {"$oid": "64b7f0000000000000000001"},
  "control": {"version": 1,
              "min": {"t": {"$date": "2023-07-19T14:00:00Z"}, "temp": 1.5, "mixed": null,
                      "obj": {"a": 1}},
              "max": {"t": {"$date": "2023-07-19T14:20:00Z"}, "temp": 9, "mixed": "z",
                      "obj": {"a": 5}}},
  "meta": {"site": "a"},
  "data": {"t": {"0": {"$date": "2023-07-19T14:20:00Z"}, "1": {"$date": "2023-07-19T14:05:00Z"},
                 "2": {"$date": "2023-07-19T14:10:00Z"}},
           "temp": {"0": 9, "1": 1.5, "2": 4},
           "mixed": {"0": null, "1": "z"},
           "obj": {"0": {"a": 1}, "2": {"a": 5}}}
})";

TEST(ControlGroupTest, AcceptsMetaKeysConstantsMinMaxAndCounts) {
  auto g = Make(R"({"_id": "$tag.site", "lo": {"$min": "$temp"}, "hi": {"$max": "$temp"},
                    "n": {"$sum": 1}, "c": {"$count": {}}})");
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(g->merge_group().BinaryEqual(
      J(R"({"_id": "$m.site", "lo": {"$min": "$a0"}, "hi": {"$max": "$a1"},
            "n": {"$sum": "$a2"}, "c": {"$sum": "$a3"}})")))
      << g->merge_group().ToJson();
  EXPECT_TRUE(Make(R"({"_id": null, "n": {"$sum": 1}})").has_value());
  EXPECT_TRUE(Make(R"({"_id": {"k": "$tag", "c": 1}, "n": {"$sum": 1}})").has_value());
  EXPECT_TRUE(Make(R"({"_id": "all", "t": {"$max": "$t"}})").has_value());
}

TEST(ControlGroupTest, AcceptsDateTruncKeysOfTheTimeField) {
  auto g = Make(R"({"_id": {"site": "$tag.site", "h": {"$dateTrunc": {"date": "$t",
                    "unit": "hour", "binSize": 2}}}, "n": {"$sum": 1}})");
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(g->time_key());
  EXPECT_TRUE(g->merge_group().BinaryEqual(J(R"({"_id": {"site": "$m.site", "h": {"$dateTrunc":
      {"date": "$tmin", "unit": "hour", "binSize": 2}}}, "n": {"$sum": "$a0"}})")))
      << g->merge_group().ToJson();
  // The bucket is one group only when the caller finds the same key at its first and last time.
  auto same = [](const BsonObj& lo, const BsonObj& hi) {
    EXPECT_TRUE(lo["tmin"].DateMillis() < hi["tmin"].DateMillis());
    return true;
  };
  auto s = g->Summarize(J(kBucket), same);
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->BinaryEqual(J(R"({"m": {"site": "a"}, "tmin": {"$date": "2023-07-19T14:05:00Z"},
                                   "a0": 3})")))
      << s->ToJson();
  EXPECT_FALSE(g->Summarize(J(kBucket), [](const BsonObj&, const BsonObj&) { return false; }));
  EXPECT_FALSE(g->Summarize(J(kBucket)));  // no way to compare keys: unpack
  EXPECT_TRUE(g->SummarizeMeasurement(J(R"({"t": {"$date": "2023-07-19T14:05:00Z"}, "x": 1})"))
                  .BinaryEqual(J(R"({"tmin": {"$date": "2023-07-19T14:05:00Z"}, "a0": 1})")));
}

TEST(ControlGroupTest, RejectsWhatControlCannotAnswer) {
  for (const char* spec : {
           R"({"_id": "$temp", "n": {"$sum": 1}})",       // key on a measurement
           R"({"_id": "$tag", "x": {"$avg": "$temp"}})",  // other accumulator
           R"({"_id": "$tag", "x": {"$min": "$a.b"}})",   // dotted field
           R"({"_id": "$tag", "x": {"$sum": 2}})",        // not a count
           R"({"_id": "$tag", "x": {"$sum": 1.0}})",      // a double count is a double
           R"({"n": {"$sum": 1}})",                       // no _id
           R"({"_id": "$$ROOT", "n": {"$sum": 1}})",
           R"({"_id": {"$dateTrunc": {"date": "$other", "unit": "hour"}}, "n": {"$sum": 1}})",
           R"({"_id": {"$dateTrunc": {"date": "$t", "unit": "$u"}}, "n": {"$sum": 1}})",
           R"({"_id": {"$dateTrunc": {"date": "$t", "unit": "hour", "x": 1}}, "n": {"$sum": 1}})",
           R"({"_id": {"$hour": "$t"}, "n": {"$sum": 1}})",
           R"({"_id": "$t", "n": {"$sum": 1}})",
       }) {
    EXPECT_FALSE(Make(spec).has_value()) << spec;
  }
}

TEST(ControlGroupTest, SummarizesFromControlAndTheTimeColumn) {
  auto g = Make(R"({"_id": "$tag", "lo": {"$min": "$temp"}, "hi": {"$max": "$temp"},
                    "first": {"$min": "$t"}, "last": {"$max": "$t"}, "n": {"$sum": 1},
                    "none": {"$max": "$absent"}})");
  ASSERT_TRUE(g.has_value());
  auto s = g->Summarize(J(kBucket));
  ASSERT_TRUE(s.has_value());
  // $min of the time field is the earliest measurement (14:05), not the rounded start (14:00).
  EXPECT_TRUE(s->BinaryEqual(J(R"({"m": {"site": "a"}, "a0": 1.5, "a1": 9,
      "a2": {"$date": "2023-07-19T14:05:00Z"}, "a3": {"$date": "2023-07-19T14:20:00Z"},
      "a4": 3})")))
      << s->ToJson();
}

TEST(ControlGroupTest, SummarizesCompressedBucketsFromCountAndTimeColumn) {
  auto g = Make(R"({"_id": "$tag", "lo": {"$min": "$temp"}, "hi": {"$max": "$temp"},
                    "first": {"$min": "$t"}, "last": {"$max": "$t"}, "n": {"$sum": 1},
                    "none": {"$max": "$absent"}})");
  ASSERT_TRUE(g.has_value());
  // Version 3 keeps kBucket's rows unsorted (14:20 first): $min of the time still finds 14:05.
  for (int version : {2, 3}) {
    auto bucket = CompressBucket(J(kBucket), "t", version);
    ASSERT_TRUE(bucket.ok()) << bucket.status().ToString();
    auto s = g->Summarize(bucket.value());
    ASSERT_TRUE(s.has_value());
    EXPECT_TRUE(s->BinaryEqual(J(R"({"m": {"site": "a"}, "a0": 1.5, "a1": 9,
        "a2": {"$date": "2023-07-19T14:05:00Z"}, "a3": {"$date": "2023-07-19T14:20:00Z"},
        "a4": 3})")))
        << s->ToJson();
  }
  // The row count is control.count: the columns are not decoded for it.
  auto count = Make(R"({"_id": "$tag", "n": {"$sum": 1}})");
  BsonObj bucket = J(R"({"_id": {"$oid": "64b7f0000000000000000001"},
      "control": {"version": 2, "min": {}, "max": {}, "count": 7}, "meta": "x",
      "data": {"t": {"$binary": {"base64": "AA==", "subType": "07"}}}})");
  auto s = count->Summarize(bucket);
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->BinaryEqual(J(R"({"m": "x", "a0": 7})"))) << s->ToJson();
}

TEST(ControlGroupTest, FallsBackWhenControlDiffersFromTheAccumulator) {
  // control.min.mixed is null, which $min skips; objects merge field by field in control.
  EXPECT_FALSE(Make(R"({"_id": "$tag", "x": {"$min": "$mixed"}})")->Summarize(J(kBucket)));
  EXPECT_FALSE(Make(R"({"_id": "$tag", "x": {"$max": "$obj"}})")->Summarize(J(kBucket)));
}

TEST(ControlGroupTest, SummarizesOneMeasurement) {
  auto g = Make(R"({"_id": "$tag", "hi": {"$max": "$temp"}, "n": {"$sum": 1}})");
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(g->SummarizeMeasurement(J(R"({"t": 1, "tag": "x", "temp": 3})"))
                  .BinaryEqual(J(R"({"m": "x", "a0": 3, "a1": 1})")));
  // A missing field stays missing (the accumulator skips it); a missing meta groups as null.
  EXPECT_TRUE(g->SummarizeMeasurement(J(R"({"t": 1})")).BinaryEqual(J(R"({"a1": 1})")));
}

}  // namespace
}  // namespace hourglass::timeseries
