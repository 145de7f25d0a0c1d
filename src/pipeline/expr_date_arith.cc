// Date arithmetic and parsing: $dateAdd, $dateSubtract, $dateDiff, $dateFromString, and the
// timestamp accessors $tsSecond/$tsIncrement.
#include <algorithm>
#include <cctype>

#include "pipeline/expression_internal.h"

namespace hourglass::pipeline::internal {

namespace {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

bool IsDateLike(const Value& v) {
  return v.type() == BsonType::kDate || v.type() == BsonType::kTimestamp ||
         v.type() == BsonType::kObjectId;
}

class DateArithExpression : public Expression {
 public:
  std::string_view op;
  ExpressionPtr start, unit, amount, timezone;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value s, start->Evaluate(root, vars));
    if (s.nullish()) return Value::Null();
    HG_ASSIGN_OR_RETURN(Value u, unit->Evaluate(root, vars));
    if (u.nullish()) return Value::Null();
    HG_ASSIGN_OR_RETURN(TimeUnit un, ParseTimeUnit(op, u));
    HG_ASSIGN_OR_RETURN(Value a, amount->Evaluate(root, vars));
    if (a.nullish()) return Value::Null();
    bool null_tz = false;
    HG_ASSIGN_OR_RETURN(TimeZone tz, EvaluateTimeZone(timezone.get(), root, vars, &null_tz));
    if (null_tz) return Value::Null();
    if (!IsDateLike(s)) {
      return PipelineError(5166403,
                           std::string(op) + " requires startDate to be convertible to a date");
    }
    const bool integral =
        a.type() == BsonType::kInt32 || a.type() == BsonType::kInt64 ||
        (a.numeric() && a.NumberDouble() >= -9.2e18 && a.NumberDouble() <= 9.2e18 &&
         static_cast<double>(a.NumberLong()) == a.NumberDouble());
    if (!integral) {
      return PipelineError(5166405, std::string(op) + " expects integer amount of time units");
    }
    int64_t n = a.NumberLong();
    if (op == "$dateSubtract") {
      if (n == INT64_MIN) {
        return PipelineError(
            6045000, "invalid $dateSubtract 'amount' parameter value: " + std::to_string(n));
      }
      n = -n;
    }
    HG_ASSIGN_OR_RETURN(int64_t ms, DateMillisOf(op, s));
    HG_ASSIGN_OR_RETURN(int64_t out, DateAdd(ms, un, n, tz));
    return Value::Date(out);
  }
};

StatusWith<ExpressionPtr> ParseDateArith(std::string_view op, const BsonElement& operand,
                                         const ParseContext& ctx) {
  auto e = std::make_unique<DateArithExpression>();
  e->op = op;
  if (operand.type() != BsonType::kObject) {
    return PipelineError(5166400, std::string(op) + " expects an object as its argument");
  }
  HG_RETURN_IF_ERROR(ParseNamedArgs(op, operand, ctx,
                                    {{"startDate", &e->start},
                                     {"unit", &e->unit},
                                     {"amount", &e->amount},
                                     {"timezone", &e->timezone}},
                                    5166400, 5166401));
  if (!e->start || !e->unit || !e->amount) {
    return PipelineError(5166402,
                         std::string(op) + " requires startDate, unit, and amount to be present");
  }
  return ExpressionPtr(std::move(e));
}

class DateDiffExpression : public Expression {
 public:
  ExpressionPtr start, end, unit, timezone, start_of_week;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value s, start->Evaluate(root, vars));
    if (s.nullish()) return Value::Null();
    HG_ASSIGN_OR_RETURN(Value e, end->Evaluate(root, vars));
    if (e.nullish()) return Value::Null();
    HG_ASSIGN_OR_RETURN(Value u, unit->Evaluate(root, vars));
    if (u.nullish()) return Value::Null();
    const bool week = u.IsString() && u.Str() == "week";
    Value sow;
    if (week && start_of_week) {
      HG_ASSIGN_OR_RETURN(sow, start_of_week->Evaluate(root, vars));
      if (sow.nullish()) return Value::Null();
    }
    bool null_tz = false;
    HG_ASSIGN_OR_RETURN(TimeZone tz, EvaluateTimeZone(timezone.get(), root, vars, &null_tz));
    if (null_tz) return Value::Null();
    for (const auto& [v, name] : {std::pair<const Value&, const char*>{s, "startDate"},
                                  std::pair<const Value&, const char*>{e, "endDate"}}) {
      if (!IsDateLike(v)) {
        return PipelineError(5166307, std::string("$dateDiff requires '") + name +
                                          "' to be a date, but got " + TypeNameOf(v));
      }
    }
    HG_ASSIGN_OR_RETURN(TimeUnit un, ParseTimeUnit("$dateDiff", u));
    int start_dow = 0;  // weeks start on Sunday unless startOfWeek says otherwise
    if (week && start_of_week) {
      HG_ASSIGN_OR_RETURN(start_dow, ParseDayOfWeek("$dateDiff", sow));
    }
    HG_ASSIGN_OR_RETURN(int64_t a, DateMillisOf("$dateDiff", s));
    HG_ASSIGN_OR_RETURN(int64_t b, DateMillisOf("$dateDiff", e));
    int64_t diff = 0;
    if (un == TimeUnit::kMillisecond && __builtin_sub_overflow(b, a, &diff)) {
      return PipelineError(5166308, "dateDiff overflowed");
    }
    return Value::Long(DateDiff(a, b, un, tz, start_dow));
  }
};

StatusWith<ExpressionPtr> ParseDateDiff(std::string_view op, const BsonElement& operand,
                                        const ParseContext& ctx) {
  auto e = std::make_unique<DateDiffExpression>();
  HG_RETURN_IF_ERROR(ParseNamedArgs(op, operand, ctx,
                                    {{"startDate", &e->start},
                                     {"endDate", &e->end},
                                     {"unit", &e->unit},
                                     {"timezone", &e->timezone},
                                     {"startOfWeek", &e->start_of_week}},
                                    5166301, 5166302));
  if (!e->start) return PipelineError(5166303, "Missing 'startDate' parameter to $dateDiff");
  if (!e->end) return PipelineError(5166304, "Missing 'endDate' parameter to $dateDiff");
  if (!e->unit) return PipelineError(5166305, "Missing 'unit' parameter to $dateDiff");
  return ExpressionPtr(std::move(e));
}

Status ConversionError(std::string msg) {
  return Status(ErrorCode::kConversionFailure, std::move(msg));
}

const char* const kMonths[] = {"january",   "february", "march",    "april",
                               "may",       "june",     "july",     "august",
                               "september", "october",  "november", "december"};

// Parses `s` with a $dateFromString format. Fields not in the format default to 1970-01-01
// 00:00:00.000. Sets *has_offset when %z or %Z matched.
Status ParseWithFormat(std::string_view s, std::string_view fmt, IsoDateParts* out) {
  int64_t year = 1970, month = 1, day = 1, hour = 0, minute = 0, second = 0, millis = 0;
  int64_t doy = -1, iso_year = -1, iso_week = -1, iso_dow = -1, week = -1, dow = -1;
  size_t i = 0;
  const std::string bad = "Error parsing date string '" + std::string(s) + "'";
  auto number = [&](int max_digits, int64_t* v) {
    size_t n = 0;
    int64_t x = 0;
    while (i < s.size() && n < static_cast<size_t>(max_digits) &&
           std::isdigit(static_cast<unsigned char>(s[i]))) {
      x = x * 10 + (s[i] - '0');
      ++i;
      ++n;
    }
    *v = x;
    return n > 0;
  };
  for (size_t f = 0; f < fmt.size(); ++f) {
    if (fmt[f] != '%') {
      if (i >= s.size() || s[i] != fmt[f]) return ConversionError(bad);
      ++i;
      continue;
    }
    if (f + 1 >= fmt.size()) return PipelineError(18535, "Unmatched '%' at end of format string");
    const char c = fmt[++f];
    bool ok = true;
    switch (c) {
      case 'Y':
        ok = number(4, &year);
        break;
      case 'G':
        ok = number(4, &iso_year);
        break;
      case 'm':
        ok = number(2, &month);
        break;
      case 'd':
        ok = number(2, &day);
        break;
      case 'H':
        ok = number(2, &hour);
        break;
      case 'M':
        ok = number(2, &minute);
        break;
      case 'S':
        ok = number(2, &second);
        break;
      case 'L': {
        size_t before = i;
        ok = number(3, &millis);
        for (size_t k = i - before; ok && k < 3; ++k) millis *= 10;
        break;
      }
      case 'j':
        ok = number(3, &doy);
        break;
      case 'V':
        ok = number(2, &iso_week);
        break;
      case 'u':
        ok = number(1, &iso_dow);
        break;
      case 'U':
        ok = number(2, &week);
        break;
      case 'w':
        ok = number(1, &dow);
        break;
      case 'b':
      case 'B': {
        ok = false;
        for (int m = 0; m < 12 && !ok; ++m) {
          std::string_view name = kMonths[m];
          if (c == 'b') name = name.substr(0, 3);
          if (s.size() - i >= name.size()) {
            bool eq = true;
            for (size_t k = 0; k < name.size(); ++k) {
              eq = eq && std::tolower(static_cast<unsigned char>(s[i + k])) == name[k];
            }
            if (eq) {
              month = m + 1;
              i += name.size();
              ok = true;
            }
          }
        }
        break;
      }
      case 'z': {
        if (i < s.size() && s[i] == 'Z') {
          ++i;
          out->has_offset = true;
          out->offset_ms = 0;
          break;
        }
        if (i >= s.size() || (s[i] != '+' && s[i] != '-')) {
          ok = false;
          break;
        }
        const int sign = s[i++] == '-' ? -1 : 1;
        int64_t hh = 0, mm = 0;
        ok = number(2, &hh);
        if (ok && i < s.size() && s[i] == ':') ++i;
        if (ok && i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
          ok = number(2, &mm);
        out->has_offset = true;
        out->offset_ms = sign * (hh * 60 + mm) * 60000;
        break;
      }
      case 'Z': {
        int sign = 1;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) sign = s[i++] == '-' ? -1 : 1;
        int64_t mins = 0;
        ok = number(4, &mins);
        out->has_offset = true;
        out->offset_ms = sign * mins * 60000;
        break;
      }
      case '%':
        ok = i < s.size() && s[i] == '%';
        ++i;
        break;
      default:
        return PipelineError(18536,
                             std::string("Invalid format character '%") + c + "' in format string");
    }
    if (!ok) return ConversionError(bad);
  }
  if (i != s.size()) return ConversionError(bad + ": trailing data");
  int64_t day_ms = 0;
  if (iso_year >= 0 || iso_week >= 0 || iso_dow >= 0) {
    day_ms = FromIsoWeek(iso_year < 0 ? 1970 : iso_year, iso_week < 0 ? 1 : iso_week,
                         iso_dow < 0 ? 1 : iso_dow);
  } else if (week >= 0 || dow >= 0) {
    // %U: weeks start on Sunday, days before the year's first Sunday are week 0; %w: 1 = Sunday.
    const int64_t jan1 = DaysFromCivil(year, 1, 1);
    const int64_t jan1_dow = ((jan1 % 7) + 7 + 4) % 7;  // 0 = Sunday; 1970-01-01 was a Thursday
    const int64_t first_sunday = jan1 + (7 - jan1_dow) % 7;
    day_ms = (first_sunday + (std::max<int64_t>(week, 0) - 1) * 7 + (dow < 1 ? 0 : dow - 1)) *
             86400000LL;
  } else if (doy >= 0) {
    if (doy < 1 || doy > 366) return ConversionError(bad + ": day of year out of range");
    day_ms = FromCivil(year, 1, 1, 0, 0, 0, 0) + (doy - 1) * 86400000LL;
  } else {
    if (month < 1 || month > 12 || day < 1 || day > DaysInMonth(year, static_cast<int>(month))) {
      return ConversionError(bad + ": the parsed date was invalid");
    }
    day_ms = FromCivil(year, static_cast<int>(month), static_cast<int>(day), 0, 0, 0, 0);
  }
  if (hour > 23 || minute > 59 || second > 59) {
    return ConversionError(bad + ": the parsed time was invalid");
  }
  out->local_ms = day_ms + hour * 3600000 + minute * 60000 + second * 1000 + millis;
  return Status::OK();
}

class DateFromStringExpression : public Expression {
 public:
  ExpressionPtr date_string, format, timezone, on_error, on_null;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value s, date_string->Evaluate(root, vars));
    bool null_tz = false;
    HG_ASSIGN_OR_RETURN(TimeZone tz, EvaluateTimeZone(timezone.get(), root, vars, &null_tz));
    Value f;
    if (format) {
      HG_ASSIGN_OR_RETURN(f, format->Evaluate(root, vars));
      if (!f.nullish() && !f.IsString()) {
        return PipelineError(40684, "$dateFromString requires that 'format' be a string, found: " +
                                        TypeNameOf(f) + " with value " + f.ToString());
      }
    }
    if (s.nullish()) return on_null ? on_null->Evaluate(root, vars) : Value::Null();
    if (null_tz || (format && f.nullish())) return Value::Null();
    StatusWith<Value> r = Parse(s, f, tz);
    if (!r.ok() && on_error && r.status().code() == ErrorCode::kConversionFailure) {
      return on_error->Evaluate(root, vars);
    }
    return r;
  }

 private:
  StatusWith<Value> Parse(const Value& s, const Value& f, const TimeZone& tz) const {
    if (!s.IsString()) {
      return ConversionError("$dateFromString requires that 'dateString' be a string, found: " +
                             TypeNameOf(s) + " with value " + s.ToString());
    }
    IsoDateParts p;
    if (format) {
      HG_RETURN_IF_ERROR(ParseWithFormat(s.Str(), f.Str(), &p));
    } else if (!ParseIsoDateParts(s.Str(), &p)) {
      return ConversionError("Error parsing date string '" + std::string(s.Str()) + "'");
    }
    if (p.has_offset) {
      if (timezone) {
        return ConversionError(
            "you cannot pass in a date/time string with time zone information ('" +
            std::string(s.Str()) + "') together with a timezone argument");
      }
      return Value::Date(p.local_ms - p.offset_ms);
    }
    return Value::Date(tz.FromLocal(p.local_ms));
  }
};

StatusWith<ExpressionPtr> ParseDateFromString(std::string_view op, const BsonElement& operand,
                                              const ParseContext& ctx) {
  auto e = std::make_unique<DateFromStringExpression>();
  HG_RETURN_IF_ERROR(ParseNamedArgs(op, operand, ctx,
                                    {{"dateString", &e->date_string},
                                     {"format", &e->format},
                                     {"timezone", &e->timezone},
                                     {"onError", &e->on_error},
                                     {"onNull", &e->on_null}},
                                    40540, 40541));
  if (!e->date_string) {
    return PipelineError(40542, "Missing 'dateString' parameter to $dateFromString");
  }
  return ExpressionPtr(std::move(e));
}

StatusWith<Value> TimestampPart(std::string_view op, const std::vector<Value>& args) {
  const Value& v = args[0];
  if (v.nullish()) return Value::Null();
  if (v.type() != BsonType::kTimestamp) {
    return PipelineError(
        op == "$tsSecond" ? 5687301 : 5687302,
        " Argument to " + std::string(op) + " must be a timestamp, but is " + TypeNameOf(v));
  }
  const uint64_t ts = v.element().TimestampValue();
  return Value::Long(static_cast<int64_t>(op == "$tsSecond" ? ts >> 32 : ts & 0xffffffffu));
}

}  // namespace

void AddDateArithmeticOperators(std::vector<OperatorDef>& out) {
  out.push_back({"$dateAdd", 0, 0, nullptr, &ParseDateArith});
  out.push_back({"$dateSubtract", 0, 0, nullptr, &ParseDateArith});
  out.push_back({"$dateDiff", 0, 0, nullptr, &ParseDateDiff});
  out.push_back({"$dateFromString", 0, 0, nullptr, &ParseDateFromString});
  out.push_back({"$tsSecond", 1, 1, &TimestampPart, nullptr});
  out.push_back({"$tsIncrement", 1, 1, &TimestampPart, nullptr});
}

}  // namespace hourglass::pipeline::internal
