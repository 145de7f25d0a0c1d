// Helpers shared by the wire module's tests: building documents and raw messages byte by byte,
// so malformed inputs can be written exactly.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>

#include "bson/bson.h"
#include "wire/message.h"

namespace hourglass::wire::testing {

inline bson::BsonObj Doc(std::string_view json) {
  auto sw = bson::FromJson(json);
  EXPECT_TRUE(sw.ok()) << sw.status().ToString();
  return sw.ok() ? sw.value() : bson::BsonObj();
}

// Accumulates a message body; Finish() prepends a header whose length is the real size unless
// `length_override` is given.
class RawMessage {
 public:
  explicit RawMessage(OpCode op, int32_t request_id = 7, int32_t response_to = 0)
      : op_(static_cast<int32_t>(op)), request_id_(request_id), response_to_(response_to) {}
  explicit RawMessage(int32_t raw_op) : op_(raw_op), request_id_(7), response_to_(0) {}

  RawMessage& Int32(int32_t v) {
    AppendInt32(&body_, v);
    return *this;
  }
  RawMessage& UInt32(uint32_t v) {
    AppendUInt32(&body_, v);
    return *this;
  }
  RawMessage& Int64(int64_t v) {
    AppendInt64(&body_, v);
    return *this;
  }
  RawMessage& Byte(uint8_t v) {
    body_.push_back(static_cast<char>(v));
    return *this;
  }
  RawMessage& CString(std::string_view s) {
    body_.append(s);
    body_.push_back('\0');
    return *this;
  }
  RawMessage& Bytes(std::string_view s) {
    body_.append(s);
    return *this;
  }
  RawMessage& Document(const bson::BsonObj& o) { return Bytes(o.bytes()); }
  // A kind-1 section with a correct size prefix.
  RawMessage& Sequence(std::string_view id, const std::vector<bson::BsonObj>& docs) {
    std::string payload(id);
    payload.push_back('\0');
    for (const auto& d : docs) payload.append(d.bytes());
    Byte(1);
    Int32(static_cast<int32_t>(payload.size() + 4));
    return Bytes(payload);
  }

  std::string Finish(int32_t length_override = -1) const {
    std::string out;
    int32_t len =
        length_override >= 0 ? length_override : static_cast<int32_t>(kHeaderSize + body_.size());
    AppendHeader(&out, MsgHeader{len, request_id_, response_to_, op_});
    out.append(body_);
    return out;
  }

 private:
  int32_t op_;
  int32_t request_id_;
  int32_t response_to_;
  std::string body_;
};

}  // namespace hourglass::wire::testing
