// Random (version 4) UUIDs as their 16 bytes: collection UUIDs, session ids, users' userId.
#pragma once

#include <string>

namespace hourglass {

std::string NewUuid();

}  // namespace hourglass
