// Date operators. Calendar fields are computed in UTC or at a fixed "+hh:mm" offset; Olson time
// zone names other than UTC/GMT are rejected (no tz database here yet).
#include <cstdio>

#include "pipeline/expression_internal.h"

namespace hourglass::pipeline::internal {

namespace {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

constexpr int64_t kMsPerDay = 86400000;

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

}  // namespace

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

bool ParseIsoDate(std::string_view s, int64_t* millis) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, ms = 0;
  size_t i = 0;
  auto digits = [&](int n, int* out) {
    if (i + n > s.size()) return false;
    int v = 0;
    for (int k = 0; k < n; ++k) {
      char c = s[i + k];
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    i += n;
    *out = v;
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
  int offset_min = 0;
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
    } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
      int sign = s[i] == '-' ? -1 : 1;
      ++i;
      int oh = 0, om = 0;
      if (!digits(2, &oh)) return false;
      expect(':');
      if (!digits(2, &om)) return false;
      offset_min = sign * (oh * 60 + om);
    }
  }
  if (i != s.size() || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59) {
    return false;
  }
  *millis = FromCivil(y, mo, d, h, mi, sec, ms) - int64_t{offset_min} * 60000;
  return true;
}

namespace {

// Offset in milliseconds for a timezone argument: "UTC", "GMT", "Z", "+hh:mm", "-hhmm", "+hh".
StatusWith<int64_t> TimezoneOffset(const Value& tz) {
  if (tz.nullish()) return int64_t{0};
  if (!tz.IsString()) {
    return PipelineError(40517, "timezone must evaluate to a string, found " + TypeNameOf(tz));
  }
  std::string_view s = tz.Str();
  if (s == "UTC" || s == "GMT" || s == "Z" || s == "Etc/UTC" || s == "Etc/GMT") return int64_t{0};
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    std::string digits;
    for (char c : s.substr(1)) {
      if (c != ':') digits.push_back(c);
    }
    bool ok = (digits.size() == 2 || digits.size() == 4);
    for (char c : digits) ok = ok && c >= '0' && c <= '9';
    if (ok) {
      int h = std::stoi(digits.substr(0, 2));
      int m = digits.size() == 4 ? std::stoi(digits.substr(2)) : 0;
      return int64_t{(s[0] == '-' ? -1 : 1) * (h * 60 + m)} * 60000;
    }
  }
  return PipelineError(40485, "unrecognized time zone identifier: \"" + std::string(s) + "\"");
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

// $year, $month, ...: {$op: <date>}, {$op: [<date>]} or {$op: {date, timezone}}.
class DatePartExpression : public Expression {
 public:
  std::string_view op;
  ExpressionPtr date, timezone;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value d, date->Evaluate(root, vars));
    int64_t offset = 0;
    if (timezone) {
      HG_ASSIGN_OR_RETURN(Value tz, timezone->Evaluate(root, vars));
      if (tz.nullish()) return Value::Null();
      HG_ASSIGN_OR_RETURN(offset, TimezoneOffset(tz));
    }
    if (d.nullish()) return Value::Null();
    HG_ASSIGN_OR_RETURN(int64_t ms, DateMillisOf(op, d));
    CivilTime t = ToCivil(ms + offset);
    if (op == "$year") return Value::IntOrLong(t.year);
    if (op == "$month") return Value::Int(t.month);
    if (op == "$dayOfMonth") return Value::Int(t.day);
    if (op == "$hour") return Value::Int(t.hour);
    if (op == "$minute") return Value::Int(t.minute);
    if (op == "$second") return Value::Int(t.second);
    if (op == "$millisecond") return Value::Int(t.millis);
    if (op == "$dayOfWeek") return Value::Int(t.day_of_week);
    if (op == "$dayOfYear") return Value::Int(t.day_of_year);
    // $week: weeks start on Sunday; days before the year's first Sunday are week 0.
    int jan1_dow = ((t.day_of_week - 1 - (t.day_of_year - 1)) % 7 + 7) % 7;  // 0 = Sunday
    return Value::Int((t.day_of_year - 1 + jan1_dow) / 7);
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

// Named-argument parsing shared by $dateToString / $dateTrunc / $dateFromParts.
Status ParseNamedArgs(std::string_view op, const BsonElement& operand, const ParseContext& ctx,
                      std::initializer_list<std::pair<std::string_view, ExpressionPtr*>> slots) {
  if (operand.type() != BsonType::kObject) {
    return PipelineError(18629, std::string(op) + " only supports an object as its argument");
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
      return PipelineError(
          18534, "Unrecognized argument to " + std::string(op) + ": " + std::string(f.FieldName()));
    }
  }
  return Status::OK();
}

class DateToStringExpression : public Expression {
 public:
  ExpressionPtr format, date, timezone, on_null;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value d, date->Evaluate(root, vars));
    if (d.nullish()) return on_null ? on_null->Evaluate(root, vars) : Value::Null();
    std::string fmt = "%Y-%m-%dT%H:%M:%S.%LZ";
    if (format) {
      HG_ASSIGN_OR_RETURN(Value f, format->Evaluate(root, vars));
      if (f.nullish()) return Value::Null();
      if (!f.IsString()) {
        return PipelineError(
            18533, "$dateToString requires that 'format' be a string, found: " + TypeNameOf(f));
      }
      fmt = std::string(f.Str());
    }
    int64_t offset = 0;
    if (timezone) {
      HG_ASSIGN_OR_RETURN(Value tz, timezone->Evaluate(root, vars));
      if (tz.nullish()) return Value::Null();
      HG_ASSIGN_OR_RETURN(offset, TimezoneOffset(tz));
    }
    HG_ASSIGN_OR_RETURN(int64_t ms, DateMillisOf("$dateToString", d));
    CivilTime t = ToCivil(ms + offset);
    std::string out;
    char buf[32];
    for (size_t i = 0; i < fmt.size(); ++i) {
      if (fmt[i] != '%') {
        out.push_back(fmt[i]);
        continue;
      }
      if (i + 1 >= fmt.size()) {
        return PipelineError(18535, "Unmatched '%' at end of format string");
      }
      char c = fmt[++i];
      switch (c) {
        case 'Y':
          std::snprintf(buf, sizeof buf, "%04lld", static_cast<long long>(t.year));
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
          std::snprintf(buf, sizeof buf, "%d", t.day_of_week == 1 ? 7 : t.day_of_week - 1);
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
        case '%':
          std::snprintf(buf, sizeof buf, "%%");
          break;
        default:
          return PipelineError(
              18536, std::string("Invalid format character '%") + c + "' in format string");
      }
      out.append(buf);
    }
    return Value::String(out);
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
  return ExpressionPtr(std::move(e));
}

// $dateTrunc: bins of binSize units counted from 2000-01-01T00:00:00 (weeks from the first
// startOfWeek day on or after it), as MongoDB documents.
class DateTruncExpression : public Expression {
 public:
  ExpressionPtr date, unit, bin_size, timezone, start_of_week;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value d, date->Evaluate(root, vars));
    HG_ASSIGN_OR_RETURN(Value u, unit->Evaluate(root, vars));
    if (d.nullish() || u.nullish()) return Value::Null();
    HG_ASSIGN_OR_RETURN(int64_t ms, DateMillisOf("$dateTrunc", d));
    if (!u.IsString()) {
      return PipelineError(5439013,
                           "$dateTrunc requires 'unit' to be a string, but got " + TypeNameOf(u));
    }
    int64_t bin = 1;
    if (bin_size) {
      HG_ASSIGN_OR_RETURN(Value b, bin_size->Evaluate(root, vars));
      if (b.nullish()) return Value::Null();
      if (!b.numeric() || b.NumberLong() <= 0 ||
          static_cast<double>(b.NumberLong()) != b.NumberDouble()) {
        return PipelineError(5439017,
                             "$dateTrunc requires 'binSize' to be a positive 64-bit "
                             "integer, but got value '" +
                                 b.ToString() + "'");
      }
      bin = b.NumberLong();
    }
    int64_t offset = 0;
    if (timezone) {
      HG_ASSIGN_OR_RETURN(Value tz, timezone->Evaluate(root, vars));
      if (tz.nullish()) return Value::Null();
      HG_ASSIGN_OR_RETURN(offset, TimezoneOffset(tz));
    }
    const int64_t local = ms + offset;
    const int64_t ref = FromCivil(2000, 1, 1, 0, 0, 0, 0);
    std::string_view un = u.Str();
    int64_t unit_ms = 0;
    if (un == "millisecond") unit_ms = 1;
    if (un == "second") unit_ms = 1000;
    if (un == "minute") unit_ms = 60000;
    if (un == "hour") unit_ms = 3600000;
    if (un == "day") unit_ms = kMsPerDay;
    if (un == "week") {
      int start_dow = 0;  // 0 = Sunday
      if (start_of_week) {
        HG_ASSIGN_OR_RETURN(Value s, start_of_week->Evaluate(root, vars));
        static const char* kDays[] = {"sunday",   "monday", "tuesday", "wednesday",
                                      "thursday", "friday", "saturday"};
        static const char* kShort[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};
        std::string lower(s.Str());
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        start_dow = -1;
        for (int i = 0; i < 7; ++i) {
          if (lower == kDays[i] || lower == kShort[i]) start_dow = i;
        }
        if (start_dow < 0) {
          return PipelineError(5439015,
                               "$dateTrunc parameter 'startOfWeek' value cannot be "
                               "recognized as a day of a week: " +
                                   s.ToString());
        }
      }
      // 2000-01-01 was a Saturday (6).
      int64_t week_ref = ref + int64_t{(start_dow - 6 + 7) % 7} * kMsPerDay;
      int64_t w = 7 * kMsPerDay * bin;
      return Value::Date(week_ref + FloorDiv(local - week_ref, w) * w - offset);
    }
    if (unit_ms > 0) {
      int64_t w = unit_ms * bin;
      return Value::Date(ref + FloorDiv(local - ref, w) * w - offset);
    }
    int64_t months_per_unit = un == "month" ? 1 : un == "quarter" ? 3 : un == "year" ? 12 : 0;
    if (months_per_unit == 0) {
      return PipelineError(5439014,
                           "$dateTrunc parameter 'unit' value cannot be recognized as a "
                           "time unit: " +
                               u.ToString());
    }
    CivilTime t = ToCivil(local);
    int64_t months = (t.year - 2000) * 12 + (t.month - 1);
    int64_t span = months_per_unit * bin;
    int64_t start = FloorDiv(months, span) * span;
    return Value::Date(FromCivil(2000, static_cast<int>(start + 1), 1, 0, 0, 0, 0) - offset);
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
                                     {"startOfWeek", &e->start_of_week}}));
  if (!e->date) return PipelineError(5439010, "$dateTrunc requires 'date' to be present");
  if (!e->unit) return PipelineError(5439011, "$dateTrunc requires 'unit' to be present");
  return ExpressionPtr(std::move(e));
}

class DateFromPartsExpression : public Expression {
 public:
  ExpressionPtr parts[7];  // year month day hour minute second millisecond
  ExpressionPtr timezone;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    static const int kDefaults[7] = {1970, 1, 1, 0, 0, 0, 0};
    int64_t v[7];
    for (int i = 0; i < 7; ++i) {
      v[i] = kDefaults[i];
      if (!parts[i]) continue;
      HG_ASSIGN_OR_RETURN(Value p, parts[i]->Evaluate(root, vars));
      if (p.nullish()) return Value::Null();
      if (!p.numeric() || static_cast<double>(p.NumberLong()) != p.NumberDouble()) {
        return PipelineError(
            40515, "'$dateFromParts' field must be an integer, but found type: " + TypeNameOf(p));
      }
      v[i] = p.NumberLong();
    }
    int64_t offset = 0;
    if (timezone) {
      HG_ASSIGN_OR_RETURN(Value tz, timezone->Evaluate(root, vars));
      if (tz.nullish()) return Value::Null();
      HG_ASSIGN_OR_RETURN(offset, TimezoneOffset(tz));
    }
    if (v[0] < 1 || v[0] > 9999) {
      return PipelineError(40523,
                           "'year' must evaluate to an integer in the range 1 to 9999, "
                           "found " +
                               std::to_string(v[0]));
    }
    int64_t ms = FromCivil(v[0], static_cast<int>(v[1]), 1, 0, 0, 0, 0) + (v[2] - 1) * kMsPerDay +
                 v[3] * 3600000 + v[4] * 60000 + v[5] * 1000 + v[6];
    return Value::Date(ms - offset);
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
                                     {"timezone", &e->timezone}}));
  if (!e->parts[0]) {
    return PipelineError(40516,
                         "$dateFromParts requires either 'year' or 'isoWeekYear' to be "
                         "present");
  }
  return ExpressionPtr(std::move(e));
}

}  // namespace

void AddDateOperators(std::vector<OperatorDef>& out) {
  for (std::string_view op : {"$year", "$month", "$dayOfMonth", "$hour", "$minute", "$second",
                              "$millisecond", "$dayOfWeek", "$dayOfYear", "$week"}) {
    out.push_back({op, 0, 0, nullptr, &ParseDatePart});
  }
  out.push_back({"$dateToString", 0, 0, nullptr, &ParseDateToString});
  out.push_back({"$dateTrunc", 0, 0, nullptr, &ParseDateTrunc});
  out.push_back({"$dateFromParts", 0, 0, nullptr, &ParseDateFromParts});
}

}  // namespace hourglass::pipeline::internal
