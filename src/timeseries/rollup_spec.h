// A rollup: a time-series collection whose measurements are aggregates, per series and time bin,
// of another time-series collection's measurements, kept by the server (commands/rollups.h). It
// is declared at creation with `rollupOf`:
//
//   db.createCollection("cpu_1h", {timeseries: {timeField: "time", metaField: "tags",
//                                               granularity: "hours"},
//                                  rollupOf: {source: "cpu", every: "1h", groupBy: "tags",
//                                             fields: {usage_user: ["avg", "max", "min"]}}})
//
// and holds one measurement per (series, bin) of the source that has measurements:
//
//   {time: <bin start>, tags: <the series' meta value>,
//    usage_user: {avg, sum, count, min, max}}   // the statistics each field asks for
//
// `avg` brings `sum` and `count` along (coarser bins are answered exactly from them); `count` is
// the number of the field's numeric values in the bin (what $avg divides by). Bins are aligned as
// $dateTrunc aligns them (to 2000-01-01T00:00:00Z in UTC); `every` is "<n><s|m|h|d>" and either
// divides a day or is a whole number of days.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::timeseries {

struct TimeseriesOptions;

// The statistics a rollup can keep of a field, in the order rows hold them.
enum class RollupStat { kAvg, kSum, kCount, kMin, kMax };
std::string_view RollupStatName(RollupStat s);

struct RollupSpec {
  std::string source;  // the source collection, in the rollup's database
  std::string every;   // as given ("1h"), canonical
  int64_t every_ms = 0;
  std::optional<std::string> group_by;  // the source's metaField (absent when it has none)
  // Each field with the statistics asked for (sorted, no duplicates), in the order given.
  std::vector<std::pair<std::string, std::vector<RollupStat>>> fields;

  // The statistics a row holds for a field asked `asked` (avg adds sum and count).
  static std::vector<RollupStat> Stored(const std::vector<RollupStat>& asked);

  // The start of the bin holding `millis` (floor, also before 1970; INT64_MIN when that start
  // is not a Date).
  int64_t BinStart(int64_t millis) const;
  // What the catalog stores and listCollections shows: {source, every, [groupBy], fields}.
  bson::BsonObj ToBson() const;
  // Reads ToBson()'s output back.
  static StatusWith<RollupSpec> FromBson(const bson::BsonObj& stored);
};

// Parses create's `rollupOf` for a rollup with options `rollup` (the rollup's own `timeseries`).
// TypeMismatch (14) naming 'create.rollupOf.<field>', 40415 for an unknown field, 40414 for a
// missing one, BadValue for an `every` that is not a duration, InvalidOptions (72) for the rules
// between the fields and the rollup's own options. What needs the source (that it exists and is a
// time-series collection, its metaField) is CheckRollupSource's.
StatusWith<RollupSpec> ParseRollupSpec(const bson::BsonElement& value,
                                       const TimeseriesOptions& rollup);

// The rules between a parsed spec, the rollup's options and its source's: the source is a
// time-series collection and not itself a rollup, `groupBy` names its metaField (filled in when
// omitted), the rollup has a metaField exactly when the source has one, and no field is the
// source's time or meta field. InvalidOptions (72).
Status CheckRollupSource(RollupSpec& spec, const TimeseriesOptions& rollup,
                         const TimeseriesOptions& source, bool source_is_rollup);

}  // namespace hourglass::timeseries
