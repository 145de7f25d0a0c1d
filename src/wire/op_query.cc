#include "wire/op_query.h"

#include <limits>

#include "wire/byte_reader.h"
#include "wire/message.h"

namespace hourglass::wire {
namespace {

using internal::ByteReader;
using internal::ReadBsonDocument;

Status Framing(std::string reason) { return Status(ErrorCode::kProtocolError, std::move(reason)); }

// Checks the header of a complete message of opcode `op` and returns a reader over its body.
Status CheckFraming(std::string_view message, OpCode op, std::string_view name,
                    std::string_view* body) {
  if (message.size() < static_cast<size_t>(kHeaderSize)) {
    return Framing(std::string(name) + " is " + std::to_string(message.size()) +
                   " bytes, shorter than the 16-byte header");
  }
  const MsgHeader header = ParseHeader(message.data());
  if (header.op_code != static_cast<int32_t>(op)) {
    return Framing("expected " + std::string(name) + " but opCode is " +
                   std::to_string(header.op_code));
  }
  if (header.message_length < 0 || static_cast<size_t>(header.message_length) != message.size()) {
    return Framing(std::string(name) + " messageLength " + std::to_string(header.message_length) +
                   " does not match the " + std::to_string(message.size()) + " bytes received");
  }
  if (header.message_length > kMaxMessageSizeBytes) {
    return Framing(std::string(name) + " of " + std::to_string(header.message_length) +
                   " bytes exceeds maxMessageSizeBytes");
  }
  *body = message.substr(kHeaderSize);
  return Status::OK();
}

}  // namespace

std::string_view OpQuery::Database() const {
  std::string_view ns = full_collection_name;
  return ns.substr(0, ns.find('.'));
}

bool OpQuery::IsCommand() const {
  std::string_view ns = full_collection_name;
  size_t dot = ns.find('.');
  return dot != std::string_view::npos && ns.substr(dot + 1) == "$cmd";
}

StatusWith<OpQuery> ParseOpQuery(std::string_view message) {
  std::string_view body;
  HG_RETURN_IF_ERROR(CheckFraming(message, OpCode::kQuery, "OP_QUERY", &body));
  ByteReader r(body);
  OpQuery q;
  if (!r.ReadInt32(&q.flags)) return Framing("OP_QUERY is truncated before its flags");
  std::string_view ns;
  if (!r.ReadCString(&ns)) return Framing("OP_QUERY fullCollectionName is not NUL-terminated");
  q.full_collection_name.assign(ns);
  if (!r.ReadInt32(&q.number_to_skip) || !r.ReadInt32(&q.number_to_return)) {
    return Framing("OP_QUERY is truncated before numberToSkip/numberToReturn");
  }
  HG_RETURN_IF_ERROR(ReadBsonDocument(&r, kMaxBsonInternalSize, "OP_QUERY query", &q.query));
  if (!r.AtEnd()) {
    HG_RETURN_IF_ERROR(ReadBsonDocument(&r, kMaxBsonInternalSize, "OP_QUERY returnFieldsSelector",
                                        &q.return_fields_selector));
  }
  if (!r.AtEnd()) {
    return Framing("OP_QUERY has " + std::to_string(r.remaining()) +
                   " unexpected bytes after returnFieldsSelector");
  }
  return q;
}

std::string BuildOpQuery(int32_t request_id, const OpQuery& q) {
  std::string out;
  AppendHeader(&out, MsgHeader{0, request_id, 0, static_cast<int32_t>(OpCode::kQuery)});
  AppendInt32(&out, q.flags);
  out.append(q.full_collection_name);
  out.push_back('\0');
  AppendInt32(&out, q.number_to_skip);
  AppendInt32(&out, q.number_to_return);
  out.append(q.query.bytes());
  if (!q.return_fields_selector.IsEmpty()) out.append(q.return_fields_selector.bytes());
  PatchMessageLength(&out);
  return out;
}

std::string BuildOpReply(int32_t request_id, int32_t response_to,
                         const std::vector<bson::BsonObj>& docs, int32_t response_flags) {
  std::string out;
  size_t total = kHeaderSize + 4 + 8 + 4 + 4;
  for (const bson::BsonObj& d : docs) total += static_cast<size_t>(d.size());
  invariant(total <= static_cast<size_t>(std::numeric_limits<int32_t>::max()));
  out.reserve(total);
  AppendHeader(&out, MsgHeader{static_cast<int32_t>(total), request_id, response_to,
                               static_cast<int32_t>(OpCode::kReply)});
  AppendInt32(&out, response_flags);
  AppendInt64(&out, 0);  // cursorID: commands never leave an OP_REPLY cursor open
  AppendInt32(&out, 0);  // startingFrom
  AppendInt32(&out, static_cast<int32_t>(docs.size()));
  for (const bson::BsonObj& d : docs) out.append(d.bytes());
  return out;
}

StatusWith<OpReply> ParseOpReply(std::string_view message) {
  std::string_view body;
  HG_RETURN_IF_ERROR(CheckFraming(message, OpCode::kReply, "OP_REPLY", &body));
  ByteReader r(body);
  OpReply reply;
  int32_t number_returned;
  if (!r.ReadInt32(&reply.response_flags) || !r.ReadInt64(&reply.cursor_id) ||
      !r.ReadInt32(&reply.starting_from) || !r.ReadInt32(&number_returned)) {
    return Framing("OP_REPLY is truncated before its documents");
  }
  if (number_returned < 0) {
    return Framing("OP_REPLY numberReturned is negative: " + std::to_string(number_returned));
  }
  for (int32_t i = 0; i < number_returned; ++i) {
    bson::BsonObj doc;
    HG_RETURN_IF_ERROR(
        ReadBsonDocument(&r, kMaxBsonInternalSize, "OP_REPLY document " + std::to_string(i), &doc));
    reply.documents.push_back(std::move(doc));
  }
  if (!r.AtEnd()) {
    return Framing("OP_REPLY has " + std::to_string(r.remaining()) +
                   " bytes after its numberReturned documents");
  }
  return reply;
}

}  // namespace hourglass::wire
