// A command as it arrived: the body document and the OP_MSG document sequences (none for
// OP_QUERY), both views over the received message, so nothing is copied between the socket and
// the command. A sequence's identifier names a field of the command (drivers send insert's
// `documents`, update's `updates` and delete's `deletes` this way); it never repeats a body field
// (ParseOpMsg rejects that with ProtocolError 17).
//
// Commands that take such an array read it in place through DocumentArray (write_requests.h);
// every other command sees the sequences merged into one document (Command::RunRequest), which
// copies only when the request has sequences.
//
// Lifetime: a CommandRequest borrows its body's and sequences' storage (the parsed OpMsg) and is
// valid for one command. Not synchronized: used by the one thread running the command.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "base/status.h"
#include "bson/bson.h"
#include "wire/op_msg.h"

namespace hourglass::commands {

struct CommandRequest {
  bson::BsonObj body;
  std::span<const wire::DocumentSequence> sequences;

  // True if the body has the field or a sequence is named `name`.
  bool HasField(std::string_view name) const;
  // The body with every sequence appended as an array field except the sequence `except`, which
  // the caller reads itself (wire::MergeSequences): the body itself when no other sequence exists,
  // which is every request drivers send.
  bson::BsonObj Merged(std::optional<std::string_view> except = std::nullopt) const;
};

// An array of documents a command reads in place: the elements of an array field of the body, or
// the documents of the document sequence of the same name. Borrows the request.
class DocumentArray {
 public:
  // One element of the array.
  class Entry {
   public:
    explicit Entry(const bson::BsonElement& element) : element_(element) {}
    explicit Entry(const bson::BsonObj* doc) : doc_(doc) {}
    // The element as a document (a view valid as long as the request). A body array's element
    // that is not a document fails with TypeMismatch (14) "BSON field '<context>.<index>' is the
    // wrong type ..."; a sequence holds documents only.
    StatusWith<bson::BsonObj> Document(std::string_view context) const;

   private:
    bson::BsonElement element_;
    const bson::BsonObj* doc_ = nullptr;
  };

  class Iterator {
   public:
    Iterator(const char* element, const bson::BsonObj* doc) : element_(element), doc_(doc) {}
    Entry operator*() const;
    Iterator& operator++();
    bool operator!=(const Iterator& o) const { return element_ != o.element_ || doc_ != o.doc_; }

   private:
    const char* element_;       // in a body array
    const bson::BsonObj* doc_;  // in a sequence
  };

  DocumentArray() = default;
  // The elements of `array`, which the caller keeps alive.
  explicit DocumentArray(bson::BsonObj array) : array_(array), size_(array_.NumFields()) {}

  // The field `field` of `request`: its document sequence, or else the body's field. nullopt if
  // neither exists; TypeMismatch (14) "BSON field '<command>.<field>' is the wrong type" if the
  // body's field is not an array.
  static StatusWith<std::optional<DocumentArray>> Find(const CommandRequest& request,
                                                       std::string_view command,
                                                       std::string_view field);

  int size() const { return size_; }
  Iterator begin() const;
  Iterator end() const;

 private:
  bson::BsonObj array_;                               // a body array, or
  const wire::DocumentSequence* sequence_ = nullptr;  // a sequence
  int size_ = 0;                                      // counted once
};

}  // namespace hourglass::commands
