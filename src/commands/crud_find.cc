// find, getMore, killCursors.
#include <cstdlib>

#include "base/interrupt.h"
#include "catalog/catalog.h"
#include "commands/auth_commands.h"
#include "commands/command.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/crud_util.h"
#include "exec/collection_scan.h"
#include "exec/cursor_manager.h"
#include "query/projection.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;

namespace {

constexpr int64_t kDefaultFirstBatch = 101;

}  // namespace

Status CheckFindRunsAsAggregate(const BsonObj& cmd) {
  for (std::string_view option : {"min", "max"}) {
    if (cmd[option].type() == bson::BsonType::kObject && !cmd[option].Obj().IsEmpty()) {
      return Status(ErrorCode::kInvalidPipelineOperator,
                    "Option " + std::string(option) + " not supported in aggregation.");
    }
  }
  if (cmd["tailable"].Truthy()) {
    return Status(ErrorCode::kInvalidPipelineOperator,
                  "Tailable cursors are not supported in aggregation.");
  }
  for (std::string_view option :
       {"returnKey", "showRecordId", "noCursorTimeout", "allowPartialResults", "readOnce"}) {
    if (cmd[option].Truthy()) {
      return Status(ErrorCode::kInvalidPipelineOperator,
                    "Option " + std::string(option) + " not supported in aggregation.");
    }
  }
  BsonElement sort = cmd["sort"];
  if (sort.type() == bson::BsonType::kObject && !sort.Obj()["$natural"].eoo()) {
    return Status(ErrorCode::kInvalidPipelineOperator,
                  "Sort option $natural not supported in aggregation.");
  }
  return Status::OK();
}

StatusWith<BsonObj> FindAsAggregate(const BsonObj& cmd) {
  HG_RETURN_IF_ERROR(CheckFindRunsAsAggregate(cmd));
  BsonBuilder b;
  b.AppendElementAs(cmd.FirstElement(), "aggregate");
  size_t arr = b.OpenArray("pipeline");
  int i = 0;
  auto stage = [&](std::string_view name, BsonElement value) {
    size_t o = b.OpenObject(std::to_string(i++));
    b.AppendElementAs(value, name);
    b.Close(o);
  };
  auto non_empty = [&](std::string_view field) {
    BsonElement e = cmd[field];
    return e.type() == bson::BsonType::kObject && !e.Obj().IsEmpty();
  };
  if (non_empty("filter")) stage("$match", cmd["filter"]);
  if (non_empty("sort")) stage("$sort", cmd["sort"]);
  if (cmd["skip"].IsNumber() && cmd["skip"].NumberLong() != 0) stage("$skip", cmd["skip"]);
  if (cmd["limit"].IsNumber() && cmd["limit"].NumberLong() != 0) {
    BsonBuilder limit;  // a legacy negative limit is its absolute value (and a single batch)
    limit.AppendInt64("", std::abs(cmd["limit"].NumberLong()));
    stage("$limit", limit.Obj().FirstElement());
  }
  if (non_empty("projection")) stage("$project", cmd["projection"]);
  b.Close(arr);
  size_t cursor = b.OpenObject("cursor");
  if (!cmd["batchSize"].eoo()) b.AppendElement(cmd["batchSize"]);
  b.Close(cursor);
  for (std::string_view option : {"collation", "hint", "allowDiskUse", "let", "maxTimeMS"}) {
    if (!cmd[option].eoo()) b.AppendElement(cmd[option]);
  }
  return b.Obj();
}

namespace {

class FindCommand : public Command {
 public:
  std::string_view Name() const override { return "find"; }
  OpCounter Counter() const override { return OpCounter::kQuery; }
  ReadLevels ReadConcernLevels() const override { return ReadLevels::kReadsAndSnapshot; }
  Status Run(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) const override {
    HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"filter",
                                              "projection",
                                              "sort",
                                              "skip",
                                              "limit",
                                              "batchSize",
                                              "singleBatch",
                                              "hint",
                                              "min",
                                              "max",
                                              "returnKey",
                                              "showRecordId",
                                              "tailable",
                                              "awaitData",
                                              "noCursorTimeout",
                                              "allowPartialResults",
                                              "oplogReplay",
                                              "collation",
                                              "allowDiskUse",
                                              "let",
                                              "readOnce",
                                              "term"}));
    HG_ASSIGN_OR_RETURN(std::string coll_name, GetCollectionName(cmd, ctx.db));
    catalog::NamespaceString nss{ctx.db, coll_name};
    HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(nss));
    HG_ASSIGN_OR_RETURN(auto collator, CheckHintAndGetCollation("find", cmd, ctx.service, nss));
    HG_ASSIGN_OR_RETURN(auto min, GetObject("find", cmd, "min"));
    HG_ASSIGN_OR_RETURN(auto max, GetObject("find", cmd, "max"));
    HG_ASSIGN_OR_RETURN(bool return_key, GetBool("find", cmd, "returnKey", false));
    HG_ASSIGN_OR_RETURN(bool show_record_id, GetBool("find", cmd, "showRecordId", false));
    HG_ASSIGN_OR_RETURN(bool no_timeout, GetBool("find", cmd, "noCursorTimeout", false));
    HG_ASSIGN_OR_RETURN(auto filter, GetObject("find", cmd, "filter"));
    HG_ASSIGN_OR_RETURN(auto projection, GetObject("find", cmd, "projection"));
    HG_ASSIGN_OR_RETURN(auto sort, GetObject("find", cmd, "sort"));
    HG_ASSIGN_OR_RETURN(auto skip, GetInt64("find", cmd, "skip"));
    HG_ASSIGN_OR_RETURN(auto limit, GetInt64("find", cmd, "limit"));
    HG_ASSIGN_OR_RETURN(auto batch_size, GetInt64("find", cmd, "batchSize"));
    HG_ASSIGN_OR_RETURN(bool single_batch, GetBool("find", cmd, "singleBatch", false));
    HG_ASSIGN_OR_RETURN(bool tailable, GetBool("find", cmd, "tailable", false));
    if (skip && *skip < 0) {
      return Status(ErrorCode::kBadValue,
                    "Skip value must be non-negative, but received: " + std::to_string(*skip));
    }
    if (batch_size && *batch_size < 0) {
      return Status(ErrorCode::kBadValue, "BatchSize value must be non-negative, but received: " +
                                              std::to_string(*batch_size));
    }
    if (limit && *limit < 0) {
      // Legacy negative limit: a single batch of |limit| documents.
      *limit = -*limit;
      single_batch = true;
    }
    auto entry = ctx.service.catalog->Lookup(nss);
    if (entry && entry->entry().type == "timeseries") {
      // A view in MongoDB: its finds run as aggregates, which take none of those options.
      HG_RETURN_IF_ERROR(CheckFindRunsAsAggregate(cmd));
    }
    if (entry && entry->entry().type == "view") {
      // MongoDB keeps a find's single batch through the aggregate only for a limit of 1.
      if (single_batch && limit.value_or(0) != 1) {
        return Status(ErrorCode::kInvalidPipelineOperator,
                      "Option singleBatch not supported in aggregation.");
      }
      HG_ASSIGN_OR_RETURN(BsonObj aggregate, FindAsAggregate(cmd));
      return RunAggregate(ctx, aggregate, single_batch, reply);
    }
    if (tailable) {
      return Status(ErrorCode::kBadValue,
                    "error processing query: tailable cursor requested on non capped collection");
    }
    HG_ASSIGN_OR_RETURN(query::ExpressionContext ectx, CommandExpressionContext(cmd));
    ectx.collator = collator;
    // A $near / $nearSphere clause orders the read by distance; the rest filters it.
    BsonObj rest;
    HG_ASSIGN_OR_RETURN(auto near, exec::ExtractNear(filter.value_or(BsonObj()), &rest));
    HG_ASSIGN_OR_RETURN(auto matcher, query::Matcher::Parse(rest, ectx));
    std::optional<query::Projection> proj;
    if (projection && !projection->IsEmpty()) {
      HG_ASSIGN_OR_RETURN(proj,
                          query::Projection::Parse(*projection, filter.value_or(BsonObj()), ectx));
    }
    exec::ReadPlan plan;
    plan.expr_ctx = ectx;
    plan.filter = std::move(matcher);
    plan.filter_spec = rest;
    plan.near = std::move(near);
    plan.sort = sort.value_or(BsonObj());
    plan.skip = skip.value_or(0);
    plan.limit = limit.value_or(0);
    plan.projection = std::move(proj);
    if (plan.projection) plan.projection_spec = *projection;
    plan.min = min.value_or(BsonObj());
    plan.max = max.value_or(BsonObj());
    plan.return_key = return_key;
    plan.show_record_id = show_record_id;
    plan.hint = HintOf(cmd);
    HG_ASSIGN_OR_RETURN(plan.allow_disk_use, GetAllowDiskUse("find", cmd));
    // A limit smaller than the batch size ends the cursor with the first batch.
    int64_t first_batch = batch_size.value_or(kDefaultFirstBatch);
    if (plan.limit > 0 && first_batch != 0 && plan.limit <= first_batch) {
      first_batch = plan.limit;
      single_batch = true;
    }
    const exec::ReadContext rctx = ctx.service.Read();
    HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace ns, exec::Resolve(rctx, nss));
    HG_ASSIGN_OR_RETURN(auto stream, exec::BuildReadStream(rctx, ns, std::move(plan)));
    return ReplyWithCursor(ctx, nss.ns(), std::move(stream), first_batch, single_batch, reply,
                           no_timeout);
  }
};

class GetMoreCommand : public Command {
 public:
  std::string_view Name() const override { return "getMore"; }
  OpCounter Counter() const override { return OpCounter::kGetMore; }
  bool AllowsAfterClusterTime() const override { return false; }
  Status Run(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) const override {
    HG_RETURN_IF_ERROR(CheckKnownFields(
        cmd, {"collection", "batchSize", "maxTimeMS", "term", "lastKnownCommittedOpTime"}));
    BsonElement id_el = cmd.FirstElement();
    if (id_el.type() != bson::BsonType::kInt64) return WrongType("getMore", id_el, "long");
    HG_ASSIGN_OR_RETURN(auto coll, GetString("getMore", cmd, "collection"));
    if (!coll) {
      return MissingField("getMore", "collection");
    }
    HG_ASSIGN_OR_RETURN(auto batch_size, GetInt64("getMore", cmd, "batchSize"));
    if (batch_size && *batch_size < 0) {
      return Status(ErrorCode::kBadValue, "BatchSize value must be non-negative, but received: " +
                                              std::to_string(*batch_size));
    }
    // Only an awaitData cursor takes a getMore's own limit; Hourglass has none.
    if (cmd.HasField("maxTimeMS")) {
      return Status(ErrorCode::kBadValue,
                    "cannot set maxTimeMS on getMore command for a non-awaitData cursor");
    }
    std::string ns = ctx.db + "." + *coll;
    // With --auth a cursor continues only for the users that opened it.
    std::vector<std::string> owners = AuthenticatedUserNames(ctx.client);
    HG_ASSIGN_OR_RETURN(
        auto cursor, ctx.service.cursors->CheckOut(id_el.Int64(), ns,
                                                   ctx.service.options.auth ? &owners : nullptr));
    const std::shared_ptr<OperationControl>& op = OperationControl::Current();
    if (op && cursor->time_left) {
      op->SetDeadline(OperationControl::Clock::now() + *cursor->time_left);
      HG_RETURN_IF_ERROR(op->Check());  // none left (or maxTimeAlwaysTimeOut): the cursor goes
    }
    BsonArrayBuilder batch;
    bool exhausted = false;
    Status st = exec::FillBatch(*cursor->stream, &cursor->pending, batch_size.value_or(0), batch,
                                &exhausted);
    if (!st.ok()) return st;  // the cursor is destroyed with the error, as in MongoDB
    int64_t id = cursor->id;
    if (exhausted) {
      id = 0;
    } else {
      if (op && cursor->time_left) {
        cursor->time_left = std::max(OperationControl::Clock::duration::zero(),
                                     op->deadline() - OperationControl::Clock::now());
      }
      ctx.service.cursors->CheckIn(std::move(cursor));
    }
    exec::AppendCursorReply(reply, id, ns, "nextBatch", batch.Obj());
    return Status::OK();
  }
};

class KillCursorsCommand : public Command {
 public:
  std::string_view Name() const override { return "killCursors"; }
  Status Run(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) const override {
    HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"cursors"}));
    HG_ASSIGN_OR_RETURN(std::string coll_name, GetCollectionName(cmd, ctx.db));
    HG_ASSIGN_OR_RETURN(auto ids, GetArray("killCursors", cmd, "cursors"));
    if (!ids) {
      return MissingField("killCursors", "cursors");
    }
    // With --auth, another user's cursor needs killAnyCursor, as in MongoDB.
    const std::vector<std::string> owners = AuthenticatedUserNames(ctx.client);
    const bool kill_any =
        !ctx.service.options.auth ||
        ctx.client.auth.Allows(auth::ResourceTarget::Cluster(), auth::ActionType::kKillAnyCursor);
    for (BsonElement e : *ids) {
      if (e.type() != bson::BsonType::kInt64) {
        return Status(ErrorCode::kTypeMismatch,
                      "BSON field 'killCursors.cursors' is the wrong type, expected long");
      }
      std::optional<std::vector<std::string>> cursor_owners =
          ctx.service.cursors->OwnersOf(e.Int64());
      if (!kill_any && cursor_owners && *cursor_owners != owners) {
        return Status(ErrorCode::kUnauthorized, "not authorized to kill cursor " +
                                                    std::to_string(e.Int64()) + " on " + ctx.db +
                                                    "." + coll_name);
      }
    }
    BsonArrayBuilder killed, not_found;
    for (BsonElement e : *ids) {
      if (ctx.service.cursors->Kill(e.Int64())) {
        killed.Append(e);
      } else {
        not_found.Append(e);
      }
    }
    reply.AppendArray("cursorsKilled", killed.Obj());
    reply.AppendArray("cursorsNotFound", not_found.Obj());
    reply.AppendArray("cursorsAlive", BsonObj());
    reply.AppendArray("cursorsUnknown", BsonObj());
    return Status::OK();
  }
};

}  // namespace

std::unique_ptr<Command> MakeFindCommand() { return std::make_unique<FindCommand>(); }

std::unique_ptr<Command> MakeGetMoreCommand() { return std::make_unique<GetMoreCommand>(); }

std::unique_ptr<Command> MakeKillCursorsCommand() { return std::make_unique<KillCursorsCommand>(); }

}  // namespace hourglass::commands
