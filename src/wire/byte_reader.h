// Internal to src/wire: a bounds-checked little-endian cursor over a byte range. Every read
// checks the remaining length first, so parsers built on it cannot overread whatever the input.
// Not part of the module's public API.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::wire::internal {

class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}
  // A reader over bytes inside `owner`: documents read from it share `owner` instead of copying.
  ByteReader(std::string_view data, std::shared_ptr<const std::string> owner)
      : data_(data), owner_(std::move(owner)) {}
  // A reader over `n` bytes at the cursor (consumed from this reader), with the same owner.
  bool Sub(size_t n, ByteReader* out) {
    std::string_view bytes;
    if (!ReadBytes(n, &bytes)) return false;
    *out = ByteReader(bytes, owner_);
    return true;
  }
  const std::shared_ptr<const std::string>& owner() const { return owner_; }

  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }
  bool AtEnd() const { return pos_ == data_.size(); }
  const char* current() const { return data_.data() + pos_; }

  bool ReadInt32(int32_t* v) { return ReadRaw(v, 4); }
  bool ReadUInt32(uint32_t* v) { return ReadRaw(v, 4); }
  bool ReadInt64(int64_t* v) { return ReadRaw(v, 8); }
  bool ReadUInt8(uint8_t* v) { return ReadRaw(v, 1); }

  // Reads a NUL-terminated string (without its terminator); false if no NUL before the end.
  bool ReadCString(std::string_view* out) {
    const void* nul = std::memchr(current(), 0, remaining());
    if (nul == nullptr) return false;
    size_t len = static_cast<const char*>(nul) - current();
    *out = std::string_view(current(), len);
    pos_ += len + 1;
    return true;
  }

  // Takes the next `n` bytes; false if fewer remain.
  bool ReadBytes(size_t n, std::string_view* out) {
    if (n > remaining()) return false;
    *out = std::string_view(current(), n);
    pos_ += n;
    return true;
  }

  // Peeks the int32 length prefix of a BSON document at the cursor without consuming it.
  bool PeekInt32(int32_t* v) const {
    if (remaining() < 4) return false;
    std::memcpy(v, current(), 4);
    return true;
  }

 private:
  bool ReadRaw(void* v, size_t n) {
    if (n > remaining()) return false;
    std::memcpy(v, current(), n);
    pos_ += n;
    return true;
  }

  std::string_view data_;
  size_t pos_ = 0;
  std::shared_ptr<const std::string> owner_;  // null: documents are copied
};

// Reads one BSON document at the cursor, validates it with bson::ValidateBson and returns it in
// *out: a view sharing the reader's owner, or an owned copy when the reader has none. `what` names
// the document in error reasons ("OP_MSG body"), followed by `index` if not negative. Errors:
// InvalidBSON (22) for a bad length prefix, a document running past the reader's end, or invalid
// contents; BSONObjectTooLarge (10334) if it is longer than `max_size`.
Status ReadBsonDocument(ByteReader* reader, int32_t max_size, std::string_view what,
                        bson::BsonObj* out, int64_t index = -1);

}  // namespace hourglass::wire::internal
