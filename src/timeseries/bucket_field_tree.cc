#include "timeseries/bucket_field_tree.h"

#include <algorithm>
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

// Canonical comparison of `a` with the element at `b_elem` of type `tb` whose value is at `bv`,
// with shortcuts for two values of the same common type; every other mix goes to bson_compare.
int CompareValues(const bson::FieldView& a, BsonType tb, const char* bv, const char* b_elem,
                  size_t b_name_size) {
  BsonType t = a.type;
  if (t == tb) {
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
  return bson::CompareElementValues(a.Element(), BsonElement(b_elem, b_name_size));
}

// The same with the stored element `b` (empty name: its value starts at b+2).
int CompareToStored(const bson::FieldView& a, const char* b) {
  return CompareValues(a, static_cast<BsonType>(*b), b + 2, b, 0);
}

bool IsString(BsonType t) { return t == BsonType::kString || t == BsonType::kSymbol; }

// Two strings (String or Symbol: `a` and the stored element `b`) under `strings`.
int CompareStrings(const bson::FieldView& a, const char* b, const bson::StringComparator& strings) {
  std::string_view x(a.value + 4, static_cast<size_t>(bson::ReadInt32(a.value)) - 1);
  std::string_view y(b + 6, static_cast<size_t>(bson::ReadInt32(b + 2)) - 1);
  int c = strings.Compare(x, y);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

}  // namespace

int BucketFieldTree::RowBounds::CompareSlow(const bson::FieldView& a, const bson::FieldView& b) {
  return CompareValues(a, b.type, b.value, b.raw, b.name.size());
}

bool BucketFieldTree::FoldBounds(const RowBounds& bounds) {
  if (strings_) return false;
  // Every field must be one the tree holds with both sides set (a field that gets its first
  // min/max moves to the end, in the order rows give: UpdateMinMax's business) and a scalar in
  // every row (objects and arrays merge per subfield): checked for all before anything changes.
  std::vector<Node*> nodes;
  nodes.reserve(bounds.fields_.size());
  size_t cursor = 0;
  for (const RowBounds::Field& f : bounds.fields_) {
    if (f.nested) return false;
    if (!f.set) {
      nodes.push_back(nullptr);
      continue;
    }
    Node* node = FindField(root_, f.min.name, cursor);
    if (node == nullptr || node->min_kind == Kind::kUnset || node->max_kind == Kind::kUnset) {
      return false;
    }
    cursor = static_cast<size_t>(node - root_.fields.data()) + 1;
    nodes.push_back(node);
  }
  // Folding a set's least value into the min (and its greatest into the max) is folding every
  // one of them: the order is total, and a side keeps its value on ties either way.
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] == nullptr) continue;
    UpdateNode(*nodes[i], bounds.fields_[i].min, /*do_min=*/true, /*do_max=*/false, false);
    UpdateNode(*nodes[i], bounds.fields_[i].max, /*do_min=*/false, /*do_max=*/true, false);
  }
  return true;
}

StatusWith<BucketFieldTree> BucketFieldTree::FromBucket(
    const BsonObj& min, const BsonObj& max, std::shared_ptr<const bson::StringComparator> strings) {
  BucketFieldTree tree;
  tree.SetCollator(std::move(strings));
  // min alone always fits the empty schema; max must then agree with it path by path.
  tree.Update(min, {});
  if (!tree.UpdateIfCompatible(max, {})) {
    return Status(ErrorCode::kBadValue,
                  "time-series bucket has mixed-schema data: control.min and control.max hold "
                  "different types for the same field");
  }
  return tree;
}

void BucketFieldTree::Update(const BsonObj& measurement, std::string_view skip_field) {
  UpdateFields(root_, measurement.data(), /*do_min=*/true, /*do_max=*/true, /*do_schema=*/true,
               skip_field);
}

void BucketFieldTree::AppendShape(const bson::FieldView& e, std::string* out) {
  out->push_back(static_cast<char>(bson::CanonicalTypeRank(e.type)));
  out->append(e.name).push_back('\0');
  if (e.type != BsonType::kObject && e.type != BsonType::kArray) return;
  for (bson::FieldCursor it(e.value); it.Next();) AppendShape(it.field(), out);
  out->push_back(kShapeEnd);
}

bool BucketFieldTree::MatchShape(const bson::FieldView& e, size_t* pos) const {
  const std::string& s = last_shape_;
  size_t p = *pos;
  if (p + e.name.size() + 2 > s.size() ||
      s[p] != static_cast<char>(bson::CanonicalTypeRank(e.type)) ||
      s.compare(p + 1, e.name.size(), e.name) != 0 || s[p + 1 + e.name.size()] != '\0') {
    return false;
  }
  p += e.name.size() + 2;
  if (e.type == BsonType::kObject || e.type == BsonType::kArray) {
    for (bson::FieldCursor it(e.value); it.Next();) {
      if (!MatchShape(it.field(), &p)) return false;
    }
    if (p >= s.size() || s[p] != kShapeEnd) return false;
    ++p;
  }
  *pos = p;
  return true;
}

void BucketFieldTree::UpdateRecordingShape(const BsonObj& measurement,
                                           std::string_view skip_field) {
  Update(measurement, skip_field);
  last_shape_.clear();
  for (bson::FieldCursor it(measurement.data()); it.Next();) {
    const bson::FieldView& e = it.field();
    if (!skip_field.empty() && e.name == skip_field) continue;
    AppendShape(e, &last_shape_);
  }
}

void BucketFieldTree::UpdateMinMax(const BsonObj& doc, std::string_view skip_field) {
  UpdateFields(root_, doc.data(), /*do_min=*/true, /*do_max=*/true, /*do_schema=*/false,
               skip_field);
}

void BucketFieldTree::ResetMinMax() { ResetMinMax(root_); }

void BucketFieldTree::ResetMinMax(Node& node) {
  node.min_kind = Kind::kUnset;
  node.max_kind = Kind::kUnset;
  for (Node& c : node.fields) ResetMinMax(c);
  for (Node& c : node.elements) ResetMinMax(c);
}

void BucketFieldTree::Reset() {
  root_ = Node{};
  last_shape_.clear();
}

bool BucketFieldTree::FieldCompatible(const Node& parent, const bson::FieldView& e,
                                      size_t* cursor) {
  const Node* node = FindField(parent, e.name, *cursor);
  if (node == nullptr) return true;  // a new path: anything goes
  *cursor = static_cast<size_t>(node - parent.fields.data()) + 1;
  if (node->rank == kNotInSchema) return true;  // only min/max know it: new to the schema
  return NodeCompatible(*node, e.type, e.value);
}

bool BucketFieldTree::FieldsCompatible(const Node& parent, const char* doc) {
  size_t cursor = 0;
  for (bson::FieldCursor it(doc); it.Next();) {
    if (!FieldCompatible(parent, it.field(), &cursor)) return false;
  }
  return true;
}

bool BucketFieldTree::ElementsCompatible(const Node& parent, const char* arr) {
  size_t i = 0;
  for (bson::FieldCursor it(arr); it.Next();) {
    // The schema knows a prefix of the positions: the remaining ones are new.
    if (i == parent.elements.size() || parent.elements[i].rank == kNotInSchema) return true;
    if (!NodeCompatible(parent.elements[i], it.field().type, it.field().value)) return false;
    ++i;
  }
  return true;
}

bool BucketFieldTree::NodeCompatible(const Node& node, BsonType t, const char* value) {
  if (bson::CanonicalTypeRank(t) != node.rank) return false;
  if (t == BsonType::kObject) return FieldsCompatible(node, value);
  if (t == BsonType::kArray) return ElementsCompatible(node, value);
  return true;
}

BucketFieldTree::Node* BucketFieldTree::FindField(Node& parent, std::string_view name,
                                                  size_t cursor) {
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

BucketFieldTree::Node* BucketFieldTree::AddField(Node& parent, std::string_view name) {
  auto& fields = parent.fields;
  fields.emplace_back();
  fields.back().name.assign(name);
  uint32_t pos = static_cast<uint32_t>(fields.size() - 1);
  if (!parent.index.empty()) {
    parent.index.emplace(fields.back().name, pos);
  } else if (fields.size() > kIndexThreshold) {
    // emplace keeps the first of duplicate names, which is the one lock-step finds first.
    for (uint32_t i = 0; i < fields.size(); ++i) parent.index.emplace(fields[i].name, i);
  }
  return &fields.back();
}

BucketFieldTree::Node* BucketFieldTree::MoveToEnd(Node& parent, Node* node) {
  auto& fields = parent.fields;
  auto pos = fields.begin() + (node - fields.data());
  if (pos + 1 == fields.end()) return node;
  std::rotate(pos, pos + 1, fields.end());
  if (!parent.index.empty()) {
    parent.index.clear();
    for (uint32_t i = 0; i < fields.size(); ++i) parent.index.emplace(fields[i].name, i);
  }
  return &fields.back();
}

void BucketFieldTree::UpdateFields(Node& parent, const char* doc, bool do_min, bool do_max,
                                   bool do_schema, std::string_view skip_field) const {
  size_t cursor = 0;
  for (bson::FieldCursor it(doc); it.Next();) {
    const bson::FieldView& e = it.field();
    if (!skip_field.empty() && e.name == skip_field) continue;
    Node* node = FindField(parent, e.name, cursor);
    if (node == nullptr) {
      node = AddField(parent, e.name);
    } else if ((do_min || do_max) && node->min_kind == Kind::kUnset &&
               node->max_kind == Kind::kUnset) {
      // About to get its first min/max: a summary of min/max alone would create it only now.
      // (A node whose sides were unset by its parent switching kind is never visited again.)
      node = MoveToEnd(parent, node);
    }
    cursor = static_cast<size_t>(node - parent.fields.data()) + 1;
    UpdateNode(*node, e, do_min, do_max, do_schema);
  }
}

void BucketFieldTree::UpdateElements(Node& parent, const char* arr, bool do_min, bool do_max,
                                     bool do_schema) const {
  size_t i = 0;
  for (bson::FieldCursor it(arr); it.Next();) {
    if (i == parent.elements.size()) parent.elements.emplace_back();
    UpdateNode(parent.elements[i], it.field(), do_min, do_max, do_schema);
    ++i;
  }
}

void BucketFieldTree::UpdateNode(Node& node, const bson::FieldView& e, bool do_min, bool do_max,
                                 bool do_schema) const {
  BsonType t = e.type;
  const int rank = bson::CanonicalTypeRank(t);
  if (do_schema) {
    if (node.rank == kNotInSchema) {
      node.rank = rank;
    } else if (node.rank != rank) {
      do_schema = false;  // keeps the kind recorded first; its subtree is not the schema's here
    }
  }
  if (t == BsonType::kObject || t == BsonType::kArray) {
    const Kind kind = t == BsonType::kObject ? Kind::kObject : Kind::kArray;
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
    if (!update_min && !update_max && !do_schema) return;
    if (kind == Kind::kObject) {
      UpdateFields(node, e.value, update_min, update_max, do_schema, {});
    } else {
      UpdateElements(node, e.value, update_min, update_max, do_schema);
    }
    return;
  }

  auto maybe_set = [this, &e, t, rank](Kind& held, std::string& value, bool is_min) {
    bool replace;
    switch (held) {
      case Kind::kUnset:
        replace = true;
        break;
      case Kind::kValue: {
        int c = strings_ != nullptr && IsString(t) && IsString(static_cast<BsonType>(value[0]))
                    ? CompareStrings(e, value.data(), *strings_)
                    : CompareToStored(e, value.data());
        replace = is_min ? c < 0 : c > 0;
        break;
      }
      default: {
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

void BucketFieldTree::AppendNode(BsonBuilder& b, std::string_view name, const Node& node,
                                 bool min) {
  switch (min ? node.min_kind : node.max_kind) {
    case Kind::kUnset:
      return;
    case Kind::kValue:
      b.AppendElementAs(BsonElement((min ? node.min_value : node.max_value).data()), name);
      return;
    case Kind::kObject: {
      size_t token = b.OpenObject(name);
      AppendFields(b, node, min, {}, 0);
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

void BucketFieldTree::AppendFields(BsonBuilder& b, const Node& parent, bool min,
                                   std::string_view date_field, int64_t date_millis) {
  for (const Node& c : parent.fields) {
    if (!date_field.empty() && c.name == date_field && c.min_kind != Kind::kUnset) {
      b.AppendDate(date_field, date_millis);
    } else {
      AppendNode(b, c.name, c, min);
    }
  }
}

void BucketFieldTree::AppendElements(BsonBuilder& b, const Node& parent, bool min) {
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

void BucketFieldTree::AppendMin(BsonBuilder& b, std::string_view date_field,
                                int64_t date_millis) const {
  AppendFields(b, root_, /*min=*/true, date_field, date_millis);
}

void BucketFieldTree::AppendMax(BsonBuilder& b) const {
  AppendFields(b, root_, /*min=*/false, {}, 0);
}

BsonObj BucketFieldTree::Min() const {
  BsonBuilder b;
  AppendFields(b, root_, /*min=*/true, {}, 0);
  return b.Obj();
}

BsonObj BucketFieldTree::Max() const {
  BsonBuilder b;
  AppendMax(b);
  return b.Obj();
}

size_t BucketFieldTree::NodeMemory(const Node& node) {
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

size_t BucketFieldTree::ApproxMemory() const {
  return sizeof(*this) + NodeMemory(root_) + last_shape_.capacity();
}

}  // namespace hourglass::timeseries
