#include "exec/explain_timeseries.h"

#include <chrono>

#include "exec/collection_scan.h"
#include "exec/namespace_resolver.h"
#include "exec/newest_bins.h"
#include "exec/timeseries_read.h"
#include "pipeline/column_block.h"
#include "pipeline/pipeline.h"

namespace hourglass::exec {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using Clock = std::chrono::steady_clock;

namespace {

// Counts a stream's documents (or the rows of its column blocks) and the time spent in it (and
// below it). It passes the column blocks on, so the explained pipeline runs as the command does.
class MeteredStream : public pipeline::DocumentStream, public pipeline::BlockSource {
 public:
  explicit MeteredStream(std::unique_ptr<pipeline::DocumentStream> in) : in_(std::move(in)) {}
  StatusWith<std::optional<BsonObj>> Next() override {
    auto start = Clock::now();
    auto next = in_->Next();
    nanos_ += (Clock::now() - start).count();
    if (next.ok() && next.value()) ++n_;
    return next;
  }
  pipeline::BlockSource* AsBlockSource() override {
    blocks_ = in_->AsBlockSource();
    return blocks_ != nullptr ? this : nullptr;
  }
  void RequireFields(const std::vector<std::string>& names) override {
    blocks_->RequireFields(names);
  }
  void AcceptBounds(const std::vector<std::string>& names) override {
    blocks_->AcceptBounds(names);
  }
  StatusWith<const pipeline::ColumnBlock::Field*> DecodeBounded(std::string_view name) override {
    return blocks_->DecodeBounded(name);
  }
  StatusWith<const pipeline::ColumnBlock*> NextBlock() override {
    auto start = Clock::now();
    auto block = blocks_->NextBlock();
    nanos_ += (Clock::now() - start).count();
    if (block.ok() && block.value() != nullptr) n_ += block.value()->SelectedRows();
    return block;
  }
  // Detached blocks may be read on a helper thread: the time is the helper's.
  bool DetachBlocks() override { return blocks_->DetachBlocks(); }
  ThreadContext HandOff() override { return blocks_->HandOff(); }
  StatusWith<std::unique_ptr<pipeline::DetachedBlock>> NextDetachedBlock(int leave) override {
    auto start = Clock::now();
    auto block = blocks_->NextDetachedBlock(leave);
    nanos_ += (Clock::now() - start).count();
    if (block.ok() && block.value() != nullptr) n_ += block.value()->block().SelectedRows();
    return block;
  }
  int64_t n() const { return n_; }
  int64_t millis() const { return nanos_ / 1000000; }

 private:
  std::unique_ptr<pipeline::DocumentStream> in_;
  pipeline::BlockSource* blocks_ = nullptr;
  int64_t n_ = 0;
  int64_t nanos_ = 0;
};

BsonObj ObjectIdOf(uint32_t seconds, uint8_t fill) {
  bson::ObjectId oid;
  for (int i = 0; i < 4; ++i) oid.bytes[i] = static_cast<uint8_t>(seconds >> (24 - 8 * i));
  for (int i = 4; i < 12; ++i) oid.bytes[i] = fill;
  BsonBuilder b;
  b.AppendObjectId("", oid);
  return b.Obj();
}

// The bucket access plan ($cursor's winningPlan), with stats when `run`: the scan, under a LIMIT
// when a bucket-level limit applies.
BsonObj BucketAccessPlan(const TimeseriesScan& scan, bool run) {
  BsonObj access = BucketScanPlan(scan, run);
  if (scan.measurement_limit() == 0) return access;
  BsonBuilder b;
  b.AppendString("stage", "LIMIT");
  if (run) b.AppendInt64("nReturned", scan.stats().buckets_kept);
  b.AppendInt64("limitAmount", scan.measurement_limit());
  b.AppendObject("inputStage", access);
  return b.Obj();
}

// `stage` (a plan stage {stage: ..., ...}) with `stats` placed after its "stage" field, and,
// when `input_stats` is not empty, those placed likewise in its inputStage.
BsonObj WithStats(const BsonObj& stage, const BsonObj& stats, const BsonObj& input_stats) {
  BsonBuilder b;
  for (BsonElement e : stage) {
    if (e.FieldName() == "inputStage" && e.type() == BsonType::kObject && !input_stats.IsEmpty()) {
      b.AppendObject("inputStage", WithStats(e.Obj(), input_stats, BsonObj()));
      continue;
    }
    b.AppendElement(e);
    if (e.FieldName() == "stage") {
      for (BsonElement s : stats) b.AppendElement(s);
    }
  }
  return b.Obj();
}

// {$_internalUnpackBucket: {...}}'s spec.
BsonObj UnpackSpecBson(const TimeseriesScan& scan, bool rewrites) {
  const timeseries::TimeseriesOptions& o = scan.collection().options;
  const timeseries::UnpackSpec& u = scan.unpack_spec();
  BsonBuilder b;
  if (u.mode != timeseries::UnpackSpec::Mode::kAll) {
    size_t arr =
        b.OpenArray(u.mode == timeseries::UnpackSpec::Mode::kInclude ? "include" : "exclude");
    int i = 0;
    for (const std::string& f : u.fields) b.AppendString(std::to_string(i++), f);
    b.Close(arr);
  }
  b.AppendString("timeField", o.time_field);
  if (o.meta_field) b.AppendString("metaField", *o.meta_field);
  b.AppendInt32("bucketMaxSpanSeconds", static_cast<int32_t>(o.bucket_max_span_seconds));
  b.AppendBool("assumeNoMixedSchemaData", true);
  if (!scan.event_filter().IsEmpty()) b.AppendObject("eventFilter", scan.event_filter());
  if (rewrites) {
    BsonObj whole = scan.bucket_filter().WholeBucketFilterToBson();
    if (!whole.IsEmpty() && !scan.event_filter().IsEmpty()) {
      b.AppendObject("wholeBucketFilter", whole);
    }
  }
  return b.Obj();
}

struct StageEntry {
  BsonObj stage;                            // {$name: spec}
  std::function<void(BsonBuilder&)> stats;  // appends nReturned etc. (executionStats only)
};

}  // namespace

BsonObj BucketScanPlan(const TimeseriesScan& scan, bool run) {
  const TimeseriesScanStats& st = scan.stats();
  BsonObj filter = scan.bucket_filter().ToBson();
  BsonBuilder b;
  if (!scan.user_index_plan().IsEmpty()) {
    // A user index supplies the buckets: its plan, as for a query on the bucket collection.
    if (!run) return scan.user_index_plan();
    BsonBuilder fetch, ixscan;
    fetch.AppendInt64("nReturned", st.buckets_kept);
    fetch.AppendInt64("docsExamined", st.buckets_read);
    ixscan.AppendInt64("keysExamined", scan.user_index_keys_examined());
    return WithStats(scan.user_index_plan(), fetch.Obj(), ixscan.Obj());
  }
  if (scan.uses_series_index()) {
    const catalog::SecondaryIndex* index = scan.collection().buckets->SeriesIndex();
    b.AppendString("stage", "FETCH");
    if (run) {
      b.AppendInt64("nReturned", st.buckets_kept);
      b.AppendInt64("docsExamined", st.buckets_read);
    }
    if (!filter.IsEmpty()) b.AppendObject("filter", filter);
    size_t in = b.OpenObject("inputStage");
    // Last-point visits each series' newest entries only, as MongoDB's DISTINCT_SCAN does.
    b.AppendString("stage", scan.walks_newest_per_series() ? "DISTINCT_SCAN" : "IXSCAN");
    if (run) {
      b.AppendInt64("nReturned", st.buckets_read);
      b.AppendInt64("keysExamined", st.buckets_read);
    }
    if (index != nullptr) {
      b.AppendObject("keyPattern", index->desc.key);
      b.AppendString("indexName", index->desc.name);
    }
    b.AppendBool("isMultiKey", false);
    b.AppendString("direction", scan.walks_newest_per_series() ? "backward" : "forward");
    b.Close(in);
    return b.Obj();
  }
  b.AppendString("stage", scan.has_time_range() ? "CLUSTERED_IXSCAN" : "COLLSCAN");
  if (run) {
    b.AppendInt64("nReturned", st.buckets_kept);
    b.AppendInt64("docsExamined", st.buckets_read);
  }
  if (!filter.IsEmpty()) b.AppendObject("filter", filter);
  b.AppendString("direction", scan.sort_direction() < 0 ? "backward" : "forward");
  if (scan.has_time_range()) {
    b.AppendElementAs(ObjectIdOf(static_cast<uint32_t>(scan.min_start_seconds()), 0).FirstElement(),
                      "minRecord");
    b.AppendElementAs(
        ObjectIdOf(static_cast<uint32_t>(scan.max_start_seconds()), 0xff).FirstElement(),
        "maxRecord");
  }
  return b.Obj();
}

std::vector<BsonObj> TimeseriesStagesOf(const ExplainRequest& req, const BsonObj& inner) {
  if (req.kind == "find") return TimeseriesFindStages(req.sort, req.skip, req.limit);
  if (req.kind == "count") return TimeseriesCountStages(inner);
  if (req.kind == "distinct") return TimeseriesDistinctStages(req.distinct_key);
  return req.rest_stages;
}

Status ExplainTimeseriesRead(const ReadContext& rctx, timeseries::TimeseriesCollection ts,
                             const ExplainRequest& req, const std::vector<BsonObj>& stages,
                             std::string_view verbosity, BsonBuilder& reply) {
  const bool execute = verbosity != "queryPlanner";
  const bool collated = CollatedTimeseriesRead(ts, req.pctx);
  const bool rewrites = TimeseriesRewritesEnabled();
  // The newest time bins (newest_bins.h) are read by windows: run, the windows find where the
  // read settles, and what is explained is the read over that window (or over everything).
  BsonObj filter = req.filter;
  std::optional<BsonObj> newest_bins;
  std::optional<NewestBinsPattern> newest;
  if (!collated && NewestBinsReadAllowed(req.hint)) {
    newest = MatchNewestBins(stages, ts.options.time_field);
  }
  if (newest) {
    BsonBuilder spec;
    spec.AppendInt64("limit", newest->limit);
    spec.AppendInt64("firstWindowMillis", (newest->limit + 1) * newest->min_width_ms);
    if (execute) {
      BsonArrayBuilder arr;
      for (const BsonObj& st : stages) arr.AppendObject(st);
      HG_ASSIGN_OR_RETURN(auto pipe, pipeline::Pipeline::Parse(arr.Obj(), req.pctx));
      TimeseriesReadRequest request;
      request.filter = req.filter;
      HG_ASSIGN_OR_RETURN(
          NewestBinsWindow window,
          FindNewestBinsWindow(ts, rctx.engine, std::move(request), std::move(pipe), *newest));
      spec.AppendInt64("windowsRead", window.windows);
      if (window.settled) {
        size_t w = spec.OpenObject("window");
        spec.AppendDate("from", window.from);
        spec.AppendDate("to", window.to);
        spec.Close(w);
        filter = NewestBinsWindowFilter(req.filter, ts.options.time_field, window.from, window.to);
      } else {
        spec.AppendString("window", "none: every time");
      }
    }
    newest_bins = spec.Obj();
  }
  TimeseriesReadPlan plan =
      PlanTimeseriesRead(ts.options, filter, stages, rewrites, req.projection.value_or(BsonObj()),
                         req.expr_ctx, nullptr, ts.buckets->DefaultCollator());
  plan.scan.hint = req.hint;
  plan.scan.allow_disk_use = req.pctx.allow_disk_use;
  plan.scan.sort_memory_limit_bytes = req.pctx.limits.sort;
  const timeseries::TimeseriesOptions options = ts.options;
  auto start = Clock::now();
  HG_ASSIGN_OR_RETURN(TimeseriesReadSource src,
                      OpenTimeseriesRead(std::move(ts), rctx.engine, plan));
  const TimeseriesScan& scan = *src.scan;

  // The bucket-level stages between $cursor and the rest, then the rest, each metered.
  std::vector<StageEntry> entries;
  const int64_t* source_n = src.source_returned;
  if (newest_bins) {
    entries.push_back({StageOf("$_internalNewestBins", *newest_bins), [](BsonBuilder&) {}});
  }
  auto unpack_stats = [&scan](BsonBuilder& b) {
    b.AppendInt64("nReturned", scan.stats().measurements_matched);
    b.AppendInt64("bucketsUnpacked", scan.stats().buckets_unpacked);
    b.AppendInt64("bucketsMatchedWhole", scan.stats().buckets_matched_whole);
    b.AppendInt64("measurementsUnpacked", scan.stats().measurements_unpacked);
  };
  if (plan.control_group) {
    BsonBuilder spec;
    spec.AppendObject("group", plan.group_spec);
    spec.AppendObject("unpackBucketsControlCannotAnswer", UnpackSpecBson(scan, rewrites));
    const int64_t* from_control = src.buckets_from_control;
    entries.push_back({StageOf("$_internalGroupFromControl", spec.Obj()),
                       [&scan, from_control, source_n](BsonBuilder& b) {
                         b.AppendInt64("nReturned", *source_n);
                         b.AppendInt64("bucketsFromControl", *from_control);
                         b.AppendInt64("bucketsUnpacked", scan.stats().buckets_unpacked);
                         b.AppendInt64("measurementsUnpacked", scan.stats().measurements_unpacked);
                       }});
  } else {
    if (plan.lastpoint) {
      const char* const* cache = src.latest_cache;
      entries.push_back(
          {StageOf("$_internalLastpoint", plan.lastpoint_explain), [&scan, cache](BsonBuilder& b) {
             b.AppendInt64("nReturned", scan.stats().buckets_unpacked);
             if (cache != nullptr) b.AppendString("latestCache", *cache);
           }});
    }
    entries.push_back(
        {StageOf("$_internalUnpackBucket", UnpackSpecBson(scan, rewrites)), unpack_stats});
    if (plan.scan.sort_direction != 0) {
      BsonBuilder spec;
      size_t k = spec.OpenObject("sortKey");
      spec.AppendInt32(options.time_field, plan.scan.sort_direction);
      spec.Close(k);
      size_t bd = spec.OpenObject("bound");
      spec.AppendString("base", "min");
      spec.AppendInt64("offsetSeconds",
                       plan.scan.sort_direction > 0 ? 0 : options.bucket_max_span_seconds);
      spec.Close(bd);
      // Series by series, each in time order (a $setWindowFields partitioned by the metaField).
      if (scan.in_series_order()) spec.AppendBool("seriesOrder", true);
      entries.push_back({StageOf("$_internalBoundedSort", spec.Obj()),
                         [source_n](BsonBuilder& b) { b.AppendInt64("nReturned", *source_n); }});
    }
  }
  // The bucket-level stages run inside the source stream: they share its time.
  auto source_meter = std::make_unique<MeteredStream>(std::move(src.stream));
  const MeteredStream* sm = source_meter.get();
  for (StageEntry& e : entries) {
    e.stats = [inner_stats = std::move(e.stats), sm](BsonBuilder& b) {
      inner_stats(b);
      b.AppendInt64("executionTimeMillisEstimate", sm->millis());
    };
  }
  std::unique_ptr<pipeline::DocumentStream> stream = std::move(source_meter);
  for (const BsonObj& st : plan.rest) {
    BsonArrayBuilder one;
    one.AppendObject(st);
    HG_ASSIGN_OR_RETURN(auto p, pipeline::Pipeline::Parse(one.Obj(), req.pctx));
    auto metered = std::make_unique<MeteredStream>(p->Bind(std::move(stream)));
    const MeteredStream* m = metered.get();
    entries.push_back({st, [m](BsonBuilder& b) {
                         b.AppendInt64("nReturned", m->n());
                         b.AppendInt64("executionTimeMillisEstimate", m->millis());
                       }});
    stream = std::move(metered);
  }
  if (req.projection) {
    HG_ASSIGN_OR_RETURN(auto proj,
                        query::Projection::Parse(
                            *req.projection, BsonObj(),
                            query::ExpressionContext{req.pctx.now_millis, req.pctx.let, nullptr}));
    auto metered = std::make_unique<MeteredStream>(
        std::make_unique<ProjectionStream>(std::move(stream), std::move(proj)));
    const MeteredStream* m = metered.get();
    entries.push_back({StageOf("$project", *req.projection), [m](BsonBuilder& b) {
                         b.AppendInt64("nReturned", m->n());
                         b.AppendInt64("executionTimeMillisEstimate", m->millis());
                       }});
    stream = std::move(metered);
  }
  if (execute) {
    while (true) {
      HG_ASSIGN_OR_RETURN(auto doc, stream->Next());
      if (!doc) break;
    }
  }
  const int64_t millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();

  reply.AppendString("explainVersion", "1");
  size_t arr = reply.OpenArray("stages");
  size_t cur0 = reply.OpenObject("0");
  size_t cur = reply.OpenObject("$cursor");
  size_t qp = reply.OpenObject("queryPlanner");
  reply.AppendString("namespace", BucketsNamespace(req.nss).ns());
  reply.AppendBool("indexFilterSet", false);
  reply.AppendObject("parsedQuery", scan.bucket_filter().ToBson());
  reply.AppendBool("maxIndexedOrSolutionsReached", false);
  reply.AppendBool("maxIndexedAndSolutionsReached", false);
  reply.AppendBool("maxScansToExplodeReached", false);
  reply.AppendObject("winningPlan", BucketAccessPlan(scan, false));
  reply.AppendArray("rejectedPlans", BsonObj());
  reply.Close(qp);
  if (execute) {
    size_t es = reply.OpenObject("executionStats");
    reply.AppendBool("executionSuccess", true);
    reply.AppendInt64("nReturned", scan.stats().buckets_kept);
    reply.AppendInt64("executionTimeMillis", millis);
    reply.AppendInt64("totalKeysExamined", !scan.user_index_plan().IsEmpty()
                                               ? scan.user_index_keys_examined()
                                           : scan.uses_series_index() ? scan.stats().buckets_read
                                                                      : 0);
    reply.AppendInt64("totalDocsExamined", scan.stats().buckets_read);
    reply.AppendObject("executionStages", BucketAccessPlan(scan, true));
    if (verbosity == "allPlansExecution") reply.AppendArray("allPlansExecution", BsonObj());
    reply.Close(es);
  }
  reply.Close(cur);
  if (execute) {
    reply.AppendInt64("nReturned", scan.stats().buckets_kept);
    reply.AppendInt64("executionTimeMillisEstimate", millis);
  }
  reply.Close(cur0);
  int i = 1;
  for (const StageEntry& e : entries) {
    size_t o = reply.OpenObject(std::to_string(i++));
    reply.AppendElementsOf(e.stage);
    if (execute) e.stats(reply);
    reply.Close(o);
  }
  reply.Close(arr);
  return Status::OK();
}

}  // namespace hourglass::exec
