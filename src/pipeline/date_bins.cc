#include "pipeline/date_bins.h"

#include <algorithm>
#include <string_view>

#include "pipeline/dependencies.h"
#include "pipeline/expression_internal.h"

namespace hourglass::pipeline {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

DateTruncBins DateTruncBinsOf(const BsonObj& args) {
  BsonElement unit = args["unit"];
  if (unit.type() != BsonType::kString) return {};
  const std::string_view u = unit.Str();
  // Calendar units: the shortest such bin (a day may last 23 hours across a DST change).
  constexpr int64_t kHour = 3'600'000, kDay = 23 * kHour;
  int64_t width = u == "millisecond" ? 1
                  : u == "second"    ? 1000
                  : u == "minute"    ? 60'000
                  : u == "hour"      ? kHour
                  : u == "day"       ? kDay
                  : u == "week"      ? 7 * 24 * kHour - kHour
                  : u == "month"     ? 28 * 24 * kHour - kHour
                  : u == "quarter"   ? 89 * 24 * kHour - kHour
                  : u == "year"      ? 365 * 24 * kHour - kHour
                                     : 0;
  if (width == 0) return {};
  BsonElement bin = args["binSize"];
  if (!bin.eoo()) {
    if (!bin.IsNumber() || bin.type() == BsonType::kDecimal128 || bin.NumberLong() <= 0 ||
        static_cast<double>(bin.NumberLong()) != bin.NumberDouble() ||
        __builtin_mul_overflow(width, bin.NumberLong(), &width)) {
      return {};
    }
  }
  return {width, u == "millisecond" || u == "second" || u == "minute" || u == "hour"};
}

void DatePartBins::BinOf(int64_t date, int64_t* lo, int64_t* hi) const {
  int64_t from = INT64_MIN, until = INT64_MAX;
  int64_t o = origin;
  if (!zone.fixed()) {
    const int64_t offset = zone.OffsetAt(date, &from, &until);
    o = -offset % width;
    if (o < 0) o += width;
  }
  const __int128 x = static_cast<__int128>(date) - o;  // no overflow near the extremes
  const __int128 k = x / width - (x % width != 0 && x < 0);
  const __int128 start = static_cast<__int128>(o) + k * width;
  const __int128 end = start + width;
  *lo = static_cast<int64_t>(std::max<__int128>(start, from));
  *hi = static_cast<int64_t>(std::min<__int128>(end, until));
}

bool DatePartBins::SameBin(int64_t a, int64_t b) const {
  int64_t lo = 0, hi = 0;
  BinOf(a, &lo, &hi);
  return b >= lo && b < hi;
}

namespace {

constexpr int64_t kMinute = 60'000, kHour = 60 * kMinute, kDay = 24 * kHour;

// The width of the bins a $dateToString format is constant on, or 0 (seconds or finer).
int64_t FormatWidth(std::string_view format) {
  int64_t width = kDay;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') continue;
    if (i + 1 >= format.size()) return 0;  // an error for the per-row path to report
    const char c = format[++i];
    if (c == 'H') {
      width = std::min(width, kHour);
    } else if (c == 'M') {
      width = std::min(width, kMinute);
    } else if (std::string_view("dGjmuUVwYzZbB%").find(c) == std::string_view::npos) {
      return 0;  // %S, %L, or an unknown specifier
    }
  }
  return width;
}

}  // namespace

std::optional<DatePartBins> DatePartBinsOf(const BsonObj& expr) {
  if (expr.NumFields() != 1) return std::nullopt;
  const BsonElement op = expr.FirstElement();
  const std::string_view name = op.FieldName();
  BsonElement date, timezone;
  int64_t width = 0;
  if (name == "$dateToString") {
    if (op.type() != BsonType::kObject) return std::nullopt;
    BsonElement format;
    for (const BsonElement& arg : op.Obj()) {
      const std::string_view n = arg.FieldName();
      if (n == "date") {
        date = arg;
      } else if (n == "timezone") {
        timezone = arg;
      } else if (n == "format") {
        format = arg;
      } else if (n != "onNull") {  // the value of a missing or null date: not a bin's concern
        return std::nullopt;
      }
    }
    if (format.type() != BsonType::kString) return std::nullopt;  // the default shows millis
    width = FormatWidth(format.Str());
  } else {
    if (name == "$minute") {
      width = kMinute;
    } else if (name == "$hour") {
      width = kHour;
    } else if (name == "$year" || name == "$month" || name == "$dayOfMonth" ||
               name == "$dayOfWeek" || name == "$dayOfYear" || name == "$week" ||
               name == "$isoWeek" || name == "$isoWeekYear" || name == "$isoDayOfWeek") {
      width = kDay;
    } else {
      return std::nullopt;
    }
    // {$op: <date>}, {$op: [<date>]} or {$op: {date, timezone}}.
    if (op.type() == BsonType::kArray) {
      if (op.Obj().NumFields() != 1) return std::nullopt;
      date = op.Obj().FirstElement();
    } else if (op.type() == BsonType::kObject) {
      for (const BsonElement& arg : op.Obj()) {
        if (arg.FieldName() == "date") {
          date = arg;
        } else if (arg.FieldName() == "timezone") {
          timezone = arg;
        } else {
          return std::nullopt;
        }
      }
    } else {
      date = op;
    }
  }
  const std::optional<std::string_view> d = TopLevelFieldReference(date);
  if (width == 0 || !d) return std::nullopt;
  internal::TimeZone zone;
  if (!timezone.eoo()) {
    if (timezone.type() != BsonType::kString) return std::nullopt;
    StatusWith<internal::TimeZone> tz = internal::ParseTimeZone(Value::FromElement(timezone));
    if (!tz.ok()) return std::nullopt;  // an error for the per-row path to report
    zone = tz.value();
  }
  // Local time is UTC + offset: a local bin [k * width, (k + 1) * width) starts at the UTC
  // instant k * width - offset. (A named zone's offset is looked up per bin: BinOf.)
  int64_t origin = 0;
  if (zone.fixed()) {
    origin = -zone.OffsetAt(0) % width;
    if (origin < 0) origin += width;
  }
  return DatePartBins{std::string(*d), width, origin, zone};
}

}  // namespace hourglass::pipeline
