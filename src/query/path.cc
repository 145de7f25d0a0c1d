#include "query/path.h"

namespace hourglass::query {

FieldPath SplitPath(std::string_view dotted) {
  FieldPath out;
  while (true) {
    size_t dot = dotted.find('.');
    out.emplace_back(dotted.substr(0, dot));
    if (dot == std::string_view::npos) break;
    dotted.remove_prefix(dot + 1);
  }
  return out;
}

std::string JoinPath(const FieldPath& path, size_t begin, size_t end) {
  std::string out;
  end = std::min(end, path.size());
  for (size_t i = begin; i < end; ++i) {
    if (i > begin) out += '.';
    out += path[i];
  }
  return out;
}

bool PathStartsWith(std::string_view path, std::string_view prefix) {
  return path.starts_with(prefix) && (path.size() == prefix.size() || path[prefix.size()] == '.');
}

bool PathIsBelow(std::string_view path, std::string_view prefix) {
  return path.size() != prefix.size() && PathStartsWith(path, prefix);
}

std::optional<size_t> ParseArrayIndex(std::string_view component) {
  if (component.empty() || component.size() > 9) return std::nullopt;
  if (component.size() > 1 && component[0] == '0') return std::nullopt;
  size_t v = 0;
  for (char c : component) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<size_t>(c - '0');
  }
  return v;
}

namespace {

using Callback = std::function<bool(const PathValue&)>;

bool WalkValue(const bson::BsonElement& e, const FieldPath& path, size_t i, bool expand,
               const Callback& fn);

bool WalkObject(const bson::BsonObj& obj, const FieldPath& path, size_t i, bool expand,
                const Callback& fn) {
  bson::BsonElement e = obj.GetField(path[i]);
  if (e.eoo()) return fn(PathValue{});
  return WalkValue(e, path, i + 1, expand, fn);
}

bool WalkValue(const bson::BsonElement& e, const FieldPath& path, size_t i, bool expand,
               const Callback& fn) {
  if (i == path.size()) {
    if (e.type() != bson::BsonType::kArray) return fn(PathValue{e, false});
    if (fn(PathValue{e, true})) return true;
    if (!expand) return false;
    for (const bson::BsonElement& item : e.Obj()) {
      if (fn(PathValue{item, false})) return true;
    }
    return false;
  }
  if (e.type() == bson::BsonType::kObject) return WalkObject(e.Obj(), path, i, expand, fn);
  if (e.type() != bson::BsonType::kArray) return fn(PathValue{});
  bson::BsonObj arr = e.Obj();
  if (ParseArrayIndex(path[i])) {
    bson::BsonElement item = arr.GetField(path[i]);
    if (!item.eoo() && WalkValue(item, path, i + 1, expand, fn)) return true;
  }
  for (const bson::BsonElement& item : arr) {
    if (item.type() == bson::BsonType::kObject && WalkObject(item.Obj(), path, i, expand, fn)) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool WalkPath(const bson::BsonObj& doc, const FieldPath& path, bool expand_leaf_arrays,
              const Callback& fn) {
  return WalkObject(doc, path, 0, expand_leaf_arrays, fn);
}

}  // namespace hourglass::query
