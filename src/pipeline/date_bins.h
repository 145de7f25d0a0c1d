// The bins of time on which a date expression of one field keeps one value, so that block
// processing can evaluate it once per bin instead of once per row: $dateTrunc's own bins, and
// the bins of date parts ($hour, $dayOfMonth, ..., $dateToString) in a constant time zone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bson/bson.h"
#include "pipeline/expression_internal.h"

namespace hourglass::pipeline {

// The bins of a $dateTrunc whose `unit` and `binSize` are constants (`args` is its argument
// object): the shortest a bin can be in milliseconds, and whether every bin is exactly that long
// (units up to an hour bin elapsed time, whatever the time zone; days and longer follow the
// calendar). min_width 0: the bins cannot be told from the spec.
struct DateTruncBins {
  int64_t min_width = 0;
  bool fixed = false;
};
DateTruncBins DateTruncBinsOf(const bson::BsonObj& args);

// Bins of UTC milliseconds on which a date-part expression has one value for every date: a local
// minute, hour or day ($minute; $hour; $dayOfMonth, $month, $year, $week, $isoWeek and the other
// parts of a day or longer; $dateToString by the finest specifier of its format). In UTC or a
// fixed offset they are [origin + k * width, origin + (k + 1) * width); in a named time zone, the
// local bin under the offset in force at the date, cut to the span that offset is in force (a
// DST change may fall inside a local day, or shift the clock by half an hour).
struct DatePartBins {
  std::string field;  // the top-level field it reads as its date ("f" for "$f")
  int64_t width = 0;
  int64_t origin = 0;       // in [0, width), under a fixed offset
  internal::TimeZone zone;  // named zones only (fixed ones are in origin)

  // The bin of `date`: [*lo, *hi), clamped to the range of dates.
  void BinOf(int64_t date, int64_t* lo, int64_t* hi) const;
  bool SameBin(int64_t a, int64_t b) const;
};
// For `expr` ({$hour: "$f"}, {$hour: {date: "$f", timezone: "+05:30"}}, {$dateToString: {format:
// "%Y-%m-%d %H", date: "$f"}}...): its bins, or nullopt when its value may change within a minute
// ($second, a format with %S or %L), its time zone is not a constant, its date is not a
// top-level field, or it is no date part.
std::optional<DatePartBins> DatePartBinsOf(const bson::BsonObj& expr);

}  // namespace hourglass::pipeline
