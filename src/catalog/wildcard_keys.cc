#include "catalog/wildcard_keys.h"

#include <algorithm>
#include <set>

#include "bson/key_string.h"
#include "query/path.h"

namespace hourglass::catalog {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr std::string_view kSuffix = "$**";

bool IsIdPath(std::string_view path) { return query::PathStartsWith(path, "_id"); }

class KeyCollector {
 public:
  KeyCollector(bool descending, const bson::StringComparator* strings,
               std::vector<std::string>* array_paths)
      : descending_(descending), strings_(strings), array_paths_(array_paths) {}

  void Walk(const BsonObj& obj, bool obj_is_array, std::string& path) {
    for (BsonElement e : obj) {
      std::string_view name = e.FieldName();
      if (!obj_is_array && name.find('.') != std::string_view::npos) continue;
      const size_t old_size = path.size();
      if (!obj_is_array) {
        if (!path.empty()) path += '.';
        path += name;
      }
      if (e.type() == BsonType::kArray) {
        if (obj_is_array) {
          Add(path, e);  // an array inside an array is a value
        } else {
          if (std::find(array_paths_->begin(), array_paths_->end(), path) == array_paths_->end()) {
            array_paths_->push_back(path);
          }
          if (e.Obj().IsEmpty()) {
            Add(path, Undefined());
          } else {
            Walk(e.Obj(), true, path);
          }
        }
      } else if (e.type() == BsonType::kObject && !e.Obj().IsEmpty()) {
        Walk(e.Obj(), false, path);
      } else {
        Add(path, e);
      }
      path.resize(old_size);
    }
  }

  std::vector<std::string> Release() { return {keys_.begin(), keys_.end()}; }

 private:
  static BsonElement Undefined() {
    static const BsonObj holder = [] {
      BsonBuilder b;
      b.AppendUndefined("");
      return b.Obj();
    }();
    return holder.FirstElement();
  }

  void Add(const std::string& path, const BsonElement& value) {
    std::string key = EncodeWildcardPath(path);
    bson::KeyStringBuilder k;
    k.AppendElement(value, descending_, strings_);
    key += k.bytes();
    keys_.insert(std::move(key));
  }

  bool descending_;
  const bson::StringComparator* strings_;
  std::vector<std::string>* array_paths_;
  std::set<std::string> keys_;
};

}  // namespace

bool IsWildcardFieldName(std::string_view name) {
  return name == kSuffix || (name.size() > kSuffix.size() && name.ends_with(".$**"));
}

StatusWith<WildcardIndex> WildcardIndex::Parse(const BsonElement& key_field,
                                               const BsonElement& projection) {
  WildcardIndex w;
  std::string_view name = key_field.FieldName();
  w.root = std::string(name.substr(0, name.size() - kSuffix.size()));
  if (!w.root.empty()) w.root.pop_back();  // the '.'
  w.descending = bson::IsDescending(key_field);
  BsonBuilder spec;
  bool id_mentioned = false, id_included = false;
  if (!w.root.empty()) {
    spec.AppendInt32(w.root, 1);
    w.paths.push_back(w.root);
    id_mentioned = IsIdPath(w.root);
    id_included = id_mentioned;
  } else if (projection.type() == BsonType::kObject) {
    bool any_included = false;
    for (BsonElement f : projection.Obj()) {
      if (!f.IsNumber() && f.type() != BsonType::kBool) {
        return Status(ErrorCode::kLocation7246207,
                      "Fields in wildcardProjection must be numbers, however '" +
                          std::string(f.FieldName()) + "' is a " +
                          std::string(bson::TypeName(f.type())) + ".");
      }
      if (f.FieldName() == "_id") {
        id_mentioned = true;
        id_included = f.Truthy();
      } else if (f.Truthy()) {
        any_included = true;
      }
      spec.AppendElement(f);
    }
    w.inclusion = any_included || (id_included && projection.Obj().NumFields() == 1);
    for (BsonElement f : projection.Obj()) {
      if (f.FieldName() == "_id") continue;
      if (f.Truthy() == w.inclusion) w.paths.emplace_back(f.FieldName());
    }
    if (id_included && w.inclusion) w.paths.emplace_back("_id");
  } else {
    w.inclusion = false;  // everything but _id
  }
  if (!id_mentioned) spec.AppendInt32("_id", 0);
  if (!w.inclusion && !id_included) w.paths.emplace_back("_id");
  HG_ASSIGN_OR_RETURN(w.projection, query::Projection::Parse(spec.Obj()));
  return w;
}

bool WildcardIndex::Covers(std::string_view path) const {
  if (inclusion) {
    for (const auto& p : paths) {
      if (query::PathStartsWith(path, p)) return true;
    }
    return false;
  }
  for (const auto& p : paths) {
    if (query::PathStartsWith(path, p) || query::PathStartsWith(p, path)) return false;
  }
  return true;
}

std::vector<std::string> GenerateWildcardKeys(const WildcardIndex& index, const BsonObj& doc,
                                              std::vector<std::string>* array_paths,
                                              const bson::StringComparator* strings) {
  KeyCollector keys(index.descending, strings, array_paths);
  auto projected = index.projection.Apply(doc);
  // A projection of these forms (inclusion/exclusion of paths only) has no failure mode.
  if (!projected.ok()) return {};
  std::string path;
  keys.Walk(projected.value(), false, path);
  return keys.Release();
}

bool PathIsMultikey(std::string_view path, const std::vector<std::string>& array_paths) {
  for (const auto& a : array_paths) {
    if (query::PathStartsWith(path, a)) return true;
  }
  return false;
}

std::string EncodeWildcardPath(std::string_view path) {
  BsonBuilder b;
  b.AppendString("", path);
  bson::KeyStringBuilder k;
  k.AppendElement(b.Obj().FirstElement());
  return k.Release();
}

}  // namespace hourglass::catalog
