#include "timeseries/bucket_min_max.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "bson/bson_compare.h"

namespace hourglass::timeseries {
namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

// Canonical comparison of `a` with the stored element `b` (empty name: its value starts at b+2),
// with shortcuts for two values of the same common type; every other mix goes to bson_compare.
int CompareToStored(const bson::FieldView& a, const char* b) {
  BsonType t = a.type;
  const char* bv = b + 2;
  if (t == static_cast<BsonType>(*b)) {
    switch (t) {
      case BsonType::kInt32: {
        int32_t x = bson::ReadInt32(a.value), y = bson::ReadInt32(bv);
        return x < y ? -1 : (x > y ? 1 : 0);
      }
      case BsonType::kInt64:
      case BsonType::kDate: {
        int64_t x = bson::ReadInt64(a.value), y = bson::ReadInt64(bv);
        return x < y ? -1 : (x > y ? 1 : 0);
      }
      case BsonType::kTimestamp: {
        uint64_t x = static_cast<uint64_t>(bson::ReadInt64(a.value));
        uint64_t y = static_cast<uint64_t>(bson::ReadInt64(bv));
        return x < y ? -1 : (x > y ? 1 : 0);
      }
      case BsonType::kDouble: {
        double x, y;
        std::memcpy(&x, a.value, 8);
        std::memcpy(&y, bv, 8);
        if (x < y) return -1;
        if (x > y) return 1;
        if (x == y) return 0;
        break;  // NaN involved: the general rule (NaN below every number)
      }
      case BsonType::kString: {
        // Unsigned bytes, then length: std::string_view's order, as bson_compare uses.
        std::string_view x(a.value + 4, static_cast<size_t>(bson::ReadInt32(a.value)) - 1);
        std::string_view y(bv + 4, static_cast<size_t>(bson::ReadInt32(bv)) - 1);
        int c = x.compare(y);
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
      }
      case BsonType::kObjectId: {
        int c = std::memcmp(a.value, bv, 12);
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
      }
      case BsonType::kBool:
        return (*a.value != 0) - (*bv != 0);
      default:
        break;
    }
  }
  return bson::CompareElementValues(a.Element(), BsonElement(b));
}

}  // namespace

BucketMinMax BucketMinMax::FromBucket(const BsonObj& min, const BsonObj& max) {
  BucketMinMax m;
  m.Update(min, {});
  m.Update(max, {});
  return m;
}

void BucketMinMax::Update(const BsonObj& measurement, std::string_view skip_field) {
  UpdateFields(root_, measurement.data(), /*do_min=*/true, /*do_max=*/true, skip_field);
}

void BucketMinMax::Reset() { root_ = Node{}; }

BucketMinMax::Node* BucketMinMax::FindField(Node& parent, std::string_view name, size_t cursor) {
  auto& fields = parent.fields;
  size_t n = fields.size();
  // Documents of one series usually repeat the same field order: try the next field first.
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

void BucketMinMax::UpdateFields(Node& parent, const char* doc, bool do_min, bool do_max,
                                std::string_view skip_field) {
  size_t cursor = 0;
  for (bson::FieldCursor it(doc); it.Next();) {
    const bson::FieldView& e = it.field();
    if (!skip_field.empty() && e.name == skip_field) continue;
    Node* node = FindField(parent, e.name, cursor);
    if (node == nullptr) {
      auto& fields = parent.fields;
      fields.emplace_back();
      fields.back().name.assign(e.name);
      uint32_t pos = static_cast<uint32_t>(fields.size() - 1);
      if (!parent.index.empty()) {
        parent.index.emplace(fields.back().name, pos);
      } else if (fields.size() > kIndexThreshold) {
        // emplace keeps the first of duplicate names, which is the one lock-step finds first.
        for (uint32_t i = 0; i < fields.size(); ++i) parent.index.emplace(fields[i].name, i);
      }
      node = &fields.back();
    }
    cursor = static_cast<size_t>(node - parent.fields.data()) + 1;
    UpdateNode(*node, e, do_min, do_max);
  }
}

void BucketMinMax::UpdateElements(Node& parent, const char* arr, bool do_min, bool do_max) {
  size_t i = 0;
  for (bson::FieldCursor it(arr); it.Next();) {
    if (i == parent.elements.size()) parent.elements.emplace_back();
    UpdateNode(parent.elements[i], it.field(), do_min, do_max);
    ++i;
  }
}

void BucketMinMax::UpdateNode(Node& node, const bson::FieldView& e, bool do_min, bool do_max) {
  BsonType t = e.type;
  if (t == BsonType::kObject || t == BsonType::kArray) {
    const Kind kind = t == BsonType::kObject ? Kind::kObject : Kind::kArray;
    const int rank = bson::CanonicalTypeRank(t);
    // Whether this side should become (or stay, and merge into) an object/array.
    auto enters = [&](Kind held, const std::string& value, bool is_min) {
      if (held == kind || held == Kind::kUnset) return true;
      int held_rank;
      if (held == Kind::kValue) {
        held_rank = bson::CanonicalTypeRank(static_cast<BsonType>(value[0]));
      } else {
        held_rank =
            bson::CanonicalTypeRank(held == Kind::kObject ? BsonType::kObject : BsonType::kArray);
      }
      return is_min ? rank < held_rank : rank > held_rank;
    };
    bool update_min = do_min && enters(node.min_kind, node.min_value, true);
    bool update_max = do_max && enters(node.max_kind, node.max_value, false);
    auto& children = kind == Kind::kObject ? node.fields : node.elements;
    // A side that switches kind starts its subtree afresh (children of a kind left earlier could
    // otherwise leak into the output).
    if (update_min && node.min_kind != kind) {
      node.min_kind = kind;
      for (Node& c : children) c.min_kind = Kind::kUnset;
    }
    if (update_max && node.max_kind != kind) {
      node.max_kind = kind;
      for (Node& c : children) c.max_kind = Kind::kUnset;
    }
    if (!update_min && !update_max) return;
    if (kind == Kind::kObject) {
      UpdateFields(node, e.value, update_min, update_max, {});
    } else {
      UpdateElements(node, e.value, update_min, update_max);
    }
    return;
  }

  auto maybe_set = [&e, t](Kind& held, std::string& value, bool is_min) {
    bool replace;
    switch (held) {
      case Kind::kUnset:
        replace = true;
        break;
      case Kind::kValue: {
        int c = CompareToStored(e, value.data());
        replace = is_min ? c < 0 : c > 0;
        break;
      }
      default: {
        int rank = bson::CanonicalTypeRank(t);
        int held_rank =
            bson::CanonicalTypeRank(held == Kind::kObject ? BsonType::kObject : BsonType::kArray);
        replace = is_min ? rank < held_rank : rank > held_rank;
        break;
      }
    }
    if (!replace) return;
    held = Kind::kValue;
    // Element with an empty name; resize() keeps the buffer, so a value no longer than the one
    // before never allocates.
    value.resize(2 + e.value_size);
    value[0] = static_cast<char>(t);
    value[1] = '\0';
    std::memcpy(value.data() + 2, e.value, e.value_size);
  };
  if (do_min) maybe_set(node.min_kind, node.min_value, true);
  if (do_max) maybe_set(node.max_kind, node.max_value, false);
}

void BucketMinMax::AppendNode(BsonBuilder& b, std::string_view name, const Node& node, bool min) {
  switch (min ? node.min_kind : node.max_kind) {
    case Kind::kUnset:
      return;
    case Kind::kValue:
      b.AppendElementAs(BsonElement((min ? node.min_value : node.max_value).data()), name);
      return;
    case Kind::kObject: {
      size_t token = b.OpenObject(name);
      AppendFields(b, node, min);
      b.Close(token);
      return;
    }
    case Kind::kArray: {
      size_t token = b.OpenArray(name);
      AppendElements(b, node, min);
      b.Close(token);
      return;
    }
  }
}

void BucketMinMax::AppendFields(BsonBuilder& b, const Node& parent, bool min) {
  for (const Node& c : parent.fields) AppendNode(b, c.name, c, min);
}

void BucketMinMax::AppendElements(BsonBuilder& b, const Node& parent, bool min) {
  // Positions of an array side are set as a prefix (every row sets 0..len-1), so numbering the
  // set ones consecutively reproduces their positions.
  char key[24];
  size_t i = 0;
  for (const Node& c : parent.elements) {
    if ((min ? c.min_kind : c.max_kind) == Kind::kUnset) continue;
    auto [end, ec] = std::to_chars(key, key + sizeof(key), i++);
    (void)ec;
    AppendNode(b, std::string_view(key, end - key), c, min);
  }
}

BsonObj BucketMinMax::Min() const {
  BsonBuilder b;
  AppendFields(b, root_, /*min=*/true);
  return b.Obj();
}

BsonObj BucketMinMax::Max() const {
  BsonBuilder b;
  AppendFields(b, root_, /*min=*/false);
  return b.Obj();
}

size_t BucketMinMax::NodeMemory(const Node& node) {
  auto heap = [](const std::string& s) {
    // Short strings live in the object itself (libstdc++ small-string buffer of 15 chars).
    return s.capacity() > 15 ? s.capacity() + 1 : 0;
  };
  size_t total = heap(node.name) + heap(node.min_value) + heap(node.max_value);
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

size_t BucketMinMax::ApproxMemory() const { return sizeof(*this) + NodeMemory(root_); }

}  // namespace hourglass::timeseries
