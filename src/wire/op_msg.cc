#include "wire/op_msg.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include "wire/byte_reader.h"
#include "base/crc32c.h"
#include "wire/message.h"

namespace hourglass::wire {
namespace {

using internal::ByteReader;
using internal::ReadBsonDocument;

Status Framing(std::string reason) { return Status(ErrorCode::kProtocolError, std::move(reason)); }

// Parses one kind-1 section whose size prefix has not been read yet.
Status ParseSequence(ByteReader* reader, DocumentSequence* seq) {
  int32_t size;
  if (!reader->ReadInt32(&size)) {
    return Framing("OP_MSG document sequence is truncated before its size");
  }
  // The size counts itself and at least the identifier's NUL.
  if (size < 5) {
    return Framing("OP_MSG document sequence has invalid size " + std::to_string(size));
  }
  ByteReader seq_reader("");
  if (!reader->Sub(static_cast<size_t>(size) - 4, &seq_reader)) {
    return Framing("OP_MSG document sequence size " + std::to_string(size) +
                   " runs past the end of the message (" + std::to_string(reader->remaining() + 4) +
                   " bytes left)");
  }
  std::string_view identifier;
  if (!seq_reader.ReadCString(&identifier)) {
    return Framing("OP_MSG document sequence identifier is not NUL-terminated within the section");
  }
  seq->identifier.assign(identifier);
  const std::string what = "OP_MSG document sequence '" + seq->identifier + "' document";
  while (!seq_reader.AtEnd()) {
    bson::BsonObj doc;
    HG_RETURN_IF_ERROR(ReadBsonDocument(&seq_reader, kMaxBsonInternalSize, what, &doc,
                                        static_cast<int64_t>(seq->documents.size())));
    seq->documents.push_back(std::move(doc));
  }
  return Status::OK();
}

}  // namespace

bson::BsonObj MergeSequences(const bson::BsonObj& body, std::span<const DocumentSequence> sequences,
                             std::optional<std::string_view> except) {
  if (std::none_of(sequences.begin(), sequences.end(),
                   [&](const DocumentSequence& seq) { return seq.identifier != except; })) {
    return body;
  }
  bson::BsonBuilder b;
  b.AppendElementsOf(body);
  for (const DocumentSequence& seq : sequences) {
    if (seq.identifier == except) continue;
    size_t token = b.OpenArray(seq.identifier);
    for (size_t i = 0; i < seq.documents.size(); ++i) {
      b.AppendObject(std::to_string(i), seq.documents[i]);
    }
    b.Close(token);
  }
  return b.Obj();
}

bson::BsonObj OpMsg::MergedBody() const { return MergeSequences(body, sequences); }

Status CheckSequenceIdentifiers(const bson::BsonObj& body,
                                std::span<const DocumentSequence> sequences) {
  std::set<std::string_view> seen;
  for (const DocumentSequence& seq : sequences) {
    if (!seen.insert(seq.identifier).second) {
      return Framing("OP_MSG has two document sequences named '" + seq.identifier + "'");
    }
    if (body.HasField(seq.identifier)) {
      return Framing("OP_MSG document sequence '" + seq.identifier +
                     "' duplicates a field of the body");
    }
  }
  return Status::OK();
}

namespace {
// Parses `message`; documents share `owner` (which holds `message`) or, if it is null, are copied.
StatusWith<OpMsg> ParseOpMsgImpl(std::string_view message,
                                 const std::shared_ptr<const std::string>& owner) {
  if (message.size() < static_cast<size_t>(kHeaderSize)) {
    return Framing("OP_MSG is " + std::to_string(message.size()) +
                   " bytes, shorter than the 16-byte header");
  }
  const MsgHeader header = ParseHeader(message.data());
  if (header.op_code != static_cast<int32_t>(OpCode::kMsg)) {
    return Framing("expected OP_MSG (2013) but opCode is " + std::to_string(header.op_code));
  }
  if (header.message_length < 0 || static_cast<size_t>(header.message_length) != message.size()) {
    return Framing("OP_MSG messageLength " + std::to_string(header.message_length) +
                   " does not match the " + std::to_string(message.size()) + " bytes received");
  }
  if (header.message_length > kMaxMessageSizeBytes) {
    return Framing("OP_MSG of " + std::to_string(header.message_length) +
                   " bytes exceeds maxMessageSizeBytes");
  }

  ByteReader reader(message.substr(kHeaderSize));
  OpMsg msg;
  if (!reader.ReadUInt32(&msg.flags)) return Framing("OP_MSG is truncated before its flagBits");
  const uint32_t unknown_required = msg.flags & kRequiredFlagsMask & ~kKnownRequiredFlags;
  if (unknown_required != 0) {
    return Framing("OP_MSG sets unknown required flag bits 0x" + [&] {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "%04x", unknown_required);
      return std::string(buf);
    }());
  }

  std::string_view sections = message.substr(kHeaderSize + 4);
  if (msg.checksum_present()) {
    if (sections.size() < 4) return Framing("OP_MSG checksumPresent is set but no checksum fits");
    const size_t body_end = message.size() - 4;
    uint32_t stored;
    std::memcpy(&stored, message.data() + body_end, 4);
    const uint32_t computed = Crc32c(message.substr(0, body_end));
    if (stored != computed) return Framing("OP_MSG checksum does not match");
    sections.remove_suffix(4);
  }

  ByteReader sec_reader(sections, owner);
  bool have_body = false;
  while (!sec_reader.AtEnd()) {
    uint8_t kind;
    sec_reader.ReadUInt8(&kind);
    if (kind == 0) {
      if (have_body) return Framing("OP_MSG has more than one body (kind 0) section");
      HG_RETURN_IF_ERROR(
          ReadBsonDocument(&sec_reader, kMaxBsonInternalSize, "OP_MSG body", &msg.body));
      have_body = true;
    } else if (kind == 1) {
      DocumentSequence seq;
      HG_RETURN_IF_ERROR(ParseSequence(&sec_reader, &seq));
      msg.sequences.push_back(std::move(seq));
    } else {
      return Framing("OP_MSG has unknown section kind " + std::to_string(kind));
    }
  }
  if (!have_body) return Framing("OP_MSG has no body (kind 0) section");
  HG_RETURN_IF_ERROR(CheckSequenceIdentifiers(msg.body, msg.sequences));
  return msg;
}

}  // namespace

StatusWith<OpMsg> ParseOpMsg(std::string_view message) { return ParseOpMsgImpl(message, nullptr); }

StatusWith<OpMsg> ParseOpMsg(std::shared_ptr<const std::string> message) {
  return ParseOpMsgImpl(*message, message);
}

namespace {

std::string BuildImpl(int32_t request_id, int32_t response_to, const bson::BsonObj& body,
                      uint32_t flags, const std::vector<DocumentSequence>* sequences) {
  std::string out;
  size_t total = kHeaderSize + 4 + 1 + static_cast<size_t>(body.size());
  if (sequences != nullptr) {
    for (const DocumentSequence& seq : *sequences) {
      total += 1 + 4 + seq.identifier.size() + 1;
      for (const bson::BsonObj& d : seq.documents) total += static_cast<size_t>(d.size());
    }
  }
  if ((flags & kChecksumPresent) != 0) total += 4;
  invariant(total <= static_cast<size_t>(std::numeric_limits<int32_t>::max()));
  out.reserve(total);
  AppendHeader(&out, MsgHeader{static_cast<int32_t>(total), request_id, response_to,
                               static_cast<int32_t>(OpCode::kMsg)});
  AppendUInt32(&out, flags);
  out.push_back('\0');
  out.append(body.bytes());
  if (sequences != nullptr) {
    for (const DocumentSequence& seq : *sequences) {
      out.push_back('\1');
      const size_t size_at = out.size();
      AppendInt32(&out, 0);
      out.append(seq.identifier);
      out.push_back('\0');
      for (const bson::BsonObj& d : seq.documents) out.append(d.bytes());
      const int32_t size = static_cast<int32_t>(out.size() - size_at);
      std::memcpy(out.data() + size_at, &size, 4);
    }
  }
  if ((flags & kChecksumPresent) != 0) AppendUInt32(&out, Crc32c(out));
  invariant(out.size() == total);
  return out;
}

}  // namespace

std::string BuildOpMsg(int32_t request_id, int32_t response_to, const bson::BsonObj& body,
                       uint32_t flags) {
  return BuildImpl(request_id, response_to, body, flags, nullptr);
}

std::string BuildOpMsg(int32_t request_id, int32_t response_to, const OpMsg& msg) {
  return BuildImpl(request_id, response_to, msg.body, msg.flags, &msg.sequences);
}

}  // namespace hourglass::wire
