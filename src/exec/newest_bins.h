// The newest time bins of a time-series collection (issue 17's order and limit pushdown):
//   $group {_id: {$dateTrunc: {date: "$T", <constant unit, binSize, timezone, startOfWeek>}}, ...}
//   $sort {_id: -1}
//   $limit N
// (after any filter) only needs the rows of the N newest bins. The read runs those three stages
// over a window of the newest times, T >= L, and widens it (doubling) until N bins come out that
// are all newer than the bin holding L: those bins are whole in the window, and no older bin can
// be among the N newest, so the answer is the one the whole collection gives, accumulators and
// all (the rows of those bins are read in the same order as without the window). Past a few
// widenings, or once the window reaches the oldest bucket or the filter's lower time bound, the
// stages run without a window. What follows the $limit runs over the N groups.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "exec/timeseries_read.h"
#include "pipeline/pipeline.h"

namespace hourglass::exec {

struct NewestBinsPattern {
  int64_t limit = 0;
  int64_t min_width_ms = 0;  // the shortest a bin can be (pipeline::DateTruncBins)
  bson::BsonObj id;          // {_id: <the $dateTrunc>}: evaluated on a time to find its bin
};

// Whether `stages` (after the filter) start with the three stages above on time field `time`.
std::optional<NewestBinsPattern> MatchNewestBins(const std::vector<bson::BsonObj>& stages,
                                                 const std::string& time);

// Where a newest-bins read settled: over the window [from, to] on time after `windows` window
// reads, or (settled false) over everything.
struct NewestBinsWindow {
  bool settled = false;
  int64_t from = 0;
  int64_t to = 0;
  int windows = 0;
};

// `filter` (on measurements; {} for none) narrowed to times in [from, to] on `time`.
bson::BsonObj NewestBinsWindowFilter(const bson::BsonObj& filter, const std::string& time,
                                     int64_t from, int64_t to);

// Runs the windows of the read below until one settles, for explain: where it settled.
StatusWith<NewestBinsWindow> FindNewestBinsWindow(timeseries::TimeseriesCollection coll,
                                                  storage::KvEngine* engine,
                                                  TimeseriesReadRequest request,
                                                  std::unique_ptr<pipeline::Pipeline> stages,
                                                  const NewestBinsPattern& pattern);

// The read of `stages` (which MatchNewestBins matched) under `request`, by windows as above.
// Errors: those of the reads and of the stages.
StatusWith<std::unique_ptr<pipeline::DocumentStream>> BuildNewestBinsRead(
    timeseries::TimeseriesCollection coll, storage::KvEngine* engine, TimeseriesReadRequest request,
    std::unique_ptr<pipeline::Pipeline> stages, const NewestBinsPattern& pattern);

}  // namespace hourglass::exec
