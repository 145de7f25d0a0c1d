// ExtractEqualityDocument: the upsert seed document built from a filter's equality predicates.

#include <algorithm>

#include "query/matcher.h"
#include "query/mutable_document.h"
#include "query/path.h"

namespace hourglass::query {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

struct Equality {
  std::string path;
  BsonElement value;
};

void Collect(const BsonObj& filter, std::vector<Equality>* out) {
  for (const BsonElement& e : filter) {
    std::string_view name = e.FieldName();
    if (name == "$and" && e.type() == BsonType::kArray) {
      for (const BsonElement& c : e.Obj()) {
        if (c.type() == BsonType::kObject) Collect(c.Obj(), out);
      }
      continue;
    }
    if (name == "$or" && e.type() == BsonType::kArray && e.Obj().NumFields() == 1) {
      BsonElement only = e.Obj().FirstElement();
      if (only.type() == BsonType::kObject) Collect(only.Obj(), out);
      continue;
    }
    if (name.starts_with("$")) continue;
    if (e.type() == BsonType::kRegex) continue;
    if (e.type() == BsonType::kObject && !e.Obj().IsEmpty() &&
        e.Obj().FirstElement().FieldName().starts_with("$")) {
      for (const BsonElement& op : e.Obj()) {
        if (op.FieldName() == "$eq") {
          if (op.type() != BsonType::kRegex) out->push_back({std::string(name), op});
        } else if (op.FieldName() == "$in" && op.type() == BsonType::kArray &&
                   op.Obj().NumFields() == 1) {
          BsonElement only = op.Obj().FirstElement();
          if (only.type() != BsonType::kRegex) out->push_back({std::string(name), only});
        }
      }
      continue;
    }
    out->push_back({std::string(name), e});
  }
}

}  // namespace

StatusWith<BsonObj> ExtractEqualityDocument(const BsonObj& filter) {
  std::vector<Equality> eqs;
  Collect(filter, &eqs);
  for (size_t i = 0; i < eqs.size(); ++i) {
    for (size_t j = i + 1; j < eqs.size(); ++j) {
      const std::string& a = eqs[i].path;
      const std::string& b = eqs[j].path;
      if (a == b) {
        return Status(ErrorCode::kNotSingleValueField,
                      "cannot infer query fields to set, path '" + a + "' is matched twice");
      }
      if (PathIsBelow(b, a) || PathIsBelow(a, b)) {
        const std::string& longer = a.size() > b.size() ? a : b;
        const std::string& shorter = a.size() > b.size() ? b : a;
        return Status(ErrorCode::kNotSingleValueField,
                      "cannot infer query fields to set, both paths '" + longer + "' and '" +
                          shorter + "' are matched");
      }
    }
  }
  // _id goes first, like every inserted document.
  std::stable_partition(eqs.begin(), eqs.end(), [](const Equality& q) {
    return q.path == "_id" || q.path.starts_with("_id.");
  });
  MutableDocument doc{BsonObj()};
  for (const Equality& q : eqs) {
    FieldPath parts = SplitPath(q.path);
    MutableNode* cur = &doc.root();
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      MutableNode* next = cur->Child(parts[i]);
      if (next == nullptr) next = &cur->Append(MutableNode::NewObject(parts[i]));
      if (!next->IsObject()) {
        return Status(ErrorCode::kNotSingleValueField,
                      "cannot infer query fields to set, path '" + q.path + "' is matched twice");
      }
      cur = next;
    }
    cur->Append(MutableNode::OwnedValue(parts.back(), q.value));
  }
  return doc.ToObj();
}

}  // namespace hourglass::query
