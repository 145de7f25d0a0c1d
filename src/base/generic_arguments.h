// The generic arguments every MongoDB command accepts beside its own fields ($db, lsid,
// writeConcern, comment, maxTimeMS, ...): commands skip them when they check for unknown fields.
// Pure; thread-safe.
#pragma once

#include <string_view>

namespace hourglass {

bool IsGenericArgument(std::string_view field);

}  // namespace hourglass
