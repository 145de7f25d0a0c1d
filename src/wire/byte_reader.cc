#include "wire/byte_reader.h"

#include <cstring>
#include <string>

namespace hourglass::wire::internal {

Status ReadBsonDocument(ByteReader* reader, int32_t max_size, std::string_view what_prefix,
                        bson::BsonObj* out, int64_t index) {
  // Named only when an error needs it: a sequence of thousands of documents reads each here.
  auto what = [&] {
    std::string w(what_prefix);
    if (index >= 0) w += " " + std::to_string(index);
    return w;
  };
  int32_t len;
  if (!reader->PeekInt32(&len)) {
    return Status(ErrorCode::kInvalidBSON, what() + ": " + std::to_string(reader->remaining()) +
                                               " bytes left, too few for a BSON document");
  }
  // Checked before any arithmetic: a negative or tiny length can never be a document.
  if (len < 5) {
    return Status(ErrorCode::kInvalidBSON,
                  what() + ": invalid BSON document length " + std::to_string(len));
  }
  if (len > max_size) {
    return Status(ErrorCode::kBSONObjectTooLarge,
                  what() + ": BSON document of " + std::to_string(len) +
                      " bytes exceeds the maximum of " + std::to_string(max_size));
  }
  if (static_cast<size_t>(len) > reader->remaining()) {
    return Status(ErrorCode::kInvalidBSON,
                  what() + ": BSON document length " + std::to_string(len) +
                      " runs past the end of its section (" + std::to_string(reader->remaining()) +
                      " bytes left)");
  }
  std::string_view bytes;
  reader->ReadBytes(static_cast<size_t>(len), &bytes);
  Status st = bson::ValidateBson(bytes);
  if (!st.ok()) return st.WithContext(what() + ": ");
  *out =
      reader->owner() ? bson::BsonObj(reader->owner(), bytes.data()) : bson::BsonObj::CopyOf(bytes);
  return Status::OK();
}

}  // namespace hourglass::wire::internal
