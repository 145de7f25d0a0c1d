// planSummary, as currentOp and the slow-operation log show a read's plan: "COLLSCAN",
// "IXSCAN { a: 1, b: -1 }", "CLUSTERED_IXSCAN", several scans joined by ", " (an $or's).
#pragma once

#include <string>
#include <string_view>

#include "bson/bson.h"

namespace hourglass::exec {

// `stage`, followed by the key pattern in the shell's notation when there is one.
std::string PlanSummary(std::string_view stage, const bson::BsonObj& key_pattern = {});

// Records `summary` on the current thread's operation, if any (OperationControl::SetPlanSummary:
// the first one stays).
void RecordPlanSummary(std::string summary);

}  // namespace hourglass::exec
