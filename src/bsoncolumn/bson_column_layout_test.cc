// The encoder's layout decisions on inputs from MongoDB's public bsoncolumn tests: for each input,
// the expected column is spelled out as literals, control bytes and the Simple-8b words of the
// deltas (encoded with Simple8bBuilder, which simple8b_test.cc checks on its own). These are the
// facts MongoDB's tests assert (which scale, where a block ends, where a literal goes).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "bsoncolumn/bson_column_builder.h"
#include "bsoncolumn/bson_column_decoder.h"
#include "bsoncolumn/bson_column_test_util.h"
#include "bsoncolumn/bson_column_values.h"
#include "bsoncolumn/simple8b.h"

namespace hourglass::bsoncolumn {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;
using testutil::ToHex;

using Vals = std::vector<std::optional<uint64_t>>;
constexpr double kMissing = std::numeric_limits<double>::signaling_NaN();

// A cell list where kMissing (compared by bits) marks a skip.
bool IsMissing(double d) { return std::memcmp(&d, &kMissing, 8) == 0; }

struct Expected {
  std::string bytes;
  Expected& Literal(const BsonObj& one_field_doc) {
    const bson::BsonElement e = one_field_doc.FirstElement();
    bytes.push_back(static_cast<char>(e.type()));
    bytes.push_back('\0');
    bytes.append(e.value(), e.ValueSize());
    return *this;
  }
  Expected& LiteralDouble(double d) {
    BsonBuilder b;
    b.AppendDouble("", d);
    return Literal(b.Obj());
  }
  Expected& Interleaved(uint8_t start, const BsonObj& reference) {
    bytes.push_back(static_cast<char>(start));
    bytes.append(reference.bytes());
    return *this;
  }
  Expected& Control(uint8_t c) {
    bytes.push_back(static_cast<char>(c));
    return *this;
  }
  Expected& Blocks(const Vals& vals, size_t words) {
    std::vector<uint64_t> out;
    auto w = [&](uint64_t word) { out.push_back(word); };
    Simple8bBuilder<uint64_t> s8b;
    for (const auto& v : vals) {
      if (v) {
        EXPECT_TRUE(s8b.Append(*v, w));
      } else {
        s8b.Skip(w);
      }
    }
    s8b.Flush(w);
    EXPECT_EQ(out.size(), words);
    for (uint64_t word : out) bytes.append(testutil::Word(word));
    return *this;
  }
  // One RLE word: `count` (a multiple of 120) repeats of the stream's last Simple-8b value.
  Expected& Rle(int count) {
    bytes.append(testutil::Word(15 | (static_cast<uint64_t>(count / 120 - 1) << 4)));
    return *this;
  }
  Expected& Blocks128(const std::vector<std::optional<uint128>>& vals, size_t words) {
    std::vector<uint64_t> out;
    auto w = [&](uint64_t word) { out.push_back(word); };
    Simple8bBuilder<uint128> s8b;
    for (const auto& v : vals) {
      if (v) {
        EXPECT_TRUE(s8b.Append(*v, w));
      } else {
        s8b.Skip(w);
      }
    }
    s8b.Flush(w);
    EXPECT_EQ(out.size(), words);
    for (uint64_t word : out) bytes.append(testutil::Word(word));
    return *this;
  }
  Expected& End() {
    bytes.push_back('\0');
    return *this;
  }
};

uint64_t DeltaAtScale(double v, double prev, int scale) {
  return ZigZag64(WrapSub(*EncodeDouble(v, scale), *EncodeDouble(prev, scale)));
}

// Deltas of cells[from, to) at `scale` (5 = memory), starting from `prev`.
Vals DoubleDeltas(const std::vector<double>& cells, size_t from, size_t to, double prev,
                  int scale) {
  Vals out;
  for (size_t i = from; i < to; ++i) {
    if (IsMissing(cells[i])) {
      out.push_back(std::nullopt);
      continue;
    }
    out.push_back(DeltaAtScale(cells[i], prev, scale));
    prev = cells[i];
  }
  return out;
}

std::string EncodeDoubles(const std::vector<double>& cells) {
  BsonColumnBuilder b;
  for (double d : cells) {
    if (IsMissing(d)) {
      b.Skip();
      continue;
    }
    BsonBuilder doc;
    doc.AppendDouble("", d);
    EXPECT_TRUE(b.Append(doc.Obj().FirstElement()).ok());
  }
  const std::string out = b.Finish();
  // And the column decodes back to the cells, bit for bit.
  auto decoded = DecodeBsonColumn(out);
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  if (decoded.ok()) {
    EXPECT_EQ(decoded.value().size(), cells.size());
    for (size_t i = 0; i < cells.size() && i < decoded.value().size(); ++i) {
      if (IsMissing(cells[i])) {
        EXPECT_TRUE(decoded.value()[i].missing()) << i;
      } else {
        const double got = decoded.value()[i].element().Double();
        EXPECT_EQ(std::memcmp(&got, &cells[i], 8), 0) << i;
      }
    }
  }
  return out;
}

void ExpectLayout(const std::vector<double>& cells, const Expected& expected) {
  EXPECT_EQ(ToHex(EncodeDoubles(cells)), ToHex(expected.bytes));
}

constexpr int kScale1 = 0, kScale10 = 1, kScale100 = 2, kScale1e4 = 3, kScale1e8 = 4, kMemory = 5;

TEST(BsonColumnLayoutTest, BasicDouble) {
  std::vector<double> c = {1.0, 2.0};
  ExpectLayout(c, Expected()
                      .LiteralDouble(1.0)
                      .Control(0x90)
                      .Blocks(DoubleDeltas(c, 1, 2, 1.0, kScale1), 1)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleIdenticalDeltas) {
  std::vector<double> c;
  for (int i = 0; i < 10; ++i) c.push_back(40.0 * i);
  ExpectLayout(c, Expected()
                      .LiteralDouble(0.0)
                      .Control(0x91)
                      .Blocks(DoubleDeltas(c, 1, c.size(), 0.0, kScale1), 2)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleOverflowEndsWithSkip) {
  std::vector<double> c = {41.0, kMissing, kMissing, 77.0,     51.0,
                           53.0, kMissing, 83.0,     kMissing, kMissing};
  ExpectLayout(c, Expected()
                      .LiteralDouble(41.0)
                      .Control(0x91)
                      .Blocks(DoubleDeltas(c, 1, c.size(), 41.0, kScale1), 2)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleIncreaseScaleFromLiteral) {
  std::vector<double> c = {1.0, 1.1};
  ExpectLayout(c, Expected()
                      .LiteralDouble(1.0)
                      .Control(0xA0)
                      .Blocks(DoubleDeltas(c, 1, 2, 1.0, kScale10), 1)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleLiteralAndScaleAfterSkip) {
  std::vector<double> c = {kMissing, 1.0, 1.1};
  ExpectLayout(c, Expected()
                      .Control(0x80)
                      .Blocks({std::nullopt}, 1)
                      .LiteralDouble(1.0)
                      .Control(0xA0)
                      .Blocks(DoubleDeltas(c, 2, 3, 1.0, kScale10), 1)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleIncreaseScaleFromLiteralAfterSkip) {
  std::vector<double> c = {1.0, kMissing, kMissing, 1.1};
  ExpectLayout(c, Expected()
                      .LiteralDouble(1.0)
                      .Control(0xA0)
                      .Blocks(DoubleDeltas(c, 1, 4, 1.0, kScale10), 1)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleIncreaseScaleFromDeltaWithRescale) {
  std::vector<double> c = {1.0, 2.0, 2.1, 2.2};
  ExpectLayout(c, Expected()
                      .LiteralDouble(1.0)
                      .Control(0xA0)
                      .Blocks(DoubleDeltas(c, 1, 4, 1.0, kScale10), 1)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleIncreaseScaleFromDeltaNoRescale) {
  std::vector<double> c = {1.1, 2.1, 2.2, 2.3, 3.12345678};
  ExpectLayout(c, Expected()
                      .LiteralDouble(1.1)
                      .Control(0xA0)
                      .Blocks(DoubleDeltas(c, 1, 4, 1.1, kScale10), 1)
                      .Control(0xD0)
                      .Blocks(DoubleDeltas(c, 4, 5, 2.3, kScale1e8), 1)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleIncreaseScaleNotPossible) {
  std::vector<double> c = {-153764908544737.4, -85827904635132.83};
  ExpectLayout(c, Expected()
                      .LiteralDouble(c[0])
                      .Control(0x80)
                      .Blocks(DoubleDeltas(c, 1, 2, c[0], kMemory), 1)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleRescaleFirstRescaledIsSkip) {
  std::vector<double> c(9, 0.0);
  c.push_back(kMissing);
  c.push_back(-0.0001);
  c.push_back(kMissing);
  c.push_back(-0.0001);
  for (int i = 0; i < 18; ++i) c.push_back(0.0);
  c.push_back(kMissing);
  c.push_back(std::numeric_limits<double>::infinity());
  c.push_back(std::numeric_limits<double>::infinity());
  ASSERT_EQ(c.size(), 34u);
  ExpectLayout(c, Expected()
                      .LiteralDouble(0.0)
                      .Control(0xC0)
                      .Blocks(DoubleDeltas(c, 1, 31, 0.0, kScale1e4), 1)
                      .Control(0x80)
                      .Blocks(DoubleDeltas(c, 31, 34, c[30], kMemory), 1)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleScaleDownWithMultipleBlocksPending) {
  std::vector<double> c = {-153764908544737.4, -85827904635132.83};
  for (int i = 0; i < 150; ++i) c.push_back(kMissing);
  ExpectLayout(c, Expected()
                      .LiteralDouble(c[0])
                      .Control(0x80)
                      .Blocks(DoubleDeltas(c, 1, 2, c[0], kMemory), 1)
                      .Control(0xB2)
                      .Blocks(DoubleDeltas(c, 2, c.size(), c[1], kScale100), 3)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleScaleDownWithRlePending) {
  std::vector<double> c = {std::numeric_limits<double>::denorm_min(), kMissing, 0.0};
  for (int i = 0; i < 148; ++i) c.push_back(kMissing);
  ExpectLayout(c, Expected()
                      .LiteralDouble(c[0])
                      .Control(0x80)
                      .Blocks(DoubleDeltas(c, 1, 31, c[0], kMemory), 1)
                      .Control(0x90)
                      .Rle(120)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleNoScaleDownAtSkipWithNonZeroRlePending) {
  const double base = 32.9375, delta = 0.09375;
  std::vector<double> c = {
      32.8125,          base,     base + delta, base + delta * 2, base + delta * 3,
      base + delta * 4, kMissing, 33.34375};
  ExpectLayout(c, Expected()
                      .LiteralDouble(c[0])
                      .Control(0xD3)
                      .Blocks(DoubleDeltas(c, 1, c.size(), c[0], kScale1e8), 4)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleNoScaleDownAtSkipWithLessPrecisionLast) {
  const double base = 42.625, delta = 0.03125;
  std::vector<double> c = {base,
                           base + delta,
                           base + delta * 2,
                           base + delta * 3,
                           base + delta * 4,
                           base + delta * 5,
                           kMissing,
                           42.78125};
  ExpectLayout(c, Expected()
                      .LiteralDouble(c[0])
                      .Control(0xD3)
                      .Blocks(DoubleDeltas(c, 1, c.size(), c[0], kScale1e8), 4)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleIncreaseScaleWithoutOverflow) {
  std::vector<double> c = {314159264193.46228, 314159265898.77252, 314159265702.07281,
                           314159264022.27118, 314159264047.43854};
  ExpectLayout(c, Expected()
                      .LiteralDouble(c[0])
                      .Control(0xC0)
                      .Blocks(DoubleDeltas(c, 1, 3, c[0], kScale1e4), 1)
                      .Control(0x80)
                      .Blocks(DoubleDeltas(c, 3, 5, c[2], kMemory), 1)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleDecreaseScaleAfterBlock) {
  std::vector<double> c = {1.12345671, 1.12345672, 2, 3};
  ExpectLayout(c, Expected()
                      .LiteralDouble(c[0])
                      .Control(0xD0)
                      .Blocks(DoubleDeltas(c, 1, 3, c[0], kScale1e8), 1)
                      .Control(0x90)
                      .Blocks(DoubleDeltas(c, 3, 4, c[2], kScale1), 1)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleDecreaseScaleAfterBlockContinueAppend) {
  std::vector<double> c = {94.8, 107.9, 111.9, 113.4, 89.0, 126.7, 119.0, 105.0, 120.0};
  ExpectLayout(c, Expected()
                      .LiteralDouble(c[0])
                      .Control(0xA0)
                      .Blocks(DoubleDeltas(c, 1, 7, c[0], kScale10), 1)
                      .Control(0x90)
                      .Blocks(DoubleDeltas(c, 7, 9, c[6], kScale1), 1)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleDecreaseScaleAfterBlockUsingSkip) {
  std::vector<double> c = {1.12345671, 2, kMissing, kMissing, 3};
  ExpectLayout(c, Expected()
                      .LiteralDouble(c[0])
                      .Control(0xD0)
                      .Blocks(DoubleDeltas(c, 1, 3, c[0], kScale1e8), 1)
                      .Control(0x90)
                      .Blocks(DoubleDeltas(c, 3, 5, c[1], kScale1), 1)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleDecreaseScaleAfterBlockThenScaleBackUp) {
  std::vector<double> c = {1.12345671, 1.12345672, 2, 3, 1.12345672};
  ExpectLayout(c, Expected()
                      .LiteralDouble(c[0])
                      .Control(0xD1)
                      .Blocks(DoubleDeltas(c, 1, 5, c[0], kScale1e8), 2)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleRescalingPreserveRle) {
  const uint64_t large_delta = 0x0474747474747474;
  uint64_t bits = 0xbea6a6a6a6e78efc;
  auto as_double = [](uint64_t b) {
    double d;
    std::memcpy(&d, &b, 8);
    return d;
  };
  std::vector<double> c = {as_double(bits), kMissing};
  for (int i = 0; i < 3; ++i) c.push_back(as_double(bits += large_delta));
  ASSERT_TRUE(EncodeDouble(c[2], 0).has_value());
  ExpectLayout(c, Expected()
                      .LiteralDouble(c[0])
                      .Control(0x83)
                      .Blocks(DoubleDeltas(c, 1, c.size(), c[0], kMemory), 4)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleUnscalable) {
  const double eps = std::numeric_limits<double>::epsilon();
  std::vector<double> c = {1.0, 1.0 + eps, 1.0 + 2 * eps};
  ExpectLayout(c, Expected()
                      .LiteralDouble(1.0)
                      .Control(0x80)
                      .Blocks(DoubleDeltas(c, 1, 3, 1.0, kMemory), 1)
                      .End());
}

TEST(BsonColumnLayoutTest, DoubleMultiplePendingAfterWritingBlock) {
  std::vector<double> c = {116.0, 95.0, 80.0, 87.0,  113.0, 90.0,
                           113.0, 93.0, 99.0, 123.0, 89.0,  92.0};
  ExpectLayout(c, Expected()
                      .LiteralDouble(c[0])
                      .Control(0x91)
                      .Blocks(DoubleDeltas(c, 1, c.size(), c[0], kScale1), 2)
                      .End());
}

TEST(BsonColumnLayoutTest, OverBlockCount) {
  // Twenty int64s alternating +-0xFFFFFFFFFFFF: 16 words fill one control byte (0x8F), the
  // remaining deltas take 3 words under a second (0x82).
  BsonColumnBuilder b;
  std::vector<int64_t> v;
  int64_t x = 0xFFFFFFFFFFFF;
  for (int i = 0; i < 20; ++i, x = -x) v.push_back(x);
  Expected e;
  BsonBuilder first;
  first.AppendInt64("", v[0]);
  e.Literal(first.Obj());
  Vals d1, d2;
  for (int i = 1; i < 20; ++i) (i < 17 ? d1 : d2).push_back(ZigZag64(WrapSub(v[i], v[i - 1])));
  e.Control(0x8F).Blocks(d1, 16).Control(0x82).Blocks(d2, 3).End();
  for (int64_t i : v) {
    BsonBuilder doc;
    doc.AppendInt64("", i);
    ASSERT_TRUE(b.Append(doc.Obj().FirstElement()).ok());
  }
  EXPECT_EQ(ToHex(b.Finish()), ToHex(e.bytes));
}

TEST(BsonColumnLayoutTest, TypeChangeAfterSimple8b) {
  BsonBuilder i32, i64;
  i32.AppendInt32("", 0);
  i64.AppendInt64("", 0);
  const BsonObj a = i32.Obj(), c = i64.Obj();
  BsonColumnBuilder b;
  ASSERT_TRUE(b.Append(a.FirstElement()).ok());
  ASSERT_TRUE(b.Append(a.FirstElement()).ok());
  ASSERT_TRUE(b.Append(c.FirstElement()).ok());
  Expected e;
  e.Literal(a).Control(0x80).Blocks({0}, 1).Literal(c).End();
  EXPECT_EQ(ToHex(b.Finish()), ToHex(e.bytes));
}

BsonObj Doc(std::initializer_list<std::pair<const char*, int>> fields) {
  BsonBuilder b;
  for (const auto& [name, v] : fields) b.AppendInt32(name, v);
  return b.Obj();
}

BsonObj Arr(std::initializer_list<int> values) {
  BsonBuilder b;
  int i = 0;
  for (int v : values) b.AppendInt32(std::to_string(i++), v);
  return b.Obj();
}

uint64_t D32(int a, int b) { return ZigZag64(static_cast<int64_t>(a) - b); }

// Encodes cells (nullopt = skip) given as one-field documents and checks the round trip.
std::string EncodeCells(const std::vector<std::optional<BsonObj>>& cells) {
  BsonColumnBuilder b;
  for (const auto& c : cells) {
    if (c) {
      EXPECT_TRUE(b.Append(c->FirstElement()).ok());
    } else {
      b.Skip();
    }
  }
  const std::string out = b.Finish();
  auto decoded = DecodeBsonColumn(out);
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  if (decoded.ok()) {
    EXPECT_EQ(decoded.value().size(), cells.size());
    for (size_t i = 0; i < cells.size() && i < decoded.value().size(); ++i) {
      if (!cells[i]) {
        EXPECT_TRUE(decoded.value()[i].missing()) << i;
        continue;
      }
      const bson::BsonElement want = cells[i]->FirstElement();
      EXPECT_EQ(decoded.value()[i].bytes().substr(2), std::string(want.value(), want.ValueSize()))
          << i;
    }
  }
  return out;
}

std::optional<BsonObj> ObjCell(const BsonObj& o) {
  BsonBuilder b;
  b.AppendObject("", o);
  return b.Obj();
}
std::optional<BsonObj> ArrCell(const BsonObj& a) {
  BsonBuilder b;
  b.AppendArray("", a);
  return b.Obj();
}

TEST(BsonColumnLayoutTest, Interleaved) {
  const BsonObj o0 = Doc({{"x", 1}, {"y", 2}}), o1 = Doc({{"x", 1}, {"y", 3}}),
                o4 = Doc({{"y", 4}});
  const std::vector<std::optional<BsonObj>> cells = {ObjCell(o0),  ObjCell(o1), ObjCell(o1),
                                                     std::nullopt, ObjCell(o4), ObjCell(o1)};
  Expected e;
  e.Interleaved(0xF1, o0)
      .Control(0x80)
      .Blocks({0, D32(1, 1), D32(1, 1), std::nullopt, std::nullopt, D32(1, 1)}, 1)
      .Control(0x80)
      .Blocks({0, D32(3, 2), D32(3, 3), std::nullopt, D32(4, 3), D32(3, 4)}, 1)
      .End()
      .End();
  EXPECT_EQ(ToHex(EncodeCells(cells)), ToHex(e.bytes));
}

TEST(BsonColumnLayoutTest, InterleavedLegacyDecodes) {
  // 0xF0: the same section as above written by an older MongoDB.
  const BsonObj o0 = Doc({{"x", 1}, {"y", 2}}), o1 = Doc({{"x", 1}, {"y", 3}}),
                o4 = Doc({{"y", 4}});
  Expected e;
  e.Interleaved(0xF0, o0)
      .Control(0x80)
      .Blocks({0, D32(1, 1), D32(1, 1), std::nullopt, std::nullopt, D32(1, 1)}, 1)
      .Control(0x80)
      .Blocks({0, D32(3, 2), D32(3, 3), std::nullopt, D32(4, 3), D32(3, 4)}, 1)
      .End()
      .End();
  auto decoded = DecodeBsonColumn(e.bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded.value().size(), 6u);
  EXPECT_EQ(decoded.value()[0].element().Obj().bytes(), o0.bytes());
  EXPECT_EQ(decoded.value()[2].element().Obj().bytes(), o1.bytes());
  EXPECT_TRUE(decoded.value()[3].missing());
  EXPECT_EQ(decoded.value()[4].element().Obj().bytes(), o4.bytes());
}

TEST(BsonColumnLayoutTest, InterleavedArray) {
  BsonBuilder a, b;
  a.AppendArray("x", Arr({1, 2}));
  b.AppendArray("x", Arr({2, 3}));
  const BsonObj o0 = a.Obj(), o1 = b.Obj();
  Expected e;
  e.Interleaved(0xF1, o0)
      .Control(0x80)
      .Blocks({0, D32(2, 1)}, 1)
      .Control(0x80)
      .Blocks({0, D32(3, 2)}, 1)
      .End()
      .End();
  EXPECT_EQ(ToHex(EncodeCells({ObjCell(o0), ObjCell(o1)})), ToHex(e.bytes));
}

TEST(BsonColumnLayoutTest, InterleavedArrayRoot) {
  const BsonObj a0 = Arr({1, 2}), a1 = Arr({2, 3});
  Expected e;
  e.Interleaved(0xF2, a0)
      .Control(0x80)
      .Blocks({0, D32(2, 1)}, 1)
      .Control(0x80)
      .Blocks({0, D32(3, 2)}, 1)
      .End()
      .End();
  EXPECT_EQ(ToHex(EncodeCells({ArrCell(a0), ArrCell(a1)})), ToHex(e.bytes));
}

TEST(BsonColumnLayoutTest, InterleavedArrayRootTypeChange) {
  // The same bytes as an array, then as an object: two sections.
  const BsonObj a0 = Arr({1, 2}), a1 = Arr({2, 3});
  Expected e;
  e.Interleaved(0xF2, a0).Control(0x80).Blocks({0}, 1).Control(0x80).Blocks({0}, 1).End();
  e.Interleaved(0xF1, a1).Control(0x80).Blocks({0}, 1).Control(0x80).Blocks({0}, 1).End();
  e.End();
  EXPECT_EQ(ToHex(EncodeCells({ArrCell(a0), ObjCell(a1)})), ToHex(e.bytes));
}

TEST(BsonColumnLayoutTest, InterleavedAfterNonInterleaved) {
  BsonBuilder i;
  i.AppendInt32("", 1);
  const BsonObj one = i.Obj();
  const BsonObj o1 = Doc({{"x", 1}, {"y", 2}}), o2 = Doc({{"x", 1}, {"y", 3}}),
                o3 = Doc({{"x", 2}, {"y", 4}});
  Expected e;
  e.Literal(one)
      .Interleaved(0xF1, o1)
      .Control(0x80)
      .Blocks({0, D32(1, 1), D32(2, 1)}, 1)
      .Control(0x80)
      .Blocks({0, D32(3, 2), D32(4, 3)}, 1)
      .End()
      .End();
  EXPECT_EQ(ToHex(EncodeCells({one, ObjCell(o1), ObjCell(o2), ObjCell(o3)})), ToHex(e.bytes));
}

TEST(BsonColumnLayoutTest, InterleavedLevels) {
  auto make = [](int x, int y) {
    BsonBuilder b;
    b.AppendObject("root", Doc({{"x", x}})).AppendInt32("y", y);
    return b.Obj();
  };
  const BsonObj o0 = make(1, 2), o1 = make(2, 5), o2 = make(2, 5);
  Expected e;
  e.Interleaved(0xF1, o0)
      .Control(0x80)
      .Blocks({0, D32(2, 1), D32(2, 2)}, 1)
      .Control(0x80)
      .Blocks({0, D32(5, 2), D32(5, 5)}, 1)
      .End()
      .End();
  EXPECT_EQ(ToHex(EncodeCells({ObjCell(o0), ObjCell(o1), ObjCell(o2)})), ToHex(e.bytes));
}

template <class F>
BsonObj One(F&& f) {
  BsonBuilder b;
  f(b);
  return b.Obj();
}

TEST(BsonColumnLayoutTest, DateBasic) {
  const BsonObj d1 = One([](BsonBuilder& b) { b.AppendDate("", 1); });
  const BsonObj d2 = One([](BsonBuilder& b) { b.AppendDate("", 2); });
  // Deltas of deltas: (2-1)-0 = 1, (2-2)-1 = -1.
  Expected e;
  e.Literal(d1).Control(0x80).Blocks({ZigZag64(1), ZigZag64(-1)}, 1).End();
  EXPECT_EQ(ToHex(EncodeCells({d1, d2, d2})), ToHex(e.bytes));
}

TEST(BsonColumnLayoutTest, DateLargeDeltaIsLiteral) {
  const BsonObj d1 = One([](BsonBuilder& b) { b.AppendDate("", 1); });
  const BsonObj d2 =
      One([](BsonBuilder& b) { b.AppendDate("", std::numeric_limits<int64_t>::max()); });
  Expected e;
  e.Literal(d1).Literal(d2).End();
  EXPECT_EQ(ToHex(EncodeCells({d1, d2})), ToHex(e.bytes));
}

TEST(BsonColumnLayoutTest, LargeDeltaOfDeltaIsLiteralAfterSimple8bTimestamp) {
  const BsonObj zero = One([](BsonBuilder& b) { b.AppendTimestamp("", 0); });
  const uint64_t big = std::numeric_limits<int64_t>::max();
  const uint64_t semi = 0x7FFFFFFFFF000000;
  const BsonObj large = One([&](BsonBuilder& b) { b.AppendTimestamp("", big); });
  const BsonObj semi_large = One([&](BsonBuilder& b) { b.AppendTimestamp("", semi); });
  const int64_t dod = WrapSub(WrapSub(static_cast<int64_t>(semi), static_cast<int64_t>(big)), 0);
  Expected e;
  e.Literal(zero)
      .Control(0x80)
      .Blocks({0}, 1)
      .Literal(large)
      .Control(0x80)
      .Blocks({0, ZigZag64(dod)}, 1)
      .End();
  EXPECT_EQ(ToHex(EncodeCells({zero, zero, large, large, semi_large})), ToHex(e.bytes));
}

TEST(BsonColumnLayoutTest, BoolBasic) {
  const BsonObj t = One([](BsonBuilder& b) { b.AppendBool("", true); });
  const BsonObj f = One([](BsonBuilder& b) { b.AppendBool("", false); });
  Expected e;
  e.Literal(t).Control(0x80).Blocks({0, ZigZag64(-1), ZigZag64(1)}, 1).End();
  EXPECT_EQ(ToHex(EncodeCells({t, t, f, t})), ToHex(e.bytes));
}

TEST(BsonColumnLayoutTest, OnlyRepeatTypes) {
  // Null, undefined, regex, DBPointer-less types: a new value is a literal, a repeat a zero.
  const BsonObj i = One([](BsonBuilder& b) { b.AppendInt32("", 0); });
  const BsonObj r1 = One([](BsonBuilder& b) { b.AppendRegex("", "", ""); });
  const BsonObj r2 = One([](BsonBuilder& b) { b.AppendRegex("", "regex", ""); });
  const BsonObj n = One([](BsonBuilder& b) { b.AppendNull(""); });
  Expected e;
  e.Literal(i).Literal(r1).Literal(r2).Control(0x80).Blocks({0}, 1).Literal(n);
  e.Control(0x80).Blocks({0}, 1).End();
  EXPECT_EQ(ToHex(EncodeCells({i, r1, r2, r2, n, n})), ToHex(e.bytes));
}

TEST(BsonColumnLayoutTest, CodeDeltaDiff) {
  const BsonObj c1 = One([](BsonBuilder& b) { b.AppendCode("", "mongo"); });
  const BsonObj c2 = One([](BsonBuilder& b) { b.AppendCode("", "tests"); });
  const uint128 delta = ZigZag128(WrapSub(*EncodeString("tests"), *EncodeString("mongo")));
  Expected e;
  e.Literal(c1).Control(0x80).Blocks128({delta}, 1).End();
  EXPECT_EQ(ToHex(EncodeCells({c1, c2})), ToHex(e.bytes));
}

TEST(BsonColumnLayoutTest, BinDataDeltaCheckSkips) {
  const BsonObj b1 = One([](BsonBuilder& b) { b.AppendBinData("", 0, "1234"); });
  const BsonObj b2 = One([](BsonBuilder& b) { b.AppendBinData("", 0, "1233"); });
  const int128 v1 = *EncodeBinary("1234"), v2 = *EncodeBinary("1233");
  Expected e;
  e.Literal(b1)
      .Control(0x81)
      .Blocks128({ZigZag128(WrapSub(v2, v1)), std::nullopt, ZigZag128(WrapSub(v1, v2))}, 2)
      .End();
  EXPECT_EQ(ToHex(EncodeCells({b1, b2, std::nullopt, b1})), ToHex(e.bytes));
}

TEST(BsonColumnLayoutTest, BinDataLengthOrSubtypeChangeIsLiteral) {
  const BsonObj b1 = One([](BsonBuilder& b) { b.AppendBinData("", 0, "1234"); });
  const BsonObj b2 = One([](BsonBuilder& b) { b.AppendBinData("", 0, "12345"); });
  const BsonObj b3 = One([](BsonBuilder& b) { b.AppendBinData("", 1, "12345"); });
  Expected e;
  e.Literal(b1).Literal(b2).Literal(b3).End();
  EXPECT_EQ(ToHex(EncodeCells({b1, b2, b3})), ToHex(e.bytes));
}

TEST(BsonColumnLayoutTest, ObjectLiteralsAndRepeatsDecode) {
  // Objects stored as literals and repeated with a zero delta: valid though our encoder (like
  // MongoDB's) writes interleaved sections instead.
  const BsonObj o = Doc({{"x", 1}, {"y", 2}});
  Expected e;
  e.Literal(*ObjCell(o)).Control(0x80).Blocks({0}, 1).Literal(*ArrCell(Arr({1, 2}))).End();
  auto decoded = DecodeBsonColumn(e.bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded.value().size(), 3u);
  EXPECT_EQ(decoded.value()[1].element().Obj().bytes(), o.bytes());
  EXPECT_EQ(decoded.value()[2].element().type(), bson::BsonType::kArray);
}

}  // namespace
}  // namespace hourglass::bsoncolumn

namespace hourglass::bsoncolumn {
namespace {

// EncodeDoubleLowestScale settles a double that fails at scale 10^8 without trying the smaller
// scales; it must pick exactly the scale (and integer) that trying every scale in order picks.
TEST(BsonColumnLayoutTest, LowestScaleShortcutAgreesWithTryingEveryScale) {
  auto reference = [](double v, int min_index) -> std::pair<int64_t, int> {
    for (int i = min_index; i < kScaleMemoryAsInteger; ++i) {
      if (auto e = EncodeDouble(v, i)) return {*e, i};
    }
    int64_t bits;
    std::memcpy(&bits, &v, 8);
    return {bits, kScaleMemoryAsInteger};
  };
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uniform(-2e7, 2e7);
  const double pow10[] = {1, 10, 100, 1000, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
  std::vector<double> values = {0.0,
                                -0.0,
                                0.1,
                                0.2,
                                0.3,
                                1e-8,
                                3e-8,
                                1e-9,
                                11258999.06842624,
                                11258999.06842625,
                                -11258999.06842624,
                                1e300,
                                5e-324,
                                std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::quiet_NaN()};
  for (int i = 0; i < 400000; ++i) {
    const double whole = uniform(rng);
    values.push_back(whole);                          // full precision
    const int digits = static_cast<int>(rng() % 10);  // 0-9 decimal digits
    values.push_back(std::round(whole * pow10[digits]) / pow10[digits]);
    values.push_back(std::round(whole / 1e4 * pow10[digits]) / pow10[digits]);  // small values
  }
  int checked = 0;
  for (double v : values) {
    for (int min_index = 0; min_index < kScaleMemoryAsInteger; ++min_index) {
      const auto want = reference(v, min_index);
      const auto got = EncodeDoubleLowestScale(v, min_index);
      ASSERT_EQ(got.second, want.second) << v << " from scale " << min_index;
      ASSERT_EQ(got.first, want.first) << v << " from scale " << min_index;
      ++checked;
    }
  }
  EXPECT_GT(checked, 5000000);
}

// FarFromEveryInteger rejects a double at scale 10^8 without EncodeDouble's division: it must
// never reject one that EncodeDouble accepts (the doubles nearest to r / 10^8 and their neighbours
// a few ulps away, at every magnitude up to the shortcut's 2^50 / 10^8), and it must reject
// nearly every full-precision double, or it saves nothing.
TEST(BsonColumnLayoutTest, FarFromEveryIntegerNeverRejectsAnEncodableDouble) {
  constexpr int k8 = kScaleMemoryAsInteger - 1;
  const double m = kScaleMultiplier[k8];
  std::mt19937_64 rng(11);
  int encodable = 0;
  for (int i = 0; i < 300000; ++i) {
    // Integers r of 1 to 50 bits: r / 10^8 from 1e-8 up to about 1.1e7.
    const int bits = 1 + static_cast<int>(rng() % 50);
    const int64_t r = static_cast<int64_t>(rng() >> (64 - bits)) * (rng() % 2 ? 1 : -1);
    double v = static_cast<double>(r) / m;
    for (int k = 0; k < 3; ++k) v = std::nextafter(v, -INFINITY);
    for (int step = 0; step < 7; ++step, v = std::nextafter(v, INFINITY)) {
      if (!EncodeDouble(v, k8)) continue;
      ++encodable;
      ASSERT_FALSE(internal::FarFromEveryInteger(v * m)) << v;
    }
  }
  EXPECT_GT(encodable, 250000);
  // Measurements at full precision, of the magnitudes sensors report.
  std::uniform_real_distribution<double> uniform(-1000, 1000);
  int rejected = 0;
  for (int i = 0; i < 100000; ++i) {
    const double v = uniform(rng);
    if (internal::FarFromEveryInteger(v * m)) {
      ++rejected;
      ASSERT_FALSE(EncodeDouble(v, k8)) << v;
    }
  }
  EXPECT_GT(rejected, 99000);
}

// EncodeDouble rounds without calling std::llround: it must agree with llround (half away from
// zero) everywhere, the half-way products included.
TEST(BsonColumnLayoutTest, EncodeDoubleRoundsAsLlround) {
  auto reference = [](double v, int scale) -> std::optional<int64_t> {
    const double m = kScaleMultiplier[scale];
    const double scaled = v * m;
    if (!(scaled >= -9007199254740992.0 && scaled <= 9007199254740992.0)) return std::nullopt;
    const int64_t r = std::llround(scaled);
    if (static_cast<double>(r) / m != v ||
        std::signbit(static_cast<double>(r) / m) != std::signbit(v)) {
      return std::nullopt;
    }
    return r;
  };
  std::mt19937_64 rng(11);
  std::vector<double> values = {0.5,
                                -0.5,
                                1.5,
                                -1.5,
                                2.5,
                                -2.5,
                                0.49999999999999994,
                                -0.49999999999999994,
                                4503599627370495.5,
                                -4503599627370495.5,
                                4503599627370497.0,
                                9007199254740992.0,
                                -9007199254740992.0,
                                0.05,
                                0.15,
                                0.25,
                                1.005,
                                123.45,
                                -0.0};
  for (int i = 0; i < 200000; ++i) {
    // Half-way and near-half-way products at every scale.
    const double whole = static_cast<double>(static_cast<int64_t>(rng() % 2000000) - 1000000);
    const int scale = static_cast<int>(rng() % kScaleMemoryAsInteger);
    const double m = kScaleMultiplier[scale];
    values.push_back((whole + 0.5) / m);
    values.push_back(std::nextafter((whole + 0.5) / m, 0.0));
    values.push_back(whole / m);
    double d;
    uint64_t bits = rng();
    std::memcpy(&d, &bits, 8);
    values.push_back(d);
  }
  int encoded = 0;
  for (double v : values) {
    for (int scale = 0; scale < kScaleMemoryAsInteger; ++scale) {
      const auto want = reference(v, scale);
      const auto got = EncodeDouble(v, scale);
      ASSERT_EQ(got.has_value(), want.has_value()) << v << " at scale " << scale;
      if (got) {
        ASSERT_EQ(*got, *want) << v << " at scale " << scale;
        ++encoded;
      }
    }
  }
  EXPECT_GT(encoded, 200000);
}

}  // namespace
}  // namespace hourglass::bsoncolumn
