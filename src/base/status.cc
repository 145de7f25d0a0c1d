#include "base/status.h"

#include <cstdio>
#include <cstdlib>

namespace hourglass {

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(code_name()) + ": " + reason();
}

Status Status::WithContext(std::string_view prefix) const {
  if (ok()) return *this;
  return Status(code(), std::string(prefix) + reason(), extra_info());
}

void InvariantFailed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "Invariant failure: %s at %s:%d\n", expr, file, line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace hourglass
