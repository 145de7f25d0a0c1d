// Order-preserving byte encoding of 64-bit record ids. WiredTiger compares keys of format 'u' with
// memcmp, so a table keyed by record id must store a form whose byte order equals numeric order:
// the id as 8 big-endian bytes with the sign bit flipped (INT64_MIN -> 00..00, -1 -> 7f ff..ff,
// 0 -> 80 00..00, INT64_MAX -> ff..ff). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hourglass::storage {

inline constexpr size_t kRecordIdSize = 8;

// Returns the 8-byte encoding of `id`.
std::string EncodeRecordId(int64_t id);

// Appends the 8-byte encoding of `id` to `out` (for composite keys such as index key + record id).
void AppendRecordId(int64_t id, std::string* out);

// Decodes the first 8 bytes of `bytes`; invariant: bytes.size() >= 8.
int64_t DecodeRecordId(std::string_view bytes);

}  // namespace hourglass::storage
