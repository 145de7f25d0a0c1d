#include "wire/byte_reader.h"

#include <cstring>
#include <string>

namespace hourglass::wire::internal {
namespace {

constexpr int kMaxNesting = 200;

bool ReadLen(const char* p, size_t avail, int32_t* v) {
  if (avail < 4) return false;
  std::memcpy(v, p, 4);
  return true;
}

// Walks one document of exactly `n` bytes checking that every length stays inside it. This
// duplicates part of bson::ValidateBson on purpose: libbson 1.23's bson_validate accepts some
// truncated documents (a string with invalid UTF-8 followed by an element whose length runs past
// the end), and the views in bson.h trust lengths, so the wire layer — the first to see
// untrusted bytes — re-checks the structure itself.
bool StructureOk(const char* p, size_t n, int depth) {
  if (depth > kMaxNesting || n < 5 || p[n - 1] != 0) return false;
  int32_t declared;
  std::memcpy(&declared, p, 4);
  if (declared < 5 || static_cast<size_t>(declared) != n) return false;
  const size_t end = n - 1;  // the terminating NUL
  size_t pos = 4;
  while (pos < end) {
    const auto type = static_cast<int8_t>(p[pos++]);
    const void* nul = std::memchr(p + pos, 0, end - pos);
    if (nul == nullptr) return false;
    pos = static_cast<size_t>(static_cast<const char*>(nul) - p) + 1;
    const size_t avail = end - pos;
    size_t value = 0;
    int32_t len = 0;
    switch (type) {
      case 1:
      case 9:
      case 17:
      case 18:  // double, date, timestamp, int64
        value = 8;
        break;
      case 16:  // int32
        value = 4;
        break;
      case 19:  // decimal128
        value = 16;
        break;
      case 7:  // ObjectId
        value = 12;
        break;
      case 8:  // bool
        value = 1;
        break;
      case 6:
      case 10:
      case -1:
      case 127:  // undefined, null, minKey, maxKey
        value = 0;
        break;
      case 2:
      case 13:
      case 14:  // string, code, symbol
      case 12:  // DBPointer: string + ObjectId
        if (!ReadLen(p + pos, avail, &len) || len < 1 || static_cast<size_t>(len) > avail - 4 ||
            p[pos + 4 + len - 1] != 0) {
          return false;
        }
        value = 4 + static_cast<size_t>(len) + (type == 12 ? 12 : 0);
        break;
      case 3:
      case 4:  // document, array
        if (!ReadLen(p + pos, avail, &len) || len < 5 || static_cast<size_t>(len) > avail ||
            !StructureOk(p + pos, static_cast<size_t>(len), depth + 1)) {
          return false;
        }
        value = static_cast<size_t>(len);
        break;
      case 5:  // binary: int32 length, subtype, bytes
        if (!ReadLen(p + pos, avail, &len) || len < 0 || static_cast<size_t>(len) > avail - 4) {
          return false;
        }
        value = 4 + 1 + static_cast<size_t>(len);
        break;
      case 11: {  // regex: two cstrings
        const void* a = std::memchr(p + pos, 0, avail);
        if (a == nullptr) return false;
        size_t first = static_cast<size_t>(static_cast<const char*>(a) - (p + pos)) + 1;
        const void* b = std::memchr(p + pos + first, 0, avail - first);
        if (b == nullptr) return false;
        value = static_cast<size_t>(static_cast<const char*>(b) - (p + pos)) + 1;
        break;
      }
      case 15: {  // code with scope: int32 total, string, document
        int32_t slen = 0;
        int32_t dlen = 0;
        if (!ReadLen(p + pos, avail, &len) || len < 14 || static_cast<size_t>(len) > avail ||
            !ReadLen(p + pos + 4, static_cast<size_t>(len) - 4, &slen) || slen < 1 ||
            static_cast<size_t>(slen) > static_cast<size_t>(len) - 8 - 5 ||
            p[pos + 8 + slen - 1] != 0 ||
            !ReadLen(p + pos + 8 + slen, static_cast<size_t>(len) - 8 - slen, &dlen) ||
            static_cast<size_t>(dlen) != static_cast<size_t>(len) - 8 - slen ||
            !StructureOk(p + pos + 8 + slen, static_cast<size_t>(dlen), depth + 1)) {
          return false;
        }
        value = static_cast<size_t>(len);
        break;
      }
      default:
        return false;
    }
    if (value > avail) return false;
    pos += value;
  }
  return pos == end;
}

}  // namespace

Status ReadBsonDocument(ByteReader* reader, int32_t max_size, std::string_view what,
                        bson::BsonObj* out) {
  int32_t len;
  if (!reader->PeekInt32(&len)) {
    return Status(ErrorCode::kInvalidBSON, std::string(what) + ": " +
                                               std::to_string(reader->remaining()) +
                                               " bytes left, too few for a BSON document");
  }
  // Checked before any arithmetic: a negative or tiny length can never be a document.
  if (len < 5) {
    return Status(ErrorCode::kInvalidBSON,
                  std::string(what) + ": invalid BSON document length " + std::to_string(len));
  }
  if (len > max_size) {
    return Status(ErrorCode::kBSONObjectTooLarge,
                  std::string(what) + ": BSON document of " + std::to_string(len) +
                      " bytes exceeds the maximum of " + std::to_string(max_size));
  }
  if (static_cast<size_t>(len) > reader->remaining()) {
    return Status(ErrorCode::kInvalidBSON,
                  std::string(what) + ": BSON document length " + std::to_string(len) +
                      " runs past the end of its section (" + std::to_string(reader->remaining()) +
                      " bytes left)");
  }
  std::string_view bytes;
  reader->ReadBytes(static_cast<size_t>(len), &bytes);
  Status st = bson::ValidateBson(bytes);
  if (!st.ok()) return st.WithContext(std::string(what) + ": ");
  if (!StructureOk(bytes.data(), bytes.size(), 0)) {
    return Status(ErrorCode::kInvalidBSON,
                  std::string(what) + ": an element's length runs past the end of its document");
  }
  *out = bson::BsonObj::CopyOf(bytes);
  return Status::OK();
}

}  // namespace hourglass::wire::internal
