#include "wire/op_compressed.h"

#include <gtest/gtest.h>

#include <limits>

#include "wire/op_msg.h"
#include "wire/wire_test_util.h"

namespace hourglass::wire {
namespace {

using testing::Doc;
using testing::RawMessage;

constexpr Compressor kAll[] = {Compressor::kNoop, Compressor::kSnappy, Compressor::kZlib,
                               Compressor::kZstd};

std::string SampleMessage() {
  // Repetitive content so the real compressors actually shrink it.
  bson::BsonBuilder b;
  b.AppendString("insert", "metrics").AppendString("$db", "test");
  size_t arr = b.OpenArray("documents");
  for (int i = 0; i < 200; ++i) {
    size_t o = b.OpenObject(std::to_string(i));
    b.AppendString("sensor", "temperature-probe").AppendInt32("value", i % 7);
    b.Close(o);
  }
  b.Close(arr);
  return BuildOpMsg(1234, 0, b.Obj());
}

// An OP_COMPRESSED message with arbitrary fields and payload.
std::string Compressed(int32_t original_op, int32_t uncompressed_size, uint8_t id,
                       std::string_view payload) {
  return RawMessage(OpCode::kCompressed, 1234)
      .Int32(original_op)
      .Int32(uncompressed_size)
      .Byte(id)
      .Bytes(payload)
      .Finish();
}

TEST(OpCompressedTest, NamesRoundTrip) {
  for (Compressor c : kAll) EXPECT_EQ(CompressorFromName(CompressorName(c)), c);
  EXPECT_EQ(CompressorName(Compressor::kZstd), "zstd");
  EXPECT_EQ(CompressorFromName("snappy"), Compressor::kSnappy);
  EXPECT_FALSE(CompressorFromName("lz4").has_value());
  EXPECT_FALSE(CompressorFromName("").has_value());
  EXPECT_FALSE(CompressorFromName("Zlib").has_value());
}

TEST(OpCompressedTest, RoundTripsEveryCompressor) {
  const std::string original = SampleMessage();
  for (Compressor c : kAll) {
    SCOPED_TRACE(std::string(CompressorName(c)));
    auto compressed = CompressMessage(original, c);
    ASSERT_TRUE(compressed.ok()) << compressed.status().ToString();
    const std::string& m = compressed.value();
    MsgHeader h = ParseHeader(m.data());
    EXPECT_EQ(h.op_code, 2012);
    EXPECT_EQ(h.request_id, 1234);
    EXPECT_EQ(h.message_length, static_cast<int32_t>(m.size()));
    EXPECT_TRUE(CheckHeader(h).ok());
    EXPECT_EQ(bson::ReadInt32(m.data() + 16), 2013);  // opcode
    EXPECT_EQ(bson::ReadInt32(m.data() + 20), static_cast<int32_t>(original.size() - 16));
    EXPECT_EQ(static_cast<uint8_t>(m[24]), static_cast<uint8_t>(c));
    if (c != Compressor::kNoop) {
      EXPECT_LT(m.size(), original.size());
    }

    auto back = DecompressMessage(m);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back.value().first, original);
    EXPECT_EQ(back.value().second, c);
    EXPECT_TRUE(ParseOpMsg(back.value().first).ok());
  }
}

TEST(OpCompressedTest, KeepsResponseTo) {
  std::string reply = BuildOpMsg(77, 1234, Doc(R"({"ok": 1})"));
  auto m = CompressMessage(reply, Compressor::kZstd);
  ASSERT_TRUE(m.ok());
  auto back = DecompressMessage(m.value());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back.value().first, reply);
  EXPECT_EQ(ParseHeader(back.value().first.data()).response_to, 1234);
}

TEST(OpCompressedTest, RefusesToCompressBadInput) {
  EXPECT_FALSE(CompressMessage("short", Compressor::kZlib).ok());
  std::string m = SampleMessage();
  EXPECT_FALSE(
      CompressMessage(std::string_view(m).substr(0, m.size() - 1), Compressor::kZlib).ok());
  auto once = CompressMessage(m, Compressor::kNoop);
  ASSERT_TRUE(once.ok());
  EXPECT_EQ(CompressMessage(once.value(), Compressor::kZlib).status().code(), ErrorCode::kBadValue);
  EXPECT_EQ(CompressMessage(m, static_cast<Compressor>(9)).status().code(), ErrorCode::kBadValue);
}

TEST(OpCompressedTest, RejectsUnknownCompressorId) {
  std::string body = SampleMessage().substr(16);
  for (uint8_t id : {4, 5, 200, 255}) {
    auto sw = DecompressMessage(Compressed(2013, static_cast<int32_t>(body.size()), id, body));
    EXPECT_EQ(sw.status().code(), ErrorCode::kBadValue) << int{id};
  }
}

TEST(OpCompressedTest, RejectsUncompressedSizeMismatch) {
  const std::string original = SampleMessage();
  const int32_t real = static_cast<int32_t>(original.size() - 16);
  for (Compressor c : kAll) {
    SCOPED_TRACE(std::string(CompressorName(c)));
    auto m = CompressMessage(original, c);
    ASSERT_TRUE(m.ok());
    for (int32_t lie : {real - 1, real + 1, real * 2}) {
      std::string bad = m.value();
      std::memcpy(bad.data() + 20, &lie, 4);
      EXPECT_EQ(DecompressMessage(bad).status().code(), ErrorCode::kProtocolError) << lie;
    }
  }
}

TEST(OpCompressedTest, RejectsOutOfRangeUncompressedSize) {
  for (int32_t size : {-1, std::numeric_limits<int32_t>::min(), kMaxMessageSizeBytes - 15,
                       std::numeric_limits<int32_t>::max()}) {
    auto sw = DecompressMessage(Compressed(2013, size, 2, "xx"));
    EXPECT_EQ(sw.status().code(), ErrorCode::kProtocolError) << size;
  }
  // Smaller than the original opcode's fixed part.
  EXPECT_EQ(DecompressMessage(Compressed(2013, 3, 0, "abc")).status().code(),
            ErrorCode::kProtocolError);
}

TEST(OpCompressedTest, RejectsNestedAndUnknownOriginalOpcode) {
  std::string body = SampleMessage().substr(16);
  const int32_t n = static_cast<int32_t>(body.size());
  EXPECT_EQ(DecompressMessage(Compressed(2012, n, 0, body)).status().code(),
            ErrorCode::kProtocolError);
  EXPECT_EQ(DecompressMessage(Compressed(4242, n, 0, body)).status().code(),
            ErrorCode::kProtocolError);
}

TEST(OpCompressedTest, RejectsFramingErrors) {
  EXPECT_EQ(DecompressMessage("").status().code(), ErrorCode::kProtocolError);
  EXPECT_EQ(DecompressMessage(RawMessage(OpCode::kCompressed).Int32(2013).Finish()).status().code(),
            ErrorCode::kProtocolError);
  std::string ok = Compressed(2013, 10, 0, std::string(10, 'a'));
  EXPECT_EQ(DecompressMessage(ok + "x").status().code(), ErrorCode::kProtocolError);
  EXPECT_EQ(DecompressMessage(SampleMessage()).status().code(), ErrorCode::kProtocolError);
}

TEST(OpCompressedTest, NoopPayloadMustMatchSize) {
  std::string body = SampleMessage().substr(16);
  EXPECT_TRUE(DecompressMessage(Compressed(2013, static_cast<int32_t>(body.size()), 0, body)).ok());
  EXPECT_EQ(
      DecompressMessage(Compressed(2013, static_cast<int32_t>(body.size()), 0, body.substr(1)))
          .status()
          .code(),
      ErrorCode::kProtocolError);
}

TEST(OpCompressedTest, RejectsCorruptData) {
  const std::string original = SampleMessage();
  const int32_t real = static_cast<int32_t>(original.size() - 16);
  for (Compressor c : {Compressor::kSnappy, Compressor::kZlib, Compressor::kZstd}) {
    SCOPED_TRACE(std::string(CompressorName(c)));
    // Pure garbage.
    EXPECT_FALSE(
        DecompressMessage(Compressed(2013, real, static_cast<uint8_t>(c), std::string(64, '\xa5')))
            .ok());
    // Empty payload.
    EXPECT_FALSE(DecompressMessage(Compressed(2013, real, static_cast<uint8_t>(c), "")).ok());
    auto m = CompressMessage(original, c);
    ASSERT_TRUE(m.ok());
    // Truncated stream (header length fixed up so only the payload is wrong).
    std::string payload = m.value().substr(25);
    EXPECT_FALSE(DecompressMessage(Compressed(2013, real, static_cast<uint8_t>(c),
                                              payload.substr(0, payload.size() / 2)))
                     .ok());
    // Bytes overwritten in the middle of the stream: an error, or (for formats without a
    // checksum) a same-size message; never a crash.
    for (size_t i = 0; i < payload.size(); i += 7) {
      std::string flipped = payload;
      flipped[i] ^= 0x5a;
      auto sw = DecompressMessage(Compressed(2013, real, static_cast<uint8_t>(c), flipped));
      if (sw.ok()) {
        EXPECT_EQ(sw.value().first.size(), original.size());
      }
    }
  }
}

TEST(OpCompressedTest, ZlibDetectsChecksumMismatch) {
  const std::string original = SampleMessage();
  auto m = CompressMessage(original, Compressor::kZlib);
  ASSERT_TRUE(m.ok());
  std::string bad = m.value();
  bad[bad.size() - 1] ^= 1;  // the Adler-32 trailer
  EXPECT_EQ(DecompressMessage(bad).status().code(), ErrorCode::kProtocolError);
}

}  // namespace
}  // namespace hourglass::wire
