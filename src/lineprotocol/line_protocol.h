// InfluxDB's line protocol, read into time-series measurements. A body is lines of
//
//   <measurement>[,<tag key>=<tag value>...] <field key>=<field value>[,...] [<timestamp>]
//
// with InfluxDB 1.x's rules: a backslash escapes a comma or space in a measurement name, and a
// comma, equals sign or space in a tag key, tag value or field key; field values are floats
// (`1`, `-1.5e3`), integers (`1i`), unsigned integers (`1u`), strings in double quotes (inside
// which a backslash escapes `"` and `\`) or booleans (t, T, true, True, TRUE, f, F, false,
// False, FALSE); the timestamp is an integer in the request's precision; blank lines and lines
// starting with `#` are skipped. Each line is parsed on its own: a bad line becomes an error
// naming it and the others still parse (InfluxDB 1.x writes the good ones).
//
// A point becomes a measurement document {time: Date, tags: {...}, <fields>}: tags sorted by key
// (as InfluxDB orders a series' tags) under the metaField "tags", left out when there are none;
// timestamps truncated to milliseconds (floor), MongoDB's Date resolution; a missing timestamp
// is the request's time. Unsigned integers up to 2^63-1 are stored as int64, larger ones as
// Decimal128 (MongoDB has no unsigned type).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::lineprotocol {

inline constexpr std::string_view kTimeField = "time";
inline constexpr std::string_view kMetaField = "tags";

// Nanoseconds per unit of the request's precision.
enum class Precision : int64_t {
  kNanoseconds = 1,
  kMicroseconds = 1000,
  kMilliseconds = 1000 * 1000,
  kSeconds = 1000 * 1000 * 1000,
  kMinutes = int64_t{60} * 1000 * 1000 * 1000,
  kHours = int64_t{3600} * 1000 * 1000 * 1000,
};
// The `precision` query parameter: v1 takes n/ns, u/us/µ, ms, s, m and h; v2 ns, us, ms and s.
// Empty means nanoseconds. BadValue naming the value otherwise.
StatusWith<Precision> ParsePrecision(std::string_view text, bool v2);

struct FieldValue {
  enum class Kind { kFloat, kInteger, kUnsigned, kString, kBoolean };
  Kind kind = Kind::kFloat;
  double f = 0;
  int64_t i = 0;
  uint64_t u = 0;
  bool b = false;
  std::string s;
};

struct Point {
  std::string measurement;
  std::vector<std::pair<std::string, std::string>> tags;   // sorted by key, keys unique
  std::vector<std::pair<std::string, FieldValue>> fields;  // line order, keys unique (last wins)
  std::optional<int64_t> timestamp;                        // in the request's precision
};

struct ParseResult {
  std::vector<Point> points;
  // One per bad line, InfluxDB's wording: "unable to parse '<line>': <reason>".
  std::vector<std::string> errors;
};

ParseResult Parse(std::string_view body);

// The point's measurement document; BadValue when its time is outside MongoDB's Date range or a
// key would clash with the time or meta field (InfluxDB refuses a "time" key too).
StatusWith<bson::BsonObj> ToDocument(const Point& point, Precision precision, int64_t now_millis);

}  // namespace hourglass::lineprotocol
