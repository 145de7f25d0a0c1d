#include "commands/command_request.h"

#include <algorithm>

#include "commands/command_util.h"

namespace hourglass::commands {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

bool CommandRequest::HasField(std::string_view name) const {
  return body.HasField(name) ||
         std::any_of(sequences.begin(), sequences.end(),
                     [&](const wire::DocumentSequence& seq) { return seq.identifier == name; });
}

BsonObj CommandRequest::Merged(std::optional<std::string_view> except) const {
  return wire::MergeSequences(body, sequences, except);
}

StatusWith<BsonObj> DocumentArray::Entry::Document(std::string_view context) const {
  // A view without a reference count: the request outlives every use.
  if (doc_ != nullptr) return BsonObj(doc_->data());
  if (element_.type() != BsonType::kObject) return WrongType(context, element_, "object");
  return element_.Obj();
}

DocumentArray::Entry DocumentArray::Iterator::operator*() const {
  return doc_ != nullptr ? Entry(doc_) : Entry(BsonElement(element_));
}

DocumentArray::Iterator& DocumentArray::Iterator::operator++() {
  if (doc_ != nullptr) {
    ++doc_;
  } else {
    element_ += BsonElement(element_).size();
  }
  return *this;
}

StatusWith<std::optional<DocumentArray>> DocumentArray::Find(const CommandRequest& request,
                                                             std::string_view command,
                                                             std::string_view field) {
  DocumentArray out;
  for (const wire::DocumentSequence& seq : request.sequences) {
    if (seq.identifier == field) {
      out.sequence_ = &seq;
      out.size_ = static_cast<int>(seq.documents.size());
      return std::optional<DocumentArray>(out);
    }
  }
  HG_ASSIGN_OR_RETURN(auto array, GetArray(command, request.body, field));
  if (!array) return std::optional<DocumentArray>();
  return std::optional<DocumentArray>(DocumentArray(*array));
}

DocumentArray::Iterator DocumentArray::begin() const {
  if (sequence_ != nullptr) return Iterator(nullptr, sequence_->documents.data());
  return Iterator(array_.data() + 4, nullptr);
}

DocumentArray::Iterator DocumentArray::end() const {
  if (sequence_ != nullptr) {
    return Iterator(nullptr, sequence_->documents.data() + sequence_->documents.size());
  }
  return Iterator(array_.data() + array_.size() - 1, nullptr);
}

}  // namespace hourglass::commands
