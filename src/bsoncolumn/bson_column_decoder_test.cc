#include "bsoncolumn/bson_column_decoder.h"

#include <gtest/gtest.h>

#include <cstring>

#include "bsoncolumn/bson_column_test_util.h"

namespace hourglass::bsoncolumn {
namespace {

using bson::BsonType;
using testutil::Base64;
using testutil::Hex;

std::vector<ColumnCell> MustDecode(std::string_view binary) {
  auto r = DecodeBsonColumn(binary);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r.value() : std::vector<ColumnCell>{};
}

// Found by bson_column_fuzz: an interleaved array section whose end is followed by repeats of
// the last value. Regular decoding must resume with the section's last complete row, not with
// the row the end-of-column left half built (which gave arrays of length 0: invalid BSON).
TEST(BsonColumnDecoderTest, RepeatsAfterAnInterleavedSectionRepeatItsLastRow) {
  const std::string input =
      Hex("f210000000123000b796eec5cf8a3cf60080e1188608148d010000800e0000000000000000");
  auto cells = MustDecode(input);
  ASSERT_EQ(cells.size(), 61u);
  const std::string row = Hex("040010000000123000b796eec5cf8a3cf600");
  EXPECT_EQ(cells[0].bytes(), row);
  EXPECT_TRUE(cells[1].missing());
  for (size_t i = 57; i < cells.size(); ++i) EXPECT_EQ(cells[i].bytes(), row) << i;
  ColumnElements elements;
  ASSERT_TRUE(DecodeBsonColumnElements(input, &elements).ok());
  ASSERT_EQ(elements.size(), cells.size());
  const bson::BsonElement last = elements.element(60);
  EXPECT_EQ(std::string_view(last.raw(), 2 + last.ValueSize()), row);
}

// Bytes written by MongoDB (collected from its public jstests), decoded to known values.
TEST(BsonColumnDecoderTest, MongoObjectIdLiteral) {
  auto cells = MustDecode(Base64("BwBk3UrposROddEVEoUA"));
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].element().Oid().ToHex(), "64dd4ae9a2c44e75d1151285");
}

TEST(BsonColumnDecoderTest, MongoDateLiterals) {
  auto cells = MustDecode(Base64("CQAVoWwAigEAAAA="));
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].element().type(), BsonType::kDate);
  EXPECT_EQ(cells[0].element().DateMillis(), 1692224233749);  // 2023-08-16T22:17:13.749Z
  cells = MustDecode(Base64("CQDoAwAAAAAAAAA="));
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].element().DateMillis(), 1000);
  cells = MustDecode(Base64("CQBHVKF2lQEAAAA="));
  EXPECT_EQ(cells[0].element().DateMillis(), 1741452039239);  // 2025-03-08T16:40:39.239Z
}

TEST(BsonColumnDecoderTest, MongoDoubleAndStringLiterals) {
  auto cells = MustDecode(Base64("AQAAAAAAAADwPwA="));
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].element().Double(), 1.0);
  cells = MustDecode(Base64("AgALAAAAcHJlVXBncmFkZQAA"));
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].element().Str(), "preUpgrade");
  cells = MustDecode(Base64("AgAEAAAAZm9vAAA="));
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].element().Str(), "foo");
}

TEST(BsonColumnDecoderTest, MongoTwoRowBucket) {
  // Dates: literal, then a delta-of-delta of 0 (same date again).
  auto t = MustDecode(Base64("CQAYhggUjQEAAIAOAAAAAAAAAAA="));
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].element().DateMillis(), t[1].element().DateMillis());
  // Doubles: 0.0 then +1 at scale 1.
  auto a = MustDecode(Base64("AQAAAAAAAAAAAJAuAAAAAAAAAAA="));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].element().Double(), 0.0);
  EXPECT_EQ(a[1].element().Double(), 1.0);
  // ObjectIds: the counter advances by one.
  auto id = MustDecode(Base64("BwBlpuun5tLoSOCMN1CALgAAAAAAAAAA"));
  ASSERT_EQ(id.size(), 2u);
  EXPECT_EQ(id[0].element().Oid().ToHex(), "65a6eba7e6d2e848e08c3750");
  EXPECT_EQ(id[1].element().Oid().ToHex(), "65a6eba7e6d2e848e08c3751");
}

TEST(BsonColumnDecoderTest, MongoThousandEqualDoubles) {
  // From MongoDB's validate test: 2.0, then RLE (960), selector 2 (30), selector 7 (8),
  // selector 14 (1) zero deltas.
  auto cells = MustDecode(Base64("AQAAAAAAAAAAQJN/AAAAAAAAAAIAAAAAAAAABwAAAAAAAAAOAAAAAAAAAAA="));
  ASSERT_EQ(cells.size(), 1000u);
  for (const auto& c : cells) ASSERT_EQ(c.element().Double(), 2.0);
}

TEST(BsonColumnDecoderTest, MaxCellsStopsBeforeBuildingMore) {
  // MongoDB's 1,000 equal doubles (33 bytes, mostly one RLE word).
  const std::string thousand =
      Base64("AQAAAAAAAAAAQJN/AAAAAAAAAAIAAAAAAAAABwAAAAAAAAAOAAAAAAAAAAA=");
  auto exact = DecodeBsonColumn(thousand, 1000);
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  EXPECT_EQ(exact.value().size(), 1000u);
  for (size_t cap : {size_t{0}, size_t{1}, size_t{999}}) {
    auto r = DecodeBsonColumn(thousand, cap);
    ASSERT_FALSE(r.ok()) << cap;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidBSON);
    EXPECT_NE(r.status().reason().find("cells expected"), std::string::npos) << r.status().reason();
  }
  // Interleaved rows count too: three objects, at most two.
  bson::BsonBuilder ref;
  ref.AppendInt32("a", 1);
  const uint64_t wa = 12 | (uint64_t{0} << 4) | (uint64_t{2} << 24) | (uint64_t{2} << 44);
  std::string objects = Hex("f1") + std::string(ref.Obj().bytes()) + Hex("80") +
                        testutil::Word(wa) + Hex("00") + Hex("00");
  EXPECT_TRUE(DecodeBsonColumn(objects, 3).ok());
  EXPECT_EQ(DecodeBsonColumn(objects, 2).status().code(), ErrorCode::kInvalidBSON);
}

TEST(BsonColumnDecoderTest, MongoRubbishIsRejected) {
  auto r = DecodeBsonColumn(Base64("O2FkZmdqYWtsamhnJ2xhamhkZzthaCdmZGphZ2hkYQ=="));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidBSON);
  // "foo" without the terminating 0x00.
  r = DecodeBsonColumn(Base64("AgAEAAAAZm9vAA=="));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidBSON);
}

TEST(BsonColumnDecoderTest, SkipsBeforeAnyValueAreMissing) {
  // 0x80 block, one word: selector 1 with 60 skip bits set for 3 slots? Use selector 14 skip.
  std::string b = Hex("80") + testutil::Word(0xFFFFFFFFFFFFFFFEull) + Hex("00");
  auto cells = MustDecode(b);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_TRUE(cells[0].missing());
}

TEST(BsonColumnDecoderTest, InterleavedObjects) {
  // {a: 1, b: 2} then {a: 2} then {a: 3, b: 2}, MongoDB style: 0xF1, reference, then the
  // leaves' blocks in consumption order, 0x00 ending interleaving, 0x00 ending the column.
  bson::BsonBuilder ref;
  ref.AppendInt32("a", 1).AppendInt32("b", 2);
  std::string b = Hex("f1") + std::string(ref.Obj().bytes());
  // a: deltas 0, +1, +1 (zig-zag 0, 2, 2) in one word with selector 14? Use 3 x 20 bits (sel 12).
  const uint64_t wa = 12 | (uint64_t{0} << 4) | (uint64_t{2} << 24) | (uint64_t{2} << 44);
  // b: 0, skip, 0 in 3 x 20 bits.
  const uint64_t skip20 = (uint64_t{1} << 20) - 1;
  const uint64_t wb = 12 | (uint64_t{0} << 4) | (skip20 << 24) | (uint64_t{0} << 44);
  b += Hex("80") + testutil::Word(wa) + Hex("80") + testutil::Word(wb) + Hex("00") + Hex("00");
  auto cells = MustDecode(b);
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0].element().Obj().ToJson(), R"({ "a" : 1, "b" : 2 })");
  EXPECT_EQ(cells[1].element().Obj().ToJson(), R"({ "a" : 2 })");
  EXPECT_EQ(cells[2].element().Obj().ToJson(), R"({ "a" : 3, "b" : 2 })");
}

TEST(BsonColumnDecoderTest, CorruptInputsAreRejected) {
  const std::vector<std::string> bad = {
      "",                                                           // empty
      Hex("10 00 01 00 00"),                                        // truncated int32 literal
      Hex("10 00 01 00 00 00"),                                     // no terminator
      Hex("10 00 01 00 00 00 00 00"),                               // bytes after the terminator
      Hex("10 01 01 00 00 00 00"),                                  // literal with a field name
      Hex("14 00 00"),                                              // unknown type 0x14
      Hex("e0 00"),                                                 // invalid control byte
      Hex("f3 00"),                                                 // invalid control byte
      Hex("10 00 01 00 00 00 80 00 00 00"),                         // truncated Simple-8b block
      Hex("10 00 01 00 00 00 80") + testutil::Word(0) + Hex("00"),  // selector 0
      Hex("08 00 02 00"),                                           // boolean 2
      // Literals of a variable size are validated in full: a string without its terminator, a
      // document whose element runs past its end, a document with a field name of invalid
      // UTF-8, a BinData past the column's end; of a fixed size, one that does not fit.
      Hex("02 00 02 00 00 00 78 78 00"), Hex("03 00 0e 00 00 00 02 61 00 09 00 00 00 78 00 00 00"),
      Hex("03 00 0c 00 00 00 10 ff 00 01 00 00 00 00 00"), Hex("05 00 05 00 00 00 00 61 00"),
      Hex("01 00 00 00 00 00 00 00 f8"), Hex("07 00 01 02 03 04 05 06 07 08 09 0a 0b"),
      Hex("13 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f"),
      Hex("0a 00 80") + testutil::Word(0x2E) + Hex("00"),  // non-zero delta for null
      Hex("80") + testutil::Word(0x2E) + Hex("00"),        // delta without a value
      Hex("f1 05 00 00 00 00 00"),                         // reference object without fields
      Hex("f1 0c 00 00 00 10 61 00 01 00 00 00 00 f1"),    // truncated interleaved section
  };
  for (const auto& b : bad) {
    auto r = DecodeBsonColumn(b);
    EXPECT_FALSE(r.ok()) << testutil::ToHex(b);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), ErrorCode::kInvalidBSON);
      EXPECT_NE(r.status().reason().find("offset"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace hourglass::bsoncolumn
