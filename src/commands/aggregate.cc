// aggregate, count, distinct.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

#include "base/clock.h"
#include "bson/bson_compare.h"
#include "commands/admin_commands.h"
#include "commands/aggregate_collections.h"
#include "commands/command.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/crud_util.h"
#include "commands/ddl_commands.h"
#include "commands/explain.h"
#include "commands/rollups.h"
#include "commands/timeseries_util.h"
#include "exec/collection_scan.h"
#include "exec/index_scan.h"
#include "exec/plan_cache.h"
#include "exec/timeseries_read.h"
#include "timeseries/index_conversion.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// The document $collStats produces for `nss` ({ns, host, localTime, storageStats, count}).
StatusWith<BsonObj> CollStatsDocument(CommandContext& ctx, const catalog::NamespaceString& nss,
                                      const BsonElement& spec) {
  if (spec.type() != BsonType::kObject) {
    return Status(ErrorCode::kLocation5447000, "$collStats must take a nested object");
  }
  BsonBuilder out;
  out.AppendString("ns", nss.ns());
  out.AppendString("host", HostAndPort(ctx.service));
  out.AppendDate("localTime", NowMillis());
  for (BsonElement e : spec.Obj()) {
    std::string_view f = e.FieldName();
    if (f == "storageStats") {
      if (e.type() != BsonType::kObject) return WrongType("$collStats", e, "object");
      int64_t scale = 1;
      BsonElement sc = e.Obj()["scale"];
      if (!sc.eoo()) {
        if (!sc.IsNumber() || sc.NumberLong() < 1) {
          return Status(ErrorCode::kBadValue, "scale has to be >= 1");
        }
        scale = sc.NumberLong();
      }
      size_t t = out.OpenObject("storageStats");
      HG_RETURN_IF_ERROR(AppendCollStats(ctx, nss, scale, out));
      out.Close(t);
    } else if (f == "count") {
      if (e.type() != BsonType::kObject) return WrongType("$collStats", e, "object");
      auto coll = ctx.service.catalog->Lookup(nss);
      if (coll && coll->IsView()) {
        return Status(ErrorCode::kCommandNotSupported,
                      "$collStats count on a view or time-series collection is not supported yet");
      }
      if (coll) HG_RETURN_IF_ERROR(coll->read_barrier().Run());
      size_t t = out.OpenObject("count");
      out.AppendInt64("count", coll ? coll->NumRecords() : 0);
      out.Close(t);
    } else if (f == "latencyStats" || f == "queryExecStats") {
      return Status(ErrorCode::kCommandNotSupported,
                    "$collStats " + std::string(f) + " is not supported yet");
    } else {
      return UnknownField("$collStats", f);
    }
  }
  return out.Obj();
}

// The documents $indexStats produces for `nss`: one per index {name, key, host, accesses: {ops,
// since}, spec[, building]}; on a time-series collection its indexes as listIndexes shows them.
// Errors: 28803 for a non-empty argument, CommandNotSupportedOnView (166) on views. A missing
// collection has no indexes.
StatusWith<std::vector<BsonObj>> IndexStatsDocuments(CommandContext& ctx,
                                                     const catalog::NamespaceString& nss,
                                                     const BsonElement& spec) {
  if (spec.type() != BsonType::kObject || !spec.Obj().IsEmpty()) {
    return Status(ErrorCode::kLocation28803,
                  "The $indexStats stage specification must be an empty object");
  }
  std::vector<BsonObj> out;
  HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, exec::Resolve(ctx.service.Read(), nss));
  std::shared_ptr<catalog::Collection> coll = resolved.collection;
  if (!coll) return out;
  HG_RETURN_IF_ERROR(exec::RequireBuckets(resolved));
  std::optional<timeseries::TimeseriesOptions> ts_options;
  if (resolved.timeseries) {
    // The bucket collection's indexes, in the user's terms (spec §7.2); those with no user
    // form (none today but the clustered _id) are left out, as MongoDB does.
    ts_options = resolved.timeseries->options;
    coll = resolved.timeseries->buckets;
  }
  if (coll->IsView()) {
    return Status(ErrorCode::kCommandNotSupportedOnView,
                  "Namespace " + nss.ns() + " is a view, not a collection");
  }
  const std::string host = HostAndPort(ctx.service);
  for (const catalog::IndexEntry& idx : coll->entry().indexes) {
    BsonObj spec = idx.spec;
    if (ts_options) {
      auto user = timeseries::UserIndexSpecFromBucketSpec(idx.spec, *ts_options);
      if (!user) continue;
      spec = *user;
    }
    BsonBuilder b;
    b.AppendString("name", spec["name"].Str());
    b.AppendObject("key", spec["key"].Obj());
    b.AppendString("host", host);
    size_t acc = b.OpenObject("accesses");
    b.AppendInt64("ops", idx.usage->ops.load());
    b.AppendDate("since", idx.usage->since_millis);
    b.Close(acc);
    b.AppendObject("spec", spec);
    if (!idx.ready) b.AppendBool("building", true);
    out.push_back(b.Obj());
  }
  return out;
}

// The documents $planCacheStats produces for `nss`: one per live plan cache entry
// (plan_cache.h) {planCacheKey, queryHash, isActive, works, timeOfCreation, createdFromQuery:
// {query, sort, projection}, cachedPlan: {stage, indexName}, host}. FailedToParse (9) unless the
// argument is an object; a missing collection or a view has none.
StatusWith<std::vector<BsonObj>> PlanCacheStatsDocuments(CommandContext& ctx,
                                                         const catalog::NamespaceString& nss,
                                                         const BsonElement& spec) {
  if (spec.type() != BsonType::kObject) {
    return Status(ErrorCode::kFailedToParse, "$planCacheStats value must be an object");
  }
  std::vector<BsonObj> out;
  auto coll = ctx.service.catalog->Lookup(nss);
  if (!coll || coll->IsView()) return out;
  auto hex = [](const std::string& s) {
    char buf[9];
    std::snprintf(buf, sizeof(buf), "%08X",
                  static_cast<unsigned>(std::hash<std::string>{}(s)&0xffffffffu));
    return std::string(buf);
  };
  const std::string host = HostAndPort(ctx.service);
  for (const exec::PlanCacheEntry& e :
       exec::PlanCache::Instance().List(coll->ns(), exec::IndexSetSignature(*coll))) {
    BsonBuilder b;
    b.AppendString("planCacheKey", hex(e.shape + e.index_set));
    b.AppendString("queryHash", hex(e.shape));
    b.AppendBool("isActive", true);
    b.AppendInt64("works", e.works);
    b.AppendDate("timeOfCreation", e.created_millis);
    size_t q = b.OpenObject("createdFromQuery");
    b.AppendObject("query", e.query);
    b.AppendObject("sort", e.sort);
    b.AppendObject("projection", e.projection);
    b.Close(q);
    size_t p = b.OpenObject("cachedPlan");
    b.AppendString("stage", "IXSCAN");
    b.AppendString("indexName", e.index_name);
    b.Close(p);
    b.AppendString("host", host);
    out.push_back(b.Obj());
  }
  return out;
}

// Runs the stages after the first of `stages` over `docs` (what a catalog stage such as
// $collStats or $indexStats produced) and replies with the cursor.
Status ReplyFromCatalogSource(CommandContext& ctx, const catalog::NamespaceString& nss,
                              const BsonObj& stages, const pipeline::PipelineContext& pctx,
                              std::vector<BsonObj> docs, int64_t batch_size, BsonBuilder& reply) {
  BsonArrayBuilder rest;
  bool skip = true;
  for (BsonElement st : stages) {
    if (!skip) rest.AppendObject(st.Obj());
    skip = false;
  }
  HG_ASSIGN_OR_RETURN(auto pipe, pipeline::Pipeline::Parse(rest.Obj(), pctx));
  auto out = pipe->Bind(std::make_unique<pipeline::VectorDocumentStream>(std::move(docs)));
  return ReplyWithCursor(ctx, nss.ns(), std::move(out), batch_size, false, reply);
}

// The aggregate command `cmd` on a view as MongoDB runs it: on what `view` is defined on, with
// the view's pipeline before the command's `stages`.
BsonObj AggregateOverView(const BsonObj& cmd, const exec::ResolvedView& view,
                          const BsonObj& stages) {
  BsonBuilder b;
  b.AppendString("aggregate", view.base.coll);
  size_t arr = b.OpenArray("pipeline");
  int i = 0;
  for (const BsonObj& stage : view.pipeline) b.AppendObject(std::to_string(i++), stage);
  for (BsonElement stage : stages) b.AppendElementAs(stage, std::to_string(i++));
  b.Close(arr);
  bool first = true;
  for (BsonElement e : cmd) {
    if (!first && e.FieldName() != "pipeline") b.AppendElement(e);
    first = false;
  }
  // The view's collation, unless the read repeats it (RunAggregate refuses any other).
  if (!view.collation.IsEmpty() && cmd["collation"].eoo()) {
    b.AppendObject("collation", view.collation);
  }
  return b.Obj();
}

// The name of a pipeline's first stage ("" if there is none or it is not a stage document).
std::string_view FirstStageName(const BsonObj& stages) {
  BsonElement first = stages.FirstElement();
  if (first.type() != BsonType::kObject || first.Obj().IsEmpty()) return std::string_view();
  return first.Obj().FirstElement().FieldName();
}

// An aggregate starting with $currentOp, rewritten to start with the operations it lists as a
// $documents stage (their fields taken literally): the rest of the pipeline filters and shapes
// them. As mongod, it runs only as {aggregate: 1} on admin, and `allUsers: false` (the default)
// keeps the caller's own operations under --auth.
StatusWith<BsonObj> CurrentOpAsDocuments(CommandContext& ctx, const BsonObj& cmd,
                                         const BsonObj& stages, bool collectionless) {
  if (!collectionless || ctx.db != "admin") {
    return Status(ErrorCode::kInvalidNamespace,
                  "$currentOp must be run against the 'admin' database with {aggregate: 1}");
  }
  BsonElement spec = stages.FirstElement().Obj().FirstElement();
  if (spec.type() != BsonType::kObject) {
    return Status(ErrorCode::kFailedToParse,
                  "$currentOp options must be specified in an object, but found: " +
                      std::string(bson::TypeName(spec.type())));
  }
  static constexpr std::string_view kOptions[] = {"allUsers",     "idleConnections", "idleCursors",
                                                  "idleSessions", "localOps",        "truncateOps",
                                                  "backtrace",    "targetAllNodes"};
  bool all_users = false;
  for (const BsonElement& o : spec.Obj()) {
    std::string_view n = o.FieldName();
    if (std::find(std::begin(kOptions), std::end(kOptions), n) == std::end(kOptions)) {
      return Status(ErrorCode::kFailedToParse,
                    "Unrecognized option '" + std::string(n) + "' in $currentOp stage.");
    }
    if (o.type() != BsonType::kBool) {
      return Status(ErrorCode::kFailedToParse,
                    "The '" + std::string(n) +
                        "' parameter of the $currentOp stage must be a boolean value, but found: " +
                        std::string(bson::TypeName(o.type())));
    }
    if (n == "allUsers") all_users = o.Bool();
  }
  BsonBuilder b;
  for (const BsonElement& e : cmd) {
    if (e.FieldName() != "pipeline") b.AppendElement(e);
  }
  size_t pipeline = b.OpenArray("pipeline");
  {
    BsonArrayBuilder ops;
    for (const BsonObj& op : CurrentOperations(ctx, !all_users)) ops.AppendObject(op);
    BsonBuilder literal;
    literal.AppendArray("$literal", ops.Obj());
    BsonBuilder documents;
    documents.AppendObject("$documents", literal.Obj());
    b.AppendObject("0", documents.Obj());
  }
  int i = 0;
  for (const BsonElement& stage : stages) {
    if (i++ > 0) b.AppendElementAs(stage, std::to_string(i - 1));
  }
  b.Close(pipeline);
  return b.Obj();
}

// The stages whose documents come from the catalog, not from the collection's records.
bool IsCatalogSourceStage(std::string_view name) {
  return name == "$collStats" || name == "$indexStats" || name == "$planCacheStats";
}

}  // namespace

// A read of a view cannot ask for another collation than the view's, as in MongoDB.
Status ViewCollationOverride() {
  return Status(ErrorCode::kOptionNotSupportedOnView, "Cannot override a view's default collation");
}

// The collator of a view's collation (null: simple).
StatusWith<std::shared_ptr<const collation::Collator>> ViewCollator(const exec::ResolvedView& v) {
  if (v.collation.IsEmpty()) return std::shared_ptr<const collation::Collator>();
  return collation::Collator::Make(v.collation);
}

// The stages of `stages` (and of their sub-pipelines) that would compare strings without the
// aggregate's collation: every stage applies it ($match and its $expr, $sort, $group's keys and
// accumulators, expressions, $lookup's and $graphLookup's matches, $unionWith's and $facet's
// sub-pipelines, $bucket's boundaries, $bucketAuto's order, $setWindowFields' partitions, order,
// ranks and $min/$max/$addToSet, as $fill's, $densify's partitions, $geoNear's `query`) or
// compares nothing ($skip, $limit, $unwind...; $merge matches under it, on an index of its
// collation), but for those not listed here, which fail with CommandNotSupported (115) rather
// than compare strings by their bytes.
Status CheckStagesUnderCollation(const BsonObj& stages, int depth) {
  static constexpr std::string_view kCollating[] = {
      "$match",  "$sort",        "$skip",        "$limit",
      "$count",  "$project",     "$unset",       "$addFields",
      "$set",    "$replaceRoot", "$replaceWith", "$unwind",
      "$group",  "$sortByCount", "$redact",      "$sample",
      "$lookup", "$graphLookup", "$unionWith",   "$facet",
      "$out",    "$bucket",      "$bucketAuto",  "$setWindowFields",
      "$fill",   "$densify",     "$documents",   "$merge",
      "$geoNear"};
  for (BsonElement st : stages) {
    if (st.type() != BsonType::kObject || st.Obj().IsEmpty()) continue;  // the parser reports it
    const BsonElement spec = st.Obj().FirstElement();
    const std::string_view name = spec.FieldName();
    if (std::find(std::begin(kCollating), std::end(kCollating), name) == std::end(kCollating)) {
      return Status(
          ErrorCode::kCommandNotSupported,
          "the stage " + std::string(name) + " with a non-simple collation is not supported yet");
    }
    if (spec.type() != BsonType::kObject || depth > 20) continue;
    for (BsonElement f : spec.Obj()) {
      // $lookup's and $unionWith's `pipeline`; $facet's named pipelines.
      if (f.type() == BsonType::kArray && (name == "$facet" || f.FieldName() == "pipeline")) {
        HG_RETURN_IF_ERROR(CheckStagesUnderCollation(f.Obj(), depth + 1));
      }
    }
  }
  return Status::OK();
}

Status RunAggregate(CommandContext& ctx, const BsonObj& request, bool single_batch,
                    BsonBuilder& reply) {
  BsonObj cmd = request;
  HG_RETURN_IF_ERROR(
      CheckKnownFields(cmd, {"pipeline", "cursor", "explain", "allowDiskUse", "hint", "collation",
                             "bypassDocumentValidation", "let", "fromMongos", "needsMerge"}));
  BsonElement target = cmd.FirstElement();
  bool collectionless = target.IsNumber() && target.NumberLong() == 1;
  std::string coll_name;
  if (!collectionless) {
    HG_ASSIGN_OR_RETURN(coll_name, GetCollectionName(cmd, ctx.db));
  }
  HG_ASSIGN_OR_RETURN(auto collator, CheckHintAndGetCollation("aggregate", cmd));
  HG_ASSIGN_OR_RETURN(auto stages, GetArray("aggregate", cmd, "pipeline"));
  if (!stages) {
    return MissingField("aggregate", "pipeline");
  }
  if (FirstStageName(*stages) == "$currentOp") {
    HG_ASSIGN_OR_RETURN(cmd, CurrentOpAsDocuments(ctx, cmd, *stages, collectionless));
    stages = cmd["pipeline"].Obj();
  }
  // A view reads what it is defined on; its cursor keeps the view's name. So does an aggregate
  // of a time-series collection that one of its rollups answers.
  std::optional<std::string> view_ns;
  HG_ASSIGN_OR_RETURN(const bool explaining, GetBool("aggregate", cmd, "explain", false));
  if (!collectionless && !explaining) {
    HG_ASSIGN_OR_RETURN(auto over_rollup, AggregateOverRollup(ctx, cmd));
    if (over_rollup) {
      view_ns = catalog::NamespaceString{ctx.db, coll_name}.ns();
      cmd = over_rollup->cmd;
      coll_name = std::string(cmd.FirstElement().Str());
      stages = cmd["pipeline"].Obj();
    }
  }
  if (!collectionless && !view_ns) {
    catalog::NamespaceString nss{ctx.db, coll_name};
    HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(nss));
    HG_ASSIGN_OR_RETURN(auto view, exec::ResolveView(*ctx.service.catalog, nss));
    if (view) {
      // A view reads under its own collation; a request may only repeat it.
      HG_ASSIGN_OR_RETURN(auto view_collator, ViewCollator(*view));
      if (!cmd["collation"].eoo() &&
          !collation::SameCollation(collator.get(), view_collator.get())) {
        return ViewCollationOverride();
      }
      collator = std::move(view_collator);
      if (IsCatalogSourceStage(FirstStageName(*stages))) {
        return Status(ErrorCode::kCommandNotSupportedOnView,
                      "Namespace " + nss.ns() + " is a view, not a collection");
      }
      view_ns = nss.ns();
      cmd = AggregateOverView(cmd, *view, *stages);
      coll_name = view->base.coll;
      stages = cmd["pipeline"].Obj();
    }
  }
  if (!collectionless && !view_ns && cmd["collation"].eoo()) {
    // A collection's default collation applies to aggregates that name none.
    HG_ASSIGN_OR_RETURN(
        collator, CheckHintAndGetCollation("aggregate", cmd, ctx.service, {ctx.db, coll_name}));
  }
  if (collator) HG_RETURN_IF_ERROR(CheckStagesUnderCollation(*stages));
  HG_ASSIGN_OR_RETURN(bool explain, GetBool("aggregate", cmd, "explain", false));
  if (explain) return RunExplain(ctx, cmd, "queryPlanner", reply);
  HG_ASSIGN_OR_RETURN(auto cursor_opts, GetObject("aggregate", cmd, "cursor"));
  if (!cursor_opts) {
    return Status(ErrorCode::kFailedToParse,
                  "The 'cursor' option is required, except for aggregate with the explain "
                  "argument");
  }
  HG_ASSIGN_OR_RETURN(auto batch_size, GetInt64("aggregate.cursor", *cursor_opts, "batchSize"));
  if (batch_size && *batch_size < 0) {
    return Status(ErrorCode::kBadValue, "BatchSize value must be non-negative, but received: " +
                                            std::to_string(*batch_size));
  }
  pipeline::PipelineContext pctx;
  HG_ASSIGN_OR_RETURN(auto allow_disk_use, GetAllowDiskUse("aggregate", cmd));
  exec::ApplyDiskUse(ctx.service.Read(), allow_disk_use, &pctx);
  HG_ASSIGN_OR_RETURN(query::ExpressionContext ectx, CommandExpressionContext(cmd));
  pctx.now_millis = ectx.now_millis;
  pctx.let = ectx.let;
  pctx.collator = collator;
  pctx.db = ctx.db;
  pctx.collections = MakeCollectionAccess(ctx.service);  // $lookup, $unionWith, $out, $merge...
  {
    int i = 0;
    for (BsonElement st : *stages) {
      std::string_view name = st.type() == BsonType::kObject && !st.Obj().IsEmpty()
                                  ? st.Obj().FirstElement().FieldName()
                                  : std::string_view();
      if (i++ > 0 && (name == "$indexStats" || name == "$planCacheStats")) {
        return Status(ErrorCode::kLocation40602,
                      std::string(name) + " is only valid as the first stage in a pipeline");
      }
    }
  }
  const std::string_view first_name = FirstStageName(*stages);
  if (!collectionless && IsCatalogSourceStage(first_name)) {
    // These read the catalog, not the documents: what they produce is the source of the rest
    // of the pipeline.
    catalog::NamespaceString nss{ctx.db, coll_name};
    BsonElement spec = stages->FirstElement().Obj().FirstElement();
    std::vector<BsonObj> docs;
    if (first_name == "$planCacheStats") {
      HG_ASSIGN_OR_RETURN(docs, PlanCacheStatsDocuments(ctx, nss, spec));
    } else if (first_name == "$indexStats") {
      HG_ASSIGN_OR_RETURN(docs, IndexStatsDocuments(ctx, nss, spec));
    } else {
      HG_ASSIGN_OR_RETURN(BsonObj stats, CollStatsDocument(ctx, nss, spec));
      docs.push_back(std::move(stats));
    }
    return ReplyFromCatalogSource(ctx, nss, *stages, pctx, std::move(docs),
                                  batch_size.value_or(101), reply);
  }
  HG_ASSIGN_OR_RETURN(auto pipe, pipeline::Pipeline::Parse(*stages, pctx));

  std::unique_ptr<pipeline::DocumentStream> out;
  std::string ns;
  if (collectionless) {
    ns = ctx.db + ".$cmd.aggregate";
    out = pipe->Bind(std::make_unique<pipeline::VectorDocumentStream>(std::vector<BsonObj>{}));
  } else {
    catalog::NamespaceString nss{ctx.db, coll_name};
    ns = view_ns.value_or(nss.ns());
    const exec::ReadContext rctx = ctx.service.Read();
    HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, exec::Resolve(rctx, nss));
    HG_ASSIGN_OR_RETURN(out,
                        BuildPipelineRead(rctx, std::move(resolved), std::move(pipe), HintOf(cmd)));
  }
  const int64_t first_batch = PipelineWritesOutput(*stages) ? 101 : batch_size.value_or(101);
  return ReplyWithCursor(ctx, ns, std::move(out), first_batch, single_batch, reply);
}

BsonObj CountOverViewStages(const BsonObj& query, int64_t skip, int64_t limit) {
  BsonArrayBuilder stages;
  auto stage = [&](std::string_view name, auto append) {
    BsonBuilder s;
    append(s, name);
    stages.AppendObject(s.Obj());
  };
  if (!query.IsEmpty()) stage("$match", [&](BsonBuilder& s, auto n) { s.AppendObject(n, query); });
  if (skip > 0) stage("$skip", [&](BsonBuilder& s, auto n) { s.AppendInt64(n, skip); });
  if (limit != 0)
    stage("$limit", [&](BsonBuilder& s, auto n) { s.AppendInt64(n, std::abs(limit)); });
  stage("$count", [&](BsonBuilder& s, auto n) { s.AppendString(n, "n"); });
  return stages.Obj();
}

BsonObj DistinctOverViewStages(std::string_view key, const BsonObj& query) {
  const std::string path = "$" + std::string(key);
  BsonArrayBuilder stages;
  if (!query.IsEmpty()) {
    BsonBuilder s;
    s.AppendObject("$match", query);
    stages.AppendObject(s.Obj());
  }
  BsonBuilder unwind;
  size_t u = unwind.OpenObject("$unwind");
  unwind.AppendString("path", path);
  unwind.AppendBool("preserveNullAndEmptyArrays", true);
  unwind.Close(u);
  stages.AppendObject(unwind.Obj());
  BsonBuilder group;
  size_t g = group.OpenObject("$group");
  group.AppendNull("_id");
  size_t d = group.OpenObject("values");
  group.AppendString("$addToSet", path);
  group.Close(d);
  group.Close(g);
  stages.AppendObject(group.Obj());
  return stages.Obj();
}

StatusWith<std::optional<OverRollup>> AggregateOverRollup(CommandContext& ctx, const BsonObj& cmd) {
  BsonElement target = cmd.FirstElement();
  if (ctx.service.rollups == nullptr || target.FieldName() != "aggregate" ||
      target.type() != BsonType::kString || cmd["pipeline"].type() != BsonType::kArray ||
      !cmd["hint"].eoo() || !cmd["collation"].eoo()) {
    return std::optional<OverRollup>();
  }
  const catalog::NamespaceString nss{ctx.db, std::string(target.Str())};
  auto has_collation = [&](const std::string& coll) {
    auto c = ctx.service.catalog->Lookup({ctx.db, coll});
    return !c || !catalog::CollationOption(c->entry().options).IsEmpty();
  };
  auto source = ctx.service.catalog->Lookup(nss);
  if (!source || source->entry().type != "timeseries" || has_collation(nss.coll)) {
    return std::optional<OverRollup>();
  }
  HG_ASSIGN_OR_RETURN(auto answer, ctx.service.rollups->AnswerFrom(nss, cmd["pipeline"].Obj()));
  if (!answer || has_collation(answer->rollup)) return std::optional<OverRollup>();
  BsonBuilder b;
  for (BsonElement e : cmd) {
    if (e.FieldName() == "aggregate") {
      b.AppendString("aggregate", answer->rollup);
    } else if (e.FieldName() == "pipeline") {
      b.AppendArray("pipeline", answer->pipeline);
    } else {
      b.AppendElement(e);
    }
  }
  BsonBuilder note;
  note.AppendString("rollup", ctx.db + "." + answer->rollup);
  note.AppendString("source", nss.ns());
  note.AppendInt64("pendingRanges", answer->pending_ranges);
  return std::optional<OverRollup>(OverRollup{b.Obj(), note.Obj()});
}

StatusWith<std::optional<BsonObj>> ReadOverView(CommandContext& ctx, const BsonObj& cmd) {
  std::string_view kind = cmd.FirstElement().FieldName();
  if (cmd.FirstElement().type() != BsonType::kString) return std::optional<BsonObj>();
  catalog::NamespaceString nss{ctx.db, std::string(cmd.FirstElement().Str())};
  HG_ASSIGN_OR_RETURN(auto view, exec::ResolveView(*ctx.service.catalog, nss));
  if (!view) return std::optional<BsonObj>();
  BsonObj stages;
  BsonObj aggregate = cmd;
  if (kind == "aggregate") {
    HG_ASSIGN_OR_RETURN(auto given, GetArray("aggregate", cmd, "pipeline"));
    stages = given.value_or(BsonObj());
  } else if (kind == "find") {
    HG_ASSIGN_OR_RETURN(aggregate, FindAsAggregate(cmd));
    stages = aggregate["pipeline"].Obj();
  } else if (kind == "count") {
    HG_ASSIGN_OR_RETURN(auto q, GetObject("count", cmd, "query"));
    HG_ASSIGN_OR_RETURN(auto skip, GetInt64("count", cmd, "skip"));
    HG_ASSIGN_OR_RETURN(auto limit, GetInt64("count", cmd, "limit"));
    stages = CountOverViewStages(q.value_or(BsonObj()), skip.value_or(0), limit.value_or(0));
    aggregate = BsonObj();
  } else if (kind == "distinct") {
    HG_ASSIGN_OR_RETURN(auto q, GetObject("distinct", cmd, "query"));
    HG_ASSIGN_OR_RETURN(auto key, GetString("distinct", cmd, "key"));
    if (!key) return MissingField("distinct", "key");
    stages = DistinctOverViewStages(*key, q.value_or(BsonObj()));
    aggregate = BsonObj();
  } else {
    return Status(ErrorCode::kCommandNotSupportedOnView,
                  "Namespace " + nss.ns() + " is a view, not a collection");
  }
  if (aggregate.IsEmpty()) {
    BsonBuilder b;
    b.AppendString("aggregate", nss.coll);
    b.AppendArray("pipeline", stages);
    size_t c = b.OpenObject("cursor");
    b.Close(c);
    if (!cmd["hint"].eoo()) b.AppendElement(cmd["hint"]);
    aggregate = b.Obj();
  }
  return std::optional<BsonObj>(AggregateOverView(aggregate, *view, stages));
}

// The first document (or none) `aggregate` answers: count and distinct on a view, whose
// pipelines end in a stage that yields at most one ($count, $group by null).
StatusWith<std::optional<BsonObj>> FirstResultOf(CommandContext& ctx, const BsonObj& aggregate) {
  BsonBuilder reply;
  HG_RETURN_IF_ERROR(RunAggregate(ctx, aggregate, true, reply));
  BsonObj batch = reply.Obj()["cursor"].Obj()["firstBatch"].Obj().Owned();
  if (batch.IsEmpty()) return std::optional<BsonObj>();
  return std::optional<BsonObj>(batch.FirstElement().Obj().Owned());
}

namespace {

class AggregateCommand : public Command {
 public:
  std::string_view Name() const override { return "aggregate"; }
  ReadLevels ReadConcernLevels() const override { return ReadLevels::kReadsAndSnapshot; }
  Status Run(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) const override {
    return RunAggregate(ctx, cmd, false, reply);
  }
};

// The stages' context of a read by count or distinct: only its collation (null: simple).
pipeline::PipelineContext CollatedContext(std::shared_ptr<const collation::Collator> collator) {
  pipeline::PipelineContext pctx;
  pctx.collator = std::move(collator);
  return pctx;
}

// A view reads under its own collation only (OptionNotSupportedOnView, 167, for another).
Status CheckCollationTarget(CommandContext& ctx, const catalog::NamespaceString& nss,
                            const collation::Collator* collator) {
  auto entry = ctx.service.catalog->Lookup(nss);
  if (entry && entry->entry().type == "view") {
    HG_ASSIGN_OR_RETURN(auto view, exec::ResolveView(*ctx.service.catalog, nss));
    if (!view) return Status::OK();
    HG_ASSIGN_OR_RETURN(auto view_collator, ViewCollator(*view));
    return collation::SameCollation(collator, view_collator.get()) ? Status::OK()
                                                                   : ViewCollationOverride();
  }
  return Status::OK();
}

class CountCommand : public Command {
 public:
  std::string_view Name() const override { return "count"; }
  ReadLevels ReadConcernLevels() const override { return ReadLevels::kReads; }
  Status Run(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) const override {
    HG_RETURN_IF_ERROR(
        CheckKnownFields(cmd, {"query", "limit", "skip", "hint", "collation", "fields"}));
    HG_ASSIGN_OR_RETURN(std::string coll_name, GetCollectionName(cmd, ctx.db));
    catalog::NamespaceString nss{ctx.db, coll_name};
    HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(nss));
    HG_ASSIGN_OR_RETURN(auto collator, CheckHintAndGetCollation("count", cmd, ctx.service, nss));
    HG_ASSIGN_OR_RETURN(auto q, GetObject("count", cmd, "query"));
    HG_ASSIGN_OR_RETURN(auto limit, GetInt64("count", cmd, "limit"));
    HG_ASSIGN_OR_RETURN(auto skip, GetInt64("count", cmd, "skip"));
    if (skip && *skip < 0)
      return Status(ErrorCode::kBadValue, "skip value is negative in count query");
    query::ExpressionContext ectx = query::ExpressionContext::Now();
    ectx.collator = collator;
    // count takes $near as find does (a distance bound can exclude documents).
    BsonObj rest;
    HG_ASSIGN_OR_RETURN(auto near, exec::ExtractNear(q.value_or(BsonObj()), &rest));
    HG_ASSIGN_OR_RETURN(auto matcher, query::Matcher::Parse(rest, ectx));
    if (!cmd["collation"].eoo()) {
      HG_RETURN_IF_ERROR(CheckCollationTarget(ctx, nss, collator.get()));
    }
    HG_ASSIGN_OR_RETURN(auto over_view, ReadOverView(ctx, cmd));
    if (over_view) {
      HG_ASSIGN_OR_RETURN(auto doc, FirstResultOf(ctx, *over_view));
      reply.AppendInt32("n", doc ? static_cast<int32_t>((*doc)["n"].NumberLong()) : 0);
      return Status::OK();
    }
    int64_t n = 0;
    const exec::ReadContext rctx = ctx.service.Read();
    HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, exec::Resolve(rctx, nss));
    const std::shared_ptr<catalog::Collection>& coll = resolved.collection;
    if (resolved.timeseries) {
      // Measurements live in buckets: count them as {$count} over the read, which the
      // time-series rewrites answer from the buckets' row counts where they can.
      exec::TimeseriesReadRequest request;
      request.filter = q.value_or(BsonObj());
      request.hint = HintOf(cmd);
      HG_ASSIGN_OR_RETURN(auto stream, exec::BuildTimeseriesRead(std::move(*resolved.timeseries),
                                                                 rctx.engine, std::move(request),
                                                                 exec::TimeseriesCountStages(cmd),
                                                                 CollatedContext(collator)));
      HG_ASSIGN_OR_RETURN(auto doc, stream->Next());
      reply.AppendInt32("n", doc ? static_cast<int32_t>((*doc)["n"].NumberLong()) : 0);
      return Status::OK();
    } else if (coll && !coll->ident().empty()) {
      if (matcher.MatchesEverything() && cmd["hint"].eoo() && !near) {
        HG_RETURN_IF_ERROR(coll->read_barrier().Run());
        n = coll->NumRecords();  // MongoDB answers an unfiltered count from collection metadata
      } else {
        exec::ReadPlan plan;
        plan.filter = std::move(matcher);
        plan.filter_spec = rest;
        plan.near = std::move(near);
        plan.hint = HintOf(cmd);
        plan.count_only = !plan.near;  // a near read measures every document
        plan.expr_ctx = ectx;
        HG_ASSIGN_OR_RETURN(auto stream, exec::BuildReadStream(rctx, resolved, std::move(plan)));
        while (true) {
          HG_ASSIGN_OR_RETURN(auto doc, stream->Next());
          if (!doc) break;
          ++n;
        }
      }
    }
    n = std::max<int64_t>(0, n - skip.value_or(0));
    int64_t lim = limit.value_or(0);
    if (lim < 0) lim = -lim;
    if (lim > 0) n = std::min(n, lim);
    reply.AppendInt32("n", static_cast<int32_t>(n));
    return Status::OK();
  }
};

class DistinctCommand : public Command {
 public:
  std::string_view Name() const override { return "distinct"; }
  ReadLevels ReadConcernLevels() const override { return ReadLevels::kReadsAndSnapshot; }
  Status Run(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) const override {
    HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"key", "query", "hint", "collation"}));
    HG_ASSIGN_OR_RETURN(std::string coll_name, GetCollectionName(cmd, ctx.db));
    catalog::NamespaceString nss{ctx.db, coll_name};
    HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(nss));
    HG_ASSIGN_OR_RETURN(auto collator, CheckHintAndGetCollation("distinct", cmd, ctx.service, nss));
    HG_ASSIGN_OR_RETURN(auto key, GetString("distinct", cmd, "key"));
    if (!key) {
      return MissingField("distinct", "key");
    }
    HG_ASSIGN_OR_RETURN(auto q, GetObject("distinct", cmd, "query"));
    query::ExpressionContext ectx = query::ExpressionContext::Now();
    ectx.collator = collator;
    HG_ASSIGN_OR_RETURN(auto matcher, query::Matcher::Parse(q.value_or(BsonObj()), ectx));
    if (!cmd["collation"].eoo()) {
      HG_RETURN_IF_ERROR(CheckCollationTarget(ctx, nss, collator.get()));
    }
    exec::ReadPlan plan;
    plan.filter = std::move(matcher);
    plan.filter_spec = q.value_or(BsonObj());
    plan.hint = HintOf(cmd);
    plan.expr_ctx = ectx;
    // Values are kept as single-element documents, sorted and de-duplicated in canonical order.
    std::vector<BsonObj> values;
    auto collect = [&](const BsonElement& v) {
      BsonBuilder b;
      b.AppendElementAs(v, "");
      values.push_back(b.Obj());
    };
    HG_ASSIGN_OR_RETURN(auto over_view, ReadOverView(ctx, cmd));
    if (over_view) {
      HG_ASSIGN_OR_RETURN(auto doc, FirstResultOf(ctx, *over_view));
      if (doc) {
        for (BsonElement v : (*doc)["values"].Obj()) collect(v);
      }
      return ReplyWithValues(std::move(values), reply);
    }
    const exec::ReadContext rctx = ctx.service.Read();
    HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, exec::Resolve(rctx, nss));
    const std::shared_ptr<catalog::Collection>& coll = resolved.collection;
    std::optional<exec::QueryPlan> distinct_scan;
    if (coll && !coll->ident().empty() && coll->entry().type == "collection" && !collator) {
      distinct_scan = exec::PlanDistinctScan(*coll, plan.filter_spec, *key, cmd["hint"]);
    }
    if (distinct_scan) {
      // An index leading with the key: one key per value (DISTINCT_SCAN).
      auto session = ctx.service.engine->NewSession();
      int64_t keys = 0, docs = 0;
      HG_ASSIGN_OR_RETURN(values,
                          exec::DistinctScan(*session, *coll, *distinct_scan, &keys, &docs));
      exec::RecordIndexUse(*distinct_scan);
    } else {
      std::unique_ptr<pipeline::DocumentStream> stream;
      if (resolved.timeseries) {
        // Only the key's top-level field is decoded.
        exec::TimeseriesReadRequest request;
        request.filter = plan.filter_spec;
        request.hint = HintOf(cmd);
        HG_ASSIGN_OR_RETURN(
            stream, exec::BuildTimeseriesRead(*resolved.timeseries, rctx.engine, std::move(request),
                                              exec::TimeseriesDistinctStages(*key),
                                              CollatedContext(collator)));
      } else {
        HG_ASSIGN_OR_RETURN(stream, exec::BuildReadStream(rctx, resolved, std::move(plan)));
      }
      while (true) {
        HG_ASSIGN_OR_RETURN(auto doc, stream->Next());
        if (!doc) break;
        CollectPathValues(*doc, *key, collect);
      }
    }
    return ReplyWithValues(std::move(values), reply, collator.get());
  }

 private:
  // {values: [...]}: `values` (single-element documents) sorted and de-duplicated in canonical
  // order.
  // Under a collation, strings it deems equal count once (the first in their stored order).
  static Status ReplyWithValues(std::vector<BsonObj> values, BsonBuilder& reply,
                                const bson::StringComparator* strings = nullptr) {
    std::stable_sort(values.begin(), values.end(), [&](const BsonObj& a, const BsonObj& b) {
      return bson::CompareElementValues(a.FirstElement(), b.FirstElement(), strings) < 0;
    });
    BsonArrayBuilder out;
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0 && bson::CompareElementValues(values[i - 1].FirstElement(),
                                              values[i].FirstElement(), strings) == 0) {
        continue;
      }
      out.Append(values[i].FirstElement());
    }
    reply.AppendArray("values", out.Obj());
    return Status::OK();
  }

  // MongoDB's distinct walks the dotted path through arrays and returns array elements
  // individually (an array value contributes each of its elements).
  template <typename F>
  static void CollectPathValues(const BsonObj& doc, std::string_view path, F& collect) {
    size_t dot = path.find('.');
    BsonElement e = doc.GetField(path.substr(0, dot));
    if (e.eoo()) return;
    if (dot == std::string_view::npos) {
      if (e.type() == BsonType::kArray) {
        for (BsonElement item : e.Obj()) collect(item);
      } else {
        collect(e);
      }
      return;
    }
    std::string_view rest = path.substr(dot + 1);
    if (e.type() == BsonType::kObject) {
      CollectPathValues(e.Obj(), rest, collect);
    } else if (e.type() == BsonType::kArray) {
      for (BsonElement item : e.Obj()) {
        if (item.type() == BsonType::kObject) CollectPathValues(item.Obj(), rest, collect);
      }
    }
  }
};

}  // namespace

std::unique_ptr<Command> MakeAggregateCommand() { return std::make_unique<AggregateCommand>(); }

std::unique_ptr<Command> MakeCountCommand() { return std::make_unique<CountCommand>(); }

std::unique_ptr<Command> MakeDistinctCommand() { return std::make_unique<DistinctCommand>(); }

}  // namespace hourglass::commands
