// Parsing an explained command into exec::ExplainRequest as the command itself would parse it,
// and the end every explain reply shares (`command`, `serverInfo`).
#pragma once

#include "base/status.h"
#include "bson/bson.h"
#include "commands/command.h"
#include "exec/explain.h"

namespace hourglass::commands {

// Parses the explained command `inner` (first field names the command) as the command itself
// would. `for_execution`: the explain runs the pipeline (time-series reads), so its stages get
// the command's collection access; otherwise they are only listed. Errors: CommandNotSupported
// (115) for commands that cannot be explained, the command's own parse errors (bad types,
// negative skip: BadValue 2, invalid filter or pipeline).
StatusWith<exec::ExplainRequest> ParseExplainRequest(CommandContext& ctx,
                                                     const bson::BsonObj& inner,
                                                     bool for_execution);

// Appends the end of an explain reply: `command` (the explained command) and `serverInfo`.
void AppendExplainCommandAndServerInfo(CommandContext& ctx, const bson::BsonObj& inner,
                                       bson::BsonBuilder& reply);

}  // namespace hourglass::commands
