#include "commands/explain_request.h"

#include <algorithm>

#include "catalog/catalog.h"
#include "commands/admin_commands.h"
#include "commands/aggregate_collections.h"
#include "commands/command_util.h"
#include "commands/crud_util.h"
#include "commands/write_requests.h"
#include "exec/near_read.h"
#include "pipeline/pipeline.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

Status NotExplainable(std::string_view name) {
  return Status(ErrorCode::kCommandNotSupported,
                "explain of " + std::string(name) + " is not supported");
}

StatusWith<BsonElement> FirstStatement(std::string_view cmd_name, const BsonObj& cmd,
                                       std::string_view field) {
  HG_ASSIGN_OR_RETURN(auto arr, GetArray(cmd_name, cmd, field));
  if (!arr || arr->NumFields() != 1 || arr->FirstElement().type() != BsonType::kObject) {
    return Status(ErrorCode::kInvalidLength, "explain of " + std::string(cmd_name) +
                                                 " needs exactly one statement in '" +
                                                 std::string(field) + "'");
  }
  return arr->FirstElement();
}

}  // namespace

StatusWith<exec::ExplainRequest> ParseExplainRequest(CommandContext& ctx, const BsonObj& inner,
                                                     bool for_execution) {
  exec::ExplainRequest r;
  r.kind = std::string(inner.FirstElement().FieldName());
  if (r.kind == "findandmodify") r.kind = "findAndModify";
  static const std::vector<std::string_view> kKinds = {
      "find", "count", "distinct", "update", "delete", "findAndModify", "aggregate"};
  if (std::find(kKinds.begin(), kKinds.end(), r.kind) == kKinds.end()) {
    return NotExplainable(r.kind);
  }
  HG_ASSIGN_OR_RETURN(std::string coll, GetCollectionName(inner, ctx.db));
  r.nss = {ctx.db, coll};
  HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(r.nss));
  std::string_view k = r.kind;
  r.hint = HintOf(inner);
  if (for_execution) {
    // Memory limits and spilling as the command itself would have them.
    HG_ASSIGN_OR_RETURN(auto allow_disk_use, GetAllowDiskUse(k, inner));
    exec::ApplyDiskUse(ctx.service.Read(), allow_disk_use, &r.pctx);
    r.pctx.db = ctx.db;
    r.pctx.collections = MakeCollectionAccess(ctx.service);
  }
  HG_ASSIGN_OR_RETURN(r.expr_ctx, CommandExpressionContext(inner));
  // The read's collation (its own, else the collection's default; an update's or delete's
  // statement may name its own below): the plan is explained under it.
  HG_ASSIGN_OR_RETURN(r.expr_ctx.collator, CheckHintAndGetCollation(k, inner, ctx.service, r.nss));
  r.pctx.collator = r.expr_ctx.collator;
  r.pctx.now_millis = r.expr_ctx.now_millis;
  r.pctx.let = r.expr_ctx.let;
  if (k == "find") {
    HG_ASSIGN_OR_RETURN(auto f, GetObject(k, inner, "filter"));
    HG_ASSIGN_OR_RETURN(auto s, GetObject(k, inner, "sort"));
    HG_ASSIGN_OR_RETURN(auto p, GetObject(k, inner, "projection"));
    HG_ASSIGN_OR_RETURN(auto skip, GetInt64(k, inner, "skip"));
    HG_ASSIGN_OR_RETURN(auto limit, GetInt64(k, inner, "limit"));
    r.filter = f.value_or(BsonObj());
    r.sort = s.value_or(BsonObj());
    if (p && !p->IsEmpty()) r.projection = *p;
    HG_ASSIGN_OR_RETURN(auto min, GetObject(k, inner, "min"));
    HG_ASSIGN_OR_RETURN(auto max, GetObject(k, inner, "max"));
    r.min = min.value_or(BsonObj());
    r.max = max.value_or(BsonObj());
    r.skip = skip.value_or(0);
    r.limit = std::abs(limit.value_or(0));
    if (r.skip < 0) return Status(ErrorCode::kBadValue, "Skip value must be non-negative");
  } else if (k == "count" || k == "distinct") {
    HG_ASSIGN_OR_RETURN(auto q, GetObject(k, inner, "query"));
    r.filter = q.value_or(BsonObj());
    if (k == "count") {
      HG_ASSIGN_OR_RETURN(auto skip, GetInt64(k, inner, "skip"));
      HG_ASSIGN_OR_RETURN(auto limit, GetInt64(k, inner, "limit"));
      // As the count command: a negative skip is an error, not zero.
      if (skip.value_or(0) < 0) {
        return Status(ErrorCode::kBadValue, "skip value is negative in count query");
      }
      r.skip = skip.value_or(0);
      r.limit = std::abs(limit.value_or(0));
    } else {
      HG_ASSIGN_OR_RETURN(auto key, GetString(k, inner, "key"));
      if (!key) return MissingField("distinct", "key");
      r.distinct_key = std::string(*key);
    }
  } else if (k == "update") {
    // The statement is parsed as the update command parses it.
    HG_ASSIGN_OR_RETURN(BsonElement e, FirstStatement(k, inner, "updates"));
    HG_ASSIGN_OR_RETURN(UpdateStatement stmt, ParseUpdateStatement(DocumentArray::Entry(e)));
    r.filter = stmt.q;
    r.limit = stmt.multi ? 0 : 1;
    r.upsert = stmt.upsert;
    if (stmt.has_collation) r.expr_ctx.collator = stmt.collator;
    if (r.hint.IsEmpty()) r.hint = HintOf(e.Obj());
  } else if (k == "delete") {
    HG_ASSIGN_OR_RETURN(BsonElement e, FirstStatement(k, inner, "deletes"));
    HG_ASSIGN_OR_RETURN(DeleteStatement stmt, ParseDeleteStatement(DocumentArray::Entry(e)));
    r.filter = stmt.q;
    if (stmt.has_collation) r.expr_ctx.collator = stmt.collator;
    r.limit = stmt.multi ? 0 : 1;
    if (r.hint.IsEmpty()) r.hint = HintOf(e.Obj());
  } else if (k == "findAndModify") {
    HG_ASSIGN_OR_RETURN(auto q, GetObject(k, inner, "query"));
    HG_ASSIGN_OR_RETURN(auto s, GetObject(k, inner, "sort"));
    HG_ASSIGN_OR_RETURN(r.upsert, GetBool(k, inner, "upsert", false));
    r.filter = q.value_or(BsonObj());
    r.sort = s.value_or(BsonObj());
    r.limit = 1;
  } else {  // aggregate
    HG_ASSIGN_OR_RETURN(auto stages, GetArray(k, inner, "pipeline"));
    if (!stages) return MissingField("aggregate", "pipeline");
    if (r.pctx.collator) HG_RETURN_IF_ERROR(CheckStagesUnderCollation(*stages));
    HG_ASSIGN_OR_RETURN(auto pipe, pipeline::Pipeline::Parse(*stages, r.pctx));
    bool popped = false;
    if (auto leading = pipe->PopLeadingMatch()) {
      r.filter = leading->filter;
      popped = true;
    }
    bool first = true;
    for (BsonElement st : *stages) {
      if (first && popped) {
        first = false;
        continue;
      }
      first = false;
      r.rest_stages.push_back(st.Obj());
    }
  }
  // find and count read a $near clause by distance (exec/near_read.h); the rest is a filter.
  BsonObj rest = r.filter;
  if (r.kind == "find" || r.kind == "count") {
    HG_RETURN_IF_ERROR(exec::ExtractNear(r.filter, &rest).status());
  }
  HG_RETURN_IF_ERROR(query::Matcher::Parse(rest, r.expr_ctx).status());
  return r;
}

void AppendExplainCommandAndServerInfo(CommandContext& ctx, const BsonObj& inner,
                                       BsonBuilder& reply) {
  BsonBuilder command;
  for (BsonElement e : inner) {
    if (e.FieldName() != "$db" && e.FieldName() != "explain") command.AppendElement(e);
  }
  command.AppendString("$db", ctx.db);
  reply.AppendObject("command", command.Obj());
  BsonBuilder b;
  std::string hp = HostAndPort(ctx.service);
  b.AppendString("host", hp.substr(0, hp.rfind(':')));
  b.AppendInt32("port", ctx.service.options.port);
  b.AppendString("version", kReportedMongoVersion);
  b.AppendString("gitVersion", "hourglass-" + std::string(kHourglassVersion));
  reply.AppendObject("serverInfo", b.Obj());
}

}  // namespace hourglass::commands
