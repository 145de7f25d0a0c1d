#include "timeseries/timeseries_options.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "base/clock.h"
#include "base/generic_arguments.h"
#include "bson/field_check.h"

namespace hourglass::timeseries {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr std::string_view kCreateContext = "create.timeseries";
constexpr std::string_view kCollModContext = "collMod.timeseries";
// The types MongoDB's IDL accepts for safeInt/safeInt64 fields.
constexpr std::string_view kNumberTypes = "[long, int, decimal, double]";

// Messages of the bucketing rules at create (spec 1.2).
constexpr std::string_view kRoundingWithGranularity =
    "Time-series 'bucketRoundingSeconds' cannot be set alongside the granularity parameter";
constexpr std::string_view kRoundingMustEqualSpan =
    "Time-series 'bucketRoundingSeconds' must be equal to 'bucketMaxSpanSeconds'";
// Messages of collMod's transition rules (spec 1.3).
constexpr std::string_view kModSpanNotDefault =
    "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default for "
    "the provided granularity";
constexpr std::string_view kModRoundingWithGranularity =
    "Timeseries 'bucketRoundingSeconds' is not configurable alongside the granularity parameter";
constexpr std::string_view kModNeedBoth =
    "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside each "
    "other";
constexpr std::string_view kModRoundingMustEqualSpan =
    "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'";
constexpr std::string_view kModBadGranularityTransition =
    "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to "
    "'minutes' or 'minutes' to 'hours'.";
constexpr std::string_view kModSpanMustGrow =
    "Timeseries 'bucketMaxSpanSeconds' needs to be equal or greater to transition";
constexpr std::string_view kModRoundingMustGrow =
    "Timeseries 'bucketRoundingSeconds' needs to be equal or greater to transition";

constexpr std::string_view kTtlNegative =
    "TTL index 'expireAfterSeconds' option cannot be less than 0";
constexpr std::string_view kTtlTooLarge =
    "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number";

std::string Path(std::string_view context, std::string_view field) {
  std::string p(context);
  p += '.';
  p += field;
  return p;
}

bool IsNullish(const BsonElement& e) {
  return e.type() == BsonType::kNull || e.type() == BsonType::kUndefined;
}

bool IsSafeIntType(const BsonElement& e) { return e.IsNumber(); }

// BSONElement::safeNumberLong: integers as they are; doubles truncated toward zero and
// saturated, NaN as 0; decimals rounded half-to-even and saturated.
int64_t SafeNumberLong(const BsonElement& e) {
  switch (e.type()) {
    case BsonType::kInt32:
      return e.Int32();
    case BsonType::kInt64:
      return e.Int64();
    case BsonType::kDouble:
    case BsonType::kDecimal128: {
      double d = e.NumberDouble();
      if (std::isnan(d)) return 0;
      d = e.type() == BsonType::kDouble ? std::trunc(d) : std::nearbyint(d);
      if (d >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
      if (d < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(d);
    }
    default:
      return 0;
  }
}

// BSONElement::safeNumberInt: safeNumberLong clamped to int32.
int64_t SafeNumberInt(const BsonElement& e) {
  int64_t v = SafeNumberLong(e);
  if (v > std::numeric_limits<int32_t>::max()) return std::numeric_limits<int32_t>::max();
  if (v < std::numeric_limits<int32_t>::min()) return std::numeric_limits<int32_t>::min();
  return v;
}

bool IsGranularity(std::string_view g) { return g == "seconds" || g == "minutes" || g == "hours"; }

// Rank in the allowed transition order seconds -> minutes -> hours.
int GranularityRank(std::string_view g) {
  if (g == "minutes") return 1;
  if (g == "hours") return 2;
  return 0;
}

// The fields of a timeseries sub-document as MongoDB's IDL parser sees them (before any
// semantic rule).
struct RawOptions {
  std::optional<std::string> time_field;
  std::optional<std::string> meta_field;
  std::optional<std::string> granularity;
  std::optional<int64_t> bucket_max_span_seconds;
  std::optional<int64_t> bucket_rounding_seconds;
};

// Parses a safeInt span field with the IDL validator {gte: 1, lte: 31536000}.
Status ParseSpan(std::string_view context, const BsonElement& e, std::optional<int64_t>* out) {
  std::string path = Path(context, e.FieldName());
  if (!IsSafeIntType(e)) return bson::WrongVariantType(path, e, kNumberTypes);
  int64_t v = SafeNumberInt(e);
  if (v < 1) {
    return Status(ErrorCode::kLocation51024, "BSON field '" + path + "' value must be >= 1, " +
                                                 "actual value '" + std::to_string(v) + "'");
  }
  if (v > kMaxBucketSpanSeconds) {
    return Status(ErrorCode::kLocation51024, "BSON field '" + path + "' value must be <= " +
                                                 std::to_string(kMaxBucketSpanSeconds) +
                                                 ", actual value '" + std::to_string(v) + "'");
  }
  *out = v;
  return Status::OK();
}

Status ParseGranularity(std::string_view context, const BsonElement& e,
                        std::optional<std::string>* out) {
  std::string path = Path(context, e.FieldName());
  if (e.type() != BsonType::kString) return bson::WrongTypeAtPath(path, e, "string");
  if (!IsGranularity(e.Str())) {
    return Status(ErrorCode::kBadValue, "Enumeration value '" + std::string(e.Str()) +
                                            "' for field '" + path + "' is not a valid value.");
  }
  *out = std::string(e.Str());
  return Status::OK();
}

// The IDL pass: strict sub-fields, types, enum, validators, in document order. `with_names`
// selects create's struct (timeField/metaField) over collMod's.
StatusWith<RawOptions> ParseRaw(const BsonElement& value, std::string_view context,
                                bool with_names) {
  if (value.type() != BsonType::kObject) return bson::WrongTypeAtPath(context, value, "object");
  RawOptions raw;
  std::optional<std::string_view> seen[5];
  for (BsonElement e : value.Obj()) {
    std::string_view f = e.FieldName();
    int slot = -1;
    if (with_names && f == "timeField") slot = 0;
    if (with_names && f == "metaField") slot = 1;
    if (f == "granularity") slot = 2;
    if (f == "bucketRoundingSeconds") slot = 3;
    if (f == "bucketMaxSpanSeconds") slot = 4;
    if (slot < 0) {
      return bson::UnknownField(context, f);
    }
    if (seen[slot]) {
      // MongoDB answers 40413 (not in error_codes.def yet) with this message.
      return Status(ErrorCode::kBadValue,
                    "BSON field '" + Path(context, f) + "' is a duplicate field");
    }
    seen[slot] = f;
    // The IDL parser skips null/undefined values of optional fields (and a null required field
    // then counts as missing).
    if (IsNullish(e)) continue;
    switch (slot) {
      case 0:
      case 1: {
        if (e.type() != BsonType::kString) return bson::WrongType(context, e, "string");
        (slot == 0 ? raw.time_field : raw.meta_field) = std::string(e.Str());
        break;
      }
      case 2:
        HG_RETURN_IF_ERROR(ParseGranularity(context, e, &raw.granularity));
        break;
      case 3:
        HG_RETURN_IF_ERROR(ParseSpan(context, e, &raw.bucket_rounding_seconds));
        break;
      case 4:
        HG_RETURN_IF_ERROR(ParseSpan(context, e, &raw.bucket_max_span_seconds));
        break;
    }
  }
  if (with_names && !raw.time_field) {
    return bson::MissingField(context, "timeField");
  }
  return raw;
}

// MongoDB 8.x refuses a time or meta field that a path or an expression could not name.
Status CheckFieldNameChars(std::string_view option, const std::string& name) {
  if ((!name.empty() && name[0] == '$') || name.find('\0') != std::string::npos) {
    return Status(ErrorCode::kBadValue, "Time-series '" + std::string(option) + "' \"" + name +
                                            "\" may not start with '$' or contain a null byte");
  }
  return Status::OK();
}

Status CheckFieldNames(const RawOptions& raw, std::string_view ns) {
  const std::string& time_field = *raw.time_field;
  HG_RETURN_IF_ERROR(CheckFieldNameChars("timeField", time_field));
  if (raw.meta_field) HG_RETURN_IF_ERROR(CheckFieldNameChars("metaField", *raw.meta_field));
  if (time_field.find('.') != std::string::npos) {
    return Status(
        ErrorCode::kInvalidOptions,
        std::string(ns) + ": 'timeField' must be a top-level field and not contain a '.'");
  }
  if (raw.meta_field) {
    const std::string& meta = *raw.meta_field;
    if (meta == "_id") {
      return Status(ErrorCode::kInvalidOptions, "'metaField' cannot be \"_id\"");
    }
    if (meta == time_field) {
      return Status(ErrorCode::kInvalidOptions, "'metaField' cannot be the same as 'timeField'");
    }
    if (meta.find('.') != std::string::npos) {
      return Status(
          ErrorCode::kInvalidOptions,
          std::string(ns) + ": 'metaField' must be a top-level field and not contain a '.'");
    }
  }
  return Status::OK();
}

// The bucketing rules at create (spec 1.2; a bucketRoundingSeconds next to a granularity is
// refused even when it equals the preset, as MongoDB 8.0 does), filling `out`'s bucketing fields.
Status CheckBucketing(const RawOptions& raw, TimeseriesOptions* out) {
  if (raw.granularity) {
    const std::string& g = *raw.granularity;
    int64_t preset_span = PresetMaxSpanSeconds(g);
    if (raw.bucket_max_span_seconds && *raw.bucket_max_span_seconds != preset_span) {
      return Status(ErrorCode::kInvalidOptions,
                    "Time-series 'bucketMaxSpanSeconds' cannot be set to a value other than the "
                    "default of " +
                        std::to_string(preset_span) + " for the provided granularity");
    }
    if (raw.bucket_rounding_seconds) {
      return Status(ErrorCode::kInvalidOptions, std::string(kRoundingWithGranularity));
    }
    out->granularity = g;
    out->bucket_max_span_seconds = preset_span;
    out->bucket_rounding_seconds.reset();
    return Status::OK();
  }
  if (raw.bucket_max_span_seconds || raw.bucket_rounding_seconds) {
    if (raw.bucket_max_span_seconds != raw.bucket_rounding_seconds) {
      return Status(ErrorCode::kInvalidOptions, std::string(kRoundingMustEqualSpan));
    }
    out->granularity.reset();
    out->bucket_max_span_seconds = *raw.bucket_max_span_seconds;
    out->bucket_rounding_seconds = raw.bucket_rounding_seconds;
    return Status::OK();
  }
  out->granularity = "seconds";
  out->bucket_max_span_seconds = PresetMaxSpanSeconds("seconds");
  out->bucket_rounding_seconds.reset();
  return Status::OK();
}

bool IsBucketsNamespace(std::string_view ns) {
  size_t dot = ns.find('.');
  std::string_view coll = dot == std::string_view::npos ? ns : ns.substr(dot + 1);
  return coll.starts_with("system.buckets.");
}

// The clustered-TTL checks of index_key_validate::validateExpireAfterSeconds.
Status ValidateClusteredTtl(int64_t seconds) {
  if (seconds < 0) return Status(ErrorCode::kInvalidOptions, std::string(kTtlNegative));
  if (seconds > std::numeric_limits<int64_t>::max() / 1000 || seconds * 1000 > NowMillis()) {
    return Status(ErrorCode::kInvalidOptions, std::string(kTtlTooLarge));
  }
  return Status::OK();
}

}  // namespace

int64_t PresetMaxSpanSeconds(std::string_view granularity) {
  if (granularity == "minutes") return 60 * 60 * 24;
  // 30 days: a month's estimate; only bucketing and query bounds depend on it.
  if (granularity == "hours") return 60 * 60 * 24 * 30;
  return 60 * 60;
}

int64_t PresetRoundingSeconds(std::string_view granularity) {
  if (granularity == "minutes") return 60 * 60;
  if (granularity == "hours") return 60 * 60 * 24;
  return 60;
}

int64_t TimeseriesOptions::RoundingSeconds() const {
  if (granularity) return PresetRoundingSeconds(*granularity);
  return bucket_rounding_seconds.value_or(60);
}

BsonObj TimeseriesOptions::ToBson() const {
  BsonBuilder b;
  b.AppendString("timeField", time_field);
  if (meta_field) b.AppendString("metaField", *meta_field);
  if (granularity) {
    b.AppendString("granularity", *granularity);
  } else if (bucket_rounding_seconds) {
    b.AppendInt32("bucketRoundingSeconds", static_cast<int32_t>(*bucket_rounding_seconds));
  }
  b.AppendInt32("bucketMaxSpanSeconds", static_cast<int32_t>(bucket_max_span_seconds));
  return b.Obj();
}

StatusWith<TimeseriesOptions> TimeseriesOptions::FromBson(const BsonObj& stored) {
  auto bad = [](std::string what) {
    return Status(ErrorCode::kBadValue, "invalid stored time-series options: " + what);
  };
  TimeseriesOptions o;
  BsonElement time = stored["timeField"];
  if (time.type() != BsonType::kString) return bad("'timeField' must be a string");
  o.time_field = std::string(time.Str());
  BsonElement meta = stored["metaField"];
  if (!meta.eoo()) {
    if (meta.type() != BsonType::kString) return bad("'metaField' must be a string");
    o.meta_field = std::string(meta.Str());
  }
  BsonElement gran = stored["granularity"];
  BsonElement span = stored["bucketMaxSpanSeconds"];
  BsonElement rounding = stored["bucketRoundingSeconds"];
  if (!span.eoo() && !span.IsNumber()) return bad("'bucketMaxSpanSeconds' must be a number");
  if (!rounding.eoo() && !rounding.IsNumber()) {
    return bad("'bucketRoundingSeconds' must be a number");
  }
  if (!gran.eoo()) {
    if (gran.type() != BsonType::kString || !IsGranularity(gran.Str())) {
      return bad("'granularity' must be one of 'seconds', 'minutes', 'hours'");
    }
    o.granularity = std::string(gran.Str());
    o.bucket_max_span_seconds =
        span.eoo() ? PresetMaxSpanSeconds(gran.Str()) : SafeNumberLong(span);
    // A 6.3-7.0 catalog may hold the preset rounding here too; it is derived, never stored.
    return o;
  }
  if (span.eoo() && rounding.eoo()) {
    o.granularity = "seconds";
    o.bucket_max_span_seconds = PresetMaxSpanSeconds("seconds");
    return o;
  }
  if (span.eoo() || rounding.eoo()) {
    return bad("custom bucketing needs both 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds'");
  }
  o.bucket_max_span_seconds = SafeNumberLong(span);
  o.bucket_rounding_seconds = SafeNumberLong(rounding);
  if (o.bucket_max_span_seconds < 1 || *o.bucket_rounding_seconds < 1) {
    return bad("bucketing seconds must be positive");
  }
  return o;
}

StatusWith<TimeseriesOptions> ParseTimeseriesOptions(const BsonElement& value,
                                                     std::string_view ns) {
  HG_ASSIGN_OR_RETURN(RawOptions raw, ParseRaw(value, kCreateContext, /*with_names=*/true));
  HG_RETURN_IF_ERROR(CheckFieldNames(raw, ns));
  TimeseriesOptions out;
  out.time_field = *raw.time_field;
  out.meta_field = raw.meta_field;
  HG_RETURN_IF_ERROR(CheckBucketing(raw, &out));
  return out;
}

Status CheckOptionsAllowedWithTimeseries(const BsonObj& create_cmd, std::string_view ns) {
  if (create_cmd.HasField("encryptedFields") && !IsNullish(create_cmd["encryptedFields"])) {
    return Status(ErrorCode::kLocation6346401,
                  "Encrypted fields cannot be used with views or timeseries collections");
  }
  static constexpr std::string_view kAllowed[] = {
      "storageEngine", "indexOptionDefaults", "collation",
      "timeseries",    "expireAfterSeconds",  "temp",
      "rollupOf"};
  bool first = true;
  for (BsonElement e : create_cmd) {
    if (std::exchange(first, false)) continue;  // the command name
    std::string_view f = e.FieldName();
    // MongoDB checks the re-serialized command: null optional fields and generic arguments are
    // not part of it.
    if (IsNullish(e) || IsGenericArgument(f)) continue;
    bool allowed = false;
    for (auto a : kAllowed) allowed = allowed || a == f;
    if (allowed) continue;
    if (f == "capped" && !e.Truthy()) continue;
    // Restoring a buckets collection passes its validator and clusteredIndex along.
    if ((f == "validator" || f == "clusteredIndex") && IsBucketsNamespace(ns)) continue;
    return Status(ErrorCode::kInvalidOptions,
                  std::string(ns) + ": 'timeseries' is not allowed with '" + std::string(f) + "'");
  }
  return Status::OK();
}

StatusWith<int64_t> ParseExpireAfterSeconds(const BsonElement& value) {
  if (!IsSafeIntType(value)) {
    return bson::WrongVariantType(Path("create", value.FieldName()), value, kNumberTypes);
  }
  int64_t seconds = SafeNumberLong(value);
  HG_RETURN_IF_ERROR(ValidateClusteredTtl(seconds));
  return seconds;
}

StatusWith<std::optional<int64_t>> ParseCollModExpireAfterSeconds(const BsonElement& value) {
  if (value.type() == BsonType::kString) {
    if (value.Str() != "off") {
      return Status(ErrorCode::kInvalidOptions,
                    "Invalid string value for the 'clusteredIndex::expireAfterSeconds' option. "
                    "Got: '" +
                        std::string(value.Str()) + "'. Accepted value is 'off'");
    }
    return std::optional<int64_t>();
  }
  if (!IsSafeIntType(value)) {
    return bson::WrongVariantType(Path("collMod", value.FieldName()), value,
                                  "[string, long, int, decimal, double]");
  }
  int64_t seconds = SafeNumberLong(value);
  HG_RETURN_IF_ERROR(ValidateClusteredTtl(seconds));
  return std::optional<int64_t>(seconds);
}

bool EquivalentForCreate(const TimeseriesOptions& a, const TimeseriesOptions& b) {
  return a.time_field == b.time_field && a.meta_field == b.meta_field &&
         a.granularity.value_or("seconds") == b.granularity.value_or("seconds") &&
         a.bucket_max_span_seconds == b.bucket_max_span_seconds &&
         a.RoundingSeconds() == b.RoundingSeconds();
}

StatusWith<TimeseriesOptions> ApplyCollModTimeseries(const TimeseriesOptions& current,
                                                     const BsonElement& value) {
  HG_ASSIGN_OR_RETURN(RawOptions mod, ParseRaw(value, kCollModContext, /*with_names=*/false));
  if (!mod.granularity && !mod.bucket_max_span_seconds && !mod.bucket_rounding_seconds) {
    return current;  // `timeseries: {}` changes nothing
  }

  int64_t target_span = 0;
  int64_t target_rounding = 0;
  if (mod.granularity) {
    const std::string& target = *mod.granularity;
    if (mod.bucket_max_span_seconds &&
        *mod.bucket_max_span_seconds != PresetMaxSpanSeconds(target)) {
      return Status(ErrorCode::kInvalidOptions, std::string(kModSpanNotDefault));
    }
    if (mod.bucket_rounding_seconds) {
      return Status(ErrorCode::kInvalidOptions, std::string(kModRoundingWithGranularity));
    }
    if (current.granularity) {
      if (*current.granularity == target) return current;
      if (GranularityRank(target) < GranularityRank(*current.granularity)) {
        return Status(ErrorCode::kInvalidOptions, std::string(kModBadGranularityTransition));
      }
      TimeseriesOptions next = current;
      next.granularity = target;
      next.bucket_max_span_seconds = PresetMaxSpanSeconds(target);
      next.bucket_rounding_seconds.reset();
      return next;
    }
    target_span = PresetMaxSpanSeconds(target);
    target_rounding = PresetRoundingSeconds(target);
  } else {
    if (!mod.bucket_max_span_seconds || !mod.bucket_rounding_seconds) {
      return Status(ErrorCode::kInvalidOptions, std::string(kModNeedBoth));
    }
    target_span = *mod.bucket_max_span_seconds;
    target_rounding = *mod.bucket_rounding_seconds;
    if (target_span != target_rounding) {
      return Status(ErrorCode::kInvalidOptions, std::string(kModRoundingMustEqualSpan));
    }
  }

  int64_t current_span = current.bucket_max_span_seconds;
  int64_t current_rounding = current.RoundingSeconds();
  if (current_span == target_span && current_rounding == target_rounding) return current;
  if (current_span > target_span) {
    return Status(ErrorCode::kInvalidOptions, std::string(kModSpanMustGrow));
  }
  if (current_rounding > target_rounding) {
    return Status(ErrorCode::kInvalidOptions, std::string(kModRoundingMustGrow));
  }
  TimeseriesOptions next = current;
  next.bucket_max_span_seconds = target_span;
  if (mod.granularity) {
    next.granularity = mod.granularity;
    next.bucket_rounding_seconds.reset();
  } else {
    next.granularity.reset();
    next.bucket_rounding_seconds = target_rounding;
  }
  return next;
}

int64_t RoundTimeDownMillis(int64_t millis, int64_t rounding_seconds) {
  invariant(rounding_seconds > 0 && rounding_seconds <= std::numeric_limits<int64_t>::max() / 1000);
  const int64_t r = rounding_seconds * 1000;
  int64_t rounded = millis - millis % r;  // toward zero
  if (rounded > millis) {
    // Negative times round toward zero above; step one more unit down unless that would pass
    // the smallest representable date.
    if (rounded < std::numeric_limits<int64_t>::min() + r) {
      return std::numeric_limits<int64_t>::min();
    }
    rounded -= r;
  }
  return rounded;
}

StatusWith<std::shared_ptr<const TimeseriesOptions>> TimeseriesOptionsOf(
    const catalog::Collection& coll) {
  return coll.Derived<TimeseriesOptions>([&]() -> StatusWith<TimeseriesOptions> {
    bson::BsonElement stored = coll.entry().options["timeseries"];
    if (stored.type() != bson::BsonType::kObject) {
      return Status(ErrorCode::kBadValue, coll.ns() + " has no time-series options");
    }
    return TimeseriesOptions::FromBson(stored.Obj());
  });
}

}  // namespace hourglass::timeseries
