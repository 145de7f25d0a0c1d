#include "query/mutable_document.h"

#include "query/path.h"

namespace hourglass::query {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

OwnedElement MakeOwned(BsonObj single_field_doc) {
  auto holder = std::make_shared<const BsonObj>(std::move(single_field_doc));
  return OwnedElement{holder, holder->FirstElement()};
}

MutableNode MutableNode::NewObject(std::string name) {
  MutableNode n;
  n.name_ = std::move(name);
  n.expanded_ = true;
  n.container_ = BsonType::kObject;
  return n;
}

MutableNode MutableNode::NewArray(std::string name) {
  MutableNode n = NewObject(std::move(name));
  n.container_ = BsonType::kArray;
  return n;
}

MutableNode MutableNode::OwnedValue(std::string name, const BsonElement& value) {
  OwnedElement o = MakeOwned(bson::BsonBuilder().AppendElementAs(value, "").Obj());
  return MutableNode(std::move(name), o.element, o.holder);
}

void MutableNode::Expand() {
  if (expanded_) return;
  BsonType t = elem_.type();
  if (t != BsonType::kObject && t != BsonType::kArray) return;
  for (const BsonElement& e : elem_.Obj())
    kids_.emplace_back(std::string(e.FieldName()), e, holder_);
  expanded_ = true;
  container_ = t;
  elem_ = BsonElement();
}

std::vector<MutableNode>& MutableNode::Children() {
  Expand();
  serialized_.reset();
  return kids_;
}

MutableNode* MutableNode::Child(std::string_view name) {
  if (!IsObject() && !IsArray()) return nullptr;
  std::vector<MutableNode>& kids = Children();
  if (IsArray()) {
    auto idx = ParseArrayIndex(name);
    if (!idx || *idx >= kids.size()) return nullptr;
    return &kids[*idx];
  }
  for (MutableNode& k : kids) {
    if (k.name_ == name) return &k;
  }
  return nullptr;
}

MutableNode& MutableNode::Append(MutableNode child) {
  std::vector<MutableNode>& kids = Children();
  kids.push_back(std::move(child));
  return kids.back();
}

void MutableNode::SetValue(const BsonElement& value) {
  MutableNode n = OwnedValue(name_, value);
  SetNode(std::move(n));
}

void MutableNode::SetNode(MutableNode other) {
  std::string name = std::move(name_);
  *this = std::move(other);
  name_ = std::move(name);
}

BsonElement MutableNode::Value() {
  if (!expanded_) return elem_;
  if (!serialized_) {
    bson::BsonBuilder b;
    WriteTo(&b, "");
    serialized_ = std::make_shared<const BsonObj>(b.Obj());
  }
  return serialized_->FirstElement();
}

void MutableNode::WriteTo(bson::BsonBuilder* b, std::string_view name) const {
  if (!expanded_) {
    b->AppendElementAs(elem_, name);
    return;
  }
  bool is_array = container_ == BsonType::kArray;
  size_t token = is_array ? b->OpenArray(name) : b->OpenObject(name);
  for (size_t i = 0; i < kids_.size(); ++i) {
    if (is_array) {
      kids_[i].WriteTo(b, std::to_string(i));
    } else {
      kids_[i].WriteTo(b, kids_[i].name_);
    }
  }
  b->Close(token);
}

MutableDocument::MutableDocument(const BsonObj& doc) : doc_(doc) {
  root_ = MutableNode::NewObject("");
  for (const BsonElement& e : doc_) root_.Append(MutableNode(std::string(e.FieldName()), e));
}

BsonObj MutableDocument::ToObj() const {
  bson::BsonBuilder b;
  for (const MutableNode& k : root_.ExpandedChildren()) k.WriteTo(&b, k.name());
  return b.Obj();
}

}  // namespace hourglass::query
