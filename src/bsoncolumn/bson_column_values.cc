#include "bsoncolumn/bson_column_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hourglass::bsoncolumn {

using bson::BsonType;

bool OnlyZeroDelta(BsonType t) {
  switch (t) {
    case BsonType::kRegex:
    case BsonType::kDBPointer:
    case BsonType::kCodeWScope:
    case BsonType::kSymbol:
    case BsonType::kObject:
    case BsonType::kArray:
    case BsonType::kNull:
    case BsonType::kUndefined:
    case BsonType::kMinKey:
    case BsonType::kMaxKey:
      return true;
    default:
      return false;
  }
}

namespace {

int128 LoadLittle16(const char (&arr)[16]) {
  uint64_t lo, hi;
  std::memcpy(&lo, arr, 8);
  std::memcpy(&hi, arr + 8, 8);
  return static_cast<int128>((static_cast<uint128>(hi) << 64) | lo);
}

}  // namespace

std::pair<int64_t, int> EncodeDoubleLowestScaleByTries(double v, int min_index) {
  for (int i = min_index; i < kScaleMemoryAsInteger; ++i) {
    if (auto e = EncodeDouble(v, i)) return {*e, i};
  }
  return {internal::BitsOfDouble(v), kScaleMemoryAsInteger};
}

int64_t EncodeObjectId(const bson::ObjectId& oid) {
  const uint8_t* b = oid.bytes;
  uint8_t e[8] = {b[11], b[3], b[10], b[2], b[9], b[1], b[0], 0};
  uint64_t v;
  std::memcpy(&v, e, 8);
  return static_cast<int64_t>(v);
}

bson::ObjectId DecodeObjectId(int64_t v, const bson::ObjectId& previous) {
  uint8_t e[8];
  std::memcpy(e, &v, 8);
  bson::ObjectId out = previous;
  out.bytes[0] = e[6];
  out.bytes[1] = e[5];
  out.bytes[2] = e[3];
  out.bytes[3] = e[1];
  out.bytes[9] = e[4];
  out.bytes[10] = e[2];
  out.bytes[11] = e[0];
  return out;
}

std::optional<int128> EncodeString(std::string_view s) {
  if (s.size() > 16) return std::nullopt;
  if (!s.empty() && s[0] == '\0') return std::nullopt;
  char arr[16] = {};
  std::reverse_copy(s.begin(), s.end(), arr);
  return LoadLittle16(arr);
}

std::string DecodeString(int128 v) {
  std::string bytes = DecodeBinary(v, 16);
  size_t n = 16;
  while (n > 0 && bytes[n - 1] == '\0') --n;
  bytes.resize(n);
  std::reverse(bytes.begin(), bytes.end());
  return bytes;
}

std::optional<int128> EncodeBinary(std::string_view payload) {
  if (payload.size() > 16) return std::nullopt;
  char arr[16] = {};
  std::memcpy(arr, payload.data(), payload.size());
  return LoadLittle16(arr);
}

std::string DecodeBinary(int128 v, size_t size) {
  const uint128 u = static_cast<uint128>(v);
  const uint64_t lo = static_cast<uint64_t>(u), hi = static_cast<uint64_t>(u >> 64);
  char arr[16];
  std::memcpy(arr, &lo, 8);
  std::memcpy(arr + 8, &hi, 8);
  return std::string(arr, std::min<size_t>(size, 16));
}

}  // namespace hourglass::bsoncolumn
