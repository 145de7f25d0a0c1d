#include "commands/explain_timeseries.h"

#include <chrono>

#include "commands/aggregate_collections.h"
#include "commands/command_util.h"
#include "commands/crud_util.h"
#include "commands/explain_request.h"
#include "commands/timeseries_write.h"
#include "exec/explain_timeseries.h"
#include "exec/namespace_resolver.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using Clock = std::chrono::steady_clock;

namespace {

// Explain of a delete or update of measurements (MongoDB 7.0's TS_MODIFY over a scan of the
// buckets): the statement runs as a dry run that counts what it would change.
Status ExplainTimeseriesModify(CommandContext& ctx, const BsonObj& inner,
                               std::string_view verbosity, const std::string& kind,
                               const timeseries::TimeseriesCollection& ts, BsonBuilder& reply) {
  HG_ASSIGN_OR_RETURN(exec::ExplainRequest req, ParseExplainRequest(ctx, inner, false));
  const bool execute = verbosity != "queryPlanner";
  const bool multi = req.limit == 0;
  // findAndModify runs as a delete or an update of one measurement.
  const bool find_and_modify = kind == "findAndModify";
  const bool is_delete = kind == "delete" || (find_and_modify && inner["remove"].Truthy());
  ModifyStats stats;
  ModifyOptions options;
  options.dry_run = true;
  options.stats = &stats;
  options.hint = req.hint;
  auto start = Clock::now();
  // A sorted findAndModify modifies the first measurement in the sort's order (crud_write.cc).
  BsonObj pick;
  if (find_and_modify && !req.sort.IsEmpty()) {
    HG_ASSIGN_OR_RETURN(
        pick, FirstMeasurementInOrder(ctx, ts, req.filter, req.sort, req.hint, req.expr_ctx));
    options.only = &pick;
  }
  int64_t matched = 0, changed = 0;
  if (is_delete) {
    HG_ASSIGN_OR_RETURN(changed,
                        DeleteMeasurements(ctx, ts, req.filter, multi, req.expr_ctx, options));
    matched = changed;
  } else {
    BsonObj stmt = find_and_modify ? inner : inner["updates"].Obj().FirstElement().Obj();
    BsonElement u = stmt[find_and_modify ? "update" : "u"];
    BsonElement af = stmt["arrayFilters"];
    HG_ASSIGN_OR_RETURN(UpdateOutcome out,
                        UpdateMeasurements(ctx, ts, req.filter, u,
                                           af.type() == BsonType::kArray ? af.Obj() : BsonObj(),
                                           multi, req.upsert, req.expr_ctx, options));
    matched = out.matched;
    changed = out.modified;
  }
  const int64_t millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();

  const BsonObj& bucket_bson = stats.bucket_filter;
  // The per-measurement filter: none when the metaField decides every bucket whole.
  const BsonObj residual = stats.meta_only ? BsonObj() : req.filter;
  auto plan = [&](bool with_stats) {
    BsonBuilder b;
    b.AppendString("stage", "TS_MODIFY");
    if (with_stats) b.AppendInt64("nReturned", 0);
    b.AppendString("opType", is_delete ? (multi ? "deleteMany" : "deleteOne")
                                       : (multi ? "updateMany" : "updateOne"));
    b.AppendObject("bucketFilter", bucket_bson);
    b.AppendObject("residualFilter", residual);
    if (options.only != nullptr) b.AppendObject("sortPattern", req.sort);
    if (with_stats) {
      b.AppendInt64("nBucketsUnpacked", stats.buckets_unpacked);
      b.AppendInt64("nMeasurementsMatched", matched);
      b.AppendInt64(is_delete ? "nMeasurementsDeleted" : "nMeasurementsUpdated", changed);
    }
    b.AppendObject("inputStage", with_stats ? stats.input_plan_run : stats.input_plan);
    return b.Obj();
  };
  reply.AppendString("explainVersion", "1");
  size_t qp = reply.OpenObject("queryPlanner");
  reply.AppendString("namespace", exec::BucketsNamespace(req.nss).ns());
  reply.AppendBool("indexFilterSet", false);
  reply.AppendObject("parsedQuery", bucket_bson);
  reply.AppendBool("maxIndexedOrSolutionsReached", false);
  reply.AppendBool("maxIndexedAndSolutionsReached", false);
  reply.AppendBool("maxScansToExplodeReached", false);
  reply.AppendObject("winningPlan", plan(false));
  reply.AppendArray("rejectedPlans", BsonObj());
  reply.Close(qp);
  if (execute) {
    size_t es = reply.OpenObject("executionStats");
    reply.AppendBool("executionSuccess", true);
    reply.AppendInt64("nReturned", 0);
    reply.AppendInt64("executionTimeMillis", millis);
    reply.AppendInt64("totalKeysExamined", 0);
    reply.AppendInt64("totalDocsExamined", stats.buckets_examined);
    reply.AppendObject("executionStages", plan(true));
    if (verbosity == "allPlansExecution") reply.AppendArray("allPlansExecution", BsonObj());
    reply.Close(es);
  }
  AppendExplainCommandAndServerInfo(ctx, inner, reply);
  return Status::OK();
}

}  // namespace

StatusWith<bool> ExplainTimeseries(CommandContext& ctx, const BsonObj& inner,
                                   std::string_view verbosity, BsonBuilder& reply) {
  if (inner.IsEmpty()) return false;
  std::string kind(inner.FirstElement().FieldName());
  if (kind == "findandmodify") kind = "findAndModify";
  static const std::vector<std::string_view> kKinds = {
      "find", "count", "distinct", "update", "delete", "findAndModify", "aggregate"};
  if (std::find(kKinds.begin(), kKinds.end(), kind) == kKinds.end()) return false;
  auto coll_name = GetCollectionName(inner, ctx.db);
  if (!coll_name.ok()) return false;  // the general path reports it
  catalog::NamespaceString nss{ctx.db, coll_name.value()};
  if (!catalog::ValidateCollectionName(nss).ok()) return false;
  auto resolved = exec::Resolve(ctx.service.Read(), nss);
  if (!resolved.ok() || !resolved.value().timeseries) return false;
  timeseries::TimeseriesCollection ts = std::move(*resolved.value().timeseries);
  if (kind == "delete" || kind == "update" || kind == "findAndModify") {
    HG_RETURN_IF_ERROR(ExplainTimeseriesModify(ctx, inner, verbosity, kind, ts, reply));
    return true;
  }
  if (kind != "find" && kind != "aggregate" && kind != "count" && kind != "distinct") {
    return Status(ErrorCode::kCommandNotSupported,
                  "explain of " + kind + " on a time-series collection is not supported yet");
  }
  HG_ASSIGN_OR_RETURN(exec::ExplainRequest req, ParseExplainRequest(ctx, inner, true));
  if (kind == "find") HG_RETURN_IF_ERROR(CheckFindRunsAsAggregate(inner));
  const std::vector<BsonObj> stages = exec::TimeseriesStagesOf(req, inner);
  const bool execute = verbosity != "queryPlanner";
  if (execute && kind == "aggregate") {
    BsonArrayBuilder all;
    for (const BsonObj& st : stages) all.AppendObject(st);
    if (PipelineWritesOutput(all.Obj())) {
      return Status(ErrorCode::kCommandNotSupported,
                    "explain with executionStats of a pipeline ending in $out or $merge is not "
                    "supported yet");
    }
  }
  HG_RETURN_IF_ERROR(exec::ExplainTimeseriesRead(ctx.service.Read(), std::move(ts), req, stages,
                                                 verbosity, reply));
  AppendExplainCommandAndServerInfo(ctx, inner, reply);
  return true;
}

}  // namespace hourglass::commands
