#include "bsoncolumn/bson_column_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>

#include "bsoncolumn/bson_column_decoder.h"
#include "bsoncolumn/bson_column_test_columns.h"
#include "bsoncolumn/bson_column_test_util.h"
#include "bsoncolumn/column_stream_encoder.h"

namespace hourglass::bsoncolumn {
namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using testutil::Base64;
using testutil::Column;
using testutil::EnvOr;
using testutil::ExpectDecodesTo;
using testutil::Hex;
using testutil::RandomColumn;
using testutil::ToHex;
using testutil::Word;

void ExpectRoundTrip(const Column& col) { ExpectDecodesTo(col.Encode(), col); }

// Byte-exact against columns MongoDB wrote (from its public jstests).
TEST(BsonColumnBuilderTest, MatchesMongoThousandEqualDoubles) {
  Column col;
  for (int i = 0; i < 1000; ++i) col.Double(2.0);
  EXPECT_EQ(ToHex(col.Encode()),
            ToHex(Base64("AQAAAAAAAAAAQJN/AAAAAAAAAAIAAAAAAAAABwAAAAAAAAAOAAAAAAAAAAA=")));
}

TEST(BsonColumnBuilderTest, MatchesMongoTwoRowBuckets) {
  Column t;
  t.Add([](BsonBuilder& b) { b.AppendDate("", 1705438119448); });
  t.Add([](BsonBuilder& b) { b.AppendDate("", 1705438119448); });
  Column dates_from_mongo;
  auto decoded = DecodeBsonColumn(Base64("CQAYhggUjQEAAIAOAAAAAAAAAAA="));
  ASSERT_TRUE(decoded.ok());
  Column same;
  for (const auto& c : decoded.value()) {
    same.Add([&](BsonBuilder& b) { b.AppendElementAs(c.element(), ""); });
  }
  EXPECT_EQ(ToHex(same.Encode()), ToHex(Base64("CQAYhggUjQEAAIAOAAAAAAAAAAA=")));

  Column a;
  a.Double(0.0).Double(1.0);
  EXPECT_EQ(ToHex(a.Encode()), ToHex(Base64("AQAAAAAAAAAAAJAuAAAAAAAAAAA=")));

  Column id;
  bson::ObjectId o1, o2;
  auto raw = Hex("65a6eba7e6d2e848e08c3750");
  std::memcpy(o1.bytes, raw.data(), 12);
  raw = Hex("65a6eba7e6d2e848e08c3751");
  std::memcpy(o2.bytes, raw.data(), 12);
  id.Add([&](BsonBuilder& b) { b.AppendObjectId("", o1); });
  id.Add([&](BsonBuilder& b) { b.AppendObjectId("", o2); });
  EXPECT_EQ(ToHex(id.Encode()), ToHex(Base64("BwBlpuun5tLoSOCMN1CALgAAAAAAAAAA")));

  Column s;
  s.Add([](BsonBuilder& b) { b.AppendString("", "preUpgrade"); });
  EXPECT_EQ(ToHex(s.Encode()), ToHex(Base64("AgALAAAAcHJlVXBncmFkZQAA")));
}

TEST(BsonColumnBuilderTest, Int32DeltasAndSkips) {
  // 1, 2, missing, 2: literal, then deltas +1 (zig-zag 2), skip, 0 in one selector-12 word?
  Column col;
  col.Int32(1).Int32(2).Missing().Int32(2);
  const std::string b = col.Encode();
  EXPECT_EQ(b.substr(0, 6), Hex("10 00 01 00 00 00"));
  EXPECT_EQ(static_cast<uint8_t>(b[6]), 0x80);
  ExpectRoundTrip(col);
}

TEST(BsonColumnBuilderTest, TypeChangeWritesLiteral) {
  Column col;
  col.Int32(1).Int64(1).Double(1.5).Add([](BsonBuilder& b) { b.AppendString("", "x"); });
  const std::string b = col.Encode();
  EXPECT_EQ(ToHex(b), ToHex(Hex("10 00 01 00 00 00") + Hex("12 00 01 00 00 00 00 00 00 00") +
                            Hex("01 00 00 00 00 00 00 00 f8 3f") + Hex("02 00 02 00 00 00 78 00") +
                            Hex("00")));
}

TEST(BsonColumnBuilderTest, DoubleScales) {
  // Values at every scale, and scale changes inside a run.
  Column col;
  for (double d : {1.0, 2.0, 2.5, 2.25, 2.125, 3.1416, 3.14159265, 1e-9, 7.0, 7.5, 8.0})
    col.Double(d);
  ExpectRoundTrip(col);
  Column c2;
  for (int i = 0; i < 200; ++i) c2.Double(i / 100.0);
  ExpectRoundTrip(c2);
  const std::string b = c2.Encode();
  EXPECT_LT(b.size(), 200u);  // hundredths compress to a few bits each
}

TEST(BsonColumnBuilderTest, SpecialDoubles) {
  Column col;
  for (double d :
       {0.0, -0.0, 0.0, std::numeric_limits<double>::quiet_NaN(),
        std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max(),
        std::numeric_limits<double>::lowest(), 9007199254740992.0, 9007199254740993.0,
        -9007199254740992.0, 1e300, 1e-300}) {
    col.Double(d);
  }
  ExpectRoundTrip(col);
}

TEST(BsonColumnBuilderTest, Int64Extremes) {
  Column col;
  for (int64_t v : {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                    int64_t{0}, std::numeric_limits<int64_t>::min(), int64_t{-1},
                    std::numeric_limits<int64_t>::max(), int64_t{1} << 62}) {
    col.Int64(v);
  }
  ExpectRoundTrip(col);
}

TEST(BsonColumnBuilderTest, LongRunsUseRle) {
  Column col;
  for (int i = 0; i < 5000; ++i) col.Int32(7);
  for (int i = 0; i < 3000; ++i) col.Missing();
  for (int i = 0; i < 4000; ++i) col.Int32(7 + i);
  const std::string b = col.Encode();
  EXPECT_LT(b.size(), 400u);
  ExpectRoundTrip(col);
}

TEST(BsonColumnBuilderTest, InterleavedObjects) {
  Column col;
  for (int i = 0; i < 10; ++i) {
    BsonBuilder o;
    o.AppendInt32("a", i);
    if (i % 3 != 1) o.AppendDouble("b", i * 0.5);
    const size_t sub = o.OpenObject("c");
    o.AppendString("d", "s" + std::to_string(i));
    o.Close(sub);
    col.Obj(o.Obj());
  }
  const std::string b = col.Encode();
  EXPECT_EQ(static_cast<uint8_t>(b[0]), kInterleavedStartObject);
  ExpectRoundTrip(col);
}

TEST(BsonColumnBuilderTest, InterleavedArraysAndTypeChanges) {
  Column col;
  for (int i = 0; i < 8; ++i) {
    BsonBuilder a;
    a.AppendInt32("0", i).AppendInt32("1", 2 * i);
    col.Add([&](BsonBuilder& b) { b.AppendArray("", a.Obj()); });
  }
  col.Int32(5).Missing();
  BsonBuilder o;
  o.AppendInt32("x", 1);
  col.Obj(o.Obj()).Obj(o.Obj()).Missing();
  ExpectRoundTrip(col);
  EXPECT_EQ(static_cast<uint8_t>(col.Encode()[0]), kInterleavedStartArray);
}

TEST(BsonColumnBuilderTest, CodeWScopeIsRefused) {
  auto cws = bson::FromJson(R"js({"": {"$code": "f()", "$scope": {"x": 1}}})js");
  ASSERT_TRUE(cws.ok()) << cws.status().ToString();
  ASSERT_EQ(cws.value().FirstElement().type(), BsonType::kCodeWScope);
  BsonColumnBuilder b;
  Status st = b.Append(cws.value().FirstElement());
  EXPECT_EQ(st.code(), ErrorCode::kBadValue);
  BsonBuilder nested;
  nested.AppendObject("", cws.value());
  const BsonObj doc = nested.Obj();
  st = b.Append(doc.FirstElement());
  EXPECT_EQ(st.code(), ErrorCode::kBadValue);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.Finish(), std::string(1, '\0'));
}

TEST(BsonColumnBuilderTest, RootTypeChangeToObjectWithoutScalars) {
  // [1, 2] starts interleaving with an array root; {a: {}} has no scalars and must go to the
  // regular stream as a literal, not become a reference object without streams.
  Column col;
  BsonBuilder a;
  a.AppendInt32("0", 1).AppendInt32("1", 2);
  const BsonObj arr = a.Obj();
  col.Add([&](BsonBuilder& b) { b.AppendArray("", arr); });
  BsonBuilder o;
  const size_t sub = o.OpenObject("a");
  o.Close(sub);
  col.Obj(o.Obj());
  col.Obj(o.Obj());
  ExpectRoundTrip(col);
}

TEST(BsonColumnBuilderTest, FinishLeavesBuilderUsable) {
  BsonColumnBuilder b;
  Column col;
  for (int i = 0; i < 300; ++i) {
    col.Int64(i * i);
    ASSERT_TRUE(b.Append(col.docs.back().FirstElement()).ok());
    if (i % 37 == 0) ExpectDecodesTo(b.Finish(), col);
  }
  EXPECT_EQ(b.Finish(), col.Encode());
}

TEST(BsonColumnBuilderTest, RandomColumnsRoundTrip) {
  std::mt19937_64 rng(EnvOr("HG_BSONCOLUMN_SEED", 42));
  const uint64_t iters = EnvOr("HG_BSONCOLUMN_ITERS", 300);
  for (uint64_t iter = 0; iter < iters; ++iter) {
    SCOPED_TRACE(iter);
    ExpectRoundTrip(RandomColumn(rng));
    if (HasFatalFailure()) return;
  }
}

// A double that completes a Simple-8b word may keep the pending values as they are instead of
// re-appending them (ColumnStreamEncoder's restart shortcut), and a full-precision column takes
// the fast paths built on it: the bytes must be the ones the re-appending writes, for doubles of
// every scale, repeats, zeros and skips, alone and inside objects, finished whole or with
// intermediate binaries along the way.
TEST(BsonColumnBuilderTest, RestartShortcutWritesTheSameBytes) {
  std::mt19937_64 rng(EnvOr("HG_BSONCOLUMN_SEED", 42));
  std::normal_distribution<double> step(0.0, 1.0);
  // The column whole, then built with intermediate binaries at random points (each one and the
  // end joined in order): the fast paths keep state between calls that flushing copies.
  auto encode = [](const Column& col, uint64_t seed) {
    std::string out = col.Encode();
    std::mt19937_64 r(seed);
    BsonColumnBuilder b;
    std::string binary;
    for (const BsonObj& d : col.docs) {
      EXPECT_TRUE(b.Append(d.FirstElement()).ok());
      if (r() % 9 == 0) {
        const BsonColumnBuilder::Diff diff = b.Intermediate();
        if (diff.head) binary[diff.head_offset] = *diff.head;
        binary.resize(diff.offset);
        binary += diff.data;
        out += "|" + binary;
      }
    }
    return out + "|" + b.Finish();
  };
  auto encode_both = [&](const Column& col) {
    const uint64_t seed = rng();
    ColumnStreamEncoder::SetRestartShortcutForTest(false);
    const std::string reference = encode(col, seed);
    ColumnStreamEncoder::SetRestartShortcutForTest(true);
    return std::make_pair(reference, encode(col, seed));
  };
  for (int iter = 0; iter < 400; ++iter) {
    SCOPED_TRACE(iter);
    Column col;
    double walk = 50;
    // A ramp of bit patterns: every delta the same wide value, which starts a run where a
    // full-precision column would complete a word per value.
    uint64_t ramp = std::bit_cast<uint64_t>(walk);
    const uint64_t ramp_step = (uint64_t{1} << (32 + rng() % 20)) + rng() % 1000;
    const int n = 1 + static_cast<int>(rng() % 600);
    int kind = static_cast<int>(rng() % 9);
    for (int i = 0; i < n; ++i) {
      if (rng() % 40 == 0) kind = static_cast<int>(rng() % 9);
      if (kind != 5 && rng() % 15 == 0) {  // (a ramp unbroken: runs of 120 make RLE words)
        col.Missing();
        continue;
      }
      walk = std::clamp(walk + step(rng), 0.0, 100.0);
      switch (kind) {
        case 0:  // full precision
          col.Double(walk);
          break;
        case 1:  // a few decimals, each scale
          col.Double(std::round(walk * std::pow(10.0, rng() % 5)) / std::pow(10.0, rng() % 5));
          break;
        case 2:  // repeats, and zeros of both signs
          col.Double(rng() % 3 == 0 ? (rng() % 2 ? -0.0 : 0.0) : std::round(walk));
          break;
        case 3:  // wide jumps between magnitudes
          col.Double(std::ldexp(walk, static_cast<int>(rng() % 120) - 60));
          break;
        case 4:  // mostly the same value, a different one now and then
          col.Double(rng() % 8 == 0 ? walk : 42.125);
          break;
        case 5:
          ramp += ramp_step;
          col.Double(std::bit_cast<double>(ramp));
          break;
        case 6:  // float precision: deltas with many trailing zeros, which pair in a word
          col.Double(static_cast<double>(static_cast<float>(walk)));
          break;
        case 7:  // steps of a few ulps: deltas of 16 to 34 bits, two to a word or not
          ramp += rng() % (uint64_t{1} << (15 + rng() % 18));
          col.Double(std::bit_cast<double>(ramp));
          break;
        default:  // a double inside an object (an interleaved leaf)
          col.Add([&](BsonBuilder& b) {
            BsonBuilder o;
            o.AppendDouble("v", walk);
            o.AppendDouble("w", std::round(walk * 10) / 10);
            b.AppendObject("", o.Obj());
          });
          break;
      }
    }
    const auto [reference, fast] = encode_both(col);
    ASSERT_EQ(ToHex(fast), ToHex(reference));
  }
  // Long ramps: runs of a wide delta longer than an RLE word's 120.
  for (int len : {119, 120, 121, 300, 1000}) {
    SCOPED_TRACE(len);
    Column col;
    uint64_t bits = std::bit_cast<uint64_t>(50.3);
    for (int i = 0; i < len; ++i) {
      bits += (uint64_t{1} << 40) + 7;
      col.Double(std::bit_cast<double>(bits));
    }
    col.Double(1.5);
    const auto [reference, fast] = encode_both(col);
    ASSERT_EQ(ToHex(fast), ToHex(reference));
  }
  // The generic random columns too.
  for (int iter = 0; iter < 200; ++iter) {
    SCOPED_TRACE(iter);
    const Column col = RandomColumn(rng);
    const auto [reference, fast] = encode_both(col);
    ASSERT_EQ(ToHex(fast), ToHex(reference));
  }
}

// Mutates valid encodings (bit flips, byte overwrites, truncation, insertion, duplicated
// chunks) and checks that the decoder answers every one with cells or an InvalidBSON status:
// sanitizers catch out-of-bounds reads, the test's time bound catches loops. `make fuzz` runs
// the same idea far longer with coverage feedback (bson_column_fuzz).
TEST(BsonColumnBuilderTest, DecoderSurvivesMutatedColumns) {
  std::mt19937_64 rng(7);
  int decoded_ok = 0, rejected = 0;
  for (int iter = 0; iter < 60; ++iter) {
    const std::string valid = RandomColumn(rng).Encode();
    for (int m = 0; m < 30; ++m) {
      std::string b = valid;
      const int edits = 1 + rng() % 4;
      for (int e = 0; e < edits && !b.empty(); ++e) {
        const size_t pos = rng() % b.size();
        switch (rng() % 6) {
          case 0:
            b[pos] = static_cast<char>(b[pos] ^ (1 << (rng() % 8)));
            break;
          case 1:
            b[pos] = static_cast<char>(rng());
            break;
          case 2:
            b.resize(pos);
            break;
          case 3:
            b.insert(pos, 1, static_cast<char>(rng()));
            break;
          case 4: {
            const size_t len = std::min<size_t>(b.size() - pos, 1 + rng() % 16);
            b.insert(pos, b.substr(pos, len));
            break;
          }
          default:
            b[pos] = static_cast<char>(
                std::vector<uint8_t>{0x00, 0x7F, 0x80, 0x8F, 0xF0, 0xF1, 0xF2, 0xFF}[rng() % 8]);
            break;
        }
      }
      auto r = DecodeBsonColumn(b);
      if (r.ok()) {
        ++decoded_ok;
      } else {
        ASSERT_EQ(r.status().code(), ErrorCode::kInvalidBSON) << r.status().ToString();
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(decoded_ok, 0);
}

// With HG_BSONCOLUMN_SEED_DIR set, writes a seed corpus for bson_column_fuzz there (how
// fuzz/corpus/bson_column was made).
TEST(BsonColumnBuilderTest, WriteFuzzSeeds) {
  const char* dir = std::getenv("HG_BSONCOLUMN_SEED_DIR");
  if (dir == nullptr) GTEST_SKIP() << "HG_BSONCOLUMN_SEED_DIR not set";
  std::mt19937_64 rng(1234);
  for (int i = 0; i < 24; ++i) {
    Column col = RandomColumn(rng);
    if (col.docs.size() > 60) col.docs.resize(60);
    std::ofstream(std::string(dir) + "/random_" + std::to_string(i), std::ios::binary)
        << col.Encode();
  }
}

}  // namespace
}  // namespace hourglass::bsoncolumn
