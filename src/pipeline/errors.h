// Error-code helper for the pipeline module. MongoDB raises many aggregation errors under
// numbered "Location" codes (e.g. 16554 for $add of a non-number); PipelineError(n, reason)
// carries code n, whether or not base/error_codes.def lists it.
#pragma once

#include <string>

#include "base/status.h"

namespace hourglass::pipeline {

// MongoDB's location code `n` (its codeName is "Location<n>" unless error_codes.def names it).
constexpr ErrorCode LocationCode(int n) { return static_cast<ErrorCode>(n); }

inline Status PipelineError(int n, std::string reason) {
  return Status(LocationCode(n), std::move(reason));
}

}  // namespace hourglass::pipeline
