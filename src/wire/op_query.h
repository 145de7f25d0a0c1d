// Legacy OP_QUERY (2004) and OP_REPLY (1), kept for the one place modern clients still use them:
// the first hello/isMaster of a connection (pymongo, the Node.js driver, legacy tools). See the
// MongoDB manual's "Legacy Opcodes" page for the layouts.
//
// OP_QUERY after the header: int32 flags, cstring fullCollectionName ("db.$cmd" for commands),
// int32 numberToSkip, int32 numberToReturn, document query, optional document
// returnFieldsSelector. OP_REPLY: int32 responseFlags, int64 cursorID, int32 startingFrom,
// int32 numberReturned, then that many documents.
//
// ParseOpQuery copies the documents it returns (they own their bytes). Pure functions,
// thread-safe. Errors: ProtocolError (17) for framing problems (length mismatch, truncation,
// trailing bytes), InvalidBSON (22) for invalid documents, BSONObjectTooLarge (10334) for a
// document over kMaxBsonInternalSize.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::wire {

// OP_REPLY responseFlags bits.
constexpr int32_t kReplyCursorNotFound = 1 << 0;
constexpr int32_t kReplyQueryFailure = 1 << 1;  // the single document is {$err: ..., code: ...}
constexpr int32_t kReplyAwaitCapable = 1 << 3;

struct OpQuery {
  int32_t flags = 0;
  std::string full_collection_name;
  int32_t number_to_skip = 0;
  int32_t number_to_return = 0;
  bson::BsonObj query;
  bson::BsonObj return_fields_selector;  // empty document if absent

  // "admin" for "admin.$cmd": the part before the first '.'.
  std::string_view Database() const;
  // True if the namespace is "<db>.$cmd", i.e. the query is a command.
  bool IsCommand() const;
};

// Parses a complete OP_QUERY message, header included.
StatusWith<OpQuery> ParseOpQuery(std::string_view message);

// Serializes an OP_QUERY (for tests and tools).
std::string BuildOpQuery(int32_t request_id, const OpQuery& q);

// Serializes an OP_REPLY: responseFlags `response_flags` (0 normally; kReplyQueryFailure for
// $err replies), cursorID 0, startingFrom 0, numberReturned = docs.size(), then the documents.
std::string BuildOpReply(int32_t request_id, int32_t response_to,
                         const std::vector<bson::BsonObj>& docs, int32_t response_flags = 0);

struct OpReply {
  int32_t response_flags = 0;
  int64_t cursor_id = 0;
  int32_t starting_from = 0;
  std::vector<bson::BsonObj> documents;
};

// Parses a complete OP_REPLY (for tests and tools); numberReturned must match the documents.
StatusWith<OpReply> ParseOpReply(std::string_view message);

}  // namespace hourglass::wire
