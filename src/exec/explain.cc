#include "exec/explain.h"

#include <chrono>

#include "catalog/catalog.h"
#include "exec/collection_scan.h"
#include "exec/index_scan.h"
#include "exec/read_stream.h"
#include "storage/kv_engine.h"

namespace hourglass::exec {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;

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

AccessCounters CountersOf(const ReadExecInfo& run) {
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
BsonObj AccessStage(const QueryPlan& plan, const BsonObj& filter, const AccessCounters* run) {
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

Status ExplainCollectionRead(const ReadContext& rctx, const ExplainRequest& req,
                             std::string_view verbosity, BsonBuilder& reply) {
  HG_ASSIGN_OR_RETURN(ResolvedNamespace ns, Resolve(rctx, req.nss));
  const std::shared_ptr<catalog::Collection>& coll = ns.collection;
  if (coll && coll->entry().type != "collection") {
    return Status(ErrorCode::kCommandNotSupported, "explain on views is not supported yet");
  }
  const bool execute = verbosity != "queryPlanner";
  ReadPlan plan;
  BsonObj rest = req.filter;
  if (req.kind == "find" || req.kind == "count") {
    HG_ASSIGN_OR_RETURN(plan.near, ExtractNear(req.filter, &rest));
  }
  const bool near = plan.near.has_value();
  HG_ASSIGN_OR_RETURN(plan.filter, query::Matcher::Parse(rest, req.expr_ctx));
  plan.filter_spec = rest;
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
  ReadExecInfo info;
  auto start = std::chrono::steady_clock::now();
  // distinct over an index that leads with its key reads one key per value (DISTINCT_SCAN).
  std::optional<QueryPlan> distinct_plan;
  if (req.kind == "distinct" && coll && !coll->ident().empty() && !req.expr_ctx.collator) {
    distinct_plan = PlanDistinctScan(*coll, req.filter, req.distinct_key,
                                     req.hint.IsEmpty() ? BsonElement() : req.hint.FirstElement());
  }
  int64_t distinct_keys = 0, distinct_docs = 0;
  std::unique_ptr<pipeline::DocumentStream> stream;
  if (!distinct_plan) {
    HG_ASSIGN_OR_RETURN(stream, BuildReadStream(rctx, ns, std::move(plan), &info));
  }
  int64_t n = 0;
  if (execute && distinct_plan) {
    auto session = rctx.engine->NewSession();
    HG_ASSIGN_OR_RETURN(
        auto values, DistinctScan(*session, *coll, *distinct_plan, &distinct_keys, &distinct_docs));
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
    // A near read orders the scan's documents by distance (exec/near_read.h).
    auto access = [&](const AccessCounters* run) {
      BsonObj a = AccessStage(info.choice->winner, req.filter, run);
      if (!near) return a;
      // MongoDB names the stage by the geo index and shows it.
      const catalog::SecondaryIndex* geo_index = info.choice->winner.index;
      const bool flat = geo_index != nullptr && geo_index->desc.flat.has_value();
      return Wrap(
          flat ? "GEO_NEAR_2D" : "GEO_NEAR_2DSPHERE", a,
          [&](BsonBuilder& b) {
            if (geo_index == nullptr) return;
            b.AppendObject("keyPattern", geo_index->desc.key);
            b.AppendString("indexName", geo_index->desc.name);
          },
          StageStats{run ? run->n_returned : 0, run != nullptr});
    };
    winning = PlanTree(req, access(nullptr), nullptr, n, info.blocking_sort, covered);
    if (execute) {
      AccessCounters run = CountersOf(info);
      executed = PlanTree(req, access(&run), &run, n, info.blocking_sort, covered);
    }
    for (const QueryPlan& p : info.choice->rejected) {
      rejected.AppendObject(PlanTree(req, p.Describe(req.filter), nullptr, 0,
                                     !req.sort.IsEmpty() && !p.provides_sort,
                                     p.covered_fields.has_value()));
    }
    // allPlansExecution: each candidate's trial (none when a single plan ran without one).
    for (size_t i = 0; i < info.trials.size(); ++i) {
      const TrialStats& t = info.trials[i];
      const QueryPlan& p = i == 0 ? info.choice->winner : info.choice->rejected[i - 1];
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
  return Status::OK();
}

}  // namespace hourglass::exec
