// Writing BSON's little-endian int32s (lengths, values) into byte strings, for code that lays
// out BSON bytes itself (bucket documents, update diffs applied in place). Every machine Hourglass
// builds for is little-endian, as BSON is.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace hourglass::bson {

inline void PutInt32(std::string* out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out->append(b, 4);
}

inline std::string Int32Bytes(uint32_t v) {
  std::string s;
  PutInt32(&s, v);
  return s;
}

}  // namespace hourglass::bson
