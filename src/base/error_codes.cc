#include "base/error_codes.h"

#include <mutex>
#include <string>
#include <unordered_map>

namespace hourglass {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
#define X(name, number)    \
  case ErrorCode::k##name: \
    return #name;
#include "base/error_codes.def"
#undef X
  }
  // A numbered code not listed in error_codes.def: MongoDB names these "Location<number>". The
  // names live as long as the process (the map's nodes never move), so views of them stay valid.
  static std::mutex mu;
  static std::unordered_map<int, std::string> names;
  std::lock_guard<std::mutex> lock(mu);
  const int n = static_cast<int>(code);
  auto it = names.find(n);
  if (it == names.end()) it = names.emplace(n, "Location" + std::to_string(n)).first;
  return it->second;
}

}  // namespace hourglass
