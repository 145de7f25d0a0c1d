#include "lineprotocol/line_protocol.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_set>

namespace hourglass::lineprotocol {

StatusWith<Precision> ParsePrecision(std::string_view text, bool v2) {
  if (text.empty() || text == "ns") return Precision::kNanoseconds;
  if (text == "us") return Precision::kMicroseconds;
  if (text == "ms") return Precision::kMilliseconds;
  if (text == "s") return Precision::kSeconds;
  if (!v2) {
    if (text == "n") return Precision::kNanoseconds;
    if (text == "u" || text == "\xC2\xB5") return Precision::kMicroseconds;
    if (text == "m") return Precision::kMinutes;
    if (text == "h") return Precision::kHours;
  }
  return Status(ErrorCode::kBadValue, "invalid precision \"" + std::string(text) + "\"");
}

namespace {

// One line's parse, from `pos` in the body; `Fail` records why the line is bad.
class LineParser {
 public:
  LineParser(std::string_view body, size_t pos) : in_(body), pos_(pos) {}

  // Parses the line starting at pos_; true with *point filled, or false with reason().
  bool ParseLine(Point* point) {
    if (!ReadName(&point->measurement, /*equals_ends=*/false)) return false;
    if (point->measurement.empty()) return Fail("missing measurement");
    while (Peek() == ',') {
      ++pos_;
      std::string key, value;
      if (!ReadName(&key, /*equals_ends=*/true)) return false;
      if (Peek() != '=') return Fail("missing tag value");
      if (key.empty()) return Fail("missing tag key");
      ++pos_;
      if (!ReadName(&value, /*equals_ends=*/true)) return false;
      if (Peek() == '=') return Fail("invalid tag format");
      if (value.empty()) return Fail("missing tag value");
      point->tags.emplace_back(std::move(key), std::move(value));
    }
    if (!SkipSpaces()) return Fail("missing fields");
    for (;;) {
      std::string key;
      if (!ReadName(&key, /*equals_ends=*/true)) return false;
      if (Peek() != '=') return Fail(key.empty() ? "missing fields" : "missing field value");
      if (key.empty()) return Fail("missing field key");
      ++pos_;
      FieldValue value;
      if (!ReadFieldValue(&value)) return false;
      point->fields.emplace_back(std::move(key), std::move(value));  // repeats dropped in Finish
      if (Peek() != ',') break;
      ++pos_;
    }
    if (AtLineEnd()) return Finish(point);
    if (Peek() != ' ' && Peek() != '\t') return Fail("invalid field format");
    if (SkipSpaces()) {
      const size_t start = pos_;
      while (!AtLineEnd() && Peek() != ' ' && Peek() != '\t') ++pos_;
      int64_t ts = 0;
      const char* first = in_.data() + start;
      const char* last = in_.data() + pos_;
      auto [ptr, ec] = std::from_chars(first, last, ts);
      if (ec != std::errc() || ptr != last || first == last) return Fail("bad timestamp");
      point->timestamp = ts;
      SkipSpaces();
      if (!AtLineEnd()) return Fail("bad timestamp");
    }
    return Finish(point);
  }

  const std::string& reason() const { return reason_; }
  // Where the next line starts: after this line's newline (a newline inside a string field
  // value belongs to the value), or after the first newline once the line failed.
  size_t NextLine(size_t line_start) const {
    const size_t from = reason_.empty() ? pos_ : line_start;
    const size_t nl = in_.find('\n', from);
    return nl == std::string_view::npos ? in_.size() : nl + 1;
  }

 private:
  char Peek() const { return pos_ < in_.size() ? in_[pos_] : '\n'; }
  bool AtLineEnd() const {
    return pos_ >= in_.size() || in_[pos_] == '\n' ||
           (in_[pos_] == '\r' && (pos_ + 1 == in_.size() || in_[pos_ + 1] == '\n'));
  }
  // Skips spaces and tabs; false when the line ends there.
  bool SkipSpaces() {
    while (Peek() == ' ' || Peek() == '\t') ++pos_;
    return !AtLineEnd();
  }
  bool Fail(std::string_view why) {
    reason_ = std::string(why);
    return false;
  }
  bool Finish(Point* point) {
    // A repeated field key keeps its last value, in its last place: one pass from the back, so a
    // line of many fields costs time in proportion to them.
    std::vector<std::pair<std::string, FieldValue>>& fields = point->fields;
    if (fields.size() > 1) {
      std::unordered_set<std::string_view> seen;
      std::vector<bool> keep(fields.size());
      size_t kept = 0;
      for (size_t i = fields.size(); i-- > 0;) {
        keep[i] = seen.insert(fields[i].first).second;
        kept += keep[i] ? 1 : 0;
      }
      if (kept != fields.size()) {
        std::vector<std::pair<std::string, FieldValue>> unique;
        unique.reserve(kept);
        for (size_t i = 0; i < fields.size(); ++i) {
          if (keep[i]) unique.push_back(std::move(fields[i]));
        }
        fields = std::move(unique);
      }
    }
    std::sort(point->tags.begin(), point->tags.end());
    for (size_t i = 1; i < point->tags.size(); ++i) {
      if (point->tags[i].first == point->tags[i - 1].first) return Fail("duplicate tags");
    }
    return true;
  }

  // A measurement name (ended by an unescaped comma or space) or a key or tag value (also ended
  // by an unescaped equals sign). A backslash before another character is kept as it is.
  bool ReadName(std::string* out, bool equals_ends) {
    // Runs of ordinary bytes are copied at once; only the bytes in kStops need a look.
    static constexpr auto kStops = [] {
      std::array<std::array<bool, 256>, 2> t{};
      for (int e = 0; e < 2; ++e) {
        for (unsigned char c : {',', ' ', '\\', '\n', '\r', '\0'}) t[e][c] = true;
      }
      t[1]['='] = true;
      return t;
    }();
    const auto& stops = kStops[equals_ends ? 1 : 0];
    for (;;) {
      const size_t from = pos_;
      while (pos_ < in_.size() && !stops[static_cast<unsigned char>(in_[pos_])]) ++pos_;
      out->append(in_.data() + from, pos_ - from);
      if (AtLineEnd()) return true;
      const char c = in_[pos_];
      if (c == '\\' && pos_ + 1 < in_.size()) {
        const char next = in_[pos_ + 1];
        if (next == ',' || next == ' ' || (equals_ends && next == '=')) {
          out->push_back(next);
          pos_ += 2;
          continue;
        }
      }
      if (c == ',' || c == ' ' || c == '=') return true;  // '=' stops only when it may
      if (c == '\0') return Fail("invalid character in a name");
      out->push_back(c);  // a backslash escaping nothing, or a '\r' inside the line
      ++pos_;
    }
  }

  bool ReadFieldValue(FieldValue* v) {
    if (AtLineEnd() || Peek() == ',' || Peek() == ' ' || Peek() == '\t') {
      return Fail("missing field value");
    }
    if (Peek() == '"') {
      ++pos_;
      v->kind = FieldValue::Kind::kString;
      for (;;) {
        if (pos_ >= in_.size()) return Fail("unbalanced quotes");
        const char c = in_[pos_];
        if (c == '\\' && pos_ + 1 < in_.size() && (in_[pos_ + 1] == '"' || in_[pos_ + 1] == '\\')) {
          v->s.push_back(in_[pos_ + 1]);
          pos_ += 2;
          continue;
        }
        ++pos_;
        if (c == '"') break;
        v->s.push_back(c);
      }
      return true;
    }
    const size_t start = pos_;
    while (!AtLineEnd() && Peek() != ',' && Peek() != ' ' && Peek() != '\t') ++pos_;
    const std::string_view token = in_.substr(start, pos_ - start);
    if (token == "t" || token == "T" || token == "true" || token == "True" || token == "TRUE") {
      v->kind = FieldValue::Kind::kBoolean;
      v->b = true;
      return true;
    }
    if (token == "f" || token == "F" || token == "false" || token == "False" || token == "FALSE") {
      v->kind = FieldValue::Kind::kBoolean;
      return true;
    }
    if (token.empty()) return Fail("missing field value");
    const char first = token.front();
    if (first != '-' && first != '+' && first != '.' && (first < '0' || first > '9')) {
      return Fail("invalid boolean");
    }
    const char last = token.back();
    if (last == 'i' || last == 'u') {
      const std::string_view digits = token.substr(0, token.size() - 1);
      const char* b = digits.data();
      const char* e = b + digits.size();
      if (last == 'i') {
        v->kind = FieldValue::Kind::kInteger;
        auto [ptr, ec] = std::from_chars(b, e, v->i);
        if (ec == std::errc::result_out_of_range) return Fail("integer out of range");
        if (ec != std::errc() || ptr != e || b == e) return Fail("invalid number");
      } else {
        v->kind = FieldValue::Kind::kUnsigned;
        auto [ptr, ec] = std::from_chars(b, e, v->u);
        if (ec == std::errc::result_out_of_range) return Fail("unsigned integer out of range");
        if (ec != std::errc() || ptr != e || b == e || *b == '-') return Fail("invalid number");
      }
      return true;
    }
    // A float: [+-]digits[.digits][e[+-]digits] (or .digits); no infinities or NaN.
    std::string_view rest = token;
    if (rest.front() == '+' || rest.front() == '-') rest.remove_prefix(1);
    size_t digits = 0, i = 0;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') ++i, ++digits;
    if (i < rest.size() && rest[i] == '.') {
      ++i;
      while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') ++i, ++digits;
    }
    if (digits == 0) return Fail("invalid number");
    if (i < rest.size() && (rest[i] == 'e' || rest[i] == 'E')) {
      ++i;
      if (i < rest.size() && (rest[i] == '+' || rest[i] == '-')) ++i;
      size_t exp_digits = 0;
      while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') ++i, ++exp_digits;
      if (exp_digits == 0) return Fail("invalid number");
    }
    if (i != rest.size()) return Fail("invalid number");
    v->kind = FieldValue::Kind::kFloat;
    const char* b = rest.data();
    auto [ptr, ec] = std::from_chars(b, b + rest.size(), v->f);
    if (ec != std::errc() || !std::isfinite(v->f)) return Fail("invalid number");
    if (token.front() == '-') v->f = -v->f;
    return true;
  }

  std::string_view in_;
  size_t pos_;
  std::string reason_;
};

}  // namespace

ParseResult Parse(std::string_view body) {
  ParseResult out;
  size_t pos = 0;
  while (pos < body.size()) {
    // Leading whitespace, blank lines and comments.
    while (pos < body.size() &&
           (body[pos] == ' ' || body[pos] == '\t' || body[pos] == '\r' || body[pos] == '\n')) {
      ++pos;
    }
    if (pos >= body.size()) break;
    if (body[pos] == '#') {
      const size_t nl = body.find('\n', pos);
      pos = nl == std::string_view::npos ? body.size() : nl + 1;
      continue;
    }
    LineParser line(body, pos);
    Point point;
    const bool ok = line.ParseLine(&point);
    const size_t next = line.NextLine(pos);
    if (ok) {
      out.points.push_back(std::move(point));
    } else {
      std::string_view text = body.substr(pos, next - pos);
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
      out.errors.push_back("unable to parse '" + std::string(text) + "': " + line.reason());
    }
    pos = next;
  }
  return out;
}

namespace {

// Milliseconds since the epoch of `ts` in `precision` (floor); nullopt on overflow.
std::optional<int64_t> ToMillis(int64_t ts, Precision precision) {
  const int64_t unit = static_cast<int64_t>(precision);
  constexpr int64_t kNanosPerMilli = 1000 * 1000;
  if (unit >= kNanosPerMilli) {
    int64_t ms = 0;
    if (__builtin_mul_overflow(ts, unit / kNanosPerMilli, &ms)) return std::nullopt;
    return ms;
  }
  const int64_t per_milli = kNanosPerMilli / unit;
  int64_t q = ts / per_milli;
  if (ts % per_milli != 0 && ts < 0) --q;
  return q;
}

// Well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF).
bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  // ASCII, the usual case, eight bytes at a time.
  for (uint64_t w; i + 8 <= s.size(); i += 8) {
    std::memcpy(&w, s.data() + i, 8);
    if ((w & 0x8080808080808080ULL) != 0) break;
  }
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07;
    } else {
      return false;
    }
    if (s.size() - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMinOf[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinOf[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

bool AllValidUtf8(const Point& p) {
  if (!ValidUtf8(p.measurement)) return false;
  for (const auto& [key, value] : p.tags) {
    if (!ValidUtf8(key) || !ValidUtf8(value)) return false;
  }
  for (const auto& [key, value] : p.fields) {
    if (!ValidUtf8(key) || (value.kind == FieldValue::Kind::kString && !ValidUtf8(value.s))) {
      return false;
    }
  }
  return true;
}

}  // namespace

StatusWith<bson::BsonObj> ToDocument(const Point& point, Precision precision, int64_t now_millis) {
  auto invalid = [&](std::string_view what, std::string_view key) {
    return Status(ErrorCode::kBadValue, "invalid " + std::string(what) + ": input " +
                                            (what == "tag key" ? "tag" : "field") + " \"" +
                                            std::string(key) + "\" on measurement \"" +
                                            point.measurement + "\" is invalid");
  };
  for (const auto& [key, value] : point.tags) {
    if (key == kTimeField) return invalid("tag key", key);
  }
  for (const auto& [key, value] : point.fields) {
    if (key == kTimeField) return invalid("field name", key);
    if (key == kMetaField) {
      return Status(ErrorCode::kBadValue,
                    "invalid field name: input field \"tags\" on measurement \"" +
                        point.measurement +
                        "\" is invalid: it is the time-series collection's metaField");
    }
  }
  // Names and strings come from the request as bytes: BSON's strings are UTF-8.
  if (!AllValidUtf8(point)) {
    return Status(ErrorCode::kBadValue,
                  "invalid UTF-8 in a name or string on measurement \"" + point.measurement + "\"");
  }
  int64_t millis = now_millis;
  if (point.timestamp) {
    auto ms = ToMillis(*point.timestamp, precision);
    if (!ms) {
      return Status(ErrorCode::kBadValue, "time outside range " + std::to_string(*point.timestamp) +
                                              " on measurement \"" + point.measurement + "\"");
    }
    millis = *ms;
  }
  bson::BsonBuilder b;
  b.AppendDate(kTimeField, millis);
  if (!point.tags.empty()) {
    const size_t tags = b.OpenObject(kMetaField);
    for (const auto& [key, value] : point.tags) b.AppendString(key, value);
    b.Close(tags);
  }
  for (const auto& [key, v] : point.fields) {
    switch (v.kind) {
      case FieldValue::Kind::kFloat:
        b.AppendDouble(key, v.f);
        break;
      case FieldValue::Kind::kInteger:
        b.AppendInt64(key, v.i);
        break;
      case FieldValue::Kind::kUnsigned:
        if (v.u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          b.AppendInt64(key, static_cast<int64_t>(v.u));
        } else {
          bson::Decimal128 d{};
          const bool parsed = bson::Decimal128::FromString(std::to_string(v.u), &d);
          (void)parsed;  // 20 digits always parse exactly
          b.AppendDecimal(key, d);
        }
        break;
      case FieldValue::Kind::kString:
        b.AppendString(key, v.s);
        break;
      case FieldValue::Kind::kBoolean:
        b.AppendBool(key, v.b);
        break;
    }
  }
  return bson::BsonObj(std::make_shared<const std::string>(b.Release()));
}

}  // namespace hourglass::lineprotocol
