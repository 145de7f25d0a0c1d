// Random (version 4) UUIDs as their 16 bytes: collection UUIDs, session ids, users' userId.
#pragma once

#include <string>
#include <string_view>

namespace hourglass {

std::string NewUuid();
// `bytes` (16) as text: 8-4-4-4-12 lowercase hex digits, as MongoDB prints a UUID.
std::string UuidString(std::string_view bytes);

}  // namespace hourglass
