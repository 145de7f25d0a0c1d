#include "storage/record_id.h"

#include "base/status.h"

namespace hourglass::storage {

namespace {
constexpr uint64_t kSignBit = uint64_t{1} << 63;
}  // namespace

void AppendRecordId(int64_t id, std::string* out) {
  // Flipping the sign bit maps the two's-complement range onto [0, 2^64) monotonically.
  uint64_t u = static_cast<uint64_t>(id) ^ kSignBit;
  char buf[kRecordIdSize];
  for (int i = 7; i >= 0; --i) {
    buf[i] = static_cast<char>(u & 0xff);
    u >>= 8;
  }
  out->append(buf, kRecordIdSize);
}

std::string EncodeRecordId(int64_t id) {
  std::string out;
  out.reserve(kRecordIdSize);
  AppendRecordId(id, &out);
  return out;
}

int64_t DecodeRecordId(std::string_view bytes) {
  invariant(bytes.size() >= kRecordIdSize);
  uint64_t u = 0;
  for (size_t i = 0; i < kRecordIdSize; ++i) {
    u = (u << 8) | static_cast<uint8_t>(bytes[i]);
  }
  return static_cast<int64_t>(u ^ kSignBit);
}

namespace {
int64_t FromBigEndianBytes(uint64_t u) {
  // EncodeRecordId flips the sign bit and writes big-endian; flipping it here makes the stored key
  // equal to the bytes themselves.
  return static_cast<int64_t>(u ^ kSignBit);
}
}  // namespace

int64_t ClusteredRecordId(const uint8_t* oid_bytes) {
  uint64_t u = 0;
  for (int i = 0; i < 8; ++i) u = (u << 8) | oid_bytes[i];
  return FromBigEndianBytes(u);
}

int64_t ClusteredRecordIdLow(uint32_t seconds) {
  return FromBigEndianBytes(static_cast<uint64_t>(seconds) << 32);
}

int64_t ClusteredRecordIdHigh(uint32_t seconds) {
  return FromBigEndianBytes((static_cast<uint64_t>(seconds) << 32) | 0xffffffffu);
}

uint32_t ClusteredRecordIdSeconds(int64_t id) {
  return static_cast<uint32_t>((static_cast<uint64_t>(id) ^ kSignBit) >> 32);
}

}  // namespace hourglass::storage
