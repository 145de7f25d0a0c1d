// Fixed-width little-endian integers in byte buffers, as the storage formats written here use
// them (the measurement journal's entries, append-log record headers). `bytes` is 1..8; the value
// is truncated to that width. Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hourglass {

inline void StoreLe(char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<char>(v >> (8 * i));
}

inline uint64_t LoadLe(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes; i-- > 0;) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

inline void AppendLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

// Overwrites the `bytes` bytes at `at` (a placeholder appended earlier) with `v`.
inline void OverwriteLe(std::string* out, size_t at, uint64_t v, int bytes) {
  StoreLe(out->data() + at, v, bytes);
}

}  // namespace hourglass
