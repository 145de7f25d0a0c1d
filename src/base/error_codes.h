// MongoDB's numeric error codes and their codeNames, generated from error_codes.def. Clients
// branch on these numbers, so each one must match MongoDB's exactly.
#pragma once

#include <string_view>

namespace hourglass {

enum class ErrorCode : int {
#define X(name, number) k##name = number,
#include "base/error_codes.def"
#undef X
};

// Returns the codeName MongoDB uses for `code` ("BadValue", "DuplicateKey", ...); codes that
// MongoDB leaves unnamed — including numbered codes not listed in error_codes.def, which a
// ErrorCode may carry as static_cast<ErrorCode>(number) — come back as "Location<number>".
std::string_view ErrorCodeName(ErrorCode code);

}  // namespace hourglass
