// explain of commands on a time-series collection: reads go to the query engine
// (exec/explain_timeseries.h); delete and update are explained as MongoDB 7.0's TS_MODIFY over a
// scan of the buckets, by a dry run of the statement that counts what it would change;
// findAndModify fails with CommandNotSupported (115).
#pragma once

#include <string_view>

#include "base/status.h"
#include "bson/bson.h"
#include "commands/command.h"

namespace hourglass::commands {

// If `inner` targets a time-series collection, explains it into `reply` and returns true;
// returns false (reply untouched) for anything else. Errors: the command's parse errors,
// CommandNotSupported (115) for findAndModify.
StatusWith<bool> ExplainTimeseries(CommandContext& ctx, const bson::BsonObj& inner,
                                   std::string_view verbosity, bson::BsonBuilder& reply);

}  // namespace hourglass::commands
