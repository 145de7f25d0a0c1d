#include "timeseries/meta_normalize.h"

#include <algorithm>
#include <charconv>
#include <vector>

namespace hourglass::timeseries {
namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

void AppendNormalizedValue(BsonBuilder& b, std::string_view name, const BsonElement& e);

void AppendNormalizedObjectFields(BsonBuilder& b, const BsonObj& obj) {
  // Most meta objects are small: sort pointers on the stack and only fall back to the heap for
  // wide ones.
  constexpr size_t kInline = 16;
  BsonElement inline_fields[kInline];
  std::vector<BsonElement> heap_fields;
  BsonElement* fields = inline_fields;
  size_t n = 0;
  for (BsonElement e : obj) {
    if (n == kInline && heap_fields.empty()) {
      heap_fields.assign(inline_fields, inline_fields + kInline);
    }
    if (n >= kInline) {
      heap_fields.push_back(e);
    } else {
      inline_fields[n] = e;
    }
    ++n;
  }
  if (n > kInline) fields = heap_fields.data();
  // std::string_view's ordering is char_traits<char>::compare, i.e. memcmp: unsigned bytes, a
  // prefix first, the same binary order MongoDB uses for this normalization.
  std::stable_sort(fields, fields + n, [](const BsonElement& x, const BsonElement& y) {
    return x.FieldName() < y.FieldName();
  });
  for (size_t i = 0; i < n; ++i) AppendNormalizedValue(b, fields[i].FieldName(), fields[i]);
}

void AppendNormalizedArrayElements(BsonBuilder& b, const BsonObj& arr) {
  char key[16];
  size_t i = 0;
  for (BsonElement e : arr) {
    auto [end, ec] = std::to_chars(key, key + sizeof(key), i++);
    (void)ec;
    AppendNormalizedValue(b, std::string_view(key, end - key), e);
  }
}

void AppendNormalizedValue(BsonBuilder& b, std::string_view name, const BsonElement& e) {
  switch (e.type()) {
    case BsonType::kObject: {
      size_t token = b.OpenObject(name);
      AppendNormalizedObjectFields(b, e.Obj());
      b.Close(token);
      break;
    }
    case BsonType::kArray: {
      size_t token = b.OpenArray(name);
      AppendNormalizedArrayElements(b, e.Obj());
      b.Close(token);
      break;
    }
    default:
      b.AppendElementAs(e, name);
  }
}

}  // namespace

void AppendNormalizedMeta(BsonBuilder& b, std::string_view name, const BsonElement& meta) {
  if (meta.eoo()) return;
  AppendNormalizedValue(b, name, meta);
}

std::string NormalizedMetaKey(const BsonElement& meta) {
  if (meta.eoo()) return {};
  BsonBuilder b;
  AppendNormalizedValue(b, "", meta);
  std::string doc = b.Release();
  // doc = int32 length, type byte, "" (one NUL), value bytes, document terminator.
  std::string key;
  key.reserve(doc.size() - 6);
  key.push_back(doc[4]);
  key.append(doc, 6, doc.size() - 7);
  return key;
}

}  // namespace hourglass::timeseries
