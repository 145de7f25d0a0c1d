// OP_MSG (opcode 2013), the message every modern driver uses for every command
// (mongodb/specifications source/message/OP_MSG.md).
//
// Layout after the 16-byte header: uint32 flagBits, then sections until the end of the message
// (or until the trailing uint32 CRC-32C when flagBits bit 0 is set). A kind-0 section is one BSON
// document, the command body; there must be exactly one. A kind-1 section is int32 size (counting
// itself), a cstring identifier, then BSON documents filling the rest of the size: drivers send
// insert's "documents", update's "updates" and delete's "deletes" this way.
//
// Either every returned document is a copy (ParseOpMsg(string_view)), or every one shares the
// message buffer (ParseOpMsg(shared_ptr)); either way the OpMsg keeps its bytes alive by itself.
// Pure functions, thread-safe.
//
// Limits enforced: messageLength equal to the buffer size and <= kMaxMessageSizeBytes; flag
// bits 2-15 (required, unknown to us) rejected, bits 16-31 ignored except exhaustAllowed;
// each document <= kMaxBsonInternalSize (16 MiB + 16 KiB).
// Errors: ProtocolError (17) for framing problems, InvalidBSON (22) for a document that fails
// bson::ValidateBson or whose length runs past its section, BSONObjectTooLarge (10334) for a
// document over the limit.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::wire {

constexpr uint32_t kChecksumPresent = 1u << 0;
constexpr uint32_t kMoreToCome = 1u << 1;
constexpr uint32_t kExhaustAllowed = 1u << 16;
// Bits 0-15 are "required": a receiver that does not know one must reject the message.
constexpr uint32_t kRequiredFlagsMask = 0xFFFFu;
constexpr uint32_t kKnownRequiredFlags = kChecksumPresent | kMoreToCome;

struct DocumentSequence {
  std::string identifier;
  std::vector<bson::BsonObj> documents;
};

struct OpMsg {
  uint32_t flags = 0;
  bson::BsonObj body;
  std::vector<DocumentSequence> sequences;

  bool more_to_come() const { return (flags & kMoreToCome) != 0; }
  bool exhaust_allowed() const { return (flags & kExhaustAllowed) != 0; }
  bool checksum_present() const { return (flags & kChecksumPresent) != 0; }

  // MergeSequences(body, sequences).
  bson::BsonObj MergedBody() const;
};

// `body` with each of `sequences` appended as an array field named by its identifier, in
// sequence order (e.g. {insert: "c", $db: "d", documents: [...]}), leaving out the sequence named
// `except` if any: a copy of every document, or `body` itself when no sequence is left to
// append. Commands read the sequences they take in place; this serves the others. Precondition: no
// identifier repeats a body field or another identifier — ParseOpMsg guarantees it (and
// CheckSequenceIdentifiers tests it for hand-built messages).
bson::BsonObj MergeSequences(const bson::BsonObj& body, std::span<const DocumentSequence> sequences,
                             std::optional<std::string_view> except = std::nullopt);

// ProtocolError if a sequence identifier duplicates a body field or another sequence.
Status CheckSequenceIdentifiers(const bson::BsonObj& body,
                                std::span<const DocumentSequence> sequences);

// Parses a complete OP_MSG message, header included. Verifies the CRC-32C when checksumPresent
// is set. See the file comment for the checks and error codes.
StatusWith<OpMsg> ParseOpMsg(std::string_view message);
// As above, but the returned documents are views sharing `message` instead of copies (the server's
// receive path: one buffer per message, no per-document allocation).
StatusWith<OpMsg> ParseOpMsg(std::shared_ptr<const std::string> message);

// Serializes a reply: header (requestID = request_id, responseTo = response_to, opCode 2013),
// `flags`, one kind-0 section holding `body`, and the CRC-32C if flags has kChecksumPresent.
std::string BuildOpMsg(int32_t request_id, int32_t response_to, const bson::BsonObj& body,
                       uint32_t flags = 0);

// Same, with msg.flags, msg.body and one kind-1 section per entry of msg.sequences.
std::string BuildOpMsg(int32_t request_id, int32_t response_to, const OpMsg& msg);

}  // namespace hourglass::wire
