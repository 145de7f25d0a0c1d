#include "exec/read_stream.h"

#include "exec/collection_scan.h"
#include "exec/index_scan.h"
#include "exec/multi_planner.h"
#include "exec/namespace_resolver.h"
#include "exec/plan_cache.h"
#include "exec/plan_summary.h"
#include "exec/timeseries_read.h"
#include "pipeline/memory_parameters.h"
#include "pipeline/spill_file.h"

namespace hourglass::exec {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;

namespace {
// Counts the documents a scan passes on, for explain's per-stage nReturned.
class CountingStream : public pipeline::DocumentStream {
 public:
  CountingStream(std::unique_ptr<pipeline::DocumentStream> in, int64_t* n)
      : in_(std::move(in)), n_(n) {}
  StatusWith<std::optional<BsonObj>> Next() override {
    auto next = in_->Next();
    if (next.ok() && next.value().has_value()) ++*n_;
    return next;
  }

 private:
  std::unique_ptr<pipeline::DocumentStream> in_;
  int64_t* n_;
};
}  // namespace

StatusWith<std::unique_ptr<pipeline::DocumentStream>> BuildReadStream(const ReadContext& rctx,
                                                                      const ResolvedNamespace& ns,
                                                                      ReadPlan plan,
                                                                      ReadExecInfo* info) {
  ReadExecInfo local_info;
  if (info == nullptr) info = &local_info;
  BsonElement hint = plan.hint.IsEmpty() ? BsonElement() : plan.hint.FirstElement();
  bool sorted_by_scan = false;
  std::unique_ptr<pipeline::DocumentStream> stream;
  if (ns.buckets_missing) {
    // A time-series view whose buckets were dropped reads as empty, like any view on nothing.
    return std::unique_ptr<pipeline::DocumentStream>(
        std::make_unique<pipeline::VectorDocumentStream>(std::vector<BsonObj>{}));
  }
  const std::optional<timeseries::TimeseriesCollection>& ts = ns.timeseries;
  const std::shared_ptr<catalog::Collection>& coll = ns.collection;
  const bool min_max = !plan.min.IsEmpty() || !plan.max.IsEmpty();
  const bool annotate = plan.return_key || plan.show_record_id;
  // (find refuses these options on a time-series collection: CheckFindRunsAsAggregate.)
  if (ts && (min_max || annotate)) {
    return Status(ErrorCode::kInvalidPipelineOperator,
                  "min, max, returnKey and showRecordId do not apply to a time-series read");
  }
  // A read under a collation plans with it: indexes of the same collation bound strings.
  const std::shared_ptr<const bson::StringComparator>& collator = plan.expr_ctx.collator;
  if (plan.near) {
    if (ts) {
      return Status(ErrorCode::kLocation5626500,
                    "$geoNear, $near, and $nearSphere are not allowed in this context");
    }
    const BsonElement natural = plan.sort["$natural"];
    if (!natural.eoo()) {
      return Status(ErrorCode::kBadValue,
                    "geoNear expression not allowed with $natural sort order");
    }
    if (hint.type() == bson::BsonType::kObject && !hint.Obj()["$natural"].eoo()) {
      return Status(ErrorCode::kBadValue, "geoNear expression not allowed with $natural hint");
    }
    if (coll && !coll->ident().empty()) HG_RETURN_IF_ERROR(CheckNearIndex(*coll, *plan.near));
  }
  if (ts) {
    // Sort, skip and limit run as stages of the time-series read, which may turn a sort on the
    // time field into a bounded sort over buckets.
    pipeline::PipelineContext pctx;
    ApplyDiskUse(rctx, plan.allow_disk_use, &pctx);  // the sort's memory limit and spilling
    pctx.now_millis = plan.expr_ctx.now_millis;
    pctx.let = plan.expr_ctx.let;
    pctx.collator = plan.expr_ctx.collator;
    TimeseriesReadRequest request;
    request.filter = plan.filter_spec;
    if (plan.filter) request.parsed_filter = std::move(*plan.filter);
    request.find_projection = plan.projection_spec;
    request.hint = plan.hint;
    HG_ASSIGN_OR_RETURN(
        stream, BuildTimeseriesRead(*ts, rctx.engine, std::move(request),
                                    TimeseriesFindStages(plan.sort, plan.skip, plan.limit), pctx));
    plan.sort = BsonObj();
    plan.skip = 0;
    plan.limit = 0;
  } else if (!coll || coll->ident().empty()) {
    stream = std::make_unique<pipeline::VectorDocumentStream>(std::vector<BsonObj>{});
  } else if (std::optional<RingBounds> rings =
                 plan.near && info == &local_info && !min_max && !annotate
                     ? RingsOf(*coll, *plan.near)
                     : std::nullopt) {
    // A near read goes ring by ring (near_read.h), each ring planned with its own bound.
    // (Explain reads to the maximum distance at once, as one plan.)
    NearScan scan =
        [coll, engine = rctx.engine, filter = plan.filter, rest = plan.filter_spec.Owned(),
         near = *plan.near, hint = plan.hint.Owned(),
         collator](double max) -> StatusWith<std::unique_ptr<pipeline::DocumentStream>> {
      HG_ASSIGN_OR_RETURN(
          PlanChoice choice,
          PlanQuery(*coll, NearPlanningFilter(near, rest, max), BsonObj(),
                    hint.IsEmpty() ? BsonElement() : hint.FirstElement(), collator.get()));
      if (choice.winner.IsCollScan()) {
        return std::unique_ptr<pipeline::DocumentStream>(
            std::make_unique<CollectionScan>(coll, engine, filter));
      }
      return std::unique_ptr<pipeline::DocumentStream>(
          std::make_unique<IndexScan>(coll, engine, choice.winner, filter));
    };
    stream = MakeRingNearStream(std::move(scan), std::move(*plan.near), *rings);
    plan.near.reset();
  } else {
    // A near read is planned with its distance bound (a 2dsphere index's cells), unsorted: the
    // distance order comes first.
    const BsonObj planning_filter =
        plan.near ? NearPlanningFilter(*plan.near, plan.filter_spec) : plan.filter_spec;
    HG_ASSIGN_OR_RETURN(
        PlanChoice choice,
        PlanQuery(*coll, planning_filter, plan.near ? BsonObj() : plan.sort, hint, collator.get()));
    if (min_max) {
      HG_RETURN_IF_ERROR(
          ApplyMinMax(&choice.winner, !hint.eoo(), plan.min, plan.max, collator.get()));
    }
    // Plans that can answer from the keys alone read no documents.
    auto cover = [&](QueryPlan& p) {
      p.with_record_id = plan.show_record_id;
      p.with_index_key = plan.return_key;
      if (!p.exact || annotate) return;
      if (plan.count_only) {
        p.covered_fields.emplace();
      } else if (!plan.projection_spec.IsEmpty()) {
        p.covered_fields = CoveredFields(p, plan.projection_spec, plan.sort);
      }
    };
    cover(choice.winner);
    for (auto& p : choice.rejected) cover(p);
    std::unique_ptr<IndexScan> trial_winner;
    if (!choice.rejected.empty()) {
      int64_t target = plan.limit > 0 ? plan.skip + plan.limit : 101;
      // Explain always runs the trial (its output shows it); other reads use the plan cache.
      // (Plans under a collation are not cached: the cache's shapes do not hold collations.)
      const bool use_cache = plan.count_index_use && !collator && !plan.near;
      const std::string shape = QueryShape(plan.filter_spec, plan.sort, plan.projection_spec,
                                           plan.count_only ? "count" : "");
      const std::string index_set = IndexSetSignature(*coll);
      if (use_cache) {
        HG_ASSIGN_OR_RETURN(trial_winner, RunCachedPlan(coll, rctx.engine, &choice, plan.filter,
                                                        shape, index_set, target));
      }
      if (!trial_winner) {
        HG_ASSIGN_OR_RETURN(auto outcome, RunTrial(coll, rctx.engine, &choice, plan.filter,
                                                   plan.near ? BsonObj() : plan.sort, target));
        if (use_cache) {
          PlanCacheEntry e;
          e.shape = shape;
          e.index_set = index_set;
          e.index_name = choice.winner.index->desc.name;
          e.wildcard_path = choice.winner.wildcard_path;
          e.works = outcome.trials.front().works;
          e.query = plan.filter_spec.Owned();  // the request's buffer goes away
          e.sort = plan.sort.Owned();
          e.projection = plan.projection_spec.Owned();
          PlanCache::Instance().Store(coll->ns(), std::move(e));
        }
        info->trials = std::move(outcome.trials);
        trial_winner = std::move(outcome.winner_scan);
      }
    }
    if (plan.count_index_use) RecordIndexUse(choice.winner);
    if (choice.winner.IsCollScan()) {
      auto scan = std::make_unique<CollectionScan>(coll, rctx.engine, std::move(plan.filter),
                                                   choice.winner.natural_reverse);
      scan->set_with_record_id(plan.show_record_id);
      info->collection_scan = scan.get();
      stream = std::move(scan);
    } else {
      sorted_by_scan = choice.winner.provides_sort;
      auto scan = trial_winner ? std::move(trial_winner)
                               : std::make_unique<IndexScan>(coll, rctx.engine, choice.winner,
                                                             std::move(plan.filter));
      info->index_scan = scan.get();
      stream = std::move(scan);
    }
    RecordPlanSummary(choice.winner.Summary());
    info->choice = std::move(choice);
  }
  if (info != &local_info) {
    stream = std::make_unique<CountingStream>(std::move(stream), &info->scan_returned);
  }
  if (plan.near) stream = MakeNearStream(std::move(stream), std::move(*plan.near));
  // Sort, skip and limit reuse the aggregation stages, which implement find's semantics.
  std::optional<query::SortPattern> sort;
  if (!plan.sort.IsEmpty() && !sorted_by_scan) {
    info->blocking_sort = true;
    HG_ASSIGN_OR_RETURN(sort, query::SortPattern::Parse(plan.sort.Owned()));
    sort->SetCollator(collator);
  }
  if (sort || plan.skip > 0 || plan.limit > 0) {
    pipeline::PipelineContext pctx;
    ApplyDiskUse(rctx, plan.allow_disk_use, &pctx);
    stream = pipeline::Pipeline::ForFind(std::move(sort), plan.skip, plan.limit, pctx)
                 ->Bind(std::move(stream));
  }
  if (annotate) {
    stream = std::make_unique<FindOutputStream>(std::move(stream), std::move(plan.projection),
                                                plan.return_key, plan.show_record_id);
  } else if (plan.projection) {
    stream = std::make_unique<ProjectionStream>(std::move(stream), std::move(*plan.projection));
  }
  return stream;
}

void ApplyDiskUse(const ReadContext& rctx, std::optional<bool> allow_disk_use,
                  pipeline::PipelineContext* pctx) {
  pipeline::ApplyMemoryParameters(allow_disk_use,
                                  pipeline::SpillDirectory(std::string(rctx.dbpath)), pctx);
}

}  // namespace hourglass::exec
