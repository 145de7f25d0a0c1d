// How BSONColumn turns element values into the integers its Simple-8b streams carry, and back.
//
// A column stores each value either as a literal (an uncompressed element) or as a zig-zag
// encoded delta (or delta of delta) between integers derived from consecutive values of the same
// type. This header holds those derivations, the control-byte constants and the per-type rules
// (which types use 128-bit streams, which use delta-of-delta, which allow only "repeat").
// The layouts follow MongoDB's BSONColumn format byte for byte; see README.md in this folder.
// Pure functions, no state, thread-safe.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "bson/bson.h"

namespace hourglass::bsoncolumn {

using uint128 = unsigned __int128;
using int128 = __int128;

// Control bytes.
inline constexpr uint8_t kEndOfColumn = 0x00;
inline constexpr uint8_t kInterleavedStartLegacy = 0xF0;  // object root, arrays are leaves
inline constexpr uint8_t kInterleavedStartObject = 0xF1;  // object root, arrays descended
inline constexpr uint8_t kInterleavedStartArray = 0xF2;   // array root, arrays descended
inline constexpr int kMaxWordsPerControl = 16;

// Double scale indexes: values are multiplied by 1, 10, 100, 10^4, 10^8 and rounded; index 5
// ("memory as integer") reinterprets the IEEE-754 bits as an int64.
inline constexpr int kScaleMemoryAsInteger = 5;
inline constexpr int kNumScales = 6;
// The multiplier of each scale index below kScaleMemoryAsInteger.
inline constexpr double kScaleMultiplier[kNumScales - 1] = {1, 10, 100, 10000, 100000000};
// The control byte's high nibble for each scale index (0x9_, 0xA_, 0xB_, 0xC_, 0xD_, 0x8_).
inline constexpr uint8_t kControlForScale[kNumScales] = {0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0x80};

// True for control bytes that introduce an uncompressed element: 0x01-0x1F, MaxKey (0x7F) and
// MinKey (0xFF). 0x00 (end) is not a literal.
inline bool IsLiteralControl(uint8_t c) {
  return (c != 0 && (c & 0xE0) == 0) || c == 0x7F || c == 0xFF;
}
inline bool IsInterleavedStart(uint8_t c) { return c >= 0xF0 && c <= 0xF2; }
// The scale index of a Simple-8b control byte (0x80-0xDF), or -1 if `c` is not one.
inline int ScaleIndexOfControl(uint8_t c) {
  switch (c >> 4) {
    case 0x8:
      return kScaleMemoryAsInteger;
    case 0x9:
      return 0;
    case 0xA:
      return 1;
    case 0xB:
      return 2;
    case 0xC:
      return 3;
    case 0xD:
      return 4;
    default:
      return -1;
  }
}

// Type rules.
// ObjectId, Date, Timestamp. Inline: asked for every value appended.
inline bool UsesDeltaOfDelta(bson::BsonType t) {
  return t == bson::BsonType::kObjectId || t == bson::BsonType::kDate ||
         t == bson::BsonType::kTimestamp;
}
// String, Code, BinData, Decimal128.
inline bool Uses128Bit(bson::BsonType t) {
  return t == bson::BsonType::kString || t == bson::BsonType::kCode ||
         t == bson::BsonType::kBinData || t == bson::BsonType::kDecimal128;
}
// Types whose values cannot be turned into integers: only "repeat the previous" is possible.
bool OnlyZeroDelta(bson::BsonType t);

// Zig-zag encoding of signed deltas (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...).
inline uint64_t ZigZag64(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag64(uint64_t u) { return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1)); }
inline uint128 ZigZag128(int128 v) {
  return (static_cast<uint128>(v) << 1) ^ static_cast<uint128>(v >> 127);
}
inline int128 UnZigZag128(uint128 u) { return static_cast<int128>((u >> 1) ^ (~(u & 1) + 1)); }

// Wrapping arithmetic (no signed overflow).
inline int64_t WrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int128 WrapSub(int128 a, int128 b) {
  return static_cast<int128>(static_cast<uint128>(a) - static_cast<uint128>(b));
}
inline int128 WrapAdd(int128 a, int128 b) {
  return static_cast<int128>(static_cast<uint128>(a) + static_cast<uint128>(b));
}

// Doubles. EncodeDouble gives the integer for `v` at `scale_index` if v * scale rounds to an
// integer within +-2^53 that divides back to exactly the same bits; index 5 always succeeds.
// Inline, as EncodeDoubleLowestScale: the encoder asks about every double.
namespace internal {
inline int64_t BitsOfDouble(double v) {
  int64_t r;
  std::memcpy(&r, &v, 8);
  return r;
}
// std::llround for |x| <= 2^53, without the library call: the conversion truncates, and x minus
// its integer part is exact in that range, so the half-way cases round away from zero as llround
// does.
inline int64_t RoundHalfAwayFromZero(double x) {
  int64_t i = static_cast<int64_t>(x);
  const double frac = x - static_cast<double>(i);
  if (frac >= 0.5) {
    ++i;
  } else if (frac <= -0.5) {
    --i;
  }
  return i;
}
// True when the product `scaled` = fl(v × m), |scaled| < 2^51, is too far from every integer for
// any r / m to round back to v: EncodeDouble(v, m's index) then fails, and this answers without
// its division. If fl(r / m) == v, then |r - v·m| <= m·ulp(v)/2 <= |v·m|·2^-53 and |v·m - scaled|
// <= |scaled|·2^-53 (about), so r lies within |scaled|·2^-52 of `scaled`; the test allows twice
// that. Adding and subtracting 1.5 × 2^52 rounds to the nearest integer exactly in range,
// and the difference from it is exact (Sterbenz).
inline bool FarFromEveryInteger(double scaled) {
  constexpr double kRounder = 6755399441055744.0;  // 1.5 × 2^52
  const double nearest = (scaled + kRounder) - kRounder;
  return std::fabs(scaled - nearest) > std::fabs(scaled) * 0x1p-51;
}
}  // namespace internal
inline std::optional<int64_t> EncodeDouble(double v, int scale_index) {
  constexpr double kMaxSafe = 9007199254740992.0;  // 2^53
  if (scale_index == kScaleMemoryAsInteger) return internal::BitsOfDouble(v);
  const double m = kScaleMultiplier[scale_index];
  const double scaled = v * m;
  // The negated comparison also rejects NaN.
  if (!(scaled >= -kMaxSafe && scaled <= kMaxSafe)) return std::nullopt;
  const int64_t rounded = internal::RoundHalfAwayFromZero(scaled);
  if (internal::BitsOfDouble(static_cast<double>(rounded) / m) != internal::BitsOfDouble(v)) {
    return std::nullopt;
  }
  return rounded;
}
// Inline: the decoder calls it once per double cell.
inline double DecodeDouble(int64_t encoded, int scale_index) {
  if (scale_index == kScaleMemoryAsInteger) {
    double d;
    std::memcpy(&d, &encoded, 8);
    return d;
  }
  // Scale 0 multiplies by 1: the quotient is the integer converted (skipping the division,
  // whose throughput bounds decoding integral doubles).
  if (scale_index == 0) return static_cast<double>(encoded);
  return static_cast<double>(encoded) / kScaleMultiplier[scale_index];
}
// The smallest scale index >= `min_index` that encodes `v`, with the encoding.
std::pair<int64_t, int> EncodeDoubleLowestScaleByTries(double v, int min_index);
inline std::pair<int64_t, int> EncodeDoubleLowestScale(double v, int min_index) {
  // A value that encodes at a scale encodes at every larger one as long as |v × 10^8| < 2^50
  // (the product's rounding error then stays far below one half, and r × 10^(8-s) / 10^8 is the
  // same rational as r / 10^s): one that fails at 10^8 fails at all of them. Full-precision
  // doubles, the common case, are settled with one try instead of five.
  constexpr double kAllScalesAgree = 1125899906842624.0 / 1e8;  // 2^50 / 10^8
  if (min_index < kScaleMemoryAsInteger - 1 && std::fabs(v) < kAllScalesAgree &&
      (internal::FarFromEveryInteger(v * kScaleMultiplier[kScaleMemoryAsInteger - 1]) ||
       !EncodeDouble(v, kScaleMemoryAsInteger - 1))) {
    return {internal::BitsOfDouble(v), kScaleMemoryAsInteger};
  }
  return EncodeDoubleLowestScaleByTries(v, min_index);
}

// ObjectId: the timestamp and counter bytes interleaved into 7 bytes of an int64 (the 5 process
// bytes are copied from the previous ObjectId when decoding).
int64_t EncodeObjectId(const bson::ObjectId& oid);
bson::ObjectId DecodeObjectId(int64_t v, const bson::ObjectId& previous);

// Strings (and Code) of at most 16 bytes whose first byte is not NUL: the bytes reversed, read as
// a little-endian 128-bit integer. The empty string is 0.
std::optional<int128> EncodeString(std::string_view s);
std::string DecodeString(int128 v);
// BinData payloads of at most 16 bytes, zero padded, little-endian.
std::optional<int128> EncodeBinary(std::string_view payload);
// The first `size` bytes of `v` (little-endian); size <= 16.
std::string DecodeBinary(int128 v, size_t size);
// Decimal128: high 64 bits : low 64 bits.
inline int128 EncodeDecimal(const bson::Decimal128& d) {
  return static_cast<int128>((static_cast<uint128>(d.high) << 64) | d.low);
}
inline bson::Decimal128 DecodeDecimal(int128 v) {
  return bson::Decimal128{static_cast<uint64_t>(static_cast<uint128>(v)),
                          static_cast<uint64_t>(static_cast<uint128>(v) >> 64)};
}

}  // namespace hourglass::bsoncolumn
