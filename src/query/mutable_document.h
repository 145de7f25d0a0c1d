// Internal to src/query: an editable document tree for updates and upsert seeding. Nodes start
// as views of the source document's elements and are expanded into children only along the
// paths that are edited, so untouched sub-documents are copied back byte for byte. Values the
// update computes live in small owned documents each node can hold. Not thread-safe; the source
// document must outlive the tree.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bson/bson.h"

namespace hourglass::query {

class MutableNode {
 public:
  MutableNode() = default;
  MutableNode(std::string name, bson::BsonElement value,
              std::shared_ptr<const bson::BsonObj> holder = nullptr)
      : name_(std::move(name)), elem_(value), holder_(std::move(holder)) {}
  static MutableNode NewObject(std::string name);
  static MutableNode NewArray(std::string name);
  // A node owning a copy of `value`.
  static MutableNode OwnedValue(std::string name, const bson::BsonElement& value);

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  bson::BsonType type() const { return expanded_ ? container_ : elem_.type(); }
  bool IsObject() const { return type() == bson::BsonType::kObject; }
  bool IsArray() const { return type() == bson::BsonType::kArray; }
  // The node's value as an element (serializing an expanded container into an owned buffer).
  bson::BsonElement Value();

  // Children of an object or array (expanding it first). Array children's names are ignored.
  std::vector<MutableNode>& Children();
  // Children of an already-expanded container, read-only.
  const std::vector<MutableNode>& ExpandedChildren() const { return kids_; }
  // The child field `name` of an object, or the element at index `name` of an array; null if
  // absent or if this node is not a container.
  MutableNode* Child(std::string_view name);
  // Appends a child field (objects) or element (arrays).
  MutableNode& Append(MutableNode child);
  // Replaces the value, keeping the name.
  void SetValue(const bson::BsonElement& value);
  void SetNode(MutableNode other);

  void WriteTo(bson::BsonBuilder* b, std::string_view name) const;

 private:
  void Expand();

  std::string name_;
  bson::BsonElement elem_;
  std::shared_ptr<const bson::BsonObj> holder_;
  bool expanded_ = false;
  bson::BsonType container_ = bson::BsonType::kEOO;
  std::vector<MutableNode> kids_;
  std::shared_ptr<const bson::BsonObj> serialized_;  // for Value() on expanded containers
};

class MutableDocument {
 public:
  explicit MutableDocument(const bson::BsonObj& doc);
  MutableNode& root() { return root_; }
  bson::BsonObj ToObj() const;

 private:
  bson::BsonObj doc_;
  MutableNode root_;
};

// A one-element document {"": value} and its element, for computed values.
struct OwnedElement {
  std::shared_ptr<const bson::BsonObj> holder;
  bson::BsonElement element;
};
OwnedElement MakeOwned(bson::BsonObj single_field_doc);

}  // namespace hourglass::query
