// Reads of a time-series collection with Hourglass's rewrites (spec timeseries.md §6.2-6.3): the
// part of a find / aggregate / count / distinct that runs on buckets before (or instead of)
// unpacking them. PlanTimeseriesRead looks at the event filter and the stages that follow the
// unpack stage and decides:
//  * the columns to decode: a leading exclusion $project/$unset of top-level fields is absorbed
//    into `exclude`; otherwise the dependency analysis of the rest of the pipeline (plus the
//    filter's fields) gives an `include` list when the pipeline does not need whole documents
//    (a count-only pipeline decodes include: [] plus what the filter reads);
//  * wholeBucketFilter: buckets entirely inside the filter's time range skip the event filter;
//  * a leading $sort on the time field alone becomes a bounded sort ($_internalBoundedSort): the
//    scan reads buckets in start-time order (backward for descending) and releases measurements
//    as soon as no later bucket can precede them, so $sort + $limit reads only a few buckets;
//  * a leading $group keyed on the metaField, a constant or a $dateTrunc of the time field (or an
//    object of those) with only $min/$max/{$sum: 1}/$count accumulators — and a leading $count —
//    is answered from control.min/max and the row counts (timeseries/control_group.h), unpacking
//    only buckets whose control cannot answer exactly (or that span two time keys);
//  * last-point (exec/lastpoint_pattern.h: a $sort and $group, or a $group, that pick each
//    group's latest measurements), with a meta-only filter: per series only the bucket(s) that
//    may hold its latest time are read (walking the series index backward) and unpacked, and
//    only the measurements at its latest time are passed on to the pattern's stages.
// Every rewrite gives the same documents in the same order as unpack-everything-then-run-the-
// pipeline (ties of a bounded sort keep the bucket-then-row order of a forward scan, as the
// stable $sort does). The server parameter hourglassTimeseriesRewrites (default true; startup
// and runtime) turns them all off, for comparisons and benchmarks; with
// hourglassTimeseriesBucketFilters false, a read also skips bucket-level filtering: it unpacks
// every bucket and tests the whole filter on each measurement (unpack-everything-then-filter,
// the benchmarks' baseline).
//
// Thread-safety: plans are plain values; the returned streams are single-threaded.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "exec/timeseries_scan.h"
#include "pipeline/pipeline.h"
#include "query/matcher.h"
#include "timeseries/control_group.h"

namespace hourglass::exec {

// The value of hourglassTimeseriesRewrites (registers it on first use).
bool TimeseriesRewritesEnabled();
// Whether a read with `hint` ({hint: ...} or empty) may take the newest time bins by windows
// (exec/newest_bins.h): the rewrites and bucket filters are on and nothing is hinted.
bool NewestBinsReadAllowed(const bson::BsonObj& hint);
// Registers hourglassTimeseriesRewrites and hourglassTimeseriesBucketFilters (idempotent); the
// server calls it before applying --setParameter.
void RegisterTimeseriesRewriteParameter();

struct TimeseriesReadPlan {
  bson::BsonObj filter;  // the filter on measurements (the leading $match), {} for none
  TimeseriesScanOptions scan;
  std::optional<timeseries::ControlGroup> control_group;
  bson::BsonObj group_spec;  // the $group (or $count) the control group answers, for explain
  // Last-point: only the newest buckets of each series are unpacked.
  bool lastpoint = false;
  bson::BsonObj lastpoint_explain;  // {sortBy, groupBy}: LastpointPattern::explain
  // The filter's lower bounds on time ({} for none), tested on each series' latest measurements
  // after the read; `filter` then holds the rest (the metaField's tests).
  bson::BsonObj lastpoint_time_filter;
  // The stages to run over the source's output: the first `prepended` are new (what a
  // control-answered $group leaves to merge), then the given stages after the first `consumed`,
  // which the read absorbed (a bounded sort, a group answered from control, a leading
  // exclusion).
  std::vector<bson::BsonObj> rest;
  size_t consumed = 0;
  size_t prepended = 0;
  // A leading $setWindowFields sorted by time ascending, partitioned by an expression of the
  // metaField alone or not at all: the read delivers its input in the stage's order (the bounded
  // sort, partition by partition when partitioned), so the stage need not sort it when the scan
  // is in_series_order() or no partition was asked for.
  bool window_ordered = false;
};

// Decides the rewrites for `stages` (the pipeline after the leading $match `filter`). With
// `rewrites` false the plan is unpack-everything: all columns, no sort, the stages unchanged.
// `find_projection`: a find's projection, applied by the caller after `rest` (it only narrows
// the columns decoded: a projection of plain 0/1 values on field names is read like a $project;
// any other makes the whole documents needed).
// `parsed`, when given, is `filter` parsed with `expr_ctx`: the bucket filter splits it instead
// of parsing the filter again. `collation`: the collection's default collation (null: simple),
// which computed control.min/max. Under a collation (that one or expr_ctx's) only the rewrites
// that compare no strings are planned: the bucket filter (timeseries/bucket_filter.h), the time
// sort, the column lists and limits; not the block paths, last-point, the control-answered
// $group and $count, nor a window's series order.
TimeseriesReadPlan PlanTimeseriesRead(
    const timeseries::TimeseriesOptions& options, const bson::BsonObj& filter,
    const std::vector<bson::BsonObj>& stages, bool rewrites,
    const bson::BsonObj& find_projection = bson::BsonObj(),
    const query::ExpressionContext& expr_ctx = query::ExpressionContext::Now(),
    const query::Matcher* parsed = nullptr,
    std::shared_ptr<const bson::StringComparator> collation = nullptr);

// The source the plan's `rest` runs over, and what explain reports about it.
struct TimeseriesReadSource {
  std::unique_ptr<pipeline::DocumentStream> stream;
  TimeseriesScan* scan = nullptr;                 // borrowed from `stream`
  const int64_t* buckets_from_control = nullptr;  // control group: buckets never unpacked
  const int64_t* source_returned = nullptr;       // documents `stream` produced
  const char* const* latest_cache = nullptr;      // last-point: how LatestMeasurements served
};

// Opens the scan (and the control-group / last-point stage) of `plan`. Errors: the filter's
// parse errors (BadValue...).
StatusWith<TimeseriesReadSource> OpenTimeseriesRead(timeseries::TimeseriesCollection coll,
                                                    storage::KvEngine* engine,
                                                    const TimeseriesReadPlan& plan);

// What a time-series read is asked besides its stages.
struct TimeseriesReadRequest {
  bson::BsonObj filter;  // on measurements (a leading $match, a find's filter); {} for none
  // `filter` parsed with the stages' $$NOW and `let`, when the caller has it (a $match stage, a
  // find): it is split, not parsed again.
  std::optional<query::Matcher> parsed_filter;
  bson::BsonObj find_projection;  // see PlanTimeseriesRead
  bson::BsonObj hint;             // the command's hint as HintOf gives it (TimeseriesScanOptions)
  // The newest time bins may be read by windows (exec/newest_bins.h); false in those windows.
  bool newest_bins = true;
};

// The context a filter of the stages is read with: their $$NOW (the current time for commands
// without their own, count and distinct), `let` and collation.
query::ExpressionContext ExpressionContextOf(const pipeline::PipelineContext& pctx);

// Whether a read of `coll` with `pctx` compares strings under a collation (the read's, or the
// collection's default that computed control.min/max). Such a read is not answered from the
// newest time bins, and PlanTimeseriesRead keeps only its rewrites that compare no strings.
bool CollatedTimeseriesRead(const timeseries::TimeseriesCollection& coll,
                            const pipeline::PipelineContext& pctx);

// The whole read: plans it over `stages` (the parsed stages after the filter, planned on their
// SourceStages()), opens the scan, takes the stages the read absorbed out of `stages`, parses
// only the few it adds, and binds the rest over the scan. Nothing is parsed twice. Errors: the
// filter's (BadValue...) and the added stages'.
StatusWith<std::unique_ptr<pipeline::DocumentStream>> BuildTimeseriesRead(
    timeseries::TimeseriesCollection coll, storage::KvEngine* engine, TimeseriesReadRequest request,
    std::unique_ptr<pipeline::Pipeline> stages);

// The same over stage documents (find's, count's and distinct's stages below), parsed once with
// `pctx`.
StatusWith<std::unique_ptr<pipeline::DocumentStream>> BuildTimeseriesRead(
    timeseries::TimeseriesCollection coll, storage::KvEngine* engine, TimeseriesReadRequest request,
    const std::vector<bson::BsonObj>& stages, const pipeline::PipelineContext& pctx);

// {name: spec}: one stage document.
bson::BsonObj StageOf(std::string_view name, const bson::BsonObj& spec);

// The other read commands as stages after the unpack stage: find's sort, skip and limit; count's
// skip, limit and {$count: "n"}; distinct's {$project} of its key's top-level field (nothing
// for an empty or $-prefixed key).
std::vector<bson::BsonObj> TimeseriesFindStages(const bson::BsonObj& sort, int64_t skip,
                                                int64_t limit);
std::vector<bson::BsonObj> TimeseriesCountStages(const bson::BsonObj& count_cmd);
std::vector<bson::BsonObj> TimeseriesDistinctStages(std::string_view key);

}  // namespace hourglass::exec
