// Calendar arithmetic and time zones for the date operators: civil-date conversion
// (proleptic Gregorian), TimeZone over the system tz database (Howard Hinnant's date/tz.h with
// USE_OS_TZDB, reading /usr/share/zoneinfo), and MongoDB's dateAdd/dateDiff rules.
#include <date/tz.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "pipeline/expression_internal.h"

namespace hourglass::pipeline::internal {

using bson::BsonType;

namespace {

constexpr int64_t kMsPerDay = 86400000;

void CivilFromDays(int64_t z, int64_t* y, int* m, int* d) {
  z += 719468;
  const int64_t era = FloorDiv(z, 146097);
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  *d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  *m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

const date::time_zone* Zone(const void* z) { return static_cast<const date::time_zone*>(z); }

}  // namespace

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = FloorDiv(y, 400);
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int DaysInMonth(int64_t y, int m) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

CivilTime ToCivil(int64_t millis) {
  CivilTime t{};
  int64_t days = FloorDiv(millis, kMsPerDay);
  int64_t ms = millis - days * kMsPerDay;
  CivilFromDays(days, &t.year, &t.month, &t.day);
  t.hour = static_cast<int>(ms / 3600000);
  t.minute = static_cast<int>(ms / 60000 % 60);
  t.second = static_cast<int>(ms / 1000 % 60);
  t.millis = static_cast<int>(ms % 1000);
  // 1970-01-01 was a Thursday (5 in $dayOfWeek's 1 = Sunday numbering).
  t.day_of_week = static_cast<int>(((days % 7) + 7 + 4) % 7) + 1;
  t.day_of_year = static_cast<int>(days - DaysFromCivil(t.year, 1, 1)) + 1;
  return t;
}

int64_t FromCivil(int64_t year, int month, int day, int hour, int minute, int second, int millis) {
  // Normalise an out-of-range month so carries work like MongoDB's $dateFromParts.
  int64_t m0 = month - 1;
  year += FloorDiv(m0, 12);
  m0 -= FloorDiv(m0, 12) * 12;
  int64_t days = DaysFromCivil(year, static_cast<int>(m0) + 1, 1) + (day - 1);
  return days * kMsPerDay + int64_t{hour} * 3600000 + int64_t{minute} * 60000 +
         int64_t{second} * 1000 + millis;
}

std::string FormatIsoDate(int64_t millis) {
  CivilTime t = ToCivil(millis);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ",
                static_cast<long long>(t.year), t.month, t.day, t.hour, t.minute, t.second,
                t.millis);
  return buf;
}

int64_t TimeZone::OffsetAt(int64_t utc_ms) const {
  int64_t from = 0, until = 0;
  return OffsetAt(utc_ms, &from, &until);
}

int64_t TimeZone::OffsetAt(int64_t utc_ms, int64_t* from, int64_t* until) const {
  if (zone_ == nullptr) {
    *from = INT64_MIN;
    *until = INT64_MAX;
    return fixed_ms_;
  }
  const date::sys_seconds t{std::chrono::seconds{FloorDiv(utc_ms, 1000)}};
  const date::sys_info info = Zone(zone_)->get_info(t);
  // The tz database's first and last ranges reach far past what milliseconds can hold.
  auto to_ms = [](date::sys_seconds s) {
    const int64_t secs = s.time_since_epoch().count();
    constexpr int64_t kLimit = INT64_MAX / 1000;
    return secs >= kLimit ? INT64_MAX : secs <= -kLimit ? INT64_MIN : secs * 1000;
  };
  *from = to_ms(info.begin);
  *until = to_ms(info.end);
  return info.offset.count() * 1000;
}

int64_t TimeZone::FromLocal(int64_t local_ms) const {
  if (zone_ == nullptr) return local_ms - fixed_ms_;
  const date::local_seconds t{std::chrono::seconds{FloorDiv(local_ms, 1000)}};
  // first is the only offset (unique), the earlier one (ambiguous), or the one in force before
  // the gap (nonexistent).
  const date::local_info info = Zone(zone_)->get_info(t);
  return local_ms - info.first.offset.count() * 1000;
}

StatusWith<TimeZone> ParseTimeZone(const Value& tz) {
  if (!tz.IsString()) {
    return PipelineError(40517, "timezone must evaluate to a string, found " + TypeNameOf(tz));
  }
  std::string_view s = tz.Str();
  TimeZone out;
  if (s == "UTC" || s == "GMT") return out;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    std::string digits;
    bool ok = true;
    for (size_t i = 1; i < s.size(); ++i) {
      if (s[i] == ':' && i == 3) continue;
      if (s[i] < '0' || s[i] > '9') ok = false;
      digits.push_back(s[i]);
    }
    ok = ok && (digits.size() == 2 || digits.size() == 4) && !(s.size() == 4 && s[3] == ':');
    if (ok) {
      int h = std::stoi(digits.substr(0, 2));
      int m = digits.size() == 4 ? std::stoi(digits.substr(2)) : 0;
      out.fixed_ms_ = int64_t{(s[0] == '-' ? -1 : 1) * (h * 60 + m)} * 60000;
      return out;
    }
  } else if (!s.empty()) {
    // Most pipelines name one zone for every document: remember the last lookup per thread.
    thread_local std::string last_name;
    thread_local const date::time_zone* last_zone = nullptr;
    if (last_zone != nullptr && s == last_name) {
      out.zone_ = last_zone;
      return out;
    }
    try {
      last_zone = date::locate_zone(s);
      last_name = std::string(s);
      out.zone_ = last_zone;
      return out;
    } catch (const std::exception&) {
      // Unknown name (or no tz database): reported below.
    }
  }
  return PipelineError(40485, "unrecognized time zone identifier: \"" + std::string(s) + "\"");
}

StatusWith<TimeZone> EvaluateTimeZone(const Expression* tz, const bson::BsonObj& root,
                                      Variables& vars, bool* null_result) {
  *null_result = false;
  if (tz == nullptr) return TimeZone();
  HG_ASSIGN_OR_RETURN(Value v, tz->Evaluate(root, vars));
  if (v.nullish()) {
    *null_result = true;
    return TimeZone();
  }
  return ParseTimeZone(v);
}

StatusWith<int64_t> DateMillisOf(std::string_view op, const Value& v) {
  switch (v.type()) {
    case BsonType::kDate:
      return v.DateMillis();
    case BsonType::kTimestamp:
      return static_cast<int64_t>(v.element().TimestampValue() >> 32) * 1000;
    case BsonType::kObjectId:
      return int64_t{v.element().Oid().Timestamp()} * 1000;
    default:
      return PipelineError(
          16006, std::string(op) + " can't convert from BSON type " + TypeNameOf(v) + " to Date");
  }
}

std::optional<TimeUnit> TimeUnitFromName(std::string_view name) {
  static const std::pair<std::string_view, TimeUnit> kUnits[] = {
      {"year", TimeUnit::kYear},
      {"quarter", TimeUnit::kQuarter},
      {"month", TimeUnit::kMonth},
      {"week", TimeUnit::kWeek},
      {"day", TimeUnit::kDay},
      {"hour", TimeUnit::kHour},
      {"minute", TimeUnit::kMinute},
      {"second", TimeUnit::kSecond},
      {"millisecond", TimeUnit::kMillisecond}};
  for (const auto& [n, unit] : kUnits) {
    if (name == n) return unit;
  }
  return std::nullopt;
}

std::optional<int64_t> FixedUnitMillis(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kMillisecond:
      return 1;
    case TimeUnit::kSecond:
      return 1000;
    case TimeUnit::kMinute:
      return 60 * 1000;
    case TimeUnit::kHour:
      return 3600 * 1000;
    case TimeUnit::kDay:
      return kMsPerDay;
    case TimeUnit::kWeek:
      return 7 * kMsPerDay;
    default:
      return std::nullopt;
  }
}

StatusWith<TimeUnit> ParseTimeUnit(std::string_view op, const Value& v) {
  if (!v.IsString()) {
    return PipelineError(
        5439013, std::string(op) + " requires 'unit' to be a string, but got " + TypeNameOf(v));
  }
  if (std::optional<TimeUnit> unit = TimeUnitFromName(v.Str())) return *unit;
  return PipelineError(5439014, std::string(op) +
                                    " parameter 'unit' value cannot be recognized as a time "
                                    "unit: " +
                                    std::string(v.Str()));
}

StatusWith<int> ParseDayOfWeek(std::string_view op, const Value& v) {
  if (!v.IsString()) {
    return PipelineError(
        5439015,
        std::string(op) + " requires 'startOfWeek' to be a string, but got " + TypeNameOf(v));
  }
  static const char* kDays[] = {"sunday",   "monday", "tuesday", "wednesday",
                                "thursday", "friday", "saturday"};
  static const char* kShort[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};
  std::string lower(v.Str());
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (int i = 0; i < 7; ++i) {
    if (lower == kDays[i] || lower == kShort[i]) return i;
  }
  return PipelineError(5439016, std::string(op) +
                                    " parameter 'startOfWeek' value cannot be recognized as a "
                                    "day of a week: " +
                                    std::string(v.Str()));
}

namespace {

// MongoDB's bound on |amount| per unit: roughly the span of a 64-bit millisecond date.
int64_t MaxDateAddAmount(TimeUnit unit) {
  constexpr int64_t kMaxDays = static_cast<int64_t>(UINT64_MAX / 86400000ULL) + 1;
  constexpr int64_t kMaxYears = kMaxDays / 365 + 1;
  switch (unit) {
    case TimeUnit::kYear:
      return kMaxYears;
    case TimeUnit::kQuarter:
      return kMaxYears * 4;
    case TimeUnit::kMonth:
      return kMaxYears * 12;
    case TimeUnit::kWeek:
      return kMaxDays / 7;
    case TimeUnit::kDay:
      return kMaxDays;
    case TimeUnit::kHour:
      return kMaxDays * 24;
    case TimeUnit::kMinute:
      return kMaxDays * 24 * 60;
    case TimeUnit::kSecond:
      return kMaxDays * 24 * 3600;
    case TimeUnit::kMillisecond:
      break;
  }
  return INT64_MAX;
}

const char* UnitName(TimeUnit unit) {
  static const char* kNames[] = {"year", "quarter", "month",  "week",       "day",
                                 "hour", "minute",  "second", "millisecond"};
  return kNames[static_cast<int>(unit)];
}

}  // namespace

StatusWith<int64_t> DateAdd(int64_t utc_ms, TimeUnit unit, int64_t amount, const TimeZone& tz) {
  // Built only on failure: DateAdd runs per document in $densify and range windows.
  auto overflow = [] { return PipelineError(5166406, "dateAdd overflowed"); };
  const int64_t max_amount = MaxDateAddAmount(unit);
  if (unit != TimeUnit::kMillisecond && (amount <= -max_amount || amount >= max_amount)) {
    return PipelineError(5976500, "invalid dateAdd 'amount' parameter value: " +
                                      std::to_string(amount) + " " + UnitName(unit));
  }
  int64_t out = 0;
  if (unit == TimeUnit::kMillisecond || unit == TimeUnit::kSecond || unit == TimeUnit::kMinute ||
      unit == TimeUnit::kHour) {
    // Elapsed time: no wall-clock correction across DST transitions.
    int64_t delta = 0;
    if (__builtin_mul_overflow(amount, *FixedUnitMillis(unit), &delta) ||
        __builtin_add_overflow(utc_ms, delta, &out)) {
      return overflow();
    }
    return out;
  }
  // Day and larger: move the local wall clock, keeping the time of day.
  const int64_t local = tz.ToLocal(utc_ms);
  if (unit == TimeUnit::kDay || unit == TimeUnit::kWeek) {
    int64_t delta = 0;
    if (__builtin_mul_overflow(amount, (unit == TimeUnit::kWeek ? 7 : 1) * kMsPerDay, &delta) ||
        __builtin_add_overflow(local, delta, &out)) {
      return overflow();
    }
    return tz.FromLocal(out);
  }
  const int64_t months_per = unit == TimeUnit::kYear ? 12 : unit == TimeUnit::kQuarter ? 3 : 1;
  int64_t months = 0;
  if (__builtin_mul_overflow(amount, months_per, &months) || months > 12 * 300000000LL ||
      months < -12 * 300000000LL) {
    return overflow();
  }
  CivilTime t = ToCivil(local);
  int64_t m0 = t.year * 12 + (t.month - 1) + months;
  int64_t y = FloorDiv(m0, 12);
  int m = static_cast<int>(m0 - y * 12) + 1;
  int d = std::min(t.day, DaysInMonth(y, m));
  const int64_t time_of_day = local - FloorDiv(local, kMsPerDay) * kMsPerDay;
  const int64_t days = DaysFromCivil(y, m, d);
  // Whole days a 64-bit millisecond date can hold, minus one for the time of day.
  if (days >= 106751991167LL || days <= -106751991167LL) return overflow();
  return tz.FromLocal(days * kMsPerDay + time_of_day);
}

int64_t DateDiff(int64_t start, int64_t end, TimeUnit unit, const TimeZone& tz, int start_dow) {
  if (unit == TimeUnit::kMillisecond) return end - start;
  const int64_t off1 = tz.OffsetAt(start), off2 = tz.OffsetAt(end);
  const CivilTime a = ToCivil(start + off1), b = ToCivil(end + off2);
  const int64_t years = b.year - a.year;
  const int64_t days =
      DaysFromCivil(b.year, b.month, b.day) - DaysFromCivil(a.year, a.month, a.day);
  // Hours/minutes/seconds count local boundaries, corrected by the change of UTC offset so that
  // a DST transition does not add or lose an hour.
  const int64_t hours = b.hour - a.hour + days * 24;
  const int64_t minutes = b.minute - a.minute + hours * 60;
  switch (unit) {
    case TimeUnit::kYear:
      return years;
    case TimeUnit::kQuarter:
      return (b.month - 1) / 3 - (a.month - 1) / 3 + years * 4;
    case TimeUnit::kMonth:
      return b.month - a.month + years * 12;
    case TimeUnit::kWeek: {
      const int64_t dow_a = (a.day_of_week - 1 - start_dow + 7) % 7;
      const int64_t dow_b = (b.day_of_week - 1 - start_dow + 7) % 7;
      return (days + dow_a - dow_b) / 7;
    }
    case TimeUnit::kDay:
      return days;
    case TimeUnit::kHour:
      return hours + (off1 - off2) / 3600000;
    case TimeUnit::kMinute:
      return minutes + (off1 - off2) / 60000;
    case TimeUnit::kSecond:
      return b.second - a.second + minutes * 60 + (off1 - off2) / 1000;
    case TimeUnit::kMillisecond:
      break;
  }
  return end - start;
}

Status ParseNamedArgs(std::string_view op, const bson::BsonElement& operand,
                      const ParseContext& ctx,
                      std::initializer_list<std::pair<std::string_view, ExpressionPtr*>> slots,
                      int not_object_code, int unknown_code) {
  if (operand.type() != BsonType::kObject) {
    return PipelineError(not_object_code,
                         std::string(op) + " only supports an object as its argument");
  }
  for (const auto& f : operand.Obj()) {
    bool found = false;
    for (const auto& [name, slot] : slots) {
      if (f.FieldName() == name) {
        HG_ASSIGN_OR_RETURN(*slot, Expression::ParseExpression(f, ctx));
        found = true;
      }
    }
    if (!found) {
      return PipelineError(unknown_code, "Unrecognized argument to " + std::string(op) + ": " +
                                             std::string(f.FieldName()));
    }
  }
  return Status::OK();
}

}  // namespace hourglass::pipeline::internal
