// The MongoDB wire protocol's standard message header and the limits every message obeys.
//
// Every message starts with a 16-byte header of four little-endian int32s: messageLength (the
// whole message, header included), requestID, responseTo and opCode. The net layer reads those
// 16 bytes, calls ParseHeader + CheckHeader, and only then reads messageLength - 16 more bytes;
// CheckHeader therefore is the guard that keeps a hostile peer from making us allocate absurd
// buffers. Everything here is a pure function on bytes: thread-safe, no sockets, no allocation
// beyond the returned values.
//
// Errors: ProtocolError (17) for a header that cannot start a valid message (length too small
// for its opcode, larger than kMaxMessageSizeBytes, unknown opcode).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace hourglass::wire {

enum class OpCode : int32_t {
  kReply = 1,
  kUpdate = 2001,
  kInsert = 2002,
  kQuery = 2004,
  kGetMore = 2005,
  kDelete = 2006,
  kKillCursors = 2007,
  kCompressed = 2012,
  kMsg = 2013,
};

struct MsgHeader {
  int32_t message_length;
  int32_t request_id;
  int32_t response_to;
  int32_t op_code;
};

// maxMessageSizeBytes as advertised by hello.
constexpr int32_t kMaxMessageSizeBytes = 48000000;
// maxBsonObjectSize as advertised by hello (user documents).
constexpr int32_t kMaxBsonObjectSize = 16 * 1024 * 1024;
// Command bodies may exceed kMaxBsonObjectSize by this much (MongoDB's BSONObjMaxInternalSize).
constexpr int32_t kMaxBsonInternalSize = kMaxBsonObjectSize + 16 * 1024;
constexpr int kHeaderSize = 16;

// Decodes the first 16 bytes at `sixteen_bytes` (no alignment requirement, no validation).
MsgHeader ParseHeader(const char* sixteen_bytes);

// Validates a header just read from a socket: messageLength must be at least 16 and large enough
// for the opcode's fixed fields, at most kMaxMessageSizeBytes, and the opcode must be one of
// OpCode. Every OpCode value is accepted here (legacy opcodes too); which ones a server serves
// is the dispatcher's decision. Returns ProtocolError (17) with the reason otherwise.
Status CheckHeader(const MsgHeader& h);

// The smallest messageLength a well-formed message with opcode `op` can have, header included.
int32_t MinMessageLength(OpCode op);

// True if `op_code` names one of the OpCode values.
bool IsKnownOpCode(int32_t op_code);

// "OP_MSG", "OP_QUERY", ... for logs; "unknown" otherwise.
std::string_view OpCodeName(int32_t op_code);

// Appends the 16-byte header to `out`.
void AppendHeader(std::string* out, const MsgHeader& h);

// Little-endian append helpers used by the builders.
void AppendInt32(std::string* out, int32_t v);
void AppendUInt32(std::string* out, uint32_t v);
void AppendInt64(std::string* out, int64_t v);

// Overwrites the messageLength field of the message in `out` (which starts at offset 0) with
// out->size(). Invariant: the size fits in int32.
void PatchMessageLength(std::string* out);

}  // namespace hourglass::wire
