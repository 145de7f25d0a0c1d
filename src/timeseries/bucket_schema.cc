#include "timeseries/bucket_schema.h"

#include "bson/bson_compare.h"
#include "timeseries/bucket_min_max.h"

namespace hourglass::timeseries {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

StatusWith<BucketSchema> BucketSchema::FromBucket(const BsonObj& min, const BsonObj& max) {
  BucketSchema schema;
  // min alone always fits the empty schema; max must then agree with it path by path.
  if (!schema.UpdateIfCompatible(min, {}) || !schema.UpdateIfCompatible(max, {})) {
    return Status(ErrorCode::kBadValue,
                  "time-series bucket has mixed-schema data: control.min and control.max hold "
                  "different types for the same field");
  }
  return schema;
}

const BucketSchema::Node* BucketSchema::FindField(const Node& parent, std::string_view name,
                                                  size_t cursor) {
  const auto& fields = parent.fields;
  size_t n = fields.size();
  // Measurements of one series usually repeat the same field order: try the next field first.
  if (cursor < n && fields[cursor].name == name) return &fields[cursor];
  if (!parent.index.empty()) {
    auto it = parent.index.find(name);
    return it == parent.index.end() ? nullptr : &fields[it->second];
  }
  for (size_t i = cursor + 1; i < n; ++i) {
    if (fields[i].name == name) return &fields[i];
  }
  for (size_t i = 0; i < cursor && i < n; ++i) {
    if (fields[i].name == name) return &fields[i];
  }
  return nullptr;
}

bool BucketSchema::IsCompatible(const BsonObj& measurement, std::string_view skip_field) const {
  return FieldsCompatible(root_, measurement.data(), skip_field);
}

bool BucketSchema::FieldsCompatible(const Node& parent, const char* doc,
                                    std::string_view skip_field) {
  size_t cursor = 0;
  for (bson::FieldCursor it(doc); it.Next();) {
    const bson::FieldView& e = it.field();
    if (!skip_field.empty() && e.name == skip_field) continue;
    const Node* node = FindField(parent, e.name, cursor);
    if (node == nullptr) continue;  // a new path: anything goes
    cursor = static_cast<size_t>(node - parent.fields.data()) + 1;
    if (!NodeCompatible(*node, e.type, e.value)) return false;
  }
  return true;
}

bool BucketSchema::ElementsCompatible(const Node& parent, const char* arr) {
  size_t i = 0;
  for (bson::FieldCursor it(arr); it.Next();) {
    if (i == parent.elements.size()) return true;  // the remaining positions are new
    if (!NodeCompatible(parent.elements[i], it.field().type, it.field().value)) return false;
    ++i;
  }
  return true;
}

bool BucketSchema::NodeCompatible(const Node& node, BsonType t, const char* value) {
  if (bson::CanonicalTypeRank(t) != node.rank) return false;
  if (t == BsonType::kObject) return FieldsCompatible(node, value, {});
  if (t == BsonType::kArray) return ElementsCompatible(node, value);
  return true;
}

void BucketSchema::Update(const BsonObj& measurement, std::string_view skip_field) {
  UpdateFields(root_, measurement.data(), skip_field);
}

void BucketSchema::UpdateFields(Node& parent, const char* doc, std::string_view skip_field) {
  size_t cursor = 0;
  for (bson::FieldCursor it(doc); it.Next();) {
    const bson::FieldView& e = it.field();
    if (!skip_field.empty() && e.name == skip_field) continue;
    Node* node = const_cast<Node*>(FindField(parent, e.name, cursor));
    bool is_new = node == nullptr;
    if (is_new) {
      auto& fields = parent.fields;
      fields.emplace_back();
      fields.back().name.assign(e.name);
      uint32_t pos = static_cast<uint32_t>(fields.size() - 1);
      if (!parent.index.empty()) {
        parent.index.emplace(fields.back().name, pos);
      } else if (fields.size() > kIndexThreshold) {
        for (uint32_t i = 0; i < fields.size(); ++i) parent.index.emplace(fields[i].name, i);
      }
      node = &fields.back();
    }
    cursor = static_cast<size_t>(node - parent.fields.data()) + 1;
    UpdateNode(*node, e.type, e.value, is_new);
  }
}

void BucketSchema::UpdateElements(Node& parent, const char* arr) {
  size_t i = 0;
  for (bson::FieldCursor it(arr); it.Next();) {
    bool is_new = i == parent.elements.size();
    if (is_new) parent.elements.emplace_back();
    UpdateNode(parent.elements[i], it.field().type, it.field().value, is_new);
    ++i;
  }
}

void BucketSchema::UpdateNode(Node& node, BsonType t, const char* value, bool is_new) {
  int rank = bson::CanonicalTypeRank(t);
  if (is_new) {
    node.rank = rank;
  } else if (node.rank != rank) {
    return;  // incompatible: keep what was recorded first
  }
  if (t == BsonType::kObject) {
    UpdateFields(node, value, {});
  } else if (t == BsonType::kArray) {
    UpdateElements(node, value);
  }
}

size_t BucketSchema::NodeMemory(const Node& node) {
  auto heap = [](const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; };
  size_t total = heap(node.name);
  total += (node.fields.capacity() + node.elements.capacity()) * sizeof(Node);
  if (!node.index.empty()) {
    total += node.index.bucket_count() * sizeof(void*);
    for (const auto& [name, pos] : node.index) {
      total += sizeof(std::pair<const std::string, uint32_t>) + 2 * sizeof(void*) + heap(name);
    }
  }
  for (const Node& c : node.fields) total += NodeMemory(c);
  for (const Node& c : node.elements) total += NodeMemory(c);
  return total;
}

size_t BucketSchema::ApproxMemory() const { return sizeof(*this) + NodeMemory(root_); }

}  // namespace hourglass::timeseries
