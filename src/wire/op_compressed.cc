#include "wire/op_compressed.h"

#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <limits>

#include "wire/byte_reader.h"
#include "wire/message.h"

namespace hourglass::wire {
namespace {

using internal::ByteReader;

Status Framing(std::string reason) { return Status(ErrorCode::kProtocolError, std::move(reason)); }

Status Corrupt(Compressor c, std::string_view detail) {
  return Framing("OP_COMPRESSED " + std::string(CompressorName(c)) +
                 " data is corrupt: " + std::string(detail));
}

// Decompresses `in` into exactly `expected` bytes.
StatusWith<std::string> Decompress(Compressor c, std::string_view in, size_t expected) {
  std::string out;
  switch (c) {
    case Compressor::kNoop:
      if (in.size() != expected) {
        return Framing("OP_COMPRESSED noop payload is " + std::to_string(in.size()) +
                       " bytes but uncompressedSize is " + std::to_string(expected));
      }
      return std::string(in);
    case Compressor::kSnappy: {
      size_t len = 0;
      if (!snappy::GetUncompressedLength(in.data(), in.size(), &len)) {
        return Corrupt(c, "bad length preamble");
      }
      if (len != expected) {
        return Framing("OP_COMPRESSED snappy data expands to " + std::to_string(len) +
                       " bytes but uncompressedSize is " + std::to_string(expected));
      }
      out.resize(expected);
      if (!snappy::RawUncompress(in.data(), in.size(), out.data())) {
        return Corrupt(c, "decompression failed");
      }
      return out;
    }
    case Compressor::kZlib: {
      // uncompress() takes uLong sizes; the caller keeps `expected` under 48 MB.
      out.resize(expected);
      uLongf out_len = static_cast<uLongf>(expected);
      // zlib writes nothing through a null destination when out_len is 0, but a non-null
      // pointer keeps it happy either way.
      char dummy = 0;
      Bytef* dst = reinterpret_cast<Bytef*>(expected == 0 ? &dummy : out.data());
      int rc = uncompress(dst, &out_len, reinterpret_cast<const Bytef*>(in.data()),
                          static_cast<uLong>(in.size()));
      if (rc == Z_BUF_ERROR && out_len == expected) {
        // Either the stream is longer than uncompressedSize or it is truncated; both are lies.
        return Framing("OP_COMPRESSED zlib data does not expand to uncompressedSize " +
                       std::to_string(expected));
      }
      if (rc != Z_OK) return Corrupt(c, zError(rc));
      if (out_len != expected) {
        return Framing("OP_COMPRESSED zlib data expands to " + std::to_string(out_len) +
                       " bytes but uncompressedSize is " + std::to_string(expected));
      }
      return out;
    }
    case Compressor::kZstd: {
      unsigned long long frame = ZSTD_getFrameContentSize(in.data(), in.size());
      if (frame == ZSTD_CONTENTSIZE_ERROR) return Corrupt(c, "not a zstd frame");
      if (frame != ZSTD_CONTENTSIZE_UNKNOWN && frame != expected) {
        return Framing("OP_COMPRESSED zstd data expands to " + std::to_string(frame) +
                       " bytes but uncompressedSize is " + std::to_string(expected));
      }
      out.resize(expected);
      char dummy = 0;
      size_t rc =
          ZSTD_decompress(expected == 0 ? &dummy : out.data(), expected, in.data(), in.size());
      if (ZSTD_isError(rc)) return Corrupt(c, ZSTD_getErrorName(rc));
      if (rc != expected) {
        return Framing("OP_COMPRESSED zstd data expands to " + std::to_string(rc) +
                       " bytes but uncompressedSize is " + std::to_string(expected));
      }
      return out;
    }
  }
  return Status(ErrorCode::kBadValue, "unknown compressor");
}

}  // namespace

std::string_view CompressorName(Compressor c) {
  switch (c) {
    case Compressor::kNoop:
      return "noop";
    case Compressor::kSnappy:
      return "snappy";
    case Compressor::kZlib:
      return "zlib";
    case Compressor::kZstd:
      return "zstd";
  }
  return "unknown";
}

std::optional<Compressor> CompressorFromName(std::string_view name) {
  for (Compressor c :
       {Compressor::kNoop, Compressor::kSnappy, Compressor::kZlib, Compressor::kZstd}) {
    if (CompressorName(c) == name) return c;
  }
  return std::nullopt;
}

StatusWith<std::pair<std::string, Compressor>> DecompressMessage(std::string_view message) {
  if (message.size() < static_cast<size_t>(kHeaderSize)) {
    return Framing("OP_COMPRESSED is " + std::to_string(message.size()) +
                   " bytes, shorter than the 16-byte header");
  }
  const MsgHeader header = ParseHeader(message.data());
  if (header.op_code != static_cast<int32_t>(OpCode::kCompressed)) {
    return Framing("expected OP_COMPRESSED (2012) but opCode is " + std::to_string(header.op_code));
  }
  if (header.message_length < 0 || static_cast<size_t>(header.message_length) != message.size()) {
    return Framing("OP_COMPRESSED messageLength " + std::to_string(header.message_length) +
                   " does not match the " + std::to_string(message.size()) + " bytes received");
  }
  if (header.message_length > kMaxMessageSizeBytes) {
    return Framing("OP_COMPRESSED of " + std::to_string(header.message_length) +
                   " bytes exceeds maxMessageSizeBytes");
  }
  ByteReader r(message.substr(kHeaderSize));
  int32_t original_opcode;
  int32_t uncompressed_size;
  uint8_t compressor_id;
  if (!r.ReadInt32(&original_opcode) || !r.ReadInt32(&uncompressed_size) ||
      !r.ReadUInt8(&compressor_id)) {
    return Framing("OP_COMPRESSED is truncated before its compressorId");
  }
  if (original_opcode == static_cast<int32_t>(OpCode::kCompressed)) {
    return Framing("OP_COMPRESSED may not wrap another OP_COMPRESSED");
  }
  if (!IsKnownOpCode(original_opcode)) {
    return Framing("OP_COMPRESSED originalOpcode " + std::to_string(original_opcode) +
                   " is unknown");
  }
  // Checked before any arithmetic or allocation: the peer chooses this number.
  if (uncompressed_size < 0 || uncompressed_size > kMaxMessageSizeBytes - kHeaderSize) {
    return Framing("OP_COMPRESSED uncompressedSize " + std::to_string(uncompressed_size) +
                   " is out of range (0 to " + std::to_string(kMaxMessageSizeBytes - kHeaderSize) +
                   ")");
  }
  if (compressor_id > static_cast<uint8_t>(Compressor::kZstd)) {
    return Status(ErrorCode::kBadValue,
                  "OP_COMPRESSED uses unknown compressorId " + std::to_string(compressor_id));
  }
  const auto compressor = static_cast<Compressor>(compressor_id);
  std::string_view payload;
  r.ReadBytes(r.remaining(), &payload);

  const int32_t original_length = uncompressed_size + kHeaderSize;
  const MsgHeader original{original_length, header.request_id, header.response_to, original_opcode};
  if (original_length < MinMessageLength(static_cast<OpCode>(original_opcode))) {
    return Framing("OP_COMPRESSED uncompressedSize " + std::to_string(uncompressed_size) +
                   " is too small for " + std::string(OpCodeName(original_opcode)));
  }
  HG_ASSIGN_OR_RETURN(std::string body,
                      Decompress(compressor, payload, static_cast<size_t>(uncompressed_size)));
  std::string out;
  out.reserve(static_cast<size_t>(original_length));
  AppendHeader(&out, original);
  out.append(body);
  return std::make_pair(std::move(out), compressor);
}

StatusWith<std::string> CompressMessage(std::string_view message, Compressor c) {
  if (message.size() < static_cast<size_t>(kHeaderSize)) {
    return Status(ErrorCode::kBadValue, "cannot compress a message shorter than its header");
  }
  const MsgHeader header = ParseHeader(message.data());
  if (header.message_length < 0 || static_cast<size_t>(header.message_length) != message.size()) {
    return Status(ErrorCode::kBadValue, "cannot compress a message whose messageLength " +
                                            std::to_string(header.message_length) +
                                            " does not match its size " +
                                            std::to_string(message.size()));
  }
  if (header.op_code == static_cast<int32_t>(OpCode::kCompressed)) {
    return Status(ErrorCode::kBadValue, "cannot compress an OP_COMPRESSED message");
  }
  if (header.message_length > kMaxMessageSizeBytes) {
    return Status(ErrorCode::kBadValue, "cannot compress a message over maxMessageSizeBytes");
  }
  const std::string_view body = message.substr(kHeaderSize);

  std::string out;
  AppendHeader(&out, MsgHeader{0, header.request_id, header.response_to,
                               static_cast<int32_t>(OpCode::kCompressed)});
  AppendInt32(&out, header.op_code);
  AppendInt32(&out, static_cast<int32_t>(body.size()));
  out.push_back(static_cast<char>(c));
  const size_t prefix = out.size();

  switch (c) {
    case Compressor::kNoop:
      out.append(body);
      break;
    case Compressor::kSnappy: {
      out.resize(prefix + snappy::MaxCompressedLength(body.size()));
      size_t n = 0;
      snappy::RawCompress(body.data(), body.size(), out.data() + prefix, &n);
      out.resize(prefix + n);
      break;
    }
    case Compressor::kZlib: {
      uLongf n = compressBound(static_cast<uLong>(body.size()));
      out.resize(prefix + n);
      int rc = compress2(reinterpret_cast<Bytef*>(out.data() + prefix), &n,
                         reinterpret_cast<const Bytef*>(body.data()),
                         static_cast<uLong>(body.size()), Z_DEFAULT_COMPRESSION);
      if (rc != Z_OK) {
        return Status(ErrorCode::kInternalError,
                      std::string("zlib compression failed: ") + zError(rc));
      }
      out.resize(prefix + n);
      break;
    }
    case Compressor::kZstd: {
      size_t bound = ZSTD_compressBound(body.size());
      out.resize(prefix + bound);
      size_t n =
          ZSTD_compress(out.data() + prefix, bound, body.data(), body.size(), ZSTD_CLEVEL_DEFAULT);
      if (ZSTD_isError(n)) {
        return Status(ErrorCode::kInternalError,
                      std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
      }
      out.resize(prefix + n);
      break;
    }
    default:
      return Status(ErrorCode::kBadValue,
                    "unknown compressor id " + std::to_string(static_cast<int>(c)));
  }
  if (out.size() > static_cast<size_t>(kMaxMessageSizeBytes)) {
    return Status(ErrorCode::kBadValue, "compressed message exceeds maxMessageSizeBytes");
  }
  PatchMessageLength(&out);
  return out;
}

}  // namespace hourglass::wire
