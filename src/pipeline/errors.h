// Error-code helper for the pipeline module. MongoDB raises many aggregation errors under
// numbered "Location" codes (e.g. 16554 for $add of a non-number). PipelineError(n, reason) uses
// code n when base/error_codes.def defines it, and BadValue (2) until it does, so adding a code
// to the .def file is the only step needed to make it surface with MongoDB's number.
#pragma once

#include <string>

#include "base/status.h"

namespace hourglass::pipeline {

constexpr bool IsDefinedErrorCode(int n) {
#define X(name, number) \
  if (n == (number)) return true;
#include "base/error_codes.def"
#undef X
  return false;
}

constexpr ErrorCode LocationCode(int n) {
  return IsDefinedErrorCode(n) ? static_cast<ErrorCode>(n) : ErrorCode::kBadValue;
}

inline Status PipelineError(int n, std::string reason) {
  return Status(LocationCode(n), std::move(reason));
}

}  // namespace hourglass::pipeline
