// explain: the explain command. It parses the explained command (explain_request.h), hands
// time-series reads and writes to explain_timeseries.h and everything else to the query engine's
// exec::ExplainCollectionRead, and ends the reply with `command` and `serverInfo`.
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

}  // namespace hourglass::commands
