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

}  // namespace hourglass::storage
