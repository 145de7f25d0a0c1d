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

// Clustered collections (time-series buckets) are keyed by their ObjectId `_id`: the RecordId is
// the big-endian first 8 bytes of the ObjectId (4-byte timestamp, then 4 more), in the form whose
// encoding above is exactly those bytes, so RecordId order is `_id` order and a range of `_id`
// timestamps is a range of RecordIds.

// The RecordId of the ObjectId whose 12 bytes start at `oid_bytes`.
int64_t ClusteredRecordId(const uint8_t* oid_bytes);
// The smallest and largest RecordIds of ObjectIds whose timestamp is `seconds`.
int64_t ClusteredRecordIdLow(uint32_t seconds);
int64_t ClusteredRecordIdHigh(uint32_t seconds);
// The ObjectId timestamp (seconds, unsigned) of a clustered RecordId.
uint32_t ClusteredRecordIdSeconds(int64_t id);

}  // namespace hourglass::storage
