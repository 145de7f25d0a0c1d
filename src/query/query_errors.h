// Error codes the query layer raises that are not yet in src/base/error_codes.def. Each alias
// names MongoDB's code and falls back to BadValue until the table gains it, so switching is a
// one-line change here and every caller (and test) follows.
#pragma once

#include "base/error_codes.h"

namespace hourglass::query {

// ConflictingUpdateOperators (40): two update operators touch overlapping paths.
inline constexpr ErrorCode kConflictingUpdateOperatorsCode = ErrorCode::kConflictingUpdateOperators;
// Location15975: a sort direction other than 1 or -1.
inline constexpr ErrorCode kBadSortDirectionCode = ErrorCode::kLocation15975;
// Location31253 / Location31254: mixing inclusion and exclusion in a projection.
inline constexpr ErrorCode kInclusionInExclusionCode = ErrorCode::kLocation31253;
inline constexpr ErrorCode kExclusionInInclusionCode = ErrorCode::kLocation31254;
// Location31249 / Location31250: projection paths that collide ({a: 1, "a.b": 1}).
inline constexpr ErrorCode kProjectionPathCollisionCode = ErrorCode::kLocation31249;
// Location51091: a $regex pattern PCRE rejects; Location51108: an unknown regex flag.
inline constexpr ErrorCode kBadRegexCode = ErrorCode::kLocation51091;
inline constexpr ErrorCode kBadRegexOptionCode = ErrorCode::kLocation51108;

}  // namespace hourglass::query
