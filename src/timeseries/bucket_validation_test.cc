#include "timeseries/bucket_validation.h"

#include <gtest/gtest.h>

#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "collation/collator.h"
#include "timeseries/bucket_builder.h"
#include "timeseries/bucket_catalog.h"
#include "timeseries/bucket_compression.h"

namespace hourglass::timeseries {
namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;

BsonObj J(std::string_view json) {
  auto r = bson::FromJson(json);
  EXPECT_TRUE(r.ok()) << json << ": " << r.status().ToString();
  return r.ok() ? r.value() : BsonObj();
}

TimeseriesOptions Options() {
  TimeseriesOptions o;
  o.time_field = "t";
  o.meta_field = "m";
  o.granularity = "seconds";
  o.bucket_max_span_seconds = 3600;
  return o;
}

constexpr int64_t kStart = 1689775200000;  // 2023-07-19T14:00:00Z

// Measurements of one series, out of time order, with gaps, strings, objects and arrays.
std::vector<BsonObj> Measurements() {
  std::vector<BsonObj> rows;
  for (int i = 0; i < 12; ++i) {
    BsonBuilder b;
    b.AppendDate("t", kStart + ((i * 7) % 12) * 60000 + 500);
    if (i % 3 != 0) b.AppendInt32("v", i * 5 - 20);
    if (i % 2 == 0) b.AppendDouble("d", i / 4.0);
    if (i % 4 == 1) b.AppendString("s", std::string(1, static_cast<char>('c' + i)));
    size_t o = b.OpenObject("o");
    b.AppendInt32(i % 2 ? "x" : "y", i);
    b.Close(o);
    if (i == 5) {
      size_t a = b.OpenArray("arr");
      b.AppendInt32("0", 3);
      b.AppendString("1", "z");
      b.Close(a);
    }
    rows.push_back(b.Obj());
  }
  return rows;
}

BsonObj Bucket(int version, std::span<const BsonObj> rows, int64_t start = kStart) {
  BsonBuilder meta;
  meta.AppendString("m", "sensor");
  auto made = MakeBucket(NewBucketId(start), meta.Obj().FirstElement(), rows, Options(), start,
                         version, nullptr);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return made.ok() ? made.value() : BsonObj();
}

Status Check(const BsonObj& bucket,
             const std::shared_ptr<const bson::StringComparator>& strings = nullptr) {
  return CheckBucketConsistency(bucket, Options(), strings);
}

// `doc` with `value` under top-level `top`'s field `sub` (replaced in place, or appended);
// `sub` empty: `top` itself replaced. An EOO `value` removes the field.
BsonObj With(const BsonObj& doc, std::string_view top, std::string_view sub, BsonElement value) {
  BsonBuilder b;
  bool done = false;
  for (BsonElement e : doc) {
    if (e.FieldName() != top) {
      b.AppendElement(e);
      continue;
    }
    if (sub.empty()) {
      if (!value.eoo()) b.AppendElementAs(value, top);
      continue;
    }
    size_t o = b.OpenObject(top);
    for (BsonElement f : e.Obj()) {
      if (f.FieldName() == sub) {
        if (!value.eoo()) b.AppendElementAs(value, sub);
        done = true;
      } else {
        b.AppendElement(f);
      }
    }
    if (!done && !value.eoo()) b.AppendElementAs(value, sub);
    b.Close(o);
  }
  return b.Obj();
}

BsonObj With(const BsonObj& doc, std::string_view top, std::string_view sub,
             std::string_view json_value) {
  BsonObj holder = J(std::string("{\"v\": ") + std::string(json_value) + "}");
  return With(doc, top, sub, holder.FirstElement());
}

// control.min / control.max with field `f` set to `json_value`.
BsonObj WithBound(const BsonObj& bucket, std::string_view side, std::string_view f,
                  std::string_view json_value) {
  BsonObj control = bucket["control"].Obj();
  BsonObj changed = With(control, side, f, json_value);
  BsonBuilder holder;
  holder.AppendObject("c", changed);
  return With(bucket, "control", "", holder.Obj().FirstElement());
}

TEST(BucketValidationTest, BucketsTheServerWritesAreConsistent) {
  const std::vector<BsonObj> rows = Measurements();
  for (int version : {1, 2, 3}) {
    BsonObj bucket = Bucket(version, rows);
    EXPECT_TRUE(Check(bucket).ok()) << version << ": " << Check(bucket).ToString() << "\n"
                                    << bucket.ToJson();
  }
  // One row.
  EXPECT_TRUE(Check(Bucket(2, std::span(rows).first(1))).ok());
  // Pre-1970 times: the _id holds the start's seconds rounded down, as the catalog makes it.
  std::vector<BsonObj> old;
  for (int i = 0; i < 3; ++i) {
    BsonBuilder b;
    b.AppendDate("t", -86400000 + 1500 + i);
    b.AppendInt32("v", i);
    old.push_back(b.Obj());
  }
  EXPECT_TRUE(Check(Bucket(2, old, -86400000)).ok()) << Check(Bucket(2, old, -86400000)).ToString();
}

TEST(BucketValidationTest, StartMayPrecedeTheEarliestRowButNotFollowIt) {
  // Deletes and updates keep a bucket's start when they remove its earliest rows.
  const std::vector<BsonObj> rows = Measurements();
  const int64_t start = kStart - 5 * 60000;
  EXPECT_TRUE(Check(Bucket(2, rows, start)).ok());
  BsonObj late = WithBound(Bucket(1, rows), "min", "t", R"({"$date": "2023-07-19T14:00:00.600Z"})");
  Status st = Check(late);
  EXPECT_EQ(st.code(), ErrorCode::kBadValue);
  EXPECT_NE(st.reason().find("Mismatch between time-series control and observed min or max for "
                             "field t"),
            std::string::npos)
      << st.reason();
}

TEST(BucketValidationTest, WrongBoundsAreFound) {
  const std::vector<BsonObj> rows = Measurements();
  for (int version : {1, 2}) {
    BsonObj bucket = Bucket(version, rows);
    for (auto [side, field, value] : std::vector<std::tuple<const char*, const char*, const char*>>{
             {"min", "v", "-200"},
             {"max", "v", "500"},
             {"max", "t", R"({"$date": "2023-07-19T15:00:00Z"})"},
             {"max", "s", R"("zzz")"},
             {"max", "o", R"({"x": 11})"},
             {"min", "extra", "1"},
             {"max", "arr", R"([3, "zz"])"}}) {
      Status st = Check(WithBound(bucket, side, field, value));
      EXPECT_EQ(st.code(), ErrorCode::kBadValue) << version << " " << side << "." << field;
    }
  }
}

TEST(BucketValidationTest, ObjectBoundsCompareWhateverTheirFieldOrder) {
  const std::vector<BsonObj> rows = Measurements();
  BsonObj bucket = Bucket(1, rows);
  BsonObj min_o = bucket["control"].Obj()["min"].Obj()["o"].Obj();
  ASSERT_EQ(min_o.NumFields(), 2);
  // The same subfields in the other order.
  BsonBuilder swapped;
  std::vector<BsonElement> fields;
  for (BsonElement f : min_o) fields.push_back(f);
  swapped.AppendElement(fields[1]);
  swapped.AppendElement(fields[0]);
  EXPECT_TRUE(Check(WithBound(bucket, "min", "o", swapped.Obj().ToJson())).ok());
}

TEST(BucketValidationTest, StringBoundsFollowTheCollation) {
  std::vector<BsonObj> rows;
  for (const char* s : {"b", "C", "a"}) {
    BsonBuilder b;
    b.AppendDate("t", kStart + 1000);
    b.AppendString("s", s);
    rows.push_back(b.Obj());
  }
  auto collator = collation::Collator::Make(J(R"({"locale": "en", "strength": 2})"));
  ASSERT_TRUE(collator.ok());
  BsonBuilder meta;
  meta.AppendString("m", "x");
  auto made = MakeBucket(NewBucketId(kStart), meta.Obj().FirstElement(), rows, Options(), kStart, 2,
                         collator.value());
  ASSERT_TRUE(made.ok());
  // Under the collation the maximum is "C"; in binary order it would be "b".
  EXPECT_TRUE(Check(made.value(), collator.value()).ok());
  EXPECT_EQ(Check(made.value()).code(), ErrorCode::kBadValue);
}

TEST(BucketValidationTest, CountVersionAndIdAreChecked) {
  const std::vector<BsonObj> rows = Measurements();
  BsonObj v2 = Bucket(2, rows);
  Status st = Check(With(v2, "control", "count", "13"));
  EXPECT_EQ(st.code(), ErrorCode::kBadValue);
  EXPECT_NE(st.reason().find("'control.count' field"), std::string::npos) << st.reason();
  EXPECT_EQ(Check(With(v2, "control", "count", "12.0")).code(), ErrorCode::kOK);
  EXPECT_EQ(Check(With(v2, "control", "count", R"("12")")).code(), ErrorCode::kBadValue);
  EXPECT_EQ(Check(With(v2, "control", "count", BsonElement())).code(), ErrorCode::kBadValue);

  for (const char* version : {"4", "0", "1.5", R"("2")"}) {
    st = Check(With(v2, "control", "version", version));
    EXPECT_EQ(st.code(), ErrorCode::kBadValue) << version;
    EXPECT_NE(st.reason().find("Invalid value for 'control.version'"), std::string::npos);
  }
  // A version-1 bucket claiming to be compressed, and the other way round.
  EXPECT_EQ(Check(With(Bucket(1, rows), "control", "version", "2")).code(),
            ErrorCode::kTypeMismatch);
  EXPECT_EQ(Check(With(v2, "control", "version", "1")).code(), ErrorCode::kTypeMismatch);

  BsonBuilder id;
  id.AppendObjectId("i", bson::ObjectId::FromSeconds(static_cast<uint32_t>(kStart / 1000 + 1)));
  EXPECT_EQ(Check(With(v2, "_id", "", id.Obj().FirstElement())).code(), ErrorCode::kInvalidIdField);
}

TEST(BucketValidationTest, VersionTwoMustBeSortedByTimeVersionThreeNeedNot) {
  const std::vector<BsonObj> rows = Measurements();
  BsonObj v3 = Bucket(3, rows);  // arrival order, which is not time order here
  EXPECT_TRUE(Check(v3).ok());
  Status st = Check(With(v3, "control", "version", "2"));
  EXPECT_EQ(st.code(), ErrorCode::kBadValue);
  EXPECT_NE(st.reason().find("not in ascending order"), std::string::npos) << st.reason();
}

TEST(BucketValidationTest, VersionOneRowIndexesAreChecked) {
  BsonObj good = J(R"({
    "_id": {"$oid": "64b7ec600000000000000001"},
    "control": {"version": 1, "min": {"t": {"$date": "2023-07-19T14:00:00Z"}, "v": 1},
                "max": {"t": {"$date": "2023-07-19T14:00:02Z"}, "v": 2}},
    "data": {"t": {"0": {"$date": "2023-07-19T14:00:00Z"}, "1": {"$date": "2023-07-19T14:00:02Z"}},
             "v": {"0": 1, "1": 2}}})");
  EXPECT_TRUE(Check(good).ok()) << Check(good).ToString();
  for (const char* v : {R"({"1": 1, "0": 2})", R"({"0": 1, "2": 2})", R"({"x": 1, "0": 2})",
                        R"({"0": 1, "0": 2})"}) {
    EXPECT_EQ(Check(With(good, "data", "v", v)).code(), ErrorCode::kBadValue) << v;
  }
  for (const char* t : {R"({"1": {"$date": "2023-07-19T14:00:00Z"}})",
                        R"({"0": {"$date": "2023-07-19T14:00:00Z"}, "1": 5})"}) {
    EXPECT_EQ(Check(With(good, "data", "t", t)).code(), ErrorCode::kBadValue) << t;
  }
  // The time column is required; so are the objects every check reads.
  EXPECT_FALSE(Check(With(good, "data", "t", BsonElement())).ok());
  EXPECT_FALSE(Check(With(good, "control", "min", BsonElement())).ok());
  EXPECT_FALSE(Check(With(good, "data", "", BsonElement())).ok());
  EXPECT_FALSE(Check(J("{}")).ok());
}

// A compressed bucket whose column `field` is replaced by `binary`.
BsonObj WithColumn(const BsonObj& bucket, std::string_view field, std::string_view binary) {
  BsonBuilder holder;
  holder.AppendBinData("c", 7, binary);
  return With(bucket, "data", field, holder.Obj().FirstElement());
}

TEST(BucketValidationTest, CorruptColumnsAreErrorsNeverCrashes) {
  const std::vector<BsonObj> rows = Measurements();
  BsonObj v2 = Bucket(2, rows);
  for (const char* field : {"t", "v", "s", "o"}) {
    const std::string column(v2["data"].Obj()[field].BinData());
    // Truncated anywhere.
    for (size_t cut = 0; cut < column.size(); ++cut) {
      Status st = Check(WithColumn(v2, field, column.substr(0, cut)));
      EXPECT_FALSE(st.ok()) << field << " cut at " << cut;
    }
    // Bytes flipped: whatever the answer, it is an answer.
    std::mt19937 rng(42);
    for (int round = 0; round < 300; ++round) {
      std::string bad = column;
      bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
      (void)Check(WithColumn(v2, field, bad));
    }
  }
  // A column of other rows than the time column.
  std::string t = std::string(v2["data"].Obj()["t"].BinData());
  Status st = Check(WithColumn(Bucket(2, std::span(rows).first(3)), "v",
                               std::string(v2["data"].Obj()["v"].BinData())));
  EXPECT_EQ(st.code(), ErrorCode::kBadValue) << st.ToString();
  EXPECT_NE(st.reason().find("holds"), std::string::npos) << st.reason();
  // Not a BSONColumn subtype.
  BsonBuilder holder;
  holder.AppendBinData("c", 0, t);
  EXPECT_EQ(Check(With(v2, "data", "t", holder.Obj().FirstElement())).code(),
            ErrorCode::kTypeMismatch);
}

}  // namespace
}  // namespace hourglass::timeseries
