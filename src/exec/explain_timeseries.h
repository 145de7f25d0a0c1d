// The query engine's explain of reads (find, aggregate, count, distinct) on a time-series
// collection, in the shape MongoDB gives them (spec timeseries.md §6.3 "Explain"): an aggregation
// explain whose stages[0] is {$cursor: {queryPlanner, executionStats}} against
// `<db>.system.buckets.X` (COLLSCAN, CLUSTERED_IXSCAN over the time range, or FETCH + IXSCAN of
// the series index or of a user index, each with the pushed-down bucket filter), then the
// bucket-level stages of timeseries_read.h ($_internalUnpackBucket with include/exclude,
// eventFilter and wholeBucketFilter; $_internalBoundedSort; $_internalGroupFromControl;
// $_internalLastpoint; $_internalNewestBins, whose windows are read first when the explain runs,
// the rest then describing the read over the window they settled in), then the remaining stages.
// With executionStats each stage carries nReturned and executionTimeMillisEstimate; $cursor's
// executionStats count buckets (nReturned: kept by the bucket filter, totalDocsExamined: read).
#pragma once

#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "exec/explain.h"
#include "exec/read_context.h"
#include "timeseries/bucket_catalog.h"

namespace hourglass::exec {

// The stages a time-series read of `req` runs after unpacking the buckets: find, count and
// distinct as the aggregations MongoDB rewrites them to (count reads its query and limits from
// the explained command `inner`), aggregate's own stages after its leading $match.
std::vector<bson::BsonObj> TimeseriesStagesOf(const ExplainRequest& req,
                                              const bson::BsonObj& inner);

class TimeseriesScan;
// How `scan` finds its buckets, in explain's shape: COLLSCAN, CLUSTERED_IXSCAN over the bucket
// table's time range (minRecord/maxRecord), FETCH over the series index's IXSCAN, or the user
// index's plan; with the scan's statistics when `run`.
bson::BsonObj BucketScanPlan(const TimeseriesScan& scan, bool run);

// Explains the read of `req` over `ts` followed by `stages` at `verbosity`, running it unless
// verbosity is "queryPlanner": appends explainVersion and `stages` to `reply`. Errors: the
// pipeline's parse errors, the read's own errors when it runs.
Status ExplainTimeseriesRead(const ReadContext& rctx, timeseries::TimeseriesCollection ts,
                             const ExplainRequest& req, const std::vector<bson::BsonObj>& stages,
                             std::string_view verbosity, bson::BsonBuilder& reply);

}  // namespace hourglass::exec
