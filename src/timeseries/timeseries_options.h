// The options of a time-series collection: parsing and validating `create`'s `timeseries` value,
// the other create options allowed with it, `expireAfterSeconds`, collMod's changes to the
// bucketing parameters, the materialized form listCollections shows and the catalog stores, and
// the rounding of a measurement time to its bucket's lower bound.
//
// Behavior follows MongoDB 7.0 (the time-series spec, sections 1.1-1.3 and 2.2): granularity
// presets or custom bucketMaxSpanSeconds == bucketRoundingSeconds in [1, 31536000]; a
// granularity-based collection never stores bucketRoundingSeconds (it is derived from the preset).
//
// Everything here is pure (no catalog, no I/O apart from reading the clock in
// ParseExpireAfterSeconds) and thread-safe. Errors carry MongoDB's codes: TypeMismatch (14),
// BadValue (2, bad granularity string), 40414 (missing timeField), 40415 (unknown sub-field),
// 51024 (IDL range validator), InvalidOptions (72) for every semantic rule, 6346401
// (encryptedFields with timeseries); a duplicated sub-field gets MongoDB's message with BadValue
// until error_codes.def has 40413. Results own their strings and borrow no BSON.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/collection.h"

namespace hourglass::timeseries {

// Largest custom bucketMaxSpanSeconds / bucketRoundingSeconds: 365 days.
inline constexpr int64_t kMaxBucketSpanSeconds = 31536000;

struct TimeseriesOptions {
  std::string time_field;
  std::optional<std::string> meta_field;
  // "seconds" | "minutes" | "hours"; absent for custom spans.
  std::optional<std::string> granularity;
  // Always the effective value (the preset of `granularity`, or the custom span).
  int64_t bucket_max_span_seconds = 3600;
  // Only for custom spans (then equal to bucket_max_span_seconds); absent with a granularity.
  std::optional<int64_t> bucket_rounding_seconds;

  // The rounding used for bucket lower bounds: the preset of `granularity`, else
  // bucket_rounding_seconds, else 60.
  int64_t RoundingSeconds() const;

  // The materialized form listCollections shows and the catalog stores:
  //   {timeField, [metaField], granularity, bucketMaxSpanSeconds}            granularity-based
  //   {timeField, [metaField], bucketRoundingSeconds, bucketMaxSpanSeconds}  custom
  // with the seconds as int32, as MongoDB's IDL serializes them.
  bson::BsonObj ToBson() const;

  // Reads a stored options document back (ToBson()'s output; also tolerates the 6.3-7.0 form
  // with bucketRoundingSeconds next to granularity, and 5.0's form without
  // bucketMaxSpanSeconds). BadValue if timeField is missing or a value has the wrong type.
  static StatusWith<TimeseriesOptions> FromBson(const bson::BsonObj& stored);

  bool operator==(const TimeseriesOptions&) const = default;
};

// Parses and validates create's `timeseries` value for namespace `ns` ("db.coll", used in
// messages) and fills the defaults. In MongoDB's order: the IDL pass over the sub-fields in
// document order (TypeMismatch naming 'create.timeseries.<field>', 40415 for unknown sub-fields,
// BadValue for a granularity outside the enum, 51024 for spans outside [1, 31536000]; null
// values count as absent), 40414 if timeField is missing, then the field-name rules and the
// bucketing rules (InvalidOptions).
StatusWith<TimeseriesOptions> ParseTimeseriesOptions(const bson::BsonElement& value,
                                                     std::string_view ns);

// Checks the other top-level fields of the create command `create_cmd` against the options
// allowed with `timeseries` (storageEngine, indexOptionDefaults, collation, timeseries,
// expireAfterSeconds, temp, generic arguments; capped:false; validator/clusteredIndex only when
// `ns` is a system.buckets namespace). InvalidOptions "<ns>: 'timeseries' is not allowed with
// '<option>'"; 6346401 for encryptedFields. MongoDB reports these after the IDL errors of the
// `timeseries` value but before its field-name and bucketing rules; ParseTimeseriesOptions runs
// all three, so a command breaking both kinds of rule may get a different (equally valid) error
// first.
Status CheckOptionsAllowedWithTimeseries(const bson::BsonObj& create_cmd, std::string_view ns);

// Validates create's top-level expireAfterSeconds (a clustered TTL value, IDL safeInt64):
// TypeMismatch for non-numbers; InvalidOptions when < 0, when the milliseconds overflow, or when
// they exceed the current time since the epoch. Returns the seconds.
StatusWith<int64_t> ParseExpireAfterSeconds(const bson::BsonElement& value);

// collMod's expireAfterSeconds: a number (validated as above) or the string "off", for which it
// returns std::nullopt (TTL disabled). Other strings: InvalidOptions; other types (null
// included: callers treat a null field as absent before calling): TypeMismatch.
StatusWith<std::optional<int64_t>> ParseCollModExpireAfterSeconds(const bson::BsonElement& value);

// Whether an existing collection with options `a` satisfies a create asking for `b` (the
// idempotent re-create): same timeField and metaField, same granularity (absent counts as
// "seconds"), same effective bucketMaxSpanSeconds and rounding.
bool EquivalentForCreate(const TimeseriesOptions& a, const TimeseriesOptions& b);

// Applies collMod's `timeseries: {...}` value to `current` and returns the new options (equal to
// `current` when nothing changes, e.g. `{}` or the same values). Errors: the IDL errors of
// ParseTimeseriesOptions named 'collMod.timeseries.<field>', and InvalidOptions for a disallowed
// transition (granularity only coarser; spans only grow; custom spans given together and
// equal; a span/rounding next to a granularity only if equal to its preset).
StatusWith<TimeseriesOptions> ApplyCollModTimeseries(const TimeseriesOptions& current,
                                                     const bson::BsonElement& value);

// The bucket lower bound of a measurement at `millis`: rounded down (toward -infinity, so
// pre-1970 times work) to a multiple of rounding_seconds*1000, clamped at INT64_MIN.
// `rounding_seconds` must be positive.
int64_t RoundTimeDownMillis(int64_t millis, int64_t rounding_seconds);

// The preset bucketMaxSpanSeconds / bucketRoundingSeconds of a granularity ("seconds" 3600/60,
// "minutes" 86400/3600, "hours" 2592000/86400). Unknown strings get the "seconds" values.
int64_t PresetMaxSpanSeconds(std::string_view granularity);
int64_t PresetRoundingSeconds(std::string_view granularity);

// The time-series options stored in `coll`'s entry (a time-series view or its bucket
// collection), parsed once per catalog handle (catalog::Collection::Derived) instead of once per
// command. BadValue as FromBson when the entry has none or they do not parse.
StatusWith<std::shared_ptr<const TimeseriesOptions>> TimeseriesOptionsOf(
    const catalog::Collection& coll);

}  // namespace hourglass::timeseries
