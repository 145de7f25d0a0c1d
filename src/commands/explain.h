// explain: the plan (and, with executionStats/allPlansExecution, the execution counters) of a
// find, aggregate, count, distinct, update, delete or findAndModify on a regular collection, in
// MongoDB's shape: {explainVersion, queryPlanner: {namespace, parsedQuery, winningPlan,
// rejectedPlans}, executionStats: {nReturned, executionTimeMillis, totalKeysExamined,
// totalDocsExamined, executionStages}, command, serverInfo}. Writes are never performed: their
// executionStats count what would be matched. Reads of time-series collections are explained by
// explain_timeseries.h; views fail with CommandNotSupported (115).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/namespace.h"
#include "commands/command.h"
#include "pipeline/pipeline.h"

namespace hourglass::commands {

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

// Parses the explained command `inner` (first field names the command) as the command itself
// would. `for_execution`: the explain runs the pipeline (time-series reads), so its stages get
// the command's collection access; otherwise they are only listed. Errors: CommandNotSupported
// (115) for commands that cannot be explained, the command's own parse errors (bad types,
// negative skip: BadValue 2, invalid filter or pipeline).
StatusWith<ExplainRequest> ParseExplainRequest(CommandContext& ctx, const bson::BsonObj& inner,
                                               bool for_execution);

// Explains `inner` (a command document whose first field names the command) at `verbosity`
// ("queryPlanner", "executionStats" or "allPlansExecution").
Status RunExplain(CommandContext& ctx, const bson::BsonObj& inner, std::string_view verbosity,
                  bson::BsonBuilder& reply);

void RegisterExplainCommand(CommandRegistry& r);

// Appends the end of an explain reply: `command` (the explained command) and `serverInfo`.
void AppendExplainCommandAndServerInfo(CommandContext& ctx, const bson::BsonObj& inner,
                                       bson::BsonBuilder& reply);

}  // namespace hourglass::commands
