// explain: the plan (and, with executionStats/allPlansExecution, the execution counters) of a
// find, aggregate, count, distinct, update, delete or findAndModify on a regular collection, in
// MongoDB's shape: {explainVersion, queryPlanner: {namespace, parsedQuery, winningPlan,
// rejectedPlans}, executionStats: {nReturned, executionTimeMillis, totalKeysExamined,
// totalDocsExamined, executionStages}, command, serverInfo}. Writes are never performed: their
// executionStats count what would be matched. Reads of time-series collections are explained by
// explain_timeseries.h; views fail with CommandNotSupported (115).
#pragma once

#include <string_view>

#include "base/status.h"
#include "bson/bson.h"
#include "commands/command.h"

namespace hourglass::commands {

// Explains `inner` (a command document whose first field names the command) at `verbosity`
// ("queryPlanner", "executionStats" or "allPlansExecution").
Status RunExplain(CommandContext& ctx, const bson::BsonObj& inner, std::string_view verbosity,
                  bson::BsonBuilder& reply);

void RegisterExplainCommand(CommandRegistry& r);

// Appends the end of an explain reply: `command` (the explained command) and `serverInfo`.
void AppendExplainCommandAndServerInfo(CommandContext& ctx, const bson::BsonObj& inner,
                                       bson::BsonBuilder& reply);

}  // namespace hourglass::commands
