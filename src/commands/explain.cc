#include "commands/explain.h"

#include <chrono>

#include "commands/admin_commands.h"
#include "commands/aggregate_collections.h"
#include "commands/command_util.h"
#include "commands/crud_util.h"
#include "commands/explain_timeseries.h"
#include "exec/collection_scan.h"
#include "exec/index_scan.h"
#include "pipeline/pipeline.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

Status NotExplainable(std::string_view name) {
  return Status(ErrorCode::kCommandNotSupported,
                "explain of " + std::string(name) + " is not supported");
}

StatusWith<BsonObj> FirstStatement(std::string_view cmd_name, const BsonObj& cmd,
                                   std::string_view field) {
  HG_ASSIGN_OR_RETURN(auto arr, GetArray(cmd_name, cmd, field));
  if (!arr || arr->NumFields() != 1 || arr->FirstElement().type() != BsonType::kObject) {
    return Status(ErrorCode::kInvalidLength, "explain of " + std::string(cmd_name) +
                                                 " needs exactly one statement in '" +
                                                 std::string(field) + "'");
  }
  return arr->FirstElement().Obj();
}

}  // namespace

StatusWith<ExplainRequest> ParseExplainRequest(CommandContext& ctx, const BsonObj& inner,
                                               bool for_execution) {
  ExplainRequest r;
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
  HG_RETURN_IF_ERROR(CheckHintAndCollation(k, inner));
  r.hint = HintOf(inner);
  if (for_execution) {
    // Memory limits and spilling as the command itself would have them.
    HG_ASSIGN_OR_RETURN(auto allow_disk_use, GetAllowDiskUse(k, inner));
    exec::ApplyDiskUse(ctx.service.Read(), allow_disk_use, &r.pctx);
    r.pctx.db = ctx.db;
    r.pctx.collections = MakeCollectionAccess(ctx.service);
  }
  HG_ASSIGN_OR_RETURN(r.expr_ctx, CommandExpressionContext(inner));
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
    HG_ASSIGN_OR_RETURN(BsonObj stmt, FirstStatement(k, inner, "updates"));
    HG_RETURN_IF_ERROR(CheckHintAndCollation("update.updates", stmt));
    HG_ASSIGN_OR_RETURN(auto q, GetObject("update.updates", stmt, "q"));
    HG_ASSIGN_OR_RETURN(bool multi, GetBool("update.updates", stmt, "multi", false));
    HG_ASSIGN_OR_RETURN(r.upsert, GetBool("update.updates", stmt, "upsert", false));
    r.filter = q.value_or(BsonObj());
    r.limit = multi ? 0 : 1;
    if (r.hint.IsEmpty()) r.hint = HintOf(stmt);
  } else if (k == "delete") {
    HG_ASSIGN_OR_RETURN(BsonObj stmt, FirstStatement(k, inner, "deletes"));
    HG_RETURN_IF_ERROR(CheckHintAndCollation("delete.deletes", stmt));
    HG_ASSIGN_OR_RETURN(auto q, GetObject("delete.deletes", stmt, "q"));
    HG_ASSIGN_OR_RETURN(auto limit, GetInt64("delete.deletes", stmt, "limit"));
    r.filter = q.value_or(BsonObj());
    r.limit = limit.value_or(0) == 0 ? 0 : 1;
    if (r.hint.IsEmpty()) r.hint = HintOf(stmt);
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
    HG_ASSIGN_OR_RETURN(auto pipe, pipeline::Pipeline::Parse(*stages, r.pctx));
    bool popped = false;
    if (auto leading = pipe->PopLeadingMatch()) {
      r.filter = *leading;
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
  HG_RETURN_IF_ERROR(query::Matcher::Parse(r.filter, r.expr_ctx).status());
  return r;
}

namespace {

// One stage of the plan tree with its execution counters.
struct StageStats {
  int64_t n_returned = 0;
  bool with_stats = false;
};

BsonObj Wrap(std::string_view stage, const BsonObj& input,
             const std::function<void(BsonBuilder&)>& fields, const StageStats& st) {
  BsonBuilder b;
  b.AppendString("stage", stage);
  if (st.with_stats) b.AppendInt64("nReturned", st.n_returned);
  fields(b);
  b.AppendObject("inputStage", input);
  return b.Obj();
}

// What one access path did: documents passed on, keys and documents examined.
struct AccessCounters {
  int64_t n_returned = 0;
  int64_t keys = 0;
  int64_t docs = 0;
};

AccessCounters CountersOf(const exec::ReadExecInfo& run) {
  AccessCounters c;
  c.n_returned = run.scan_returned;
  if (run.index_scan) {
    c.keys = run.index_scan->keys_examined();
    c.docs = run.index_scan->docs_examined();
  } else if (run.collection_scan) {
    c.docs = run.collection_scan->docs_examined();
  }
  return c;
}

// The access stage(s) with stats when `run` is given: COLLSCAN, or FETCH over IXSCAN.
BsonObj AccessStage(const exec::QueryPlan& plan, const BsonObj& filter, const AccessCounters* run) {
  BsonObj desc = plan.Describe(filter);
  if (run == nullptr) return desc;
  BsonBuilder b;
  if (plan.IsCollScan()) {
    for (BsonElement e : desc) {
      b.AppendElement(e);
      if (e.FieldName() == "stage") b.AppendInt64("nReturned", run->n_returned);
    }
    b.AppendInt64("docsExamined", run->docs);
    return b.Obj();
  }
  if (plan.covered_fields && !plan.IsOr()) {
    for (BsonElement e : desc) {
      b.AppendElement(e);
      if (e.FieldName() == "stage") b.AppendInt64("nReturned", run->n_returned);
    }
    b.AppendInt64("keysExamined", run->keys);
    return b.Obj();
  }
  BsonBuilder ix;
  for (BsonElement f : desc["inputStage"].Obj()) {
    ix.AppendElement(f);
    if (f.FieldName() == "stage") ix.AppendInt64("nReturned", run->keys);
  }
  // An $or union reports its keys on the OR stage (the branches' shares are not kept).
  ix.AppendInt64("keysExamined", run->keys);
  for (BsonElement e : desc) {
    if (e.FieldName() == "inputStage") continue;
    b.AppendElement(e);
    if (e.FieldName() == "stage") b.AppendInt64("nReturned", run->n_returned);
  }
  b.AppendInt64("docsExamined", run->docs);
  b.AppendObject("inputStage", ix.Obj());
  return b.Obj();
}

// The plan tree of `req` over `access`: SORT, SKIP, LIMIT, PROJECTION and the command's stage.
BsonObj PlanTree(const ExplainRequest& req, BsonObj access, const AccessCounters* info,
                 int64_t final_n, bool blocking_sort, bool covered = false) {
  StageStats st;
  st.with_stats = info != nullptr;
  int64_t n = info ? info->n_returned : 0;
  if (blocking_sort) {
    st.n_returned = n;
    access = Wrap(
        "SORT", access,
        [&](BsonBuilder& b) {
          b.AppendObject("sortPattern", req.sort);
          b.AppendString("type", "simple");
        },
        st);
  }
  if (req.skip > 0) {
    n = std::max<int64_t>(0, n - req.skip);
    st.n_returned = n;
    access = Wrap(
        "SKIP", access, [&](BsonBuilder& b) { b.AppendInt64("skipAmount", req.skip); }, st);
  }
  if (req.limit > 0 && req.kind != "count") {
    n = std::min(n, req.limit);
    st.n_returned = n;
    access = Wrap(
        "LIMIT", access, [&](BsonBuilder& b) { b.AppendInt64("limitAmount", req.limit); }, st);
  }
  if (req.projection) {
    st.n_returned = n;
    access = Wrap(
        covered ? "PROJECTION_COVERED" : "PROJECTION_DEFAULT", access,
        [&](BsonBuilder& b) { b.AppendObject("transformBy", *req.projection); }, st);
  }
  st.n_returned = 0;
  if (req.kind == "count") {
    int64_t counted = std::max<int64_t>(0, final_n);
    return Wrap(
        "COUNT", access,
        [&](BsonBuilder& b) {
          if (info)
            b.AppendInt64("nCounted", req.limit > 0 ? std::min(counted, req.limit) : counted);
        },
        st);
  }
  if (req.kind == "update") {
    return Wrap(
        "UPDATE", access,
        [&](BsonBuilder& b) {
          if (!info) return;
          b.AppendInt64("nMatched", final_n);
          b.AppendInt64("nWouldModify", final_n);
          b.AppendInt64("nWouldUpsert", final_n == 0 && req.upsert ? 1 : 0);
        },
        st);
  }
  if (req.kind == "delete") {
    return Wrap(
        "DELETE", access,
        [&](BsonBuilder& b) {
          if (info) b.AppendInt64("nWouldDelete", final_n);
        },
        st);
  }
  return access;
}

}  // namespace

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

Status RunExplain(CommandContext& ctx, const BsonObj& inner, std::string_view verbosity,
                  BsonBuilder& reply) {
  if (verbosity != "queryPlanner" && verbosity != "executionStats" &&
      verbosity != "allPlansExecution") {
    return Status(ErrorCode::kBadValue,
                  "verbosity string must be one of {'queryPlanner', 'executionStats', "
                  "'allPlansExecution'}");
  }
  if (inner.IsEmpty())
    return Status(ErrorCode::kBadValue, "explain command requires a nested object");
  HG_ASSIGN_OR_RETURN(bool timeseries, ExplainTimeseries(ctx, inner, verbosity, reply));
  if (timeseries) return Status::OK();
  HG_ASSIGN_OR_RETURN(ExplainRequest req, ParseExplainRequest(ctx, inner, false));
  auto coll = ctx.service.catalog->Lookup(req.nss);
  if (coll && (coll->entry().type != "collection" || req.nss.IsTimeseriesBuckets())) {
    return Status(ErrorCode::kCommandNotSupported,
                  "explain on views and time-series bucket collections is not supported yet");
  }
  const bool execute = verbosity != "queryPlanner";
  exec::ReadPlan plan;
  HG_ASSIGN_OR_RETURN(plan.filter, query::Matcher::Parse(req.filter, req.expr_ctx));
  plan.filter_spec = req.filter;
  plan.expr_ctx = req.expr_ctx;
  plan.sort = req.sort;
  plan.hint = req.hint;
  plan.count_index_use = false;
  plan.min = req.min;
  plan.max = req.max;
  if (req.kind == "find" || req.kind == "findAndModify" || req.kind == "update" ||
      req.kind == "delete") {
    plan.skip = req.skip;
    plan.limit = req.limit;
  } else if (req.kind == "count") {
    plan.skip = req.skip;
    plan.count_only = true;
  }
  if (req.projection) {
    HG_ASSIGN_OR_RETURN(plan.projection,
                        query::Projection::Parse(*req.projection, req.filter, req.expr_ctx));
    plan.projection_spec = *req.projection;
  }
  exec::ReadExecInfo info;
  auto start = std::chrono::steady_clock::now();
  // distinct over an index that leads with its key reads one key per value (DISTINCT_SCAN).
  std::optional<exec::QueryPlan> distinct_plan;
  if (req.kind == "distinct" && coll && !coll->ident().empty()) {
    distinct_plan =
        exec::PlanDistinctScan(*coll, req.filter, req.distinct_key,
                               req.hint.IsEmpty() ? BsonElement() : req.hint.FirstElement());
  }
  int64_t distinct_keys = 0, distinct_docs = 0;
  std::unique_ptr<pipeline::DocumentStream> stream;
  if (!distinct_plan) {
    HG_ASSIGN_OR_RETURN(stream,
                        exec::BuildReadStream(ctx.service.Read(), req.nss, std::move(plan), &info));
  }
  int64_t n = 0;
  if (execute && distinct_plan) {
    auto session = ctx.service.engine->NewSession();
    HG_ASSIGN_OR_RETURN(auto values, exec::DistinctScan(*session, *coll, *distinct_plan,
                                                        &distinct_keys, &distinct_docs));
    n = static_cast<int64_t>(values.size());
  } else if (execute) {
    while (true) {
      HG_ASSIGN_OR_RETURN(auto doc, stream->Next());
      if (!doc) break;
      ++n;
    }
  }
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count();

  BsonBuilder qp;
  qp.AppendString("namespace", req.nss.ns());
  qp.AppendBool("indexFilterSet", false);
  qp.AppendObject("parsedQuery", req.filter);
  qp.AppendBool("maxIndexedOrSolutionsReached", false);
  qp.AppendBool("maxIndexedAndSolutionsReached", false);
  qp.AppendBool("maxScansToExplodeReached", false);
  BsonObj winning, executed;
  BsonArrayBuilder rejected, all_plans;
  if (distinct_plan) {
    for (bool with_stats : {false, true}) {
      if (with_stats && !execute) break;
      BsonBuilder scan;
      for (BsonElement e : distinct_plan->Describe(req.filter)) {
        if (e.FieldName() == "stage") {
          scan.AppendString("stage", "DISTINCT_SCAN");
          if (with_stats) scan.AppendInt64("nReturned", n);
        } else {
          scan.AppendElement(e);
        }
      }
      if (with_stats) scan.AppendInt64("keysExamined", distinct_keys);
      BsonBuilder proj;
      proj.AppendInt32("_id", 0);
      proj.AppendInt32(req.distinct_key, 1);
      BsonObj tree = Wrap(
          "PROJECTION_COVERED", scan.Obj(),
          [&](BsonBuilder& b) { b.AppendObject("transformBy", proj.Obj()); },
          StageStats{n, with_stats});
      (with_stats ? executed : winning) = tree;
    }
  } else if (!info.choice) {
    BsonBuilder eof;
    eof.AppendString("stage", "EOF");
    winning = eof.Obj();
    executed = winning;
  } else {
    const bool covered = info.choice->winner.covered_fields.has_value();
    winning = PlanTree(req, AccessStage(info.choice->winner, req.filter, nullptr), nullptr, n,
                       info.blocking_sort, covered);
    if (execute) {
      AccessCounters run = CountersOf(info);
      executed = PlanTree(req, AccessStage(info.choice->winner, req.filter, &run), &run, n,
                          info.blocking_sort, covered);
    }
    for (const exec::QueryPlan& p : info.choice->rejected) {
      rejected.AppendObject(PlanTree(req, p.Describe(req.filter), nullptr, 0,
                                     !req.sort.IsEmpty() && !p.provides_sort,
                                     p.covered_fields.has_value()));
    }
    // allPlansExecution: each candidate's trial (none when a single plan ran without one).
    for (size_t i = 0; i < info.trials.size(); ++i) {
      const exec::TrialStats& t = info.trials[i];
      const exec::QueryPlan& p = i == 0 ? info.choice->winner : info.choice->rejected[i - 1];
      AccessCounters c{t.n_returned, t.keys_examined, t.docs_examined};
      bool sort_stage = !req.sort.IsEmpty() && !p.provides_sort;
      BsonBuilder tb;
      tb.AppendInt64("nReturned", t.n_returned);
      tb.AppendInt64("executionTimeMillisEstimate", 0);
      tb.AppendInt64("totalKeysExamined", t.keys_examined);
      tb.AppendInt64("totalDocsExamined", t.docs_examined);
      tb.AppendObject("executionStages",
                      PlanTree(req, AccessStage(p, req.filter, &c), &c, t.n_returned, sort_stage,
                               p.covered_fields.has_value()));
      all_plans.AppendObject(tb.Obj());
    }
  }
  qp.AppendObject("winningPlan", winning);
  qp.AppendArray("rejectedPlans", rejected.Obj());
  BsonObj query_planner = qp.Obj();

  BsonObj exec_stats;
  if (execute) {
    BsonBuilder es;
    es.AppendBool("executionSuccess", true);
    bool returns_docs = req.kind == "find" || req.kind == "aggregate" || req.kind == "distinct" ||
                        req.kind == "findAndModify";
    es.AppendInt64("nReturned", returns_docs ? n : 0);
    es.AppendInt64("executionTimeMillis", millis);
    es.AppendInt64("totalKeysExamined", distinct_plan     ? distinct_keys
                                        : info.index_scan ? info.index_scan->keys_examined()
                                                          : 0);
    int64_t docs = distinct_plan          ? distinct_docs
                   : info.index_scan      ? info.index_scan->docs_examined()
                   : info.collection_scan ? info.collection_scan->docs_examined()
                                          : 0;
    es.AppendInt64("totalDocsExamined", docs);
    es.AppendObject("executionStages", executed);
    if (verbosity == "allPlansExecution") es.AppendArray("allPlansExecution", all_plans.Obj());
    exec_stats = es.Obj();
  }

  reply.AppendString("explainVersion", "1");
  if (req.kind == "aggregate" && !req.rest_stages.empty()) {
    size_t arr = reply.OpenArray("stages");
    size_t cur = reply.OpenObject("0");
    size_t c = reply.OpenObject("$cursor");
    reply.AppendObject("queryPlanner", query_planner);
    if (execute) reply.AppendObject("executionStats", exec_stats);
    reply.Close(c);
    reply.Close(cur);
    int i = 1;
    for (const BsonObj& st : req.rest_stages) reply.AppendObject(std::to_string(i++), st);
    reply.Close(arr);
  } else {
    reply.AppendObject("queryPlanner", query_planner);
    if (execute) reply.AppendObject("executionStats", exec_stats);
  }
  AppendExplainCommandAndServerInfo(ctx, inner, reply);
  return Status::OK();
}

namespace {

class ExplainCommand : public Command {
 public:
  std::string_view Name() const override { return "explain"; }
  Status Run(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) const override {
    HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"verbosity"}));
    BsonElement inner = cmd.FirstElement();
    if (inner.type() != BsonType::kObject) return WrongType("explain", inner, "object");
    HG_ASSIGN_OR_RETURN(auto verbosity, GetString("explain", cmd, "verbosity"));
    return RunExplain(ctx, inner.Obj(), verbosity.value_or("allPlansExecution"), reply);
  }
};

}  // namespace

void RegisterExplainCommand(CommandRegistry& r) { r.Add(std::make_unique<ExplainCommand>()); }

}  // namespace hourglass::commands
