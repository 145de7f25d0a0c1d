// Date operators: calendar fields, $dateToString, $dateTrunc, $dateFromParts, $dateToParts.
// Every `timezone` argument accepts an Olson name or a fixed "+hh:mm" offset (date_time.cc).
// $dateAdd/$dateSubtract/$dateDiff/$dateFromString are in expr_date_arith.cc.
#include <cstdio>

#include "pipeline/expression_internal.h"

namespace hourglass::pipeline::internal {

namespace {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

constexpr int64_t kMsPerDay = 86400000;

}  // namespace

bool ParseIsoDate(std::string_view s, int64_t* millis) {
  IsoDateParts p;
  if (!ParseIsoDateParts(s, &p)) return false;
  *millis = p.local_ms - (p.has_offset ? p.offset_ms : 0);
  return true;
}

bool ParseIsoDateParts(std::string_view s, IsoDateParts* out) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, ms = 0;
  size_t i = 0;
  auto digits = [&](int n, int* v) {
    if (i + n > s.size()) return false;
    int x = 0;
    for (int k = 0; k < n; ++k) {
      char c = s[i + k];
      if (c < '0' || c > '9') return false;
      x = x * 10 + (c - '0');
    }
    i += n;
    *v = x;
    return true;
  };
  auto expect = [&](char c) {
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  };
  if (!digits(4, &y) || !expect('-') || !digits(2, &mo) || !expect('-') || !digits(2, &d)) {
    return false;
  }
  out->has_offset = false;
  out->offset_ms = 0;
  if (i < s.size() && (s[i] == 'T' || s[i] == ' ')) {
    ++i;
    if (!digits(2, &h) || !expect(':') || !digits(2, &mi)) return false;
    if (expect(':') && !digits(2, &sec)) return false;
    if (expect('.')) {
      int frac = 0, n = 0;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        if (n < 3) frac = frac * 10 + (s[i] - '0');
        ++n;
        ++i;
      }
      if (n == 0) return false;
      for (int k = n; k < 3; ++k) frac *= 10;
      ms = frac;
    }
    if (expect('Z')) {
      out->has_offset = true;
    } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
      int sign = s[i] == '-' ? -1 : 1;
      ++i;
      int oh = 0, om = 0;
      if (!digits(2, &oh)) return false;
      expect(':');
      if (i < s.size() && !digits(2, &om)) return false;
      out->has_offset = true;
      out->offset_ms = int64_t{sign * (oh * 60 + om)} * 60000;
    }
  }
  if (i != s.size() || mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo) || h > 23 || mi > 59 ||
      sec > 59) {
    return false;
  }
  out->local_ms = FromCivil(y, mo, d, h, mi, sec, ms);
  return true;
}

IsoWeekDate ToIsoWeek(int64_t local_ms) {
  const int64_t days = FloorDiv(local_ms, kMsPerDay);
  const int iso_dow = static_cast<int>(((days % 7) + 7 + 3) % 7) + 1;  // 1970-01-01: Thursday (4)
  const int64_t thursday = days + (4 - iso_dow);
  const CivilTime t = ToCivil(thursday * kMsPerDay);
  return {t.year, (t.day_of_year - 1) / 7 + 1, iso_dow};
}

int64_t FromIsoWeek(int64_t iso_year, int64_t week, int64_t iso_dow) {
  const int64_t jan4 = DaysFromCivil(iso_year, 1, 4);
  const int64_t jan4_dow = ((jan4 % 7) + 7 + 3) % 7 + 1;
  const int64_t monday = jan4 - (jan4_dow - 1);
  return (monday + (week - 1) * 7 + (iso_dow - 1)) * kMsPerDay;
}

namespace {

// $week: weeks start on Sunday; days before the year's first Sunday are week 0.
int WeekOfYear(const CivilTime& t) {
  int jan1_dow = ((t.day_of_week - 1 - (t.day_of_year - 1)) % 7 + 7) % 7;  // 0 = Sunday
  return (t.day_of_year - 1 + jan1_dow) / 7;
}

// $year, $month, ...: {$op: <date>}, {$op: [<date>]} or {$op: {date, timezone}}.
class DatePartExpression : public Expression {
 public:
  std::string_view op;
  ExpressionPtr date, timezone;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value d, date->Evaluate(root, vars));
    if (d.nullish()) return Value::Null();  // before the time zone, as MongoDB
    bool null_tz = false;
    HG_ASSIGN_OR_RETURN(TimeZone tz, EvaluateTimeZone(timezone.get(), root, vars, &null_tz));
    if (null_tz) return Value::Null();
    HG_ASSIGN_OR_RETURN(int64_t ms, DateMillisOf(op, d));
    const int64_t local = tz.ToLocal(ms);
    CivilTime t = ToCivil(local);
    if (op == "$year") return Value::IntOrLong(t.year);
    if (op == "$month") return Value::Int(t.month);
    if (op == "$dayOfMonth") return Value::Int(t.day);
    if (op == "$hour") return Value::Int(t.hour);
    if (op == "$minute") return Value::Int(t.minute);
    if (op == "$second") return Value::Int(t.second);
    if (op == "$millisecond") return Value::Int(t.millis);
    if (op == "$dayOfWeek") return Value::Int(t.day_of_week);
    if (op == "$dayOfYear") return Value::Int(t.day_of_year);
    if (op == "$week") return Value::Int(WeekOfYear(t));
    IsoWeekDate iso = ToIsoWeek(local);
    if (op == "$isoWeek") return Value::Int(static_cast<int>(iso.week));
    if (op == "$isoWeekYear") return Value::IntOrLong(iso.year);
    return Value::Int(static_cast<int>(iso.day_of_week));  // $isoDayOfWeek
  }
};

StatusWith<ExpressionPtr> ParseDatePart(std::string_view op, const BsonElement& operand,
                                        const ParseContext& ctx) {
  auto e = std::make_unique<DatePartExpression>();
  e->op = op;
  if (operand.type() == BsonType::kObject && !operand.Obj().IsEmpty() &&
      operand.Obj().FirstElement().FieldName().substr(0, 1) != "$") {
    for (const auto& f : operand.Obj()) {
      HG_ASSIGN_OR_RETURN(auto x, Expression::ParseExpression(f, ctx));
      if (f.FieldName() == "date") {
        e->date = std::move(x);
      } else if (f.FieldName() == "timezone") {
        e->timezone = std::move(x);
      } else {
        return PipelineError(40535, "unrecognized option to " + std::string(op) + ": \"" +
                                        std::string(f.FieldName()) + "\"");
      }
    }
    if (!e->date) {
      return PipelineError(40539, "missing 'date' argument to " + std::string(op) +
                                      ", provided: " + operand.Obj().ToJson());
    }
    return ExpressionPtr(std::move(e));
  }
  HG_ASSIGN_OR_RETURN(auto args, ParseArguments(operand, ctx));
  HG_RETURN_IF_ERROR(CheckArity(op, args.size(), 1, 1));
  e->date = std::move(args[0]);
  return ExpressionPtr(std::move(e));
}

const char* const kMonthNames[] = {"January",   "February", "March",    "April",
                                   "May",       "June",     "July",     "August",
                                   "September", "October",  "November", "December"};

// Checks a $dateToString format: 18535 for a trailing '%', 18536 for an unknown specifier.
Status ValidateFormat(std::string_view fmt) {
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') continue;
    if (i + 1 >= fmt.size()) return PipelineError(18535, "Unmatched '%' at end of format string");
    char c = fmt[++i];
    if (std::string_view("dGHjLmMSuUVwYzZbB%").find(c) == std::string_view::npos) {
      return PipelineError(18536,
                           std::string("Invalid format character '%") + c + "' in format string");
    }
  }
  return Status::OK();
}

std::string FormatDate(std::string_view fmt, int64_t utc_ms, const TimeZone& tz) {
  const int64_t offset = tz.OffsetAt(utc_ms);
  const int64_t local = utc_ms + offset;
  const CivilTime t = ToCivil(local);
  const IsoWeekDate iso = ToIsoWeek(local);
  std::string out;
  char buf[32];
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%' || i + 1 >= fmt.size()) {
      out.push_back(fmt[i]);
      continue;
    }
    buf[0] = '\0';
    switch (fmt[++i]) {
      case 'Y':
        std::snprintf(buf, sizeof buf, "%04lld", static_cast<long long>(t.year));
        break;
      case 'G':
        std::snprintf(buf, sizeof buf, "%04lld", static_cast<long long>(iso.year));
        break;
      case 'm':
        std::snprintf(buf, sizeof buf, "%02d", t.month);
        break;
      case 'd':
        std::snprintf(buf, sizeof buf, "%02d", t.day);
        break;
      case 'H':
        std::snprintf(buf, sizeof buf, "%02d", t.hour);
        break;
      case 'M':
        std::snprintf(buf, sizeof buf, "%02d", t.minute);
        break;
      case 'S':
        std::snprintf(buf, sizeof buf, "%02d", t.second);
        break;
      case 'L':
        std::snprintf(buf, sizeof buf, "%03d", t.millis);
        break;
      case 'j':
        std::snprintf(buf, sizeof buf, "%03d", t.day_of_year);
        break;
      case 'w':
        std::snprintf(buf, sizeof buf, "%d", t.day_of_week);
        break;
      case 'u':
        std::snprintf(buf, sizeof buf, "%d", static_cast<int>(iso.day_of_week));
        break;
      case 'U':
        std::snprintf(buf, sizeof buf, "%02d", WeekOfYear(t));
        break;
      case 'V':
        std::snprintf(buf, sizeof buf, "%02d", static_cast<int>(iso.week));
        break;
      case 'b':
        std::snprintf(buf, sizeof buf, "%.3s", kMonthNames[t.month - 1]);
        break;
      case 'B':
        std::snprintf(buf, sizeof buf, "%s", kMonthNames[t.month - 1]);
        break;
      case 'z': {
        int64_t m = offset / 60000;
        std::snprintf(buf, sizeof buf, "%c%02lld%02lld", m < 0 ? '-' : '+',
                      static_cast<long long>((m < 0 ? -m : m) / 60),
                      static_cast<long long>((m < 0 ? -m : m) % 60));
        break;
      }
      case 'Z':
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(offset / 60000));
        break;
      default:  // '%' (others were rejected by ValidateFormat)
        std::snprintf(buf, sizeof buf, "%%");
        break;
    }
    out.append(buf);
  }
  return out;
}

class DateToStringExpression : public Expression {
 public:
  ExpressionPtr format, date, timezone, on_null;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value d, date->Evaluate(root, vars));
    Value f;
    if (format) {
      HG_ASSIGN_OR_RETURN(f, format->Evaluate(root, vars));
      if (!f.nullish()) {
        if (!f.IsString()) {
          return PipelineError(18533, "$dateToString requires that 'format' be a string, found: " +
                                          TypeNameOf(f) + " with value " + f.ToString());
        }
        HG_RETURN_IF_ERROR(ValidateFormat(f.Str()));
      }
    }
    bool null_tz = false;
    HG_ASSIGN_OR_RETURN(TimeZone tz, EvaluateTimeZone(timezone.get(), root, vars, &null_tz));
    if (d.nullish()) return on_null ? on_null->Evaluate(root, vars) : Value::Null();
    if (null_tz || (format && f.nullish())) return Value::Null();
    HG_ASSIGN_OR_RETURN(int64_t ms, DateMillisOf("$dateToString", d));
    std::string fmt = format     ? std::string(f.Str())
                      : tz.utc() ? "%Y-%m-%dT%H:%M:%S.%LZ"
                                 : "%Y-%m-%dT%H:%M:%S.%L";
    return Value::String(FormatDate(fmt, ms, tz));
  }
};

StatusWith<ExpressionPtr> ParseDateToString(std::string_view op, const BsonElement& operand,
                                            const ParseContext& ctx) {
  auto e = std::make_unique<DateToStringExpression>();
  HG_RETURN_IF_ERROR(ParseNamedArgs(op, operand, ctx,
                                    {{"format", &e->format},
                                     {"date", &e->date},
                                     {"timezone", &e->timezone},
                                     {"onNull", &e->on_null}}));
  if (!e->date) return PipelineError(18628, "Missing 'date' parameter to $dateToString");
  if (e->format && e->format->ConstantValue() && e->format->ConstantValue()->IsString()) {
    HG_RETURN_IF_ERROR(ValidateFormat(e->format->ConstantValue()->Str()));
  }
  return ExpressionPtr(std::move(e));
}

// $dateTrunc as MongoDB defines it: bins of binSize units counted from 2000-01-01T00:00:00 in the
// time zone (weeks from the first startOfWeek day on or after it). Units up to an hour bin
// elapsed time; days and larger bin local calendar units.
class DateTruncExpression : public Expression {
 public:
  ExpressionPtr date, unit, bin_size, timezone, start_of_week;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value d, date->Evaluate(root, vars));
    if (d.nullish()) return Value::Null();
    int64_t bin = 1;
    if (bin_size) {
      HG_ASSIGN_OR_RETURN(Value b, bin_size->Evaluate(root, vars));
      if (b.nullish()) return Value::Null();
      if (!b.numeric() || b.NumberLong() <= 0 ||
          static_cast<double>(b.NumberLong()) != b.NumberDouble()) {
        return PipelineError(5439017,
                             "$dateTrunc requires 'binSize' to be a positive 64-bit "
                             "integer, but got value '" +
                                 b.ToString() + "' of type " + TypeNameOf(b));
      }
      bin = b.NumberLong();
    }
    HG_ASSIGN_OR_RETURN(Value u, unit->Evaluate(root, vars));
    if (u.nullish()) return Value::Null();
    HG_ASSIGN_OR_RETURN(TimeUnit un, ParseTimeUnit("$dateTrunc", u));
    int start_dow = 0;
    if (un == TimeUnit::kWeek && start_of_week) {
      HG_ASSIGN_OR_RETURN(Value s, start_of_week->Evaluate(root, vars));
      if (s.nullish()) return Value::Null();
      HG_ASSIGN_OR_RETURN(start_dow, ParseDayOfWeek("$dateTrunc", s));
    }
    bool null_tz = false;
    HG_ASSIGN_OR_RETURN(TimeZone tz, EvaluateTimeZone(timezone.get(), root, vars, &null_tz));
    if (null_tz) return Value::Null();
    if (d.type() != BsonType::kDate && d.type() != BsonType::kTimestamp &&
        d.type() != BsonType::kObjectId) {
      return PipelineError(5439012,
                           "$dateTrunc requires 'date' to be a date, but got " + TypeNameOf(d));
    }
    HG_ASSIGN_OR_RETURN(int64_t ms, DateMillisOf("$dateTrunc", d));
    const int64_t ref_utc_base = FromCivil(2000, 1, 1, 0, 0, 0, 0);
    int64_t ref = ref_utc_base - tz.OffsetAt(ref_utc_base);
    int64_t unit_ms = un == TimeUnit::kMillisecond ? 1
                      : un == TimeUnit::kSecond    ? 1000
                      : un == TimeUnit::kMinute    ? 60000
                      : un == TimeUnit::kHour      ? 3600000
                                                   : 0;
    if (unit_ms > 0) {
      int64_t w = 0;
      if (__builtin_mul_overflow(unit_ms, bin, &w)) {
        return PipelineError(5439002, "dateTrunc overflowed");
      }
      int64_t rem = (ms - ref) % w;
      if (rem < 0) rem += w;
      return Value::Date(ms - rem);
    }
    if (bin > 100000000000LL) return PipelineError(5439006, "dateTrunc unsupported binSize value");
    if (un == TimeUnit::kWeek) {
      // 2000-01-01 was a Saturday (6); move to the first startOfWeek on or after it. No DST
      // transition happens in early January, so whole days of milliseconds are exact.
      ref += int64_t{(start_dow - 6 + 7) % 7} * kMsPerDay;
    }
    int64_t dist = DateDiff(ref, ms, un, tz, start_dow);
    int64_t rem = dist % bin;
    if (rem < 0) rem += bin;
    HG_ASSIGN_OR_RETURN(int64_t out, DateAdd(ref, un, dist - rem, tz));
    return Value::Date(out);
  }
};

StatusWith<ExpressionPtr> ParseDateTrunc(std::string_view op, const BsonElement& operand,
                                         const ParseContext& ctx) {
  auto e = std::make_unique<DateTruncExpression>();
  HG_RETURN_IF_ERROR(ParseNamedArgs(op, operand, ctx,
                                    {{"date", &e->date},
                                     {"unit", &e->unit},
                                     {"binSize", &e->bin_size},
                                     {"timezone", &e->timezone},
                                     {"startOfWeek", &e->start_of_week}},
                                    5439007, 5439008));
  if (!e->date) return PipelineError(5439010, "$dateTrunc requires 'date' to be present");
  if (!e->unit) return PipelineError(5439011, "$dateTrunc requires 'unit' to be present");
  return ExpressionPtr(std::move(e));
}

// {year|isoWeekYear, month|isoWeek, day|isoDayOfWeek, hour, minute, second, millisecond,
// timezone}: the parts are local time in `timezone`; out-of-range parts carry over.
class DateFromPartsExpression : public Expression {
 public:
  ExpressionPtr parts[7];  // year month day hour minute second millisecond
  ExpressionPtr iso[3];    // isoWeekYear isoWeek isoDayOfWeek
  ExpressionPtr timezone;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    static const char* kNames[] = {"year",   "month",  "day",        "hour",
                                   "minute", "second", "millisecond"};
    static const char* kIsoNames[] = {"isoWeekYear", "isoWeek", "isoDayOfWeek"};
    const bool iso_form = iso[0] != nullptr;
    int64_t v[7] = {1970, 1, 1, 0, 0, 0, 0};
    int64_t w[3] = {1970, 1, 1};
    for (int i = 0; i < 10; ++i) {
      const ExpressionPtr& x = i < 7 ? parts[i] : iso[i - 7];
      const char* name = i < 7 ? kNames[i] : kIsoNames[i - 7];
      if (!x) continue;
      HG_ASSIGN_OR_RETURN(Value p, x->Evaluate(root, vars));
      if (p.nullish()) return Value::Null();
      if (!p.numeric() || static_cast<double>(p.NumberLong()) != p.NumberDouble()) {
        return PipelineError(40515, std::string("'") + name +
                                        "' must evaluate to an integer, found " + TypeNameOf(p) +
                                        " with value " + p.ToString());
      }
      int64_t n = p.NumberLong();
      if (i == 0 || i == 7) {
        if (n < 1 || n > 9999) {
          return PipelineError(i == 0 ? 40523 : 31095,
                               std::string("'") + name +
                                   "' must evaluate to an integer in the range 1 to 9999, found " +
                                   std::to_string(n));
        }
      } else if (n < -32768 || n > 32767) {
        return PipelineError(31034, std::string("'") + name +
                                        "' must evaluate to a value in the range [-32768, "
                                        "32767]; value " +
                                        std::to_string(n) + " is not in range");
      }
      (i < 7 ? v[i] : w[i - 7]) = n;
    }
    bool null_tz = false;
    HG_ASSIGN_OR_RETURN(TimeZone tz, EvaluateTimeZone(timezone.get(), root, vars, &null_tz));
    if (null_tz) return Value::Null();
    int64_t day_ms =
        iso_form ? FromIsoWeek(w[0], w[1], w[2])
                 : FromCivil(v[0], static_cast<int>(v[1]), 1, 0, 0, 0, 0) + (v[2] - 1) * kMsPerDay;
    int64_t local = day_ms + v[3] * 3600000 + v[4] * 60000 + v[5] * 1000 + v[6];
    return Value::Date(tz.FromLocal(local));
  }
};

StatusWith<ExpressionPtr> ParseDateFromParts(std::string_view op, const BsonElement& operand,
                                             const ParseContext& ctx) {
  auto e = std::make_unique<DateFromPartsExpression>();
  HG_RETURN_IF_ERROR(ParseNamedArgs(op, operand, ctx,
                                    {{"year", &e->parts[0]},
                                     {"month", &e->parts[1]},
                                     {"day", &e->parts[2]},
                                     {"hour", &e->parts[3]},
                                     {"minute", &e->parts[4]},
                                     {"second", &e->parts[5]},
                                     {"millisecond", &e->parts[6]},
                                     {"isoWeekYear", &e->iso[0]},
                                     {"isoWeek", &e->iso[1]},
                                     {"isoDayOfWeek", &e->iso[2]},
                                     {"timezone", &e->timezone}},
                                    40519, 40518));
  const bool natural = e->parts[0] || e->parts[1] || e->parts[2];
  const bool iso = e->iso[0] || e->iso[1] || e->iso[2];
  if (natural && iso) {
    return PipelineError(40489,
                         "$dateFromParts does not allow mixing natural dates with ISO dates");
  }
  if (!e->parts[0] && !e->iso[0]) {
    return PipelineError(40516,
                         "$dateFromParts requires either 'year' or 'isoWeekYear' to be "
                         "present");
  }
  return ExpressionPtr(std::move(e));
}

class DateToPartsExpression : public Expression {
 public:
  ExpressionPtr date, timezone, iso8601;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value d, date->Evaluate(root, vars));
    bool null_tz = false;
    HG_ASSIGN_OR_RETURN(TimeZone tz, EvaluateTimeZone(timezone.get(), root, vars, &null_tz));
    if (null_tz) return Value::Null();
    bool iso = false;
    if (iso8601) {
      HG_ASSIGN_OR_RETURN(Value f, iso8601->Evaluate(root, vars));
      if (f.nullish()) return Value::Null();
      if (f.type() != BsonType::kBool) {
        return PipelineError(40521, "iso8601 must evaluate to a bool, found " + TypeNameOf(f));
      }
      iso = f.Truthy();
    }
    if (d.nullish()) return Value::Null();
    HG_ASSIGN_OR_RETURN(int64_t ms, DateMillisOf("$dateToParts", d));
    const int64_t local = tz.ToLocal(ms);
    const CivilTime t = ToCivil(local);
    bson::BsonBuilder b;
    if (iso) {
      const IsoWeekDate w = ToIsoWeek(local);
      b.AppendInt32("isoWeekYear", static_cast<int32_t>(w.year));
      b.AppendInt32("isoWeek", static_cast<int32_t>(w.week));
      b.AppendInt32("isoDayOfWeek", static_cast<int32_t>(w.day_of_week));
    } else {
      b.AppendInt32("year", static_cast<int32_t>(t.year));
      b.AppendInt32("month", t.month);
      b.AppendInt32("day", t.day);
    }
    b.AppendInt32("hour", t.hour);
    b.AppendInt32("minute", t.minute);
    b.AppendInt32("second", t.second);
    b.AppendInt32("millisecond", t.millis);
    return Value::Object(b.Obj());
  }
};

StatusWith<ExpressionPtr> ParseDateToParts(std::string_view op, const BsonElement& operand,
                                           const ParseContext& ctx) {
  auto e = std::make_unique<DateToPartsExpression>();
  HG_RETURN_IF_ERROR(ParseNamedArgs(
      op, operand, ctx, {{"date", &e->date}, {"timezone", &e->timezone}, {"iso8601", &e->iso8601}},
      40524, 40520));
  if (!e->date) return PipelineError(40522, "Missing 'date' parameter to $dateToParts");
  return ExpressionPtr(std::move(e));
}

}  // namespace

void AddDateOperators(std::vector<OperatorDef>& out) {
  for (std::string_view op :
       {"$year", "$month", "$dayOfMonth", "$hour", "$minute", "$second", "$millisecond",
        "$dayOfWeek", "$dayOfYear", "$week", "$isoWeek", "$isoWeekYear", "$isoDayOfWeek"}) {
    out.push_back({op, 0, 0, nullptr, &ParseDatePart});
  }
  out.push_back({"$dateToString", 0, 0, nullptr, &ParseDateToString});
  out.push_back({"$dateTrunc", 0, 0, nullptr, &ParseDateTrunc});
  out.push_back({"$dateFromParts", 0, 0, nullptr, &ParseDateFromParts});
  out.push_back({"$dateToParts", 0, 0, nullptr, &ParseDateToParts});
  AddDateArithmeticOperators(out);
}

}  // namespace hourglass::pipeline::internal
