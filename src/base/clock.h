// Wall-clock helpers shared by logging and commands (localTime, currentOpTime, $$NOW).
#pragma once

#include <cstdint>
#include <string>

namespace hourglass {

// Milliseconds since the Unix epoch.
int64_t NowMillis();

// "2026-11-22T00:04:17.123+00:00": the ISO-8601 UTC form MongoDB's logs and currentOp use.
std::string FormatIsoDate(int64_t millis);

}  // namespace hourglass
