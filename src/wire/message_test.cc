#include "wire/message.h"

#include <gtest/gtest.h>

#include <limits>

namespace hourglass::wire {
namespace {

MsgHeader Header(int32_t len, OpCode op) { return MsgHeader{len, 1, 0, static_cast<int32_t>(op)}; }

TEST(MessageHeaderTest, ParseReadsLittleEndianFieldsAtAnyAlignment) {
  std::string buf = "x";  // misalign the header by one byte
  AppendHeader(&buf, MsgHeader{0x01020304, -5, 77, 2013});
  ASSERT_EQ(buf.size(), 17u);
  EXPECT_EQ(buf[1], '\x04');  // least significant byte first
  MsgHeader h = ParseHeader(buf.data() + 1);
  EXPECT_EQ(h.message_length, 0x01020304);
  EXPECT_EQ(h.request_id, -5);
  EXPECT_EQ(h.response_to, 77);
  EXPECT_EQ(h.op_code, 2013);
}

TEST(MessageHeaderTest, AcceptsWellFormedHeaders) {
  EXPECT_TRUE(CheckHeader(Header(26, OpCode::kMsg)).ok());
  EXPECT_TRUE(CheckHeader(Header(kMaxMessageSizeBytes, OpCode::kMsg)).ok());
  EXPECT_TRUE(CheckHeader(Header(34, OpCode::kQuery)).ok());
  EXPECT_TRUE(CheckHeader(Header(25, OpCode::kCompressed)).ok());
  EXPECT_TRUE(CheckHeader(Header(36, OpCode::kReply)).ok());
}

TEST(MessageHeaderTest, RejectsLengthSmallerThanHeader) {
  for (int32_t len : {-1, 0, 15, std::numeric_limits<int32_t>::min()}) {
    Status st = CheckHeader(Header(len, OpCode::kMsg));
    EXPECT_EQ(st.code(), ErrorCode::kProtocolError) << len;
  }
}

TEST(MessageHeaderTest, RejectsLengthOverMaxMessageSize) {
  EXPECT_EQ(CheckHeader(Header(kMaxMessageSizeBytes + 1, OpCode::kMsg)).code(),
            ErrorCode::kProtocolError);
  EXPECT_EQ(CheckHeader(Header(std::numeric_limits<int32_t>::max(), OpCode::kMsg)).code(),
            ErrorCode::kProtocolError);
}

TEST(MessageHeaderTest, RejectsUnknownOpCode) {
  for (int32_t op : {0, 2, 2003, 2010, 2011, 2014, -2013}) {
    Status st = CheckHeader(MsgHeader{100, 1, 0, op});
    EXPECT_EQ(st.code(), ErrorCode::kProtocolError) << op;
    EXPECT_NE(st.reason().find("opCode"), std::string::npos) << st.reason();
  }
}

TEST(MessageHeaderTest, RejectsLengthTooSmallForOpCodeFixedPart) {
  // OP_MSG needs flagBits (4), a section kind (1) and a minimal document (5).
  EXPECT_EQ(CheckHeader(Header(25, OpCode::kMsg)).code(), ErrorCode::kProtocolError);
  EXPECT_EQ(CheckHeader(Header(16, OpCode::kMsg)).code(), ErrorCode::kProtocolError);
  EXPECT_EQ(CheckHeader(Header(24, OpCode::kCompressed)).code(), ErrorCode::kProtocolError);
  EXPECT_EQ(CheckHeader(Header(33, OpCode::kQuery)).code(), ErrorCode::kProtocolError);
  EXPECT_EQ(CheckHeader(Header(35, OpCode::kReply)).code(), ErrorCode::kProtocolError);
}

TEST(MessageHeaderTest, OpCodeNames) {
  EXPECT_EQ(OpCodeName(2013), "OP_MSG");
  EXPECT_EQ(OpCodeName(2004), "OP_QUERY");
  EXPECT_EQ(OpCodeName(2012), "OP_COMPRESSED");
  EXPECT_EQ(OpCodeName(1), "OP_REPLY");
  EXPECT_EQ(OpCodeName(42), "unknown");
}

}  // namespace
}  // namespace hourglass::wire
