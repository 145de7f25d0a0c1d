#include "bsoncolumn/simple8b.h"

#include <string>

namespace hourglass::bsoncolumn {

StatusWith<int> DecodeSimple8bWord(uint64_t word, bool is128, Simple8bSlot<uint128>* out,
                                   int* rle_repeats) {
  using namespace simple8b;
  const int selector = static_cast<int>(word & 0xF);
  const int nibble = static_cast<int>((word >> 4) & 0xF);
  if (selector == 0) return Status(ErrorCode::kInvalidBSON, "Simple-8b word with selector 0");
  if (selector == static_cast<int>(kRleSelector)) {
    *rle_repeats = (nibble + 1) * kRleMultiplier;
    return 0;
  }
  int ext = kBase;
  int index = selector;
  if (selector == 7 || selector == 8) {
    if (nibble != 0) {
      if (selector == 7 && nibble <= 9) {
        ext = kSeven;
      } else if (selector == 8 && nibble <= 7) {
        ext = kEightSmall;
      } else if (selector == 8 && nibble <= 13) {
        ext = kEightLarge;
      } else {
        return Status(ErrorCode::kInvalidBSON, "Simple-8b word with invalid extended selector " +
                                                   std::to_string(selector) + "/" +
                                                   std::to_string(nibble));
      }
      index = nibble;
    }
  }
  const int count = kValuesPerWord[ext][index];
  const int bits = kBitsPerValue[ext][index];
  const int zbits = kTrailingZeroBits[ext];
  const int start = (selector == 7 || selector == 8) ? 8 : 4;
  const uint64_t mask = (uint64_t{1} << (bits + zbits)) - 1;
  const int multiplier = ext == kSeven ? 1 : 4;
  for (int i = 0; i < count; ++i) {
    const uint64_t slot = (word >> (start + (bits + zbits) * i)) & mask;
    if (slot == mask) {
      out[i] = {true, 0};
      continue;
    }
    if (ext == kBase) {
      out[i] = {false, slot};
      continue;
    }
    const int shift = static_cast<int>(slot & ((uint64_t{1} << zbits) - 1)) * multiplier;
    const uint64_t payload = slot >> zbits;
    const int width = 64 - std::countl_zero(payload);
    if (payload != 0 && width + shift > (is128 ? 128 : 64)) {
      return Status(ErrorCode::kInvalidBSON,
                    "Simple-8b value does not fit the stream's width (selector " +
                        std::to_string(selector) + "/" + std::to_string(nibble) + ")");
    }
    out[i] = {false, payload == 0 ? uint128{0} : static_cast<uint128>(payload) << shift};
  }
  return count;
}

StatusWith<int> DecodeSimple8bWord64(uint64_t word, uint64_t* values, uint64_t* skips,
                                     int* rle_repeats) {
  using namespace simple8b;
  const int selector = static_cast<int>(word & 0xF);
  const int nibble = static_cast<int>((word >> 4) & 0xF);
  int ext = kBase;
  int index = selector;
  if (selector == 7 || selector == 8) {
    if (nibble != 0) {
      if (selector == 7 && nibble <= 9) {
        ext = kSeven;
      } else if (selector == 8 && nibble <= 13) {
        ext = nibble <= 7 ? kEightSmall : kEightLarge;
      } else {
        ext = -1;
      }
      index = nibble;
    }
  }
  if (selector == 0 || selector == static_cast<int>(kRleSelector) || ext < 0) {
    // Invalid words and RLE: the general decoder says which, with its message.
    Simple8bSlot<uint128> unused[60];
    return DecodeSimple8bWord(word, false, unused, rle_repeats);
  }
  const int count = kValuesPerWord[ext][index];
  const int bits = kBitsPerValue[ext][index];
  const int zbits = kTrailingZeroBits[ext];
  const int width = bits + zbits;
  const int start = (selector == 7 || selector == 8) ? 8 : 4;
  const uint64_t mask = width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  uint64_t skipped = 0;
  if (ext == kBase) {
    uint64_t w = word >> start;
    for (int i = 0; i < count; ++i, w >>= width) {
      const uint64_t slot = w & mask;
      const bool skip = slot == mask;
      skipped |= uint64_t{skip} << i;
      values[i] = skip ? 0 : slot;
    }
    *skips = skipped;
    return count;
  }
  const int multiplier = ext == kSeven ? 1 : 4;
  for (int i = 0; i < count; ++i) {
    const uint64_t slot = (word >> (start + width * i)) & mask;
    if (slot == mask) {
      skipped |= uint64_t{1} << i;
      values[i] = 0;
      continue;
    }
    const int shift = static_cast<int>(slot & ((uint64_t{1} << zbits) - 1)) * multiplier;
    const uint64_t payload = slot >> zbits;
    const int payload_width = 64 - std::countl_zero(payload);
    if (payload != 0 && payload_width + shift > 64) {
      return Status(ErrorCode::kInvalidBSON,
                    "Simple-8b value does not fit the stream's width (selector " +
                        std::to_string(selector) + "/" + std::to_string(nibble) + ")");
    }
    values[i] = payload == 0 ? 0 : payload << shift;
  }
  *skips = skipped;
  return count;
}

int Simple8bWordCount(uint64_t word) {
  Simple8bSlot<uint128> slots[60];
  int rle = 0;
  auto n = DecodeSimple8bWord(word, true, slots, &rle);
  if (!n.ok()) return 0;
  return n.value() == 0 ? rle : n.value();
}

}  // namespace hourglass::bsoncolumn
