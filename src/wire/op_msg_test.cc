#include "wire/op_msg.h"

#include <gtest/gtest.h>

#include <limits>

#include "base/crc32c.h"
#include "wire/wire_test_util.h"

namespace hourglass::wire {
namespace {

using testing::Doc;
using testing::RawMessage;

// An 8-byte document whose only element has the undefined type byte 0x42.
std::string BadTypeDoc() { return std::string("\x08\x00\x00\x00\x42\x61\x00\x00", 8); }

TEST(OpMsgTest, BuildWritesTheDocumentedLayout) {
  bson::BsonObj body = Doc(R"({"ok": 1})");
  std::string m = BuildOpMsg(11, 22, body);
  ASSERT_EQ(m.size(), 16u + 4 + 1 + body.size());
  MsgHeader h = ParseHeader(m.data());
  EXPECT_EQ(h.message_length, static_cast<int32_t>(m.size()));
  EXPECT_EQ(h.request_id, 11);
  EXPECT_EQ(h.response_to, 22);
  EXPECT_EQ(h.op_code, 2013);
  EXPECT_EQ(bson::ReadInt32(m.data() + 16), 0);  // flagBits
  EXPECT_EQ(m[20], '\0');                        // kind 0
  EXPECT_EQ(m.substr(21), body.bytes());
}

TEST(OpMsgTest, RoundTripsBodyOnly) {
  bson::BsonObj body = Doc(R"({"find": "c", "filter": {"x": {"$gt": 1}}, "$db": "test"})");
  std::string m = BuildOpMsg(5, 0, body);
  auto sw = ParseOpMsg(m);
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  EXPECT_EQ(sw.value().flags, 0u);
  EXPECT_TRUE(sw.value().body.BinaryEqual(body));
  EXPECT_TRUE(sw.value().sequences.empty());
  EXPECT_TRUE(sw.value().MergedBody().BinaryEqual(body));
  EXPECT_FALSE(sw.value().more_to_come());
  EXPECT_FALSE(sw.value().exhaust_allowed());
  EXPECT_FALSE(sw.value().checksum_present());
}

TEST(OpMsgTest, ParsesSeveralSequencesWithSeveralDocuments) {
  std::string m = RawMessage(OpCode::kMsg)
                      .UInt32(0)
                      .Byte(0)
                      .Document(Doc(R"({"insert": "c", "$db": "d"})"))
                      .Sequence("documents", {Doc(R"({"_id": 1})"), Doc(R"({"_id": 2})"),
                                              Doc(R"({"_id": 3, "s": "x"})")})
                      .Sequence("other", {Doc(R"({"a": true})")})
                      .Finish();
  auto sw = ParseOpMsg(m);
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  const OpMsg& msg = sw.value();
  ASSERT_EQ(msg.sequences.size(), 2u);
  EXPECT_EQ(msg.sequences[0].identifier, "documents");
  ASSERT_EQ(msg.sequences[0].documents.size(), 3u);
  EXPECT_EQ(msg.sequences[0].documents[2]["s"].Str(), "x");
  EXPECT_EQ(msg.sequences[1].identifier, "other");
  ASSERT_EQ(msg.sequences[1].documents.size(), 1u);

  bson::BsonObj merged = msg.MergedBody();
  EXPECT_EQ(merged.ToCanonicalJson(), Doc(R"({"insert": "c", "$db": "d",
                    "documents": [{"_id": 1}, {"_id": 2}, {"_id": 3, "s": "x"}],
                    "other": [{"a": true}]})")
                                          .ToCanonicalJson());
}

TEST(OpMsgTest, SharedBufferParseViewsTheMessageInsteadOfCopying) {
  auto m = std::make_shared<const std::string>(
      RawMessage(OpCode::kMsg)
          .UInt32(0)
          .Byte(0)
          .Document(Doc(R"({"insert": "c", "$db": "d"})"))
          .Sequence("documents", {Doc(R"({"_id": 1})"), Doc(R"({"_id": 2, "s": "x"})")})
          .Finish());
  const char* begin = m->data();
  const char* end = m->data() + m->size();
  auto sw = ParseOpMsg(m);
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  m.reset();  // the OpMsg alone keeps the buffer alive now
  const OpMsg& msg = sw.value();
  EXPECT_TRUE(msg.body.data() >= begin && msg.body.data() < end);
  for (const auto& d : msg.sequences[0].documents) {
    EXPECT_TRUE(d.data() >= begin && d.data() < end);
  }
  EXPECT_EQ(msg.sequences[0].documents[1]["s"].Str(), "x");
  EXPECT_EQ(msg.MergedBody().ToCanonicalJson(),
            Doc(R"({"insert": "c", "$db": "d", "documents": [{"_id": 1}, {"_id": 2, "s": "x"}]})")
                .ToCanonicalJson());
  // Malformed input is rejected the same way on this path.
  std::string bad = RawMessage(OpCode::kMsg).UInt32(0).Byte(7).Finish();
  EXPECT_EQ(ParseOpMsg(std::make_shared<const std::string>(bad)).status().code(),
            ErrorCode::kProtocolError);
}

TEST(OpMsgTest, SectionsMayComeInAnyOrderAndSequencesMayBeEmpty) {
  std::string m = RawMessage(OpCode::kMsg)
                      .UInt32(0)
                      .Sequence("deletes", {})
                      .Byte(0)
                      .Document(Doc(R"({"delete": "c"})"))
                      .Finish();
  auto sw = ParseOpMsg(m);
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  ASSERT_EQ(sw.value().sequences.size(), 1u);
  EXPECT_TRUE(sw.value().sequences[0].documents.empty());
  EXPECT_EQ(sw.value().MergedBody().ToCanonicalJson(),
            Doc(R"({"delete": "c", "deletes": []})").ToCanonicalJson());
}

TEST(OpMsgTest, BuildWithSequencesRoundTrips) {
  OpMsg in;
  in.flags = kMoreToCome;
  in.body = Doc(R"({"update": "c", "$db": "d"})");
  in.sequences.push_back({"updates", {Doc(R"({"q": {}, "u": {"$set": {"a": 1}}})")}});
  std::string m = BuildOpMsg(1, 2, in);
  auto sw = ParseOpMsg(m);
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  EXPECT_TRUE(sw.value().more_to_come());
  EXPECT_TRUE(sw.value().body.BinaryEqual(in.body));
  ASSERT_EQ(sw.value().sequences.size(), 1u);
  EXPECT_TRUE(sw.value().sequences[0].documents[0].BinaryEqual(in.sequences[0].documents[0]));
}

TEST(OpMsgTest, ParsedDocumentsOwnTheirBytes) {
  auto buffer = std::make_unique<std::string>(RawMessage(OpCode::kMsg)
                                                  .UInt32(0)
                                                  .Byte(0)
                                                  .Document(Doc(R"({"ping": 1})"))
                                                  .Sequence("docs", {Doc(R"({"v": 42})")})
                                                  .Finish());
  auto sw = ParseOpMsg(*buffer);
  ASSERT_TRUE(sw.ok());
  std::fill(buffer->begin(), buffer->end(), '\xff');
  buffer.reset();  // ASan reports any view still pointing into the message
  EXPECT_TRUE(sw.value().body.IsOwned());
  EXPECT_EQ(sw.value().body["ping"].Int32(), 1);
  EXPECT_EQ(sw.value().sequences[0].documents[0]["v"].Int32(), 42);
}

TEST(OpMsgTest, ChecksumIsWrittenAndVerified) {
  bson::BsonObj body = Doc(R"({"hello": 1})");
  std::string m = BuildOpMsg(3, 4, body, kChecksumPresent);
  ASSERT_EQ(m.size(), 16u + 4 + 1 + body.size() + 4);
  uint32_t stored;
  std::memcpy(&stored, m.data() + m.size() - 4, 4);
  EXPECT_EQ(stored, Crc32c(std::string_view(m).substr(0, m.size() - 4)));
  auto sw = ParseOpMsg(m);
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  EXPECT_TRUE(sw.value().checksum_present());
  EXPECT_TRUE(sw.value().body.BinaryEqual(body));
}

TEST(OpMsgTest, RejectsWrongChecksum) {
  std::string m = BuildOpMsg(3, 4, Doc(R"({"hello": 1})"), kChecksumPresent);
  std::string bad_crc = m;
  bad_crc.back() ^= 1;
  auto sw = ParseOpMsg(bad_crc);
  EXPECT_EQ(sw.status().code(), ErrorCode::kProtocolError);
  EXPECT_EQ(sw.status().reason(), "OP_MSG checksum does not match");

  std::string bad_body = m;
  bad_body[m.size() - 8] ^= 0x20;  // a byte inside the body document
  EXPECT_EQ(ParseOpMsg(bad_body).status().reason(), "OP_MSG checksum does not match");
}

TEST(OpMsgTest, RejectsChecksumFlagWithoutRoomForChecksum) {
  std::string m = RawMessage(OpCode::kMsg).UInt32(kChecksumPresent).Byte(0).Finish();
  EXPECT_EQ(ParseOpMsg(m).status().code(), ErrorCode::kProtocolError);
}

TEST(OpMsgTest, OptionalFlagBitsAreAcceptedAndReported) {
  const uint32_t flags = kExhaustAllowed | (1u << 20) | (1u << 31);
  std::string m = BuildOpMsg(1, 0, Doc(R"({"getMore": 1})"), flags);
  auto sw = ParseOpMsg(m);
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  EXPECT_EQ(sw.value().flags, flags);
  EXPECT_TRUE(sw.value().exhaust_allowed());
}

TEST(OpMsgTest, RejectsUnknownRequiredFlagBits) {
  for (int bit = 2; bit < 16; ++bit) {
    std::string m = BuildOpMsg(1, 0, Doc(R"({"ping": 1})"), 1u << bit);
    auto sw = ParseOpMsg(m);
    EXPECT_EQ(sw.status().code(), ErrorCode::kProtocolError) << bit;
    EXPECT_NE(sw.status().reason().find("required flag"), std::string::npos);
  }
}

TEST(OpMsgTest, RejectsShortMessage) {
  std::string m = BuildOpMsg(1, 0, Doc(R"({"ping": 1})"));
  for (size_t n : {0, 1, 15}) {
    EXPECT_EQ(ParseOpMsg(std::string_view(m).substr(0, n)).status().code(),
              ErrorCode::kProtocolError)
        << n;
  }
  // A header with nothing after it: no flagBits.
  EXPECT_EQ(ParseOpMsg(RawMessage(OpCode::kMsg).Finish()).status().code(),
            ErrorCode::kProtocolError);
  // flagBits but no section at all.
  auto sw = ParseOpMsg(RawMessage(OpCode::kMsg).UInt32(0).Finish());
  EXPECT_EQ(sw.status().code(), ErrorCode::kProtocolError);
  EXPECT_NE(sw.status().reason().find("no body"), std::string::npos);
}

TEST(OpMsgTest, RejectsLengthMismatch) {
  std::string m = BuildOpMsg(1, 0, Doc(R"({"ping": 1})"));
  // Truncated buffer: header still claims the full length.
  EXPECT_EQ(ParseOpMsg(std::string_view(m).substr(0, m.size() - 1)).status().code(),
            ErrorCode::kProtocolError);
  // Trailing garbage beyond messageLength.
  EXPECT_EQ(ParseOpMsg(m + "x").status().code(), ErrorCode::kProtocolError);
  // Negative messageLength.
  RawMessage raw(OpCode::kMsg);
  raw.UInt32(0).Byte(0).Document(Doc("{}"));
  EXPECT_EQ(ParseOpMsg(raw.Finish(std::numeric_limits<int32_t>::max())).status().code(),
            ErrorCode::kProtocolError);
  std::string neg = raw.Finish();
  int32_t minus = -26;
  std::memcpy(neg.data(), &minus, 4);
  EXPECT_EQ(ParseOpMsg(neg).status().code(), ErrorCode::kProtocolError);
}

TEST(OpMsgTest, RejectsOtherOpCodes) {
  std::string m = RawMessage(OpCode::kQuery).UInt32(0).Byte(0).Document(Doc("{}")).Finish();
  EXPECT_EQ(ParseOpMsg(m).status().code(), ErrorCode::kProtocolError);
}

TEST(OpMsgTest, RejectsTwoBodySections) {
  std::string m = RawMessage(OpCode::kMsg)
                      .UInt32(0)
                      .Byte(0)
                      .Document(Doc(R"({"a": 1})"))
                      .Byte(0)
                      .Document(Doc(R"({"b": 1})"))
                      .Finish();
  auto sw = ParseOpMsg(m);
  EXPECT_EQ(sw.status().code(), ErrorCode::kProtocolError);
  EXPECT_NE(sw.status().reason().find("more than one body"), std::string::npos);
}

TEST(OpMsgTest, RejectsSequencesWithoutBody) {
  std::string m = RawMessage(OpCode::kMsg).UInt32(0).Sequence("documents", {Doc("{}")}).Finish();
  EXPECT_EQ(ParseOpMsg(m).status().code(), ErrorCode::kProtocolError);
}

TEST(OpMsgTest, RejectsUnknownSectionKind) {
  for (uint8_t kind : {2, 3, 255}) {
    std::string m = RawMessage(OpCode::kMsg)
                        .UInt32(0)
                        .Byte(0)
                        .Document(Doc(R"({"a": 1})"))
                        .Byte(kind)
                        .Document(Doc(R"({"b": 1})"))
                        .Finish();
    auto sw = ParseOpMsg(m);
    EXPECT_EQ(sw.status().code(), ErrorCode::kProtocolError);
    EXPECT_NE(sw.status().reason().find("unknown section kind"), std::string::npos);
  }
}

TEST(OpMsgTest, RejectsSequenceSizePastEnd) {
  bson::BsonObj d = Doc(R"({"x": 1})");
  std::string m = RawMessage(OpCode::kMsg)
                      .UInt32(0)
                      .Byte(0)
                      .Document(Doc(R"({"insert": "c"})"))
                      .Byte(1)
                      .Int32(4 + 10 + d.size() + 1)  // one byte more than present
                      .CString("documents")
                      .Document(d)
                      .Finish();
  auto sw = ParseOpMsg(m);
  EXPECT_EQ(sw.status().code(), ErrorCode::kProtocolError);
  EXPECT_NE(sw.status().reason().find("past the end"), std::string::npos);
}

TEST(OpMsgTest, RejectsNegativeAndTinySequenceSizes) {
  for (int32_t size : {-1, -100000, std::numeric_limits<int32_t>::min(), 0, 3, 4}) {
    std::string m = RawMessage(OpCode::kMsg)
                        .UInt32(0)
                        .Byte(0)
                        .Document(Doc(R"({"insert": "c"})"))
                        .Byte(1)
                        .Int32(size)
                        .CString("documents")
                        .Finish();
    EXPECT_EQ(ParseOpMsg(m).status().code(), ErrorCode::kProtocolError) << size;
  }
}

TEST(OpMsgTest, RejectsSequenceTruncatedInsideItsHeader) {
  std::string m = RawMessage(OpCode::kMsg)
                      .UInt32(0)
                      .Byte(0)
                      .Document(Doc(R"({"insert": "c"})"))
                      .Byte(1)
                      .Bytes("\x05\x00")
                      .Finish();
  EXPECT_EQ(ParseOpMsg(m).status().code(), ErrorCode::kProtocolError);
}

TEST(OpMsgTest, RejectsUnterminatedIdentifier) {
  std::string m = RawMessage(OpCode::kMsg)
                      .UInt32(0)
                      .Byte(0)
                      .Document(Doc(R"({"insert": "c"})"))
                      .Byte(1)
                      .Int32(4 + 9)
                      .Bytes("documents")  // no NUL inside the section
                      .Finish();
  EXPECT_EQ(ParseOpMsg(m).status().code(), ErrorCode::kProtocolError);
}

TEST(OpMsgTest, RejectsDocumentCrossingTheSequenceBoundary) {
  bson::BsonObj d = Doc(R"({"x": 1})");
  std::string m = RawMessage(OpCode::kMsg)
                      .UInt32(0)
                      .Byte(0)
                      .Document(Doc(R"({"insert": "c"})"))
                      .Byte(1)
                      .Int32(4 + 2 + d.size() - 3)  // the sequence ends inside the document
                      .CString("d")
                      .Document(d)
                      .Finish();
  // The remaining 3 bytes of the document are then read as a section kind and fail too, but
  // the document error comes first.
  EXPECT_EQ(ParseOpMsg(m).status().code(), ErrorCode::kInvalidBSON);
}

TEST(OpMsgTest, RejectsInvalidBsonInBody) {
  std::string m = RawMessage(OpCode::kMsg).UInt32(0).Byte(0).Bytes(BadTypeDoc()).Finish();
  auto sw = ParseOpMsg(m);
  EXPECT_EQ(sw.status().code(), ErrorCode::kInvalidBSON);
  EXPECT_NE(sw.status().reason().find("OP_MSG body"), std::string::npos);
}

TEST(OpMsgTest, RejectsBodyWithBadLengthPrefix) {
  for (int32_t len : {-5, 0, 4, 1000}) {
    std::string m = RawMessage(OpCode::kMsg).UInt32(0).Byte(0).Int32(len).Byte(0).Finish();
    EXPECT_EQ(ParseOpMsg(m).status().code(), ErrorCode::kInvalidBSON) << len;
  }
  // Fewer than 4 bytes left for the length itself.
  std::string m = RawMessage(OpCode::kMsg).UInt32(0).Byte(0).Bytes("\x05\x00").Finish();
  EXPECT_EQ(ParseOpMsg(m).status().code(), ErrorCode::kInvalidBSON);
}

// Found by the fuzzer: a string holding invalid UTF-8 followed by a string whose length runs far
// past the document. libbson 1.23's bson_validate accepts it; reading it would overread.
TEST(OpMsgTest, RejectsElementLengthPastDocumentEnd) {
  const std::string doc(
      "\x1e\x00\x00\x00\x02insert\x00\x02\x00\x00\x00\xe3\x00"
      "\x02$db/\x00\x00\x00\xf3\x00\x00\x00",
      30);
  std::string m = RawMessage(OpCode::kMsg).UInt32(0).Byte(0).Bytes(doc).Finish();
  EXPECT_EQ(ParseOpMsg(m).status().code(), ErrorCode::kInvalidBSON);
  std::string in_sequence = RawMessage(OpCode::kMsg)
                                .UInt32(0)
                                .Byte(0)
                                .Document(Doc(R"({"insert": "c"})"))
                                .Byte(1)
                                .Int32(static_cast<int32_t>(4 + 2 + doc.size()))
                                .CString("d")
                                .Bytes(doc)
                                .Finish();
  EXPECT_EQ(ParseOpMsg(in_sequence).status().code(), ErrorCode::kInvalidBSON);
  // The error names the sequence and the bad document's position in it.
  const std::string good(Doc(R"({"v": 1})").bytes());
  std::string second_bad = RawMessage(OpCode::kMsg)
                               .UInt32(0)
                               .Byte(0)
                               .Document(Doc(R"({"insert": "c"})"))
                               .Byte(1)
                               .Int32(static_cast<int32_t>(4 + 2 + good.size() + doc.size()))
                               .CString("d")
                               .Bytes(good)
                               .Bytes(doc)
                               .Finish();
  auto st = ParseOpMsg(second_bad).status();
  EXPECT_EQ(st.code(), ErrorCode::kInvalidBSON);
  EXPECT_NE(st.reason().find("OP_MSG document sequence 'd' document 1: "), std::string::npos)
      << st.reason();
}

TEST(OpMsgTest, AcceptsEveryBsonType) {
  bson::BsonObj body = Doc(R"json({
      "d": 1.5, "s": "str", "o": {"x": {"y": [1, 2]}}, "a": [[], {}],
      "b": {"$binary": {"base64": "AQID", "subType": "04"}}, "u": {"$undefined": true},
      "oid": {"$oid": "0123456789abcdef01234567"}, "t": true, "dt": {"$date": 5},
      "n": null, "r": {"$regularExpression": {"pattern": "a.c", "options": "i"}},
      "ptr": {"$dbPointer": {"$ref": "c", "$id": {"$oid": "0123456789abcdef01234567"}}},
      "code": {"$code": "f()"}, "sym": {"$symbol": "q"},
      "cws": {"$code": "g()", "$scope": {"v": 1}}, "i": 7,
      "ts": {"$timestamp": {"t": 1, "i": 2}}, "l": {"$numberLong": "9"},
      "dec": {"$numberDecimal": "1.25"}, "min": {"$minKey": 1}, "max": {"$maxKey": 1}})json");
  auto sw = ParseOpMsg(BuildOpMsg(1, 0, body));
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  EXPECT_TRUE(sw.value().body.BinaryEqual(body));
}

TEST(OpMsgTest, RejectsInvalidBsonInSequence) {
  std::string m = RawMessage(OpCode::kMsg)
                      .UInt32(0)
                      .Byte(0)
                      .Document(Doc(R"({"insert": "c"})"))
                      .Byte(1)
                      .Int32(static_cast<int32_t>(4 + 10 + 8))
                      .CString("documents")
                      .Bytes(BadTypeDoc())
                      .Finish();
  auto sw = ParseOpMsg(m);
  EXPECT_EQ(sw.status().code(), ErrorCode::kInvalidBSON);
  EXPECT_NE(sw.status().reason().find("documents"), std::string::npos);
}

TEST(OpMsgTest, RejectsIdentifierDuplicatingBodyField) {
  std::string m = RawMessage(OpCode::kMsg)
                      .UInt32(0)
                      .Byte(0)
                      .Document(Doc(R"({"insert": "c", "documents": []})"))
                      .Sequence("documents", {Doc("{}")})
                      .Finish();
  EXPECT_EQ(ParseOpMsg(m).status().code(), ErrorCode::kProtocolError);
}

TEST(OpMsgTest, RejectsTwoSequencesWithTheSameIdentifier) {
  std::string m = RawMessage(OpCode::kMsg)
                      .UInt32(0)
                      .Byte(0)
                      .Document(Doc(R"({"insert": "c"})"))
                      .Sequence("documents", {Doc("{}")})
                      .Sequence("documents", {Doc("{}")})
                      .Finish();
  EXPECT_EQ(ParseOpMsg(m).status().code(), ErrorCode::kProtocolError);
}

// A document {"b": BinData(0, <n bytes>)} of exactly `total` bytes.
bson::BsonObj DocOfSize(int32_t total) {
  const int32_t overhead = 4 + 1 + 2 + 4 + 1 + 1;  // len, type, "b\0", bin len, subtype, EOO
  bson::BsonBuilder b;
  b.AppendBinData("b", 0, std::string(static_cast<size_t>(total - overhead), 'z'));
  bson::BsonObj o = b.Obj();
  EXPECT_EQ(o.size(), total);
  return o;
}

TEST(OpMsgTest, AcceptsBodyUpToTheInternalLimit) {
  bson::BsonObj body = DocOfSize(kMaxBsonObjectSize + 16 * 1024);
  auto sw = ParseOpMsg(BuildOpMsg(1, 0, body));
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  EXPECT_EQ(sw.value().body.size(), body.size());
}

TEST(OpMsgTest, RejectsOversizeBody) {
  auto sw = ParseOpMsg(BuildOpMsg(1, 0, DocOfSize(kMaxBsonObjectSize + 16 * 1024 + 1)));
  EXPECT_EQ(sw.status().code(), ErrorCode::kBSONObjectTooLarge);
}

TEST(OpMsgTest, RejectsOversizeMessage) {
  // The length is checked before anything else is read, so a lying header is enough.
  std::string m = RawMessage(OpCode::kMsg).UInt32(0).Byte(0).Document(Doc("{}")).Finish();
  std::string big = m + std::string(kMaxMessageSizeBytes + 1 - m.size(), '\0');
  int32_t len = static_cast<int32_t>(big.size());
  std::memcpy(big.data(), &len, 4);
  EXPECT_EQ(ParseOpMsg(big).status().code(), ErrorCode::kProtocolError);
}

}  // namespace
}  // namespace hourglass::wire
