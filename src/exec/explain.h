// Explaining reads in MongoDB's shape: the plan trees (winningPlan, rejectedPlans, and with
// executionStats/allPlansExecution the execution counters) of a find, aggregate, count,
// distinct, update, delete or findAndModify over a regular collection, and the aggregation-shaped
// explain of time-series reads (exec/explain_timeseries.h). The commands parse the explained
// command into an ExplainRequest and add the reply's `command` and `serverInfo`. Writes are never
// performed: their executionStats count what would be matched.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/namespace.h"
#include "exec/read_context.h"
#include "pipeline/pipeline.h"
#include "query/matcher.h"

namespace hourglass::exec {

// What an explained command reads and what it does with the documents (both explain paths).
struct ExplainRequest {
  std::string kind;  // find, count, distinct, update, delete, findAndModify, aggregate
  catalog::NamespaceString nss;
  bson::BsonObj filter;
  bson::BsonObj sort;
  int64_t skip = 0;
  int64_t limit = 0;
  std::optional<bson::BsonObj> projection;
  bson::BsonObj hint;  // {hint: ...} or empty
  bool upsert = false;
  bson::BsonObj min, max;  // find
  std::string distinct_key;
  std::vector<bson::BsonObj> rest_stages;  // aggregate: stages after the leading $match
  query::ExpressionContext expr_ctx;       // $$NOW and the command's `let`
  // The aggregate's context, with the command's memory limits and allowDiskUse; with collection
  // access only when parsed `for_execution`.
  pipeline::PipelineContext pctx;
};

// Explains `req` on a regular (or missing) collection at `verbosity` ("queryPlanner",
// "executionStats" or "allPlansExecution"), running the read for the latter two: appends
// explainVersion, queryPlanner and executionStats to `reply` (an aggregate with stages after its
// leading $match gets them under stages[0].$cursor, followed by those stages). Views and bucket
// collections fail with CommandNotSupported (115); the planner's errors (bad hint: 2) pass.
Status ExplainCollectionRead(const ReadContext& rctx, const ExplainRequest& req,
                             std::string_view verbosity, bson::BsonBuilder& reply);

}  // namespace hourglass::exec
