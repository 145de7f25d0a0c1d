#include "wire/message.h"

#include <bit>
#include <cstring>
#include <limits>

namespace hourglass::wire {

// The wire format is little-endian and we copy integers with memcpy; a big-endian port would
// need byte swaps in ParseHeader, the Append* helpers and ByteReader.
static_assert(std::endian::native == std::endian::little, "wire code assumes a little-endian host");

MsgHeader ParseHeader(const char* sixteen_bytes) {
  MsgHeader h;
  std::memcpy(&h.message_length, sixteen_bytes, 4);
  std::memcpy(&h.request_id, sixteen_bytes + 4, 4);
  std::memcpy(&h.response_to, sixteen_bytes + 8, 4);
  std::memcpy(&h.op_code, sixteen_bytes + 12, 4);
  return h;
}

bool IsKnownOpCode(int32_t op_code) {
  switch (static_cast<OpCode>(op_code)) {
    case OpCode::kReply:
    case OpCode::kUpdate:
    case OpCode::kInsert:
    case OpCode::kQuery:
    case OpCode::kGetMore:
    case OpCode::kDelete:
    case OpCode::kKillCursors:
    case OpCode::kCompressed:
    case OpCode::kMsg:
      return true;
  }
  return false;
}

std::string_view OpCodeName(int32_t op_code) {
  switch (static_cast<OpCode>(op_code)) {
    case OpCode::kReply:
      return "OP_REPLY";
    case OpCode::kUpdate:
      return "OP_UPDATE";
    case OpCode::kInsert:
      return "OP_INSERT";
    case OpCode::kQuery:
      return "OP_QUERY";
    case OpCode::kGetMore:
      return "OP_GET_MORE";
    case OpCode::kDelete:
      return "OP_DELETE";
    case OpCode::kKillCursors:
      return "OP_KILL_CURSORS";
    case OpCode::kCompressed:
      return "OP_COMPRESSED";
    case OpCode::kMsg:
      return "OP_MSG";
  }
  return "unknown";
}

int32_t MinMessageLength(OpCode op) {
  // Header plus each opcode's fixed fields; a cstring is at least its NUL, a document at least 5
  // bytes. Legacy layouts are from the MongoDB wire protocol reference ("legacy opcodes").
  constexpr int32_t kCString = 1;
  constexpr int32_t kMinDoc = 5;
  switch (op) {
    case OpCode::kReply:  // responseFlags, cursorID, startingFrom, numberReturned
      return kHeaderSize + 4 + 8 + 4 + 4;
    case OpCode::kUpdate:  // ZERO, collection, flags, selector, update
      return kHeaderSize + 4 + kCString + 4 + kMinDoc + kMinDoc;
    case OpCode::kInsert:  // flags, collection, one or more documents
      return kHeaderSize + 4 + kCString + kMinDoc;
    case OpCode::kQuery:  // flags, collection, skip, return, query
      return kHeaderSize + 4 + kCString + 4 + 4 + kMinDoc;
    case OpCode::kGetMore:  // ZERO, collection, numberToReturn, cursorID
      return kHeaderSize + 4 + kCString + 4 + 8;
    case OpCode::kDelete:  // ZERO, collection, flags, selector
      return kHeaderSize + 4 + kCString + 4 + kMinDoc;
    case OpCode::kKillCursors:  // ZERO, numberOfCursorIDs
      return kHeaderSize + 4 + 4;
    case OpCode::kCompressed:  // originalOpcode, uncompressedSize, compressorId
      return kHeaderSize + 4 + 4 + 1;
    case OpCode::kMsg:  // flagBits, one kind-0 section
      return kHeaderSize + 4 + 1 + kMinDoc;
  }
  return kHeaderSize;
}

Status CheckHeader(const MsgHeader& h) {
  if (h.message_length < kHeaderSize) {
    return Status(ErrorCode::kProtocolError, "message length " + std::to_string(h.message_length) +
                                                 " is smaller than the 16-byte header");
  }
  if (h.message_length > kMaxMessageSizeBytes) {
    return Status(ErrorCode::kProtocolError, "message length " + std::to_string(h.message_length) +
                                                 " exceeds maxMessageSizeBytes (" +
                                                 std::to_string(kMaxMessageSizeBytes) + ")");
  }
  if (!IsKnownOpCode(h.op_code)) {
    return Status(ErrorCode::kProtocolError, "unknown opCode " + std::to_string(h.op_code));
  }
  int32_t min = MinMessageLength(static_cast<OpCode>(h.op_code));
  if (h.message_length < min) {
    return Status(ErrorCode::kProtocolError, "message length " + std::to_string(h.message_length) +
                                                 " is too small for " +
                                                 std::string(OpCodeName(h.op_code)) +
                                                 " (at least " + std::to_string(min) + " bytes)");
  }
  return Status::OK();
}

void AppendInt32(std::string* out, int32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out->append(b, 4);
}

void AppendUInt32(std::string* out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out->append(b, 4);
}

void AppendInt64(std::string* out, int64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out->append(b, 8);
}

void AppendHeader(std::string* out, const MsgHeader& h) {
  AppendInt32(out, h.message_length);
  AppendInt32(out, h.request_id);
  AppendInt32(out, h.response_to);
  AppendInt32(out, h.op_code);
}

void PatchMessageLength(std::string* out) {
  invariant(out->size() >= static_cast<size_t>(kHeaderSize) &&
            out->size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()));
  int32_t len = static_cast<int32_t>(out->size());
  std::memcpy(out->data(), &len, 4);
}

}  // namespace hourglass::wire
