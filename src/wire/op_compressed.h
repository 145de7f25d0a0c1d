// OP_COMPRESSED (2012): another message with its body compressed
// (mongodb/specifications source/compression/OP_COMPRESSED.md).
//
// Layout after the 16-byte header: int32 originalOpcode, int32 uncompressedSize (the original
// message's size without its header), uint8 compressorId, then the compressed bytes of the
// original message's body (everything after its header). Compressor ids: 0 noop, 1 snappy,
// 2 zlib, 3 zstd. The compressor is chosen per connection from the client's handshake list; the
// reply to a compressed request uses the request's compressor.
//
// Pure functions, thread-safe, no sockets. Decompression never trusts the input: sizes are
// checked before allocating, the output must be exactly uncompressedSize bytes, and corrupt
// data is an error, never a crash.
// Errors: ProtocolError (17) for framing (length mismatch, truncation, nested OP_COMPRESSED,
// size limits, size mismatch after decompression), BadValue (2) for an unknown compressor id
// or an uncompressible input message, InvalidBSON is never returned (the decompressed message
// is parsed by the caller).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/status.h"

namespace hourglass::wire {

enum class Compressor : uint8_t { kNoop = 0, kSnappy = 1, kZlib = 2, kZstd = 3 };

// "noop", "snappy", "zlib", "zstd".
std::string_view CompressorName(Compressor c);
// The compressor named `name` (the handshake's `compression` strings); nullopt if unknown.
std::optional<Compressor> CompressorFromName(std::string_view name);

// Given a complete OP_COMPRESSED message, returns the original message (a fresh 16-byte header
// with the same requestID/responseTo and the original opcode, then the decompressed body) and
// the compressor used.
StatusWith<std::pair<std::string, Compressor>> DecompressMessage(std::string_view message);

// Wraps a complete message (header included; not itself OP_COMPRESSED) into OP_COMPRESSED with
// compressor `c` (zlib and zstd at their default levels), keeping requestID and responseTo.
StatusWith<std::string> CompressMessage(std::string_view message, Compressor c);

}  // namespace hourglass::wire
