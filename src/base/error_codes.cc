#include "base/error_codes.h"

namespace hourglass {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
#define X(name, number) \
  case ErrorCode::k##name: \
    return #name;
#include "base/error_codes.def"
#undef X
  }
  return "UnknownError";
}

}  // namespace hourglass
