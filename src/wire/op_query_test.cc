#include "wire/op_query.h"

#include <gtest/gtest.h>

#include "wire/wire_test_util.h"

namespace hourglass::wire {
namespace {

using testing::Doc;
using testing::RawMessage;

// What pymongo sends first: {isMaster: 1, helloOk: true, client: {...}} on admin.$cmd with
// numberToReturn -1.
std::string HandshakeQuery(bool with_selector) {
  RawMessage m(OpCode::kQuery, 99);
  m.Int32(0)
      .CString("admin.$cmd")
      .Int32(0)
      .Int32(-1)
      .Document(
          Doc(R"({"isMaster": 1, "helloOk": true, "client": {"driver": {"name": "PyMongo"}}})"));
  if (with_selector) m.Document(Doc(R"({"ismaster": 1})"));
  return m.Finish();
}

TEST(OpQueryTest, ParsesDriverHandshake) {
  auto sw = ParseOpQuery(HandshakeQuery(false));
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  const OpQuery& q = sw.value();
  EXPECT_EQ(q.flags, 0);
  EXPECT_EQ(q.full_collection_name, "admin.$cmd");
  EXPECT_EQ(q.Database(), "admin");
  EXPECT_TRUE(q.IsCommand());
  EXPECT_EQ(q.number_to_skip, 0);
  EXPECT_EQ(q.number_to_return, -1);
  EXPECT_EQ(q.query["isMaster"].Int32(), 1);
  EXPECT_TRUE(q.query.IsOwned());
  EXPECT_TRUE(q.return_fields_selector.IsEmpty());
}

TEST(OpQueryTest, ParsesOptionalReturnFieldsSelector) {
  auto sw = ParseOpQuery(HandshakeQuery(true));
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  EXPECT_EQ(sw.value().return_fields_selector["ismaster"].Int32(), 1);
}

TEST(OpQueryTest, BuildRoundTrips) {
  OpQuery q;
  q.flags = 4;
  q.full_collection_name = "test.coll";
  q.number_to_skip = 3;
  q.number_to_return = 10;
  q.query = Doc(R"({"x": {"$gt": 1}})");
  q.return_fields_selector = Doc(R"({"x": 1})");
  auto sw = ParseOpQuery(BuildOpQuery(5, q));
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  EXPECT_EQ(sw.value().flags, 4);
  EXPECT_EQ(sw.value().full_collection_name, "test.coll");
  EXPECT_FALSE(sw.value().IsCommand());
  EXPECT_EQ(sw.value().number_to_skip, 3);
  EXPECT_EQ(sw.value().number_to_return, 10);
  EXPECT_TRUE(sw.value().query.BinaryEqual(q.query));
  EXPECT_TRUE(sw.value().return_fields_selector.BinaryEqual(q.return_fields_selector));
}

TEST(OpQueryTest, RejectsLengthMismatchAndShortMessages) {
  std::string m = HandshakeQuery(false);
  EXPECT_EQ(ParseOpQuery(std::string_view(m).substr(0, m.size() - 1)).status().code(),
            ErrorCode::kProtocolError);
  EXPECT_EQ(ParseOpQuery(std::string_view(m).substr(0, 10)).status().code(),
            ErrorCode::kProtocolError);
  EXPECT_EQ(ParseOpQuery(RawMessage(OpCode::kQuery).Finish()).status().code(),
            ErrorCode::kProtocolError);
}

TEST(OpQueryTest, RejectsWrongOpCode) {
  std::string m = HandshakeQuery(false);
  int32_t op = 2013;
  std::memcpy(m.data() + 12, &op, 4);
  EXPECT_EQ(ParseOpQuery(m).status().code(), ErrorCode::kProtocolError);
}

TEST(OpQueryTest, RejectsUnterminatedCollectionName) {
  std::string m = RawMessage(OpCode::kQuery).Int32(0).Bytes("admin.$cmd").Finish();
  EXPECT_EQ(ParseOpQuery(m).status().code(), ErrorCode::kProtocolError);
}

TEST(OpQueryTest, RejectsMissingQueryDocument) {
  std::string m = RawMessage(OpCode::kQuery).Int32(0).CString("a.$cmd").Int32(0).Int32(1).Finish();
  EXPECT_EQ(ParseOpQuery(m).status().code(), ErrorCode::kInvalidBSON);
  std::string no_counts = RawMessage(OpCode::kQuery).Int32(0).CString("a.$cmd").Int32(0).Finish();
  EXPECT_EQ(ParseOpQuery(no_counts).status().code(), ErrorCode::kProtocolError);
}

TEST(OpQueryTest, RejectsInvalidBsonQuery) {
  std::string m = RawMessage(OpCode::kQuery)
                      .Int32(0)
                      .CString("a.$cmd")
                      .Int32(0)
                      .Int32(-1)
                      .Bytes(std::string("\x08\x00\x00\x00\x42\x61\x00\x00", 8))
                      .Finish();
  EXPECT_EQ(ParseOpQuery(m).status().code(), ErrorCode::kInvalidBSON);
}

TEST(OpQueryTest, RejectsTrailingBytes) {
  RawMessage m(OpCode::kQuery);
  m.Int32(0).CString("a.$cmd").Int32(0).Int32(-1).Document(Doc(R"({"ping": 1})"));
  m.Document(Doc("{}")).Bytes("zz");
  EXPECT_EQ(ParseOpQuery(m.Finish()).status().code(), ErrorCode::kProtocolError);
}

TEST(OpReplyTest, BuildWritesTheDocumentedLayout) {
  bson::BsonObj a = Doc(R"({"ismaster": true, "ok": 1})");
  bson::BsonObj b = Doc(R"({"x": 2})");
  std::string m = BuildOpReply(8, 99, {a, b});
  ASSERT_EQ(m.size(), 16u + 4 + 8 + 4 + 4 + a.size() + b.size());
  MsgHeader h = ParseHeader(m.data());
  EXPECT_EQ(h.message_length, static_cast<int32_t>(m.size()));
  EXPECT_EQ(h.request_id, 8);
  EXPECT_EQ(h.response_to, 99);
  EXPECT_EQ(h.op_code, 1);
  EXPECT_EQ(bson::ReadInt32(m.data() + 16), 0);  // responseFlags
  EXPECT_EQ(bson::ReadInt64(m.data() + 20), 0);  // cursorID
  EXPECT_EQ(bson::ReadInt32(m.data() + 28), 0);  // startingFrom
  EXPECT_EQ(bson::ReadInt32(m.data() + 32), 2);  // numberReturned
  EXPECT_EQ(m.substr(36, a.size()), a.bytes());

  auto sw = ParseOpReply(m);
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  ASSERT_EQ(sw.value().documents.size(), 2u);
  EXPECT_TRUE(sw.value().documents[1].BinaryEqual(b));
}

TEST(OpReplyTest, QueryFailureFlagIsCarried) {
  std::string m = BuildOpReply(1, 2, {Doc(R"({"$err": "bad", "code": 2})")}, kReplyQueryFailure);
  auto sw = ParseOpReply(m);
  ASSERT_TRUE(sw.ok());
  EXPECT_EQ(sw.value().response_flags, 2);
  EXPECT_EQ(sw.value().documents[0]["$err"].Str(), "bad");
}

TEST(OpReplyTest, RejectsCountMismatch) {
  std::string m = BuildOpReply(1, 2, {Doc("{}")});
  int32_t n = 2;
  std::memcpy(m.data() + 32, &n, 4);
  EXPECT_EQ(ParseOpReply(m).status().code(), ErrorCode::kInvalidBSON);
  n = -1;
  std::memcpy(m.data() + 32, &n, 4);
  EXPECT_EQ(ParseOpReply(m).status().code(), ErrorCode::kProtocolError);
  n = 0;
  std::memcpy(m.data() + 32, &n, 4);
  EXPECT_EQ(ParseOpReply(m).status().code(), ErrorCode::kProtocolError);
}

}  // namespace
}  // namespace hourglass::wire
