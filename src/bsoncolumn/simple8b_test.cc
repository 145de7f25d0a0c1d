#include "bsoncolumn/simple8b.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace hourglass::bsoncolumn {
namespace {

using Cell = std::optional<uint128>;

template <typename T>
std::vector<uint64_t> Encode(const std::vector<std::optional<T>>& values) {
  std::vector<uint64_t> words;
  auto write = [&](uint64_t w) { words.push_back(w); };
  Simple8bBuilder<T> b;
  for (const auto& v : values) {
    if (v) {
      EXPECT_TRUE(b.Append(*v, write));
    } else {
      b.Skip(write);
    }
  }
  b.Flush(write);
  return words;
}

// Decodes words the way a column does: RLE repeats the last slot, which starts as 0.
std::vector<Cell> Decode(const std::vector<uint64_t>& words, bool is128) {
  std::vector<Cell> out;
  Cell last = uint128{0};
  Simple8bSlot<uint128> slots[60];
  for (uint64_t w : words) {
    int rle = 0;
    auto n = DecodeSimple8bWord(w, is128, slots, &rle);
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    if (!n.ok()) return out;
    if (n.value() == 0) {
      for (int i = 0; i < rle; ++i) out.push_back(last);
      continue;
    }
    for (int i = 0; i < n.value(); ++i) {
      last = slots[i].skip ? Cell() : Cell(slots[i].value);
      out.push_back(last);
    }
  }
  return out;
}

template <typename T>
void ExpectRoundTrip(const std::vector<std::optional<T>>& values) {
  auto words = Encode(values);
  auto decoded = Decode(words, std::is_same_v<T, uint128>);
  ASSERT_EQ(decoded.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(decoded[i].has_value(), values[i].has_value()) << i;
    if (values[i]) {
      ASSERT_TRUE(*decoded[i] == static_cast<uint128>(*values[i])) << i;
    }
  }
}

TEST(Simple8bTest, SingleSmallValueUsesSelector14) {
  // One value 2 (delta +1 zig-zagged) flushes alone: selector 14, one 60-bit slot.
  EXPECT_EQ(Encode<uint64_t>({2}), std::vector<uint64_t>{0x2E});
}

TEST(Simple8bTest, SixtyOnesFillSelector2) {
  // 1 needs two bits (1 + 1 = 2), so 30 per word with selector 2.
  std::vector<std::optional<uint64_t>> v(30, uint64_t{1});
  auto words = Encode(v);
  ASSERT_EQ(words.size(), 1u);
  EXPECT_EQ(words[0] & 0xF, 2u);
  ExpectRoundTrip(v);
}

TEST(Simple8bTest, ZerosBecomeRle) {
  // Zeros at the start repeat the implicit previous value 0: 240 of them are two RLE blocks
  // in one word (count nibble 1).
  std::vector<std::optional<uint64_t>> v(240, uint64_t{0});
  EXPECT_EQ(Encode(v), std::vector<uint64_t>{0x1F});
  ExpectRoundTrip(v);
}

TEST(Simple8bTest, LongRunSplitsIntoMaxRleWords) {
  std::vector<std::optional<uint64_t>> v(120 * 16 * 2 + 120 * 3 + 7, uint64_t{0});
  auto words = Encode(v);
  ASSERT_GE(words.size(), 3u);
  EXPECT_EQ(words[0], 0xFFu);
  EXPECT_EQ(words[1], 0xFFu);
  EXPECT_EQ(words[2], 0x2Fu);
  ExpectRoundTrip(v);
}

TEST(Simple8bTest, SkipsRoundTripAndRle) {
  std::vector<std::optional<uint64_t>> v;
  v.push_back(5);
  for (int i = 0; i < 1000; ++i) v.push_back(std::nullopt);
  v.push_back(7);
  ExpectRoundTrip(v);
}

TEST(Simple8bTest, ExtendedSelectorsForTrailingZeros) {
  // Large values with many trailing zeros fit only with the extended selectors.
  std::vector<std::optional<uint64_t>> v = {uint64_t{1} << 62, uint64_t{3} << 58,
                                            uint64_t{0xFF} << 50, uint64_t{1} << 61};
  auto words = Encode(v);
  bool extended = false;
  for (auto w : words) extended |= ((w & 0xF) == 7 || (w & 0xF) == 8) && ((w >> 4) & 0xF) != 0;
  EXPECT_TRUE(extended);
  ExpectRoundTrip(v);
}

TEST(Simple8bTest, UnencodableValuesAreRefused) {
  Simple8bBuilder<uint64_t> b;
  auto write = [](uint64_t) {};
  EXPECT_FALSE(b.Append(~uint64_t{0}, write));
  EXPECT_FALSE(b.Append((uint64_t{1} << 61) + 1, write));
  EXPECT_TRUE(b.Append((uint64_t{1} << 60) - 2, write));
}

TEST(Simple8bTest, Wide128BitValuesUseSelector8Large) {
  std::vector<std::optional<uint128>> v = {static_cast<uint128>(0x7FF) << 100,
                                           static_cast<uint128>(0x13) << 112, uint128{9}};
  ExpectRoundTrip(v);
}

TEST(Simple8bTest, InvalidWordsAreRejected) {
  Simple8bSlot<uint128> slots[60];
  int rle = 0;
  EXPECT_FALSE(DecodeSimple8bWord(0, false, slots, &rle).ok());
  EXPECT_FALSE(DecodeSimple8bWord(0xA7, false, slots, &rle).ok());  // selector 7, ext 10
  EXPECT_FALSE(DecodeSimple8bWord(0xE8, false, slots, &rle).ok());  // selector 8, ext 14
  // Selector 8 ext 8 (5-bit nibble counts): count 31 nibbles << 124 cannot fit 64 bits.
  uint64_t w = 8 | (8 << 4) | (uint64_t{0x1F | (1 << 5)} << 8);
  EXPECT_FALSE(DecodeSimple8bWord(w, false, slots, &rle).ok());
  EXPECT_TRUE(DecodeSimple8bWord(w, true, slots, &rle).ok());
}

template <typename T>
T RandomValue(std::mt19937_64& rng) {
  const int kind = rng() % 6;
  uint64_t r = rng();
  switch (kind) {
    case 0:
      return T{r % 4};
    case 1:
      return T{r % 1000};
    case 2:
      return static_cast<T>(r >> (rng() % 64));
    case 3:
      return static_cast<T>((r % 255) << (rng() % 56));
    case 4:
      if constexpr (std::is_same_v<T, uint128>) {
        return static_cast<T>(r % 4096) << (rng() % 116);
      }
      return T{r & 0xFF};
    default:
      return T{0};
  }
}

template <typename T>
bool Encodable(T value) {
  Simple8bBuilder<T> probe;
  return probe.Append(value, [](uint64_t) {});
}

template <typename T>
void RandomRoundTrips(uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int iter = 0; iter < 300; ++iter) {
    std::vector<std::optional<T>> v;
    const int n = rng() % 600;
    while (static_cast<int>(v.size()) < n) {
      const int what = rng() % 10;
      if (what == 0) {
        const int run = rng() % 400;
        const bool skip = rng() % 2;
        const T value = RandomValue<T>(rng);
        if (!skip && !Encodable(value)) continue;
        for (int i = 0; i < run; ++i) v.push_back(skip ? std::optional<T>() : value);
      } else if (what == 1) {
        v.push_back(std::nullopt);
      } else {
        T value = RandomValue<T>(rng);
        if (!Encodable(value)) continue;
        v.push_back(value);
      }
    }
    ExpectRoundTrip(v);
  }
}

TEST(Simple8bTest, RandomRoundTrip64) { RandomRoundTrips<uint64_t>(1); }
TEST(Simple8bTest, RandomRoundTrip128) { RandomRoundTrips<uint128>(2); }

}  // namespace
}  // namespace hourglass::bsoncolumn
