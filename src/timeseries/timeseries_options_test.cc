#include "timeseries/timeseries_options.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace hourglass::timeseries {
namespace {

using bson::BsonObj;

constexpr std::string_view kNs = "test.ts";

BsonObj Doc(std::string_view json) {
  auto sw = bson::FromJson(json);
  EXPECT_TRUE(sw.ok()) << sw.status().ToString() << " in " << json;
  return sw.ok() ? sw.value() : BsonObj();
}

// Parses create's `timeseries: <json>`.
StatusWith<TimeseriesOptions> Parse(std::string_view value_json) {
  BsonObj cmd = Doc("{\"timeseries\": " + std::string(value_json) + "}");
  return ParseTimeseriesOptions(cmd["timeseries"], kNs);
}

TimeseriesOptions ParseOk(std::string_view value_json) {
  auto sw = Parse(value_json);
  EXPECT_TRUE(sw.ok()) << sw.status().ToString() << " for " << value_json;
  return sw.ok() ? sw.value() : TimeseriesOptions{};
}

StatusWith<TimeseriesOptions> CollMod(const TimeseriesOptions& current,
                                      std::string_view value_json) {
  BsonObj cmd = Doc("{\"timeseries\": " + std::string(value_json) + "}");
  return ApplyCollModTimeseries(current, cmd["timeseries"]);
}

// Checks code and reason of a failed Status or StatusWith.
void ExpectError(const Status& st, ErrorCode code, std::string_view reason) {
  ASSERT_FALSE(st.ok()) << "expected " << static_cast<int>(code) << " " << reason;
  EXPECT_EQ(st.code(), code) << st.ToString();
  EXPECT_EQ(st.reason(), reason);
}
template <typename T>
void ExpectError(const StatusWith<T>& sw, ErrorCode code, std::string_view reason) {
  ExpectError(sw.status(), code, reason);
}

void ExpectBson(const BsonObj& actual, std::string_view expected_json) {
  BsonObj expected = Doc(expected_json);
  EXPECT_TRUE(actual.BinaryEqual(expected))
      << "actual " << actual.ToCanonicalJson() << "\nexpected " << expected.ToCanonicalJson();
}

// ---------------------------------------------------------------------------------------------
// create: defaults, presets, custom bucketing (spec 1.2, 2.2)

TEST(TimeseriesOptionsTest, DefaultsAreMaterialized) {
  TimeseriesOptions o = ParseOk(R"({"timeField": "t"})");
  EXPECT_EQ(o.time_field, "t");
  EXPECT_FALSE(o.meta_field);
  EXPECT_EQ(o.granularity, "seconds");
  EXPECT_EQ(o.bucket_max_span_seconds, 3600);
  EXPECT_FALSE(o.bucket_rounding_seconds);
  EXPECT_EQ(o.RoundingSeconds(), 60);
  ExpectBson(o.ToBson(),
             R"({"timeField": "t", "granularity": "seconds", "bucketMaxSpanSeconds": 3600})");
}

TEST(TimeseriesOptionsTest, EachPresetStoresGranularityAndSpanOnly) {
  struct Case {
    const char* granularity;
    int64_t span;
    int64_t rounding;
  } cases[] = {{"seconds", 3600, 60}, {"minutes", 86400, 3600}, {"hours", 2592000, 86400}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.granularity);
    TimeseriesOptions o = ParseOk(std::string(R"({"timeField": "time", "metaField": "m", )") +
                                  R"("granularity": ")" + c.granularity + "\"}");
    EXPECT_EQ(o.granularity, c.granularity);
    EXPECT_EQ(o.bucket_max_span_seconds, c.span);
    EXPECT_FALSE(o.bucket_rounding_seconds);
    EXPECT_EQ(o.RoundingSeconds(), c.rounding);
    EXPECT_EQ(PresetMaxSpanSeconds(c.granularity), c.span);
    EXPECT_EQ(PresetRoundingSeconds(c.granularity), c.rounding);
    ExpectBson(o.ToBson(), std::string(R"({"timeField": "time", "metaField": "m", )") +
                               R"("granularity": ")" + c.granularity +
                               R"(", "bucketMaxSpanSeconds": )" + std::to_string(c.span) + "}");
  }
}

TEST(TimeseriesOptionsTest, GranularityAcceptsItsOwnPresetSpan) {
  for (auto [g, span] : {std::pair{"seconds", 3600}, {"minutes", 86400}, {"hours", 2592000}}) {
    SCOPED_TRACE(g);
    TimeseriesOptions o = ParseOk(std::string(R"({"timeField": "t", "granularity": ")") + g +
                                  R"(", "bucketMaxSpanSeconds": )" + std::to_string(span) + "}");
    EXPECT_EQ(o.granularity, g);
    EXPECT_EQ(o.bucket_max_span_seconds, span);
  }
}

TEST(TimeseriesOptionsTest, GranularityRejectsAnotherSpan) {
  ExpectError(Parse(R"({"timeField": "t", "granularity": "seconds", "bucketMaxSpanSeconds": 60})"),
              ErrorCode::kInvalidOptions,
              "Time-series 'bucketMaxSpanSeconds' cannot be set to a value other than the default "
              "of 3600 for the provided granularity");
  ExpectError(
      Parse(R"({"timeField": "t", "granularity": "minutes", "bucketMaxSpanSeconds": 3600})"),
      ErrorCode::kInvalidOptions,
      "Time-series 'bucketMaxSpanSeconds' cannot be set to a value other than the default of "
      "86400 for the provided granularity");
  ExpectError(Parse(R"({"timeField": "t", "granularity": "hours", "bucketMaxSpanSeconds": 86400})"),
              ErrorCode::kInvalidOptions,
              "Time-series 'bucketMaxSpanSeconds' cannot be set to a value other than the default "
              "of 2592000 for the provided granularity");
}

TEST(TimeseriesOptionsTest, GranularityWithRoundingIsRefusedEvenAtThePreset) {
  // MongoDB 8.0 refuses any bucketRoundingSeconds next to a granularity (7.0 let the preset by).
  for (const char* spec :
       {R"({"timeField": "t", "granularity": "minutes", "bucketRoundingSeconds": 3600})",
        R"({"timeField": "t", "granularity": "seconds", "bucketRoundingSeconds": 3600})",
        R"({"timeField": "t", "granularity": "hours", "bucketRoundingSeconds": 86400,
            "bucketMaxSpanSeconds": 2592000})"}) {
    ExpectError(
        Parse(spec), ErrorCode::kInvalidOptions,
        "Time-series 'bucketRoundingSeconds' cannot be set alongside the granularity parameter");
  }
}

TEST(TimeseriesOptionsTest, CustomEqualSpansStoreNoGranularity) {
  TimeseriesOptions o =
      ParseOk(R"({"timeField": "t", "bucketMaxSpanSeconds": 100, "bucketRoundingSeconds": 100})");
  EXPECT_FALSE(o.granularity);
  EXPECT_EQ(o.bucket_max_span_seconds, 100);
  EXPECT_EQ(o.bucket_rounding_seconds, 100);
  EXPECT_EQ(o.RoundingSeconds(), 100);
  ExpectBson(o.ToBson(),
             R"({"timeField": "t", "bucketRoundingSeconds": 100, "bucketMaxSpanSeconds": 100})");
}

TEST(TimeseriesOptionsTest, CustomSpansAcceptEveryNumericType) {
  // safeInt: int, long, double and decimal.
  for (const char* v : {R"({"$numberLong": "7200"})", "7200.0", R"({"$numberDecimal": "7200"})"}) {
    SCOPED_TRACE(v);
    TimeseriesOptions o = ParseOk(std::string(R"({"timeField": "t", "bucketMaxSpanSeconds": )") +
                                  v + R"(, "bucketRoundingSeconds": 7200})");
    EXPECT_EQ(o.bucket_max_span_seconds, 7200);
    ExpectBson(o.ToBson(), R"({"timeField": "t", "bucketRoundingSeconds": 7200,
                               "bucketMaxSpanSeconds": 7200})");
  }
}

TEST(TimeseriesOptionsTest, CustomSpansMustBeEqual) {
  const char* kMsg = "Time-series 'bucketRoundingSeconds' must be equal to 'bucketMaxSpanSeconds'";
  ExpectError(
      Parse(R"({"timeField": "t", "bucketMaxSpanSeconds": 100, "bucketRoundingSeconds": 50})"),
      ErrorCode::kInvalidOptions, kMsg);
  // Only one of them fails the same test.
  ExpectError(Parse(R"({"timeField": "t", "bucketMaxSpanSeconds": 100})"),
              ErrorCode::kInvalidOptions, kMsg);
  ExpectError(Parse(R"({"timeField": "t", "bucketRoundingSeconds": 100})"),
              ErrorCode::kInvalidOptions, kMsg);
}

TEST(TimeseriesOptionsTest, CustomSpanRangeIsOneSecondToOneYear) {
  EXPECT_EQ(ParseOk(R"({"timeField": "t", "bucketMaxSpanSeconds": 1, "bucketRoundingSeconds": 1})")
                .bucket_max_span_seconds,
            1);
  EXPECT_EQ(ParseOk(R"({"timeField": "t", "bucketMaxSpanSeconds": 31536000,
                        "bucketRoundingSeconds": 31536000})")
                .bucket_max_span_seconds,
            31536000);
  ExpectError(
      Parse(R"({"timeField": "t", "bucketMaxSpanSeconds": 0, "bucketRoundingSeconds": 0})"),
      ErrorCode::kLocation51024,
      "BSON field 'create.timeseries.bucketMaxSpanSeconds' value must be >= 1, actual value '0'");
  ExpectError(
      Parse(R"({"timeField": "t", "bucketRoundingSeconds": -5, "bucketMaxSpanSeconds": -5})"),
      ErrorCode::kLocation51024,
      "BSON field 'create.timeseries.bucketRoundingSeconds' value must be >= 1, actual value "
      "'-5'");
  ExpectError(Parse(R"({"timeField": "t", "bucketMaxSpanSeconds": 31536001,
                        "bucketRoundingSeconds": 31536001})"),
              ErrorCode::kLocation51024,
              "BSON field 'create.timeseries.bucketMaxSpanSeconds' value must be <= 31536000, "
              "actual value '31536001'");
  ExpectError(Parse(R"({"timeField": "t", "bucketRoundingSeconds": 31536001})"),
              ErrorCode::kLocation51024,
              "BSON field 'create.timeseries.bucketRoundingSeconds' value must be <= 31536000, "
              "actual value '31536001'");
  // Values beyond int32 saturate before the range check, as safeInt does.
  ExpectError(Parse(R"({"timeField": "t", "bucketMaxSpanSeconds": {"$numberLong": "-1"},
                        "bucketRoundingSeconds": 1})"),
              ErrorCode::kLocation51024,
              "BSON field 'create.timeseries.bucketMaxSpanSeconds' value must be >= 1, actual "
              "value '-1'");
  ExpectError(Parse(R"({"timeField": "t", "bucketMaxSpanSeconds": 1e12})"),
              ErrorCode::kLocation51024,
              "BSON field 'create.timeseries.bucketMaxSpanSeconds' value must be <= 31536000, "
              "actual value '2147483647'");
  // The range applies next to a granularity too (the IDL pass comes first).
  ExpectError(Parse(R"({"timeField": "t", "granularity": "hours", "bucketMaxSpanSeconds": 0})"),
              ErrorCode::kLocation51024,
              "BSON field 'create.timeseries.bucketMaxSpanSeconds' value must be >= 1, actual "
              "value '0'");
}

// ---------------------------------------------------------------------------------------------
// create: field names, sub-fields and types (spec 1.1)

TEST(TimeseriesOptionsTest, FieldNameRules) {
  ExpectError(Parse(R"({"timeField": "a.b"})"), ErrorCode::kInvalidOptions,
              "test.ts: 'timeField' must be a top-level field and not contain a '.'");
  ExpectError(Parse(R"({"timeField": "t", "metaField": "_id"})"), ErrorCode::kInvalidOptions,
              "'metaField' cannot be \"_id\"");
  ExpectError(Parse(R"({"timeField": "t", "metaField": "t"})"), ErrorCode::kInvalidOptions,
              "'metaField' cannot be the same as 'timeField'");
  ExpectError(Parse(R"({"timeField": "t", "metaField": "m.x"})"), ErrorCode::kInvalidOptions,
              "test.ts: 'metaField' must be a top-level field and not contain a '.'");
  // The name rules come before the bucketing rules.
  ExpectError(Parse(R"({"timeField": "t", "metaField": "_id", "bucketMaxSpanSeconds": 5})"),
              ErrorCode::kInvalidOptions, "'metaField' cannot be \"_id\"");
  // "_id" as the timeField is accepted; a "$" prefix or a null byte is BadValue (MongoDB 8.x).
  EXPECT_EQ(ParseOk(R"({"timeField": "_id", "metaField": "m"})").time_field, "_id");
  EXPECT_EQ(Parse(R"({"timeField": "_id", "metaField": "$m"})").status().code(),
            ErrorCode::kBadValue);
  EXPECT_EQ(Parse(R"({"timeField": "$t"})").status().code(), ErrorCode::kBadValue);
}

TEST(TimeseriesOptionsTest, UnknownSubFieldIsAnIdlError) {
  ExpectError(Parse(R"({"timeField": "t", "foo": 1})"), ErrorCode::kLocation40415,
              "BSON field 'create.timeseries.foo' is an unknown field.");
  EXPECT_EQ(Parse(R"({"timeField": "t", "foo": 1})").status().code_number(), 40415);
}

TEST(TimeseriesOptionsTest, MissingTimeField) {
  const char* kMsg = "BSON field 'create.timeseries.timeField' is missing but a required field";
  ExpectError(Parse(R"({})"), ErrorCode::kLocation40414, kMsg);
  ExpectError(Parse(R"({"metaField": "m"})"), ErrorCode::kLocation40414, kMsg);
  // The IDL parser skips null values, so a null timeField counts as missing...
  ExpectError(Parse(R"({"timeField": null})"), ErrorCode::kLocation40414, kMsg);
  // ...and a null optional field as absent.
  TimeseriesOptions o = ParseOk(R"({"timeField": "t", "metaField": null, "granularity": null})");
  EXPECT_FALSE(o.meta_field);
  EXPECT_EQ(o.granularity, "seconds");
}

TEST(TimeseriesOptionsTest, WrongTypes) {
  ExpectError(Parse(R"("t")"), ErrorCode::kTypeMismatch,
              "BSON field 'create.timeseries' is the wrong type 'string', expected type 'object'");
  ExpectError(Parse(R"({"timeField": 1})"), ErrorCode::kTypeMismatch,
              "BSON field 'create.timeseries.timeField' is the wrong type 'int', expected type "
              "'string'");
  ExpectError(Parse(R"({"timeField": "t", "metaField": {"a": 1}})"), ErrorCode::kTypeMismatch,
              "BSON field 'create.timeseries.metaField' is the wrong type 'object', expected type "
              "'string'");
  ExpectError(Parse(R"({"timeField": "t", "granularity": 1})"), ErrorCode::kTypeMismatch,
              "BSON field 'create.timeseries.granularity' is the wrong type 'int', expected type "
              "'string'");
  ExpectError(Parse(R"({"timeField": "t", "bucketMaxSpanSeconds": "100"})"),
              ErrorCode::kTypeMismatch,
              "BSON field 'create.timeseries.bucketMaxSpanSeconds' is the wrong type 'string', "
              "expected types '[long, int, decimal, double']");
  ExpectError(Parse(R"({"timeField": "t", "bucketRoundingSeconds": true})"),
              ErrorCode::kTypeMismatch,
              "BSON field 'create.timeseries.bucketRoundingSeconds' is the wrong type 'bool', "
              "expected types '[long, int, decimal, double']");
}

TEST(TimeseriesOptionsTest, GranularityIsAnEnum) {
  ExpectError(Parse(R"({"timeField": "t", "granularity": "days"})"), ErrorCode::kBadValue,
              "Enumeration value 'days' for field 'create.timeseries.granularity' is not a valid "
              "value.");
  EXPECT_FALSE(Parse(R"({"timeField": "t", "granularity": "Seconds"})").ok());
}

TEST(TimeseriesOptionsTest, DuplicateSubFieldIsRejected) {
  auto sw = Parse(R"({"timeField": "t", "timeField": "u"})");
  ASSERT_FALSE(sw.ok());
  EXPECT_EQ(sw.status().reason(), "BSON field 'create.timeseries.timeField' is a duplicate field");
}

// ---------------------------------------------------------------------------------------------
// create: other options (spec 1.1)

TEST(TimeseriesOptionsTest, AllowedCreateOptions) {
  BsonObj cmd = Doc(R"({"create": "ts", "timeseries": {"timeField": "t"},
      "storageEngine": {}, "indexOptionDefaults": {}, "collation": {"locale": "simple"},
      "expireAfterSeconds": 10, "temp": false, "capped": false,
      "writeConcern": {"w": 1}, "comment": "x", "lsid": {"id": 1}, "$db": "test",
      "apiVersion": "1", "maxTimeMS": 10, "validator": null})");
  EXPECT_TRUE(CheckOptionsAllowedWithTimeseries(cmd, kNs).ok());
  EXPECT_TRUE(CheckOptionsAllowedWithTimeseries(Doc(R"({"create": "ts", "capped": 0})"), kNs).ok());
}

TEST(TimeseriesOptionsTest, DisallowedCreateOptions) {
  for (const char* option :
       {R"("capped": true)", R"("capped": 1)", R"("validator": {"a": 1})",
        R"("clusteredIndex": true)", R"("autoIndexId": true)", R"("idIndex": {"key": {"_id": 1}})",
        R"("size": 100)", R"("max": 10)", R"("viewOn": "c")", R"("pipeline": [])",
        R"("validationLevel": "off")", R"("validationAction": "warn")",
        R"("changeStreamPreAndPostImages": {"enabled": false})", R"("flags": 1)"}) {
    SCOPED_TRACE(option);
    BsonObj cmd =
        Doc(std::string(R"({"create": "ts", "timeseries": {"timeField": "t"}, )") + option + "}");
    std::string name;
    for (bson::BsonElement e : cmd) name = std::string(e.FieldName());  // the last field
    ExpectError(CheckOptionsAllowedWithTimeseries(cmd, kNs), ErrorCode::kInvalidOptions,
                "test.ts: 'timeseries' is not allowed with '" + name + "'");
  }
}

TEST(TimeseriesOptionsTest, ValidatorAndClusteredIndexOnlyForBucketsNamespace) {
  BsonObj cmd = Doc(R"({"create": "system.buckets.ts", "timeseries": {"timeField": "t"},
                        "validator": {"$jsonSchema": {}}, "clusteredIndex": true})");
  EXPECT_TRUE(CheckOptionsAllowedWithTimeseries(cmd, "test.system.buckets.ts").ok());
  ExpectError(CheckOptionsAllowedWithTimeseries(cmd, kNs), ErrorCode::kInvalidOptions,
              "test.ts: 'timeseries' is not allowed with 'validator'");
}

TEST(TimeseriesOptionsTest, EncryptedFieldsWithTimeseries) {
  BsonObj cmd = Doc(R"({"create": "ts", "timeseries": {"timeField": "t"},
                        "encryptedFields": {"fields": []}})");
  Status st = CheckOptionsAllowedWithTimeseries(cmd, kNs);
  EXPECT_EQ(st.code_number(), 6346401);
}

TEST(TimeseriesOptionsTest, ExpireAfterSecondsAtCreate) {
  auto parse = [](std::string_view json) {
    BsonObj cmd = Doc("{\"expireAfterSeconds\": " + std::string(json) + "}");
    return ParseExpireAfterSeconds(cmd["expireAfterSeconds"]);
  };
  EXPECT_EQ(parse("0").value(), 0);
  EXPECT_EQ(parse("3600").value(), 3600);
  EXPECT_EQ(parse(R"({"$numberLong": "86400"})").value(), 86400);
  EXPECT_EQ(parse("10.0").value(), 10);
  // One billion seconds (2001) is in the past, so acceptable.
  EXPECT_EQ(parse("1000000000").value(), 1000000000);
  const char* kNeg = "TTL index 'expireAfterSeconds' option cannot be less than 0";
  const char* kRange =
      "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower "
      "number";
  ExpectError(parse("-1"), ErrorCode::kInvalidOptions, kNeg);
  ExpectError(parse(R"({"$numberLong": "-9223372036854775808"})"), ErrorCode::kInvalidOptions,
              kNeg);
  // Later than now once converted to milliseconds.
  ExpectError(parse(R"({"$numberLong": "10000000000"})"), ErrorCode::kInvalidOptions, kRange);
  // Overflows as milliseconds.
  ExpectError(parse(R"({"$numberLong": "9223372036854776"})"), ErrorCode::kInvalidOptions, kRange);
  ExpectError(parse(R"({"$numberLong": "9223372036854775807"})"), ErrorCode::kInvalidOptions,
              kRange);
  ExpectError(parse("1e300"), ErrorCode::kInvalidOptions, kRange);
  ExpectError(parse(R"("10")"), ErrorCode::kTypeMismatch,
              "BSON field 'create.expireAfterSeconds' is the wrong type 'string', expected types "
              "'[long, int, decimal, double']");
}

TEST(TimeseriesOptionsTest, ExpireAfterSecondsAtCollMod) {
  auto parse = [](std::string_view json) {
    BsonObj cmd = Doc("{\"expireAfterSeconds\": " + std::string(json) + "}");
    return ParseCollModExpireAfterSeconds(cmd["expireAfterSeconds"]);
  };
  auto off = parse(R"("off")");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off.value().has_value());
  auto n = parse("120");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 120);
  ExpectError(parse(R"("on")"), ErrorCode::kInvalidOptions,
              "Invalid string value for the 'clusteredIndex::expireAfterSeconds' option. Got: "
              "'on'. Accepted value is 'off'");
  ExpectError(parse("-5"), ErrorCode::kInvalidOptions,
              "TTL index 'expireAfterSeconds' option cannot be less than 0");
  ExpectError(parse(R"({"$numberLong": "9223372036854775807"})"), ErrorCode::kInvalidOptions,
              "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a "
              "lower number");
  ExpectError(parse("true"), ErrorCode::kTypeMismatch,
              "BSON field 'collMod.expireAfterSeconds' is the wrong type 'bool', expected types "
              "'[string, long, int, decimal, double']");
}

// ---------------------------------------------------------------------------------------------
// create: idempotent re-create (spec 1.1)

TEST(TimeseriesOptionsTest, EquivalentForCreate) {
  TimeseriesOptions defaults = ParseOk(R"({"timeField": "t"})");
  EXPECT_TRUE(EquivalentForCreate(defaults, ParseOk(R"({"timeField": "t", "granularity":
                                                       "seconds"})")));
  EXPECT_TRUE(
      EquivalentForCreate(defaults, ParseOk(R"({"timeField": "t", "bucketMaxSpanSeconds": 3600,
                            "granularity": "seconds"})")));
  // Absent granularity counts as "seconds".
  TimeseriesOptions no_granularity{"t", std::nullopt, std::nullopt, 3600, std::nullopt};
  EXPECT_TRUE(EquivalentForCreate(defaults, no_granularity));
  EXPECT_TRUE(EquivalentForCreate(no_granularity, defaults));

  EXPECT_FALSE(EquivalentForCreate(defaults, ParseOk(R"({"timeField": "u"})")));
  EXPECT_FALSE(EquivalentForCreate(defaults, ParseOk(R"({"timeField": "t", "metaField": "m"})")));
  EXPECT_FALSE(EquivalentForCreate(ParseOk(R"({"timeField": "t", "metaField": "m"})"),
                                   ParseOk(R"({"timeField": "t", "metaField": "n"})")));
  EXPECT_FALSE(
      EquivalentForCreate(defaults, ParseOk(R"({"timeField": "t", "granularity": "minutes"})")));

  TimeseriesOptions custom =
      ParseOk(R"({"timeField": "t", "bucketMaxSpanSeconds": 60, "bucketRoundingSeconds": 60})");
  EXPECT_TRUE(EquivalentForCreate(custom, ParseOk(R"({"timeField": "t", "bucketMaxSpanSeconds": 60,
                                                     "bucketRoundingSeconds": 60})")));
  EXPECT_FALSE(EquivalentForCreate(custom, defaults));
  EXPECT_FALSE(EquivalentForCreate(
      ParseOk(R"({"timeField": "t", "bucketMaxSpanSeconds": 3600, "bucketRoundingSeconds": 3600})"),
      defaults));  // same span, rounding 3600 vs 60
  EXPECT_FALSE(EquivalentForCreate(custom, ParseOk(R"({"timeField": "t", "bucketMaxSpanSeconds":
                                                      120, "bucketRoundingSeconds": 120})")));
}

// ---------------------------------------------------------------------------------------------
// Stored form (spec 2.2)

TEST(TimeseriesOptionsTest, FromBsonReadsToBsonBack) {
  for (const char* json :
       {R"({"timeField": "t"})", R"({"timeField": "t", "metaField": "m", "granularity": "hours"})",
        R"({"timeField": "t", "bucketMaxSpanSeconds": 5, "bucketRoundingSeconds": 5})"}) {
    SCOPED_TRACE(json);
    TimeseriesOptions o = ParseOk(json);
    auto back = TimeseriesOptions::FromBson(o.ToBson());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back.value(), o);
  }
}

TEST(TimeseriesOptionsTest, FromBsonToleratesOlderStoredForms) {
  // 6.3-7.0 catalogs also stored the preset rounding of a granularity.
  auto v7 = TimeseriesOptions::FromBson(Doc(R"({"timeField": "t", "granularity": "minutes",
      "bucketRoundingSeconds": 3600, "bucketMaxSpanSeconds": 86400})"));
  ASSERT_TRUE(v7.ok());
  EXPECT_EQ(v7.value(), ParseOk(R"({"timeField": "t", "granularity": "minutes"})"));
  // 5.0 catalogs may lack bucketMaxSpanSeconds.
  auto v5 = TimeseriesOptions::FromBson(Doc(R"({"timeField": "t", "granularity": "hours"})"));
  ASSERT_TRUE(v5.ok());
  EXPECT_EQ(v5.value().bucket_max_span_seconds, 2592000);
  EXPECT_EQ(TimeseriesOptions::FromBson(Doc(R"({"metaField": "m"})")).status().code(),
            ErrorCode::kBadValue);
  EXPECT_EQ(TimeseriesOptions::FromBson(Doc(R"({"timeField": "t", "granularity": "days"})"))
                .status()
                .code(),
            ErrorCode::kBadValue);
}

// ---------------------------------------------------------------------------------------------
// collMod (spec 1.3)

TEST(TimeseriesOptionsTest, CollModEmptyIsANoOp) {
  TimeseriesOptions current = ParseOk(R"({"timeField": "t", "granularity": "minutes"})");
  auto next = CollMod(current, "{}");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next.value(), current);
}

TEST(TimeseriesOptionsTest, CollModGranularityOnlyGetsCoarser) {
  struct Case {
    const char* from;
    const char* to;
    bool ok;
  } cases[] = {
      {"seconds", "minutes", true},  {"seconds", "hours", true},   {"minutes", "hours", true},
      {"seconds", "seconds", true},  {"minutes", "minutes", true}, {"hours", "hours", true},
      {"minutes", "seconds", false}, {"hours", "minutes", false},  {"hours", "seconds", false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.from) + " -> " + c.to);
    TimeseriesOptions current = ParseOk(
        std::string(R"({"timeField": "t", "metaField": "m", "granularity": ")") + c.from + "\"}");
    auto next = CollMod(current, std::string(R"({"granularity": ")") + c.to + "\"}");
    if (!c.ok) {
      ExpectError(next, ErrorCode::kInvalidOptions,
                  "Invalid transition for timeseries.granularity. Can only transition from "
                  "'seconds' to 'minutes' or 'minutes' to 'hours'.");
      continue;
    }
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    EXPECT_EQ(next.value(),
              ParseOk(std::string(R"({"timeField": "t", "metaField": "m", "granularity": ")") +
                      c.to + "\"}"));
  }
}

TEST(TimeseriesOptionsTest, CollModGranularityWithSpanOrRounding) {
  TimeseriesOptions seconds = ParseOk(R"({"timeField": "t"})");
  auto next = CollMod(seconds, R"({"granularity": "minutes", "bucketMaxSpanSeconds": 86400})");
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next.value().granularity, "minutes");
  ExpectError(CollMod(seconds, R"({"granularity": "minutes", "bucketMaxSpanSeconds": 3600})"),
              ErrorCode::kInvalidOptions,
              "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the "
              "default for the provided granularity");
  // A rounding next to the granularity is refused, the preset's too (MongoDB 8.0).
  for (const char* mod : {R"({"granularity": "minutes", "bucketRoundingSeconds": 60})",
                          R"({"granularity": "hours", "bucketRoundingSeconds": 86400})"}) {
    ExpectError(CollMod(seconds, mod), ErrorCode::kInvalidOptions,
                "Timeseries 'bucketRoundingSeconds' is not configurable alongside the granularity "
                "parameter");
  }
}

TEST(TimeseriesOptionsTest, CollModGranularityToCustomSpans) {
  TimeseriesOptions seconds = ParseOk(R"({"timeField": "t"})");  // 3600 / 60
  auto next = CollMod(seconds, R"({"bucketMaxSpanSeconds": 3600, "bucketRoundingSeconds": 3600})");
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_FALSE(next.value().granularity);  // granularity is removed
  ExpectBson(next.value().ToBson(),
             R"({"timeField": "t", "bucketRoundingSeconds": 3600, "bucketMaxSpanSeconds": 3600})");
  next = CollMod(seconds, R"({"bucketMaxSpanSeconds": 7200, "bucketRoundingSeconds": 7200})");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next.value().bucket_max_span_seconds, 7200);
  ExpectError(CollMod(seconds, R"({"bucketMaxSpanSeconds": 1800, "bucketRoundingSeconds": 1800})"),
              ErrorCode::kInvalidOptions,
              "Timeseries 'bucketMaxSpanSeconds' needs to be equal or greater to transition");
  // hours (2592000 / 86400) to equal custom spans of the same size: the rounding grows.
  TimeseriesOptions hours = ParseOk(R"({"timeField": "t", "granularity": "hours"})");
  next = CollMod(hours, R"({"bucketMaxSpanSeconds": 2592000, "bucketRoundingSeconds": 2592000})");
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next.value().RoundingSeconds(), 2592000);
}

TEST(TimeseriesOptionsTest, CollModCustomSpansOnlyGrow) {
  TimeseriesOptions custom =
      ParseOk(R"({"timeField": "t", "metaField": "m", "bucketMaxSpanSeconds": 100,
                  "bucketRoundingSeconds": 100})");
  auto next = CollMod(custom, R"({"bucketMaxSpanSeconds": 200, "bucketRoundingSeconds": 200})");
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next.value(), ParseOk(R"({"timeField": "t", "metaField": "m",
                                      "bucketMaxSpanSeconds": 200, "bucketRoundingSeconds": 200})"));
  // Identical values: success without change.
  next = CollMod(custom, R"({"bucketMaxSpanSeconds": 100, "bucketRoundingSeconds": 100})");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next.value(), custom);
  ExpectError(CollMod(custom, R"({"bucketMaxSpanSeconds": 50, "bucketRoundingSeconds": 50})"),
              ErrorCode::kInvalidOptions,
              "Timeseries 'bucketMaxSpanSeconds' needs to be equal or greater to transition");
}

TEST(TimeseriesOptionsTest, CollModCustomSpansGivenTogetherAndEqual) {
  TimeseriesOptions custom =
      ParseOk(R"({"timeField": "t", "bucketMaxSpanSeconds": 100, "bucketRoundingSeconds": 100})");
  const char* kBoth =
      "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside "
      "each other";
  ExpectError(CollMod(custom, R"({"bucketMaxSpanSeconds": 200})"), ErrorCode::kInvalidOptions,
              kBoth);
  ExpectError(CollMod(custom, R"({"bucketRoundingSeconds": 200})"), ErrorCode::kInvalidOptions,
              kBoth);
  ExpectError(CollMod(custom, R"({"bucketMaxSpanSeconds": 300, "bucketRoundingSeconds": 200})"),
              ErrorCode::kInvalidOptions,
              "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'");
}

TEST(TimeseriesOptionsTest, CollModCustomToGranularityWhenPresetsAreNotSmaller) {
  auto custom = [](int span) {
    return ParseOk(R"({"timeField": "t", "bucketMaxSpanSeconds": )" + std::to_string(span) +
                   R"(, "bucketRoundingSeconds": )" + std::to_string(span) + "}");
  };
  // 60/60 -> seconds (3600/60): both presets >= current.
  auto next = CollMod(custom(60), R"({"granularity": "seconds"})");
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next.value(), ParseOk(R"({"timeField": "t", "granularity": "seconds"})"));
  ExpectBson(next.value().ToBson(),
             R"({"timeField": "t", "granularity": "seconds", "bucketMaxSpanSeconds": 3600})");
  // 3600/3600 -> minutes (86400/3600).
  next = CollMod(custom(3600), R"({"granularity": "minutes"})");
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next.value(), ParseOk(R"({"timeField": "t", "granularity": "minutes"})"));
  // 100000/100000 -> hours (2592000/86400) would shrink the rounding.
  ExpectError(CollMod(custom(100000), R"({"granularity": "hours"})"), ErrorCode::kInvalidOptions,
              "Timeseries 'bucketRoundingSeconds' needs to be equal or greater to transition");
  // 86400/86400 -> hours.
  next = CollMod(custom(86400), R"({"granularity": "hours"})");
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next.value().granularity, "hours");
  // 3600/3600 -> seconds: same span, rounding 60 < 3600.
  ExpectError(CollMod(custom(3600), R"({"granularity": "seconds"})"), ErrorCode::kInvalidOptions,
              "Timeseries 'bucketRoundingSeconds' needs to be equal or greater to transition");
  // 7200/7200 -> seconds: span 3600 < 7200.
  ExpectError(CollMod(custom(7200), R"({"granularity": "seconds"})"), ErrorCode::kInvalidOptions,
              "Timeseries 'bucketMaxSpanSeconds' needs to be equal or greater to transition");
  // 100000/100000 -> minutes: span 86400 < 100000.
  ExpectError(CollMod(custom(100000), R"({"granularity": "minutes"})"), ErrorCode::kInvalidOptions,
              "Timeseries 'bucketMaxSpanSeconds' needs to be equal or greater to transition");
}

TEST(TimeseriesOptionsTest, CollModIdlErrors) {
  TimeseriesOptions current = ParseOk(R"({"timeField": "t"})");
  ExpectError(CollMod(current, R"("minutes")"), ErrorCode::kTypeMismatch,
              "BSON field 'collMod.timeseries' is the wrong type 'string', expected type "
              "'object'");
  ExpectError(CollMod(current, R"({"timeField": "u"})"), ErrorCode::kLocation40415,
              "BSON field 'collMod.timeseries.timeField' is an unknown field.");
  ExpectError(CollMod(current, R"({"granularity": 1})"), ErrorCode::kTypeMismatch,
              "BSON field 'collMod.timeseries.granularity' is the wrong type 'int', expected type "
              "'string'");
  ExpectError(CollMod(current, R"({"granularity": "days"})"), ErrorCode::kBadValue,
              "Enumeration value 'days' for field 'collMod.timeseries.granularity' is not a valid "
              "value.");
  ExpectError(CollMod(current, R"({"bucketMaxSpanSeconds": 0, "bucketRoundingSeconds": 0})"),
              ErrorCode::kLocation51024,
              "BSON field 'collMod.timeseries.bucketMaxSpanSeconds' value must be >= 1, actual "
              "value '0'");
  ExpectError(CollMod(current, R"({"bucketMaxSpanSeconds": 31536001,
                                   "bucketRoundingSeconds": 31536001})"),
              ErrorCode::kLocation51024,
              "BSON field 'collMod.timeseries.bucketMaxSpanSeconds' value must be <= 31536000, "
              "actual value '31536001'");
}

// ---------------------------------------------------------------------------------------------
// Bucket lower bound (spec 1.2)

TEST(TimeseriesOptionsTest, RoundsPositiveAndZeroTimesDown) {
  EXPECT_EQ(RoundTimeDownMillis(0, 60), 0);
  EXPECT_EQ(RoundTimeDownMillis(1, 60), 0);
  EXPECT_EQ(RoundTimeDownMillis(59999, 60), 0);
  EXPECT_EQ(RoundTimeDownMillis(60000, 60), 60000);
  EXPECT_EQ(RoundTimeDownMillis(1234567, 60), 1200000);
  // 2021-05-18T12:34:56.789Z with each preset rounding.
  const int64_t t = 1621341296789;
  EXPECT_EQ(RoundTimeDownMillis(t, 60), 1621341240000);     // 12:34:00
  EXPECT_EQ(RoundTimeDownMillis(t, 3600), 1621339200000);   // 12:00:00
  EXPECT_EQ(RoundTimeDownMillis(t, 86400), 1621296000000);  // 2021-05-18T00:00:00
}

TEST(TimeseriesOptionsTest, RoundsNegativeTimesTowardMinusInfinity) {
  EXPECT_EQ(RoundTimeDownMillis(-1, 60), -60000);
  EXPECT_EQ(RoundTimeDownMillis(-60000, 60), -60000);  // already aligned
  EXPECT_EQ(RoundTimeDownMillis(-60001, 60), -120000);
  EXPECT_EQ(RoundTimeDownMillis(-1234567, 60), -1260000);
  EXPECT_EQ(RoundTimeDownMillis(-1, 3600), -3600000);
  EXPECT_EQ(RoundTimeDownMillis(-86400001, 86400), -172800000);
  EXPECT_EQ(RoundTimeDownMillis(-5000000000000, 31536000), -5014224000000);
}

TEST(TimeseriesOptionsTest, RoundingClampsAtTheSmallestDate) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // The lowest multiple of 60000 at or above INT64_MIN is -9223372036854720000.
  EXPECT_EQ(RoundTimeDownMillis(kMin, 60), kMin);
  EXPECT_EQ(RoundTimeDownMillis(kMin + 1, 60), kMin);
  EXPECT_EQ(RoundTimeDownMillis(-9223372036854720001, 60), kMin);
  EXPECT_EQ(RoundTimeDownMillis(-9223372036854720000, 60), -9223372036854720000);
  EXPECT_EQ(RoundTimeDownMillis(-9223372036854675808, 60), -9223372036854720000);
  EXPECT_EQ(RoundTimeDownMillis(kMin, 31536000), kMin);
  EXPECT_EQ(RoundTimeDownMillis(kMax, 60), 9223372036854720000);
  EXPECT_EQ(RoundTimeDownMillis(kMax, 86400), 9223372036828800000);
}

TEST(TimeseriesOptionsTest, RoundingSecondsFallsBackTo60) {
  TimeseriesOptions o;
  o.time_field = "t";
  EXPECT_EQ(o.RoundingSeconds(), 60);
  o.bucket_rounding_seconds = 7;
  EXPECT_EQ(o.RoundingSeconds(), 7);
  o.granularity = "hours";  // the preset wins
  EXPECT_EQ(o.RoundingSeconds(), 86400);
}

// A time-series view's stored options are parsed once per catalog handle; an entry without
// them (or with options that do not parse) answers BadValue, every time it is asked.
TEST(TimeseriesOptionsTest, OptionsOfAHandleAreParsedOnceAndMissingOnesAreBadValue) {
  auto handle = [](const char* options_json) {
    catalog::CollectionEntry e;
    e.nss = {"db", "v"};
    e.type = "timeseries";
    e.options = bson::FromJson(options_json).value();
    return catalog::Collection(nullptr, std::move(e), 1);
  };
  catalog::Collection view = handle(R"({"timeseries": {"timeField": "t", "metaField": "m"}})");
  auto first = TimeseriesOptionsOf(view);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first.value()->time_field, "t");
  EXPECT_EQ(first.value()->meta_field, std::optional<std::string>("m"));
  EXPECT_EQ(TimeseriesOptionsOf(view).value(), first.value());  // the same parsed object

  catalog::Collection none = handle("{}");
  EXPECT_EQ(TimeseriesOptionsOf(none).status().code(), ErrorCode::kBadValue);
  catalog::Collection bad = handle(R"({"timeseries": {"metaField": "m"}})");
  EXPECT_EQ(TimeseriesOptionsOf(bad).status().code(), ErrorCode::kBadValue);
  EXPECT_EQ(TimeseriesOptionsOf(bad).status().code(), ErrorCode::kBadValue);
}

}  // namespace
}  // namespace hourglass::timeseries
