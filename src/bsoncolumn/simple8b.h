// Simple-8b: unsigned integers packed into 64-bit words, as BSONColumn uses it.
//
// A word's low 4 bits are its selector. Selectors 1-14 pack 60, 30, 20, 15, 12, 10, 8, 7, 6, 5,
// 4, 3, 2 or 1 values of 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 30 or 60 bits (selectors 7 and 8
// start their payload at bit 8, leaving bits 4-7 zero). Selectors 7 and 8 with a non-zero nibble
// in bits 4-7 are MongoDB's extensions: each slot holds a trailing-zero count and the value
// shifted right by it (selector 7: counts of single bits; selector 8: counts of nibbles, with a
// 4-bit count for extensions 1-7 and a 5-bit count for 8-13, meant for 128-bit values).
// Selector 15 is run-length: (bits 4-7 + 1) * 120 repeats of the last value decoded. A slot whose
// bits are all ones is a skip ("missing"), so a value needs the width of value + 1.
// See README.md for the full tables.
//
// Simple8bBuilder reproduces MongoDB's Simple8bBuilder choices (which selector, when a word is
// cut, when a run becomes RLE) so that the words written are the words MongoDB writes. It is a
// value type: copy it to try something and throw the copy away. Not thread-safe.
// DecodeSimple8bWord is a pure function.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "base/status.h"
#include "bsoncolumn/bson_column_values.h"

namespace hourglass::bsoncolumn {

namespace simple8b {

// Extension types, in the order the builder tries them.
inline constexpr int kBase = 0;
inline constexpr int kSeven = 1;
inline constexpr int kEightSmall = 2;
inline constexpr int kEightLarge = 3;

inline constexpr uint64_t kRleSelector = 15;
inline constexpr int kRleMultiplier = 120;
inline constexpr int kMaxRleCount = 16;

inline constexpr std::array<uint8_t, 4> kDataBits = {60, 56, 56, 56};
inline constexpr std::array<uint8_t, 4> kTrailingZeroBits = {0, 4, 4, 5};
inline constexpr std::array<uint8_t, 4> kTrailingZerosMax = {0, 15, 60, 124};
inline constexpr std::array<uint8_t, 4> kMinDataBits = {1, 2, 4, 4};
inline constexpr std::array<uint8_t, 4> kMinSelector = {1, 1, 1, 8};
inline constexpr std::array<uint8_t, 4> kMaxSelector = {14, 9, 7, 13};

// Value bits per slot (trailing-zero bits not included), by extension type and selector index.
inline constexpr uint8_t kBitsPerValue[4][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 30, 60, 0},
    {0, 2, 3, 4, 5, 7, 10, 14, 24, 52, 0, 0, 0, 0, 0, 0},
    {0, 4, 5, 7, 10, 14, 24, 52, 0, 0, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 0, 0, 0, 4, 6, 9, 13, 23, 51, 0, 0}};
// Slots per word, by extension type and selector index.
inline constexpr uint8_t kValuesPerWord[4][16] = {
    {0, 60, 30, 20, 15, 12, 10, 8, 7, 6, 5, 4, 3, 2, 1, 0},
    {0, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 0, 0},
    {0, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 0, 0, 0, 6, 5, 4, 3, 2, 1, 0, 0}};

// The selector index EncodeLargestWord picks for `n` pending values (0-60) of extension type
// `ext`: the one with the most slots that n values fill, so the smallest index from the type's
// first whose slot count is at most n (the type's last when none is). Precomputed because
// every word written asks it.
inline constexpr auto kSelectorForCount = [] {
  std::array<std::array<uint8_t, 61>, 4> t{};
  for (int ext = 0; ext < 4; ++ext) {
    for (int n = 0; n <= 60; ++n) {
      int sel = kMinSelector[ext];
      while (sel < kMaxSelector[ext] && n < kValuesPerWord[ext][sel]) ++sel;
      t[ext][n] = static_cast<uint8_t>(sel);
    }
  }
  return t;
}();
// Bits needed for `v` in a slot: the width of v + 1 (all ones is reserved for skip).
inline uint8_t BitsNeeded(uint64_t v) { return 64 - std::countl_zero(v + 1); }
inline uint8_t BitsNeeded(uint128 v) {
  const uint64_t hi = static_cast<uint64_t>(v >> 64), lo = static_cast<uint64_t>(v);
  if (hi == 0) return lo == std::numeric_limits<uint64_t>::max() ? 65 : BitsNeeded(lo);
  return 128 - std::countl_zero(hi);
}
inline uint8_t TrailingZeros(uint64_t v) { return v == 0 ? 0 : std::countr_zero(v); }
inline uint8_t TrailingZeros(uint128 v) {
  const uint64_t hi = static_cast<uint64_t>(v >> 64), lo = static_cast<uint64_t>(v);
  if (lo == 0 && hi != 0) return 64 + std::countr_zero(hi);
  return TrailingZeros(lo);
}

}  // namespace simple8b

// What a word's selector (and, for selectors 7 and 8, its extension nibble) says: an RLE word
// (rle_repeats > 0), or slots of table row `ext` (kBase, kSeven, kEightSmall, kEightLarge; -1 for
// selector 0 or an unknown extension) and column `index` starting at bit `start`.
struct Simple8bLayout {
  int ext = simple8b::kBase;
  int index = 0;
  int start = 4;
  int rle_repeats = 0;
};
inline Simple8bLayout Simple8bLayoutOf(uint64_t word) {
  using namespace simple8b;
  const int selector = static_cast<int>(word & 0xF);
  const int nibble = static_cast<int>((word >> 4) & 0xF);
  Simple8bLayout l;
  l.index = selector;
  if (selector == 0) {
    l.ext = -1;
  } else if (selector == static_cast<int>(kRleSelector)) {
    l.rle_repeats = (nibble + 1) * kRleMultiplier;
  } else if (selector == 7 || selector == 8) {
    l.start = 8;
    if (nibble != 0) {
      l.index = nibble;
      if (selector == 7 && nibble <= 9) {
        l.ext = kSeven;
      } else if (selector == 8 && nibble <= 13) {
        l.ext = nibble <= 7 ? kEightSmall : kEightLarge;
      } else {
        l.ext = -1;
      }
    }
  }
  return l;
}

// One decoded slot: a value or a skip.
template <typename T>
struct Simple8bSlot {
  bool skip = false;
  T value = 0;
};

// Decodes one word into `out` (at most 60 slots), returning how many, or, for an RLE word, sets
// *rle_repeats to the number of repeats and returns 0. `is128` says whether the stream carries
// 128-bit values (a 64-bit stream rejects slots whose value does not fit 64 bits).
// InvalidBSON for selector 0, an unknown extension, or an out-of-range value.
StatusWith<int> DecodeSimple8bWord(uint64_t word, bool is128, Simple8bSlot<uint128>* out,
                                   int* rle_repeats);

// DecodeSimple8bWord for a 64-bit stream, for the decoder's fast path: the slots' values in
// `values` (0 for a skip) and a bit per skipped slot in *skips (bit i: slot i). Same results and
// errors as DecodeSimple8bWord(word, false, ...). Inline: it runs once per word of every numeric
// column a read decodes.
StatusWith<int> DecodeSimple8bWord64Rare(uint64_t word, int* rle_repeats);  // invalid words
inline StatusWith<int> DecodeSimple8bWord64(uint64_t word, uint64_t* values, uint64_t* skips,
                                            int* rle_repeats) {
  using namespace simple8b;
  const Simple8bLayout l = Simple8bLayoutOf(word);
  if (l.rle_repeats > 0) {
    *rle_repeats = l.rle_repeats;
    return 0;
  }
  if (l.ext < 0) {
    // Invalid words: the general decoder says which, with its message.
    return DecodeSimple8bWord64Rare(word, rle_repeats);
  }
  const int ext = l.ext, index = l.index, start = l.start;
  const int count = kValuesPerWord[ext][index];
  const int bits = kBitsPerValue[ext][index];
  const int zbits = kTrailingZeroBits[ext];
  const int width = bits + zbits;
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
      return DecodeSimple8bWord64Rare(word, rle_repeats);  // the general decoder's error
    }
    values[i] = payload == 0 ? 0 : payload << shift;
  }
  *skips = skipped;
  return count;
}

// How many cells (values and skips) a word holds: its slot count, or its RLE repeat count; 0 for
// an invalid word.
int Simple8bWordCount(uint64_t word);

template <typename T>
class Simple8bBuilder {
  static_assert(std::is_same_v<T, uint64_t> || std::is_same_v<T, uint128>);

 public:
  // Appends `v`; `write(uint64_t)` receives every word this completes. Returns false (and
  // changes nothing) if `v` cannot be stored in any slot: the caller then writes a literal.
  template <class W>
  bool Append(T v, W&& write) {
    if (RlePossible()) {
      if (last_in_prev_word_ == v) {
        ContinueRle();
        return true;
      }
      TerminateRle(write);
    }
    return AppendValue(v, true, write);
  }

  template <class W>
  void Skip(W&& write) {
    if (RlePossible()) {
      if (!last_in_prev_word_.has_value()) {
        ContinueRle();
        return;
      }
      TerminateRle(write);
    }
    AppendSkip(true, write);
  }

  // Writes every pending value. Appending may continue afterwards.
  template <class W>
  void Flush(W&& write) {
    TerminateRle(write);
    if (!pending_.empty()) {
      do {
        write(EncodeLargestWord(last_valid_ext_));
      } while (!pending_.empty());
      rle_count_ = 0;
    }
  }

  // Back to the state of a new builder, keeping the pending list's memory.
  void Reset() {
    rle_count_ = 0;
    last_in_prev_word_ = T{0};
    max_bits_ = simple8b::kMinDataBits;
    last_valid_ext_ = 0;
    possible_ = {true, true, true, true};
    pending_.clear();
  }

  bool RlePossible() const { return pending_.empty() || rle_count_ != 0; }
  // Whether Reset() followed by appending the pending values again, in order, surely comes back
  // to this very state: no run is pending, and the first pending value is not 0 (a new builder's
  // "last value" is 0, so a 0 would start a run there; answering no then is merely cautious). The
  // other choices, the widths and which extensions remain possible, depend only on the pending
  // values: every prefix of values that fit one word fits too.
  bool RestartKeepsState() const {
    return rle_count_ == 0 && !pending_.empty() && pending_.front().val != T{0};
  }
  bool Empty() const { return pending_.empty() && rle_count_ == 0; }

  // Append's steady state when every value takes a word of its own (full-precision doubles):
  // one value pending, written in a base word, and `v` fits neither beside it (in any layout
  // still possible) nor repeats it, and fits a base word alone. Then the pending value's word
  // goes to *word and `v` becomes the only pending value, the state Append reaches — without
  // its general bookkeeping. Returns false, changing nothing, in every other case.
  bool AppendReplacingSingle(uint64_t v, uint64_t* word) {
    using namespace simple8b;
    static_assert(std::is_same_v<T, uint64_t>);
    if (rle_count_ != 0 || pending_.size() != 1 || last_valid_ext_ != kBase) return false;
    Pending& p = pending_.front();
    if (!p.val.has_value() || *p.val == v || p.bits[kBase] > kDataBits[kBase]) return false;
    const std::optional<Pending> m = Measure(v);
    if (!m || m->bits[kBase] > kDataBits[kBase]) return false;
    for (int i = 0; i < 4; ++i) {
      const int width = std::max(max_bits_[i], m->bits[i]) + kTrailingZeroBits[i];
      if (possible_[i] && 2 * width <= kDataBits[i]) return false;  // the two share a word
    }
    // EncodeLargestWord(kBase) of one value: the one-slot selector, the value from bit 4.
    *word = kSelectorForCount[kBase][1] | (*p.val << 4);
    // Field by field: a whole-struct copy would load what Measure stored in pieces.
    p.val = v;
    p.bits = m->bits;
    p.zeros = m->zeros;
    max_bits_ = kMinDataBits;
    Track(p);
    possible_.fill(true);
    return true;
  }

  // Visits the values not yet written, oldest first, as runs: f(const std::optional<T>&, count).
  // A pending RLE run comes first as one call.
  template <class F>
  void ForEachPending(F&& f) const {
    if (rle_count_ > 0) f(last_in_prev_word_, static_cast<uint64_t>(rle_count_));
    for (const auto& p : pending_) f(p.val, uint64_t{1});
  }
  // The same, newest first.
  template <class F>
  void ForEachPendingReverse(F&& f) const {
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) f(it->val, uint64_t{1});
    if (rle_count_ > 0) f(last_in_prev_word_, static_cast<uint64_t>(rle_count_));
  }

 private:
  struct Pending {
    std::optional<T> val;
    std::array<uint8_t, 4> bits{};
    std::array<uint8_t, 4> zeros{};
  };

  void ContinueRle() {
    ++rle_count_;
    last_valid_ext_ = 0;
    possible_.fill(true);
  }

  static std::optional<Pending> Measure(T v) {
    using namespace simple8b;
    if (v == std::numeric_limits<T>::max()) return std::nullopt;
    const uint8_t tz = TrailingZeros(v);
    const uint8_t width = BitsNeeded(v);
    const uint8_t tz7 = std::min(tz, kTrailingZerosMax[kSeven]);
    uint8_t m7 = width - tz7;
    const uint8_t tz8s = std::min(tz, kTrailingZerosMax[kEightSmall]) / 4 * 4;
    uint8_t m8s = width - tz8s;
    const uint8_t tz8l = std::min(tz, kTrailingZerosMax[kEightLarge]) / 4 * 4;
    uint8_t m8l = width - tz8l;
    // A count field of all ones needs a padding bit so that the slot cannot read as a skip.
    if (tz == kTrailingZerosMax[kSeven]) {
      m7 = BitsNeeded(static_cast<T>(v >> tz));
    } else if (tz == kTrailingZerosMax[kEightSmall]) {
      m8s = BitsNeeded(static_cast<T>(v >> tz));
    }
    if constexpr (std::is_same_v<T, uint128>) {
      if (tz == kTrailingZerosMax[kEightLarge]) m8l = BitsNeeded(static_cast<T>(v >> tz));
    }
    if (width > kDataBits[kBase] && m7 + kTrailingZeroBits[kSeven] > kDataBits[kSeven] &&
        m8s + kTrailingZeroBits[kEightSmall] > kDataBits[kEightSmall] &&
        m8l + kTrailingZeroBits[kEightLarge] > kDataBits[kEightLarge]) {
      return std::nullopt;
    }
    return Pending{v, Pack(width, m7, m8s, m8l), Pack(0, tz7, tz8s, tz8l)};
  }
  // Four bytes stored as one word: a later load of the array (a copy of the Pending) then reads
  // what one store wrote rather than stalling on four.
  static std::array<uint8_t, 4> Pack(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    const uint32_t word = a | (uint32_t{b} << 8) | (uint32_t{c} << 16) | (uint32_t{d} << 24);
    std::array<uint8_t, 4> out;
    std::memcpy(out.data(), &word, 4);
    return out;
  }

  template <class W>
  bool AppendValue(T v, bool try_rle, W& write) {
    auto p = Measure(v);
    if (!p) return false;
    if (Fits(*p)) {
      pending_.push_back(*p);
      Track(*p);
      return true;
    }
    const Pending last = pending_.back();
    do {
      write(EncodeLargestWord(last_valid_ext_));
    } while (!Fits(*p));
    if (try_rle && pending_.empty() && last.val == v) {
      rle_count_ = 1;
      last_in_prev_word_ = last.val;
      last_valid_ext_ = 0;
      possible_.fill(true);
    } else {
      pending_.push_back(*p);
      Track(*p);
    }
    return true;
  }

  template <class W>
  void AppendSkip(bool try_rle, W& write) {
    if (!pending_.empty()) {
      const bool last_is_skip = !pending_.back().val.has_value();
      if (!Fits(Pending{std::nullopt, simple8b::kMinDataBits, {}})) {
        write(EncodeLargestWord(last_valid_ext_));
        last_valid_ext_ = simple8b::kBase;
      }
      if (pending_.empty() && last_is_skip && try_rle) {
        rle_count_ = 1;
        last_in_prev_word_ = std::nullopt;
        return;
      }
    }
    pending_.push_back(Pending{std::nullopt, {}, {}});
  }

  template <class W>
  void TerminateRle(W& write) {
    using namespace simple8b;
    uint64_t words = rle_count_ / kRleMultiplier;
    auto emit = [&](uint64_t count) {
      rle_count_ -= kRleMultiplier * count;
      write(kRleSelector | ((count - 1) << 4));
    };
    if (words >= 1) {
      while (words > kMaxRleCount) {
        emit(kMaxRleCount);
        words -= kMaxRleCount;
      }
      emit(words);
    }
    while (rle_count_ > 0) {
      if (!last_in_prev_word_.has_value()) {
        AppendSkip(false, write);
      } else {
        AppendValue(*last_in_prev_word_, false, write);
      }
      --rle_count_;
    }
    last_in_prev_word_ = T{0};
    if (pending_.empty()) {
      last_valid_ext_ = 0;
      possible_.fill(true);
    }
  }

  bool Fits(const Pending& p) {
    for (int i = 0; i < 4; ++i) {
      if (possible_[i] && FitsWith(p, i)) return true;
    }
    return false;
  }

  bool FitsWith(const Pending& p, int ext) {
    using namespace simple8b;
    const uint64_t needed =
        static_cast<uint64_t>(std::max(max_bits_[ext], p.bits[ext]) + kTrailingZeroBits[ext]) *
        (pending_.size() + 1);
    if (kDataBits[ext] < needed) {
      possible_[ext] = false;
      return false;
    }
    last_valid_ext_ = static_cast<uint8_t>(ext);
    return true;
  }

  void Track(const Pending& p) {
    for (int i = 0; i < 4; ++i) max_bits_[i] = std::max(max_bits_[i], p.bits[i]);
  }

  uint64_t EncodeLargestWord(int ext) {
    using namespace simple8b;
    // The selector with the most slots that the pending values fill completely.
    const int sel = kSelectorForCount[ext][std::min<size_t>(pending_.size(), 60)];
    const int count = kValuesPerWord[ext][sel];
    const int bits = kBitsPerValue[ext][sel];
    const int zbits = kTrailingZeroBits[ext];
    const uint64_t base = ext == kBase ? sel : (ext == kSeven ? 7 : 8);
    const int start = (base == 7 || base == 8) ? 8 : 4;
    const uint64_t mask = (uint64_t{1} << (bits + zbits)) - 1;
    uint64_t word = base;
    if (ext != kBase) word |= static_cast<uint64_t>(sel) << 4;
    for (int i = 0; i < count; ++i) {
      const Pending& p = pending_[i];
      uint64_t slot;
      if (!p.val.has_value()) {
        slot = mask;
      } else if (ext == kBase) {
        slot = static_cast<uint64_t>(*p.val);
      } else {
        const int shift = p.zeros[ext];
        const int stored = ext == kSeven ? shift : shift / 4;
        slot = static_cast<uint64_t>(stored) | static_cast<uint64_t>((*p.val >> shift) << zbits);
      }
      word |= slot << (start + (bits + zbits) * i);
    }
    pending_.erase(pending_.begin(), pending_.begin() + count);
    max_bits_ = kMinDataBits;
    for (const auto& p : pending_) Track(p);
    possible_.fill(true);
    return word;
  }

 public:
  // Heap bytes held (the values not yet in a word).
  size_t HeapMemory() const { return pending_.capacity() * sizeof(Pending); }

 private:
  uint64_t rle_count_ = 0;
  std::optional<T> last_in_prev_word_{T{0}};
  std::array<uint8_t, 4> max_bits_ = simple8b::kMinDataBits;
  uint8_t last_valid_ext_ = 0;
  std::array<bool, 4> possible_ = {true, true, true, true};
  std::vector<Pending> pending_;
};

}  // namespace hourglass::bsoncolumn
