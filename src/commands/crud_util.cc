#include "commands/crud_util.h"

#include "base/interrupt.h"
#include "catalog/index_keys.h"
#include "commands/auth_commands.h"
#include "commands/command_util.h"
#include "exec/cursor_manager.h"
#include "exec/timeseries_read.h"
#include "pipeline/expression.h"
#include "query/path.h"
#include "query/update.h"
#include "storage/kv_engine.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

StatusWith<query::ExpressionContext> CommandExpressionContext(const BsonObj& cmd) {
  query::ExpressionContext ectx = query::ExpressionContext::Now();
  HG_ASSIGN_OR_RETURN(ectx.let, pipeline::ParseCommandLet(cmd["let"], ectx.now_millis));
  return ectx;
}

StatusWith<std::optional<bool>> GetAllowDiskUse(std::string_view cmd_name, const BsonObj& cmd) {
  if (cmd["allowDiskUse"].eoo()) return std::optional<bool>();
  HG_ASSIGN_OR_RETURN(bool b, GetBool(cmd_name, cmd, "allowDiskUse", false));
  return std::optional<bool>(b);
}

BsonObj HintOf(const BsonObj& cmd) {
  BsonElement hint = cmd["hint"];
  if (hint.eoo()) return BsonObj();
  BsonBuilder b;
  b.AppendElementAs(hint, "hint");
  return b.Obj();
}

namespace {

// $geoNear's distances from its options (a `near` of variables takes their values now).
StatusWith<geo::NearQuery> NearQueryOf(const pipeline::GeoNearSpec& spec,
                                       const pipeline::PipelineContext& pctx) {
  HG_ASSIGN_OR_RETURN(BsonObj near, pipeline::NearValue(spec, pctx.now_millis));
  return geo::NearQuery::FromStage(near.FirstElement(), spec.spherical, spec.min_distance,
                                   spec.max_distance);
}

// $geoNear on a time-series collection, as MongoDB runs it: over every measurement, ordered by
// the distance of `key`: a measurement (no index needed, though a 2dsphere one bounds the rings;
// `includeLocs` refused) or a path of the metaField (which, as in MongoDB, needs a geo index on
// it). `query` is refused either way (a $match after it filters).
StatusWith<std::unique_ptr<pipeline::DocumentStream>> BuildTimeseriesGeoNearRead(
    const exec::ReadContext& rctx, timeseries::TimeseriesCollection ts,
    std::unique_ptr<pipeline::Pipeline> pipe, const pipeline::GeoNearSpec& spec) {
  if (spec.key.empty()) {
    return Status(ErrorCode::kLocation5892921,
                  "Must specify 'key' option for $geoNear on a time-series collection");
  }
  const std::optional<std::string>& meta = ts.options.meta_field;
  if (meta && query::PathStartsWith(spec.key, *meta)) {
    if (!spec.query.IsEmpty()) {
      return Status(ErrorCode::kLocation1938439,
                    "Must not specify 'query' for $geoNear on a time-series collection; use "
                    "$match instead");
    }
  } else {
    if (!spec.query.IsEmpty()) {
      return Status(ErrorCode::kLocation5860207,
                    "Must not specify 'query' for $geoNear on a time-series collection; use "
                    "$match instead");
    }
    if (!spec.include_locs.empty()) {
      return Status(ErrorCode::kLocation5860208,
                    "$geoNear 'includeLocs' is not supported on time-series metrics");
    }
  }
  exec::NearRead near;
  near.field = spec.key;
  HG_ASSIGN_OR_RETURN(near.query, NearQueryOf(spec, pipe->context()));
  near.distance_field = spec.distance_field;
  near.include_locs = spec.include_locs;
  near.multiplier = spec.multiplier;
  if (meta && query::PathStartsWith(spec.key, *meta)) {
    // The index the metaField path needs is the bucket collection's, on meta<rest>.
    exec::NearRead on_buckets = near;
    on_buckets.field = "meta" + spec.key.substr(meta->size());
    HG_RETURN_IF_ERROR(exec::CheckNearIndex(*ts.buckets, on_buckets));
  }
  pipeline::PipelineContext pctx = pipe->context();
  // With a 2dsphere index on the measurement (whose values are then points), a ring is a
  // $geoWithin $centerSphere, which the index bounds: read ring by ring, as MongoDB does.
  bool indexed = false;
  for (const auto& idx : ts.buckets->Indexes()) {
    indexed = indexed || (idx.entry->ready && !idx.desc.hidden &&
                          catalog::IsSphereBucketKey(idx.desc.key["data." + spec.key]));
  }
  if (indexed && near.query.metric() != geo::NearQuery::Metric::kFlat) {
    const std::optional<exec::RingBounds> rings = exec::RingsOf(*ts.buckets, near);
    exec::NearScan scan = [ts, engine = rctx.engine, near, pctx](
                              double max) -> StatusWith<std::unique_ptr<pipeline::DocumentStream>> {
      exec::TimeseriesReadRequest request;
      request.filter = exec::NearPlanningFilter(near, BsonObj(), max);
      return exec::BuildTimeseriesRead(ts, engine, std::move(request), {}, pctx);
    };
    return pipe->Bind(exec::MakeRingNearStream(std::move(scan), std::move(near), *rings));
  }
  HG_ASSIGN_OR_RETURN(auto measurements,
                      exec::BuildTimeseriesRead(std::move(ts), rctx.engine,
                                                exec::TimeseriesReadRequest{}, {}, pctx));
  return pipe->Bind(exec::MakeNearStream(std::move(measurements), std::move(near)));
}

}  // namespace

StatusWith<std::unique_ptr<pipeline::DocumentStream>> BuildGeoNearRead(
    const exec::ReadContext& rctx, exec::ResolvedNamespace resolved,
    std::unique_ptr<pipeline::Pipeline> pipe, const pipeline::GeoNearSpec& spec,
    const BsonObj& hint) {
  if (resolved.timeseries) {
    return BuildTimeseriesGeoNearRead(rctx, std::move(*resolved.timeseries), std::move(pipe), spec);
  }
  const std::shared_ptr<catalog::Collection>& coll = resolved.collection;
  if (!coll || coll->ident().empty()) {
    return Status(ErrorCode::kNamespaceNotFound, "$geoNear requires a geo index to run, but " +
                                                     resolved.nss.ns() + " does not exist");
  }
  exec::NearRead near;
  if (spec.key.empty()) {
    HG_ASSIGN_OR_RETURN(near.field, exec::GeoNearField(*coll));
  } else {
    near.field = spec.key;
  }
  HG_ASSIGN_OR_RETURN(near.query, NearQueryOf(spec, pipe->context()));
  near.distance_field = spec.distance_field;
  near.include_locs = spec.include_locs;
  near.multiplier = spec.multiplier;
  exec::ReadPlan plan;
  plan.hint = hint;
  plan.expr_ctx = query::ExpressionContext{pipe->context().now_millis, pipe->context().let,
                                           pipe->context().collator};
  HG_ASSIGN_OR_RETURN(plan.filter, query::Matcher::Parse(spec.query, plan.expr_ctx));
  plan.filter_spec = spec.query;
  plan.near = std::move(near);
  HG_ASSIGN_OR_RETURN(auto source, exec::BuildReadStream(rctx, resolved, std::move(plan)));
  return pipe->Bind(std::move(source));
}

StatusWith<std::unique_ptr<pipeline::DocumentStream>> BuildPipelineRead(
    const exec::ReadContext& rctx, exec::ResolvedNamespace resolved,
    std::unique_ptr<pipeline::Pipeline> pipe, const BsonObj& hint) {
  if (std::optional<pipeline::GeoNearSpec> geo_near = pipe->PopLeadingGeoNear()) {
    return BuildGeoNearRead(rctx, std::move(resolved), std::move(pipe), *geo_near, hint);
  }
  std::optional<pipeline::Pipeline::LeadingMatch> leading = pipe->PopLeadingMatch();
  if (resolved.timeseries) {
    // Time-series: the read and the stages after it are planned together (rewrites).
    exec::TimeseriesReadRequest request;
    if (leading) {
      request.filter = leading->filter;
      request.parsed_filter = std::move(leading->matcher);
    }
    request.hint = hint;
    return exec::BuildTimeseriesRead(std::move(*resolved.timeseries), rctx.engine,
                                     std::move(request), std::move(pipe));
  }
  exec::ReadPlan plan;
  plan.hint = hint;
  if (leading) {
    plan.filter = std::move(leading->matcher);
    plan.filter_spec = leading->filter;
    plan.expr_ctx =
        query::ExpressionContext{pipe->context().now_millis, pipe->context().let, nullptr};
  }
  plan.expr_ctx.collator = pipe->context().collator;
  HG_ASSIGN_OR_RETURN(auto source, exec::BuildReadStream(rctx, resolved, std::move(plan)));
  return pipe->Bind(std::move(source));
}

Status ReplyWithCursor(CommandContext& ctx, const std::string& ns,
                       std::unique_ptr<pipeline::DocumentStream> stream, int64_t first_batch,
                       bool single_batch, BsonBuilder& reply, bool no_timeout) {
  BsonArrayBuilder batch;
  bool exhausted = false;
  std::optional<BsonObj> pending;
  if (first_batch > 0 || single_batch) {
    HG_RETURN_IF_ERROR(exec::FillBatch(
        *stream, &pending, single_batch && first_batch == 0 ? 0 : first_batch, batch, &exhausted));
  }
  int64_t id = 0;
  if (!exhausted && !single_batch) {
    auto cursor = std::make_unique<exec::ClientCursor>();
    cursor->ns = ns;
    cursor->stream = std::move(stream);
    cursor->pending = std::move(pending);
    cursor->no_timeout = no_timeout;
    cursor->owners = AuthenticatedUserNames(ctx.client);
    cursor->lsid = ctx.lsid;
    if (const auto& op = OperationControl::Current(); op && op->has_deadline()) {
      cursor->time_left = std::max(OperationControl::Clock::duration::zero(),
                                   op->deadline() - OperationControl::Clock::now());
    }
    id = ctx.service.cursors->Register(std::move(cursor));
  }
  exec::AppendCursorReply(reply, id, ns, "firstBatch", batch.Obj());
  return Status::OK();
}

StatusWith<query::UpdateDriver> ParseUpdate(const bson::BsonElement& u,
                                            const BsonObj& array_filters,
                                            const query::ExpressionContext& ectx, bool multi) {
  if (u.type() == BsonType::kArray) {
    return query::UpdateDriver::ParsePipeline(u.Obj(), array_filters, ectx);
  }
  if (u.type() != BsonType::kObject) {
    return Status(ErrorCode::kFailedToParse,
                  "Update argument must be either an object or an array");
  }
  HG_ASSIGN_OR_RETURN(auto driver, query::UpdateDriver::Parse(u.Obj(), array_filters, ectx));
  if (multi && driver.IsReplacement()) {
    return Status(ErrorCode::kFailedToParse,
                  "multi update is not supported for replacement-style update");
  }
  return driver;
}

Status CheckUpdatedDocument(const BsonObj& updated) {
  if (updated.size() > 16 * 1024 * 1024) {
    return Status(ErrorCode::kBSONObjectTooLarge,
                  "Resulting document after update is larger than 16777216");
  }
  if (bson::NestsDeeperThan(updated, kMaxStorageNesting)) {
    return Status(ErrorCode::kOverflow, "Document exceeds maximum nesting depth of " +
                                            std::to_string(kMaxStorageNesting));
  }
  return Status::OK();
}

StatusWith<BsonObj> PrepareInsertDocument(const BsonObj& doc, bool id_first) {
  if (doc.size() > 16 * 1024 * 1024) {
    return Status(ErrorCode::kBadValue, "object to insert too large. size in bytes: " +
                                            std::to_string(doc.size()) + ", max size: 16777216");
  }
  if (bson::NestsDeeperThan(doc, kMaxStorageNesting)) {
    return Status(ErrorCode::kOverflow, "cannot insert document because it exceeds " +
                                            std::to_string(kMaxStorageNesting) +
                                            " levels of nesting");
  }
  // Top-level $-prefixed names are allowed since MongoDB 5.0; only `_id` is checked.
  BsonElement id = doc["_id"];
  if (!id.eoo()) {
    switch (id.type()) {
      case BsonType::kArray:
        return Status(ErrorCode::kBadValue, "can't use an array for _id");
      case BsonType::kRegex:
        return Status(ErrorCode::kBadValue, "can't use a regex for _id");
      case BsonType::kUndefined:
        return Status(ErrorCode::kBadValue, "can't use a undefined for _id");
      case BsonType::kObject:
        for (BsonElement sub : id.Obj()) {
          if (!sub.FieldName().empty() && sub.FieldName()[0] == '$') {
            return Status(ErrorCode::kDollarPrefixedFieldName,
                          "_id fields may not contain '$'-prefixed fields: " +
                              std::string(sub.FieldName()) + " is not valid for storage.");
          }
        }
        break;
      default:
        break;
    }
    if (!id_first || doc.FirstElement().FieldName() == "_id") return doc;
  }
  // MongoDB stores `_id` as the first field.
  BsonBuilder b;
  if (id.eoo()) {
    b.AppendObjectId("_id", bson::ObjectId::Generate());
  } else {
    b.AppendElement(id);
  }
  for (BsonElement e : doc) {
    if (e.FieldName() != "_id") b.AppendElement(e);
  }
  return b.Obj();
}

}  // namespace hourglass::commands
