// explain of reads (find, aggregate, count, distinct) on a time-series collection, in the shape
// MongoDB gives them (spec timeseries.md §6.3 "Explain"): an aggregation explain whose stages[0]
// is {$cursor: {queryPlanner, executionStats}} against `<db>.system.buckets.X` (COLLSCAN,
// CLUSTERED_IXSCAN over the time range, or FETCH + IXSCAN of the series index, each with the
// pushed-down bucket filter), then the bucket-level stages of timeseries_read.h
// ($_internalUnpackBucket with include/exclude, eventFilter and wholeBucketFilter;
// $_internalBoundedSort; $_internalGroupFromControl; $_internalLastpoint), then the remaining
// stages. With executionStats each stage carries nReturned and executionTimeMillisEstimate;
// $cursor's executionStats count buckets (nReturned: kept by the bucket filter,
// totalDocsExamined: read). update/delete/findAndModify explain fail with CommandNotSupported.
#pragma once

#include <string_view>

#include "base/status.h"
#include "bson/bson.h"
#include "commands/command.h"

namespace hourglass::commands {

// If `inner` targets a time-series collection, explains it into `reply` and returns true;
// returns false (reply untouched) for anything else. Errors: the command's parse errors,
// CommandNotSupported (115) for writes.
StatusWith<bool> ExplainTimeseries(CommandContext& ctx, const bson::BsonObj& inner,
                                   std::string_view verbosity, bson::BsonBuilder& reply);

}  // namespace hourglass::commands
