#include "bsoncolumn/simple8b.h"

#include <string>

namespace hourglass::bsoncolumn {

StatusWith<int> DecodeSimple8bWord(uint64_t word, bool is128, Simple8bSlot<uint128>* out,
                                   int* rle_repeats) {
  using namespace simple8b;
  const int selector = static_cast<int>(word & 0xF);
  const int nibble = static_cast<int>((word >> 4) & 0xF);
  const Simple8bLayout l = Simple8bLayoutOf(word);
  if (selector == 0) return Status(ErrorCode::kInvalidBSON, "Simple-8b word with selector 0");
  if (l.rle_repeats > 0) {
    *rle_repeats = l.rle_repeats;
    return 0;
  }
  if (l.ext < 0) {
    return Status(ErrorCode::kInvalidBSON, "Simple-8b word with invalid extended selector " +
                                               std::to_string(selector) + "/" +
                                               std::to_string(nibble));
  }
  const int ext = l.ext, index = l.index, start = l.start;
  const int count = kValuesPerWord[ext][index];
  const int bits = kBitsPerValue[ext][index];
  const int zbits = kTrailingZeroBits[ext];
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

StatusWith<int> DecodeSimple8bWord64Rare(uint64_t word, int* rle_repeats) {
  Simple8bSlot<uint128> unused[60];
  return DecodeSimple8bWord(word, false, unused, rle_repeats);
}

int Simple8bWordCount(uint64_t word) {
  Simple8bSlot<uint128> slots[60];
  int rle = 0;
  auto n = DecodeSimple8bWord(word, true, slots, &rle);
  if (!n.ok()) return 0;
  return n.value() == 0 ? rle : n.value();
}

}  // namespace hourglass::bsoncolumn
