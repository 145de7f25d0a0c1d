// Application of single update operations to a MutableDocument (see update.h).

#include <algorithm>
#include <chrono>
#include <cmath>

#include "bson/bson_compare.h"
#include "bson/decimal128.h"
#include "query/update_op.h"

namespace hourglass::query {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr size_t kMaxPadding = 1500000;

Status BadValue(std::string reason) { return Status(ErrorCode::kBadValue, std::move(reason)); }

std::string ElementToString(const BsonElement& e) {
  return bson::BsonBuilder().AppendElement(e).Obj().ToJson();
}

std::string IdString(const BsonObj& doc) {
  BsonElement id = doc.GetField("_id");
  return id.eoo() ? "{}" : ElementToString(id);
}

std::string NodeString(MutableNode* n) {
  return bson::BsonBuilder().AppendElementAs(n->Value(), n->name()).Obj().ToJson();
}

const BsonElement& NullElement() {
  static const BsonObj* holder = new BsonObj(bson::BsonBuilder().AppendNull("").Obj());
  static const BsonElement e = holder->FirstElement();
  return e;
}

// Finds the node at `parts`. With `create`, missing intermediate fields become objects, arrays
// are null-padded up to a numeric component, and a missing final field becomes a null
// placeholder (*existed tells which). Without `create`, *out is null when the path is absent or
// cannot exist. `no_arrays` rejects paths through arrays ($rename).
Status Locate(MutableDocument* doc, const FieldPath& parts, bool create, MutableNode** out,
              bool* existed, const char* array_error = nullptr) {
  *out = nullptr;
  *existed = false;
  MutableNode* cur = &doc->root();
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& name = parts[i];
    bool last = i + 1 == parts.size();
    MutableNode* next = nullptr;
    if (cur->IsObject()) {
      next = cur->Child(name);
      if (next == nullptr) {
        if (!create) return Status::OK();
        next = &cur->Append(last ? MutableNode(name, NullElement()) : MutableNode::NewObject(name));
      } else if (last) {
        *existed = true;
      }
    } else if (cur->IsArray()) {
      if (array_error != nullptr) return BadValue(array_error);
      auto idx = ParseArrayIndex(name);
      if (!idx) {
        if (!create) return Status::OK();
        return Status(ErrorCode::kPathNotViable,
                      "Cannot create field '" + name + "' in element " + NodeString(cur));
      }
      std::vector<MutableNode>& kids = cur->Children();
      if (*idx < kids.size()) {
        next = &kids[*idx];
        if (last) *existed = true;
      } else {
        if (!create) return Status::OK();
        if (*idx - kids.size() > kMaxPadding) {
          return Status(ErrorCode::kCannotBackfillArray,
                        "can't backfill more than 1500000 elements");
        }
        while (kids.size() < *idx) kids.emplace_back("", NullElement());
        kids.push_back(last ? MutableNode(name, NullElement()) : MutableNode::NewObject(name));
        next = &kids.back();
      }
    } else {
      if (!create) return Status::OK();
      return Status(ErrorCode::kPathNotViable,
                    "Cannot create field '" + name + "' in element " + NodeString(cur));
    }
    cur = next;
  }
  *out = cur;
  return Status::OK();
}

// Removes the node at `parts` (array elements become null, as MongoDB's $unset does).
void Remove(MutableDocument* doc, const FieldPath& parts) {
  FieldPath parent_parts(parts.begin(), parts.end() - 1);
  MutableNode* parent = &doc->root();
  if (!parent_parts.empty()) {
    bool existed;
    (void)Locate(doc, parent_parts, false, &parent, &existed);
    if (parent == nullptr) return;
  }
  if (parent->IsObject()) {
    std::vector<MutableNode>& kids = parent->Children();
    auto it = std::find_if(kids.begin(), kids.end(),
                           [&](const MutableNode& n) { return n.name() == parts.back(); });
    if (it != kids.end()) kids.erase(it);
  } else if (parent->IsArray()) {
    MutableNode* n = parent->Child(parts.back());
    if (n != nullptr) n->SetValue(NullElement());
  }
}

int TypeWidth(BsonType t) {
  switch (t) {
    case BsonType::kInt32:
      return 0;
    case BsonType::kInt64:
      return 1;
    case BsonType::kDouble:
      return 2;
    default:
      return 3;
  }
}

StatusWith<OwnedElement> Arithmetic(bool multiply, const BsonElement& a, const BsonElement& b,
                                    const UpdateOp& op, const BsonObj& original) {
  int width = std::max(TypeWidth(a.type()), TypeWidth(b.type()));
  bson::BsonBuilder out;
  if (width == 3) {
    // Any decimal operand makes a decimal: integers convert exactly, doubles to 15 digits.
    const bson::Decimal128 x = bson::decimal::FromNumber(a), y = bson::decimal::FromNumber(b);
    out.AppendDecimal("", multiply ? bson::decimal::Multiply(x, y) : bson::decimal::Add(x, y));
    return MakeOwned(out.Obj());
  }
  if (width == 2) {
    double r = multiply ? a.NumberDouble() * b.NumberDouble() : a.NumberDouble() + b.NumberDouble();
    out.AppendDouble("", r);
    return MakeOwned(out.Obj());
  }
  int64_t x = a.NumberLong();
  int64_t y = b.NumberLong();
  int64_t r;
  bool overflow = multiply ? __builtin_mul_overflow(x, y, &r) : __builtin_add_overflow(x, y, &r);
  if (overflow) {
    return BadValue("Failed to apply " + op.op_name + " operations to current value (" +
                    ElementToString(a) + ") for document {_id: " + IdString(original) + "}");
  }
  if (width == 0 && r >= INT32_MIN && r <= INT32_MAX) {
    out.AppendInt32("", static_cast<int32_t>(r));
  } else {
    out.AppendInt64("", r);
  }
  return MakeOwned(out.Obj());
}

Status RequireArray(MutableNode* n, const UpdateOp& op, const BsonObj& original) {
  if (n->IsArray()) return Status::OK();
  return BadValue("The field '" + op.path + "' must be an array but is of type " +
                  std::string(bson::TypeName(n->type())) +
                  " in document {_id: " + IdString(original) + "}");
}

Status ApplyPush(const UpdateOp& op, MutableNode* n) {
  std::vector<MutableNode>& kids = n->Children();
  int64_t size = static_cast<int64_t>(kids.size());
  int64_t pos = size;
  if (op.position) {
    pos = *op.position >= 0 ? std::min(*op.position, size)
                            : std::max<int64_t>(0, size + *op.position);
  }
  std::vector<MutableNode> items;
  for (const BsonElement& v : op.each) items.emplace_back("", v);
  kids.insert(kids.begin() + pos, std::make_move_iterator(items.begin()),
              std::make_move_iterator(items.end()));
  if (op.sort_whole != 0 || op.sort_pattern) {
    std::vector<std::pair<BsonElement, size_t>> keyed;
    for (size_t i = 0; i < kids.size(); ++i) keyed.emplace_back(kids[i].Value(), i);
    auto cmp = [&](const std::pair<BsonElement, size_t>& x,
                   const std::pair<BsonElement, size_t>& y) {
      if (op.sort_whole != 0) {
        int c = bson::CompareElementValues(x.first, y.first, op.strings.get());
        return op.sort_whole > 0 ? c < 0 : c > 0;
      }
      BsonObj ox = x.first.type() == BsonType::kObject ? x.first.Obj() : BsonObj();
      BsonObj oy = y.first.type() == BsonType::kObject ? y.first.Obj() : BsonObj();
      return op.sort_pattern->Compare(ox, oy) < 0;
    };
    std::stable_sort(keyed.begin(), keyed.end(), cmp);
    std::vector<MutableNode> sorted;
    for (const auto& [e, i] : keyed) sorted.push_back(std::move(kids[i]));
    kids = std::move(sorted);
  }
  if (op.slice) {
    int64_t s = *op.slice;
    int64_t total = static_cast<int64_t>(kids.size());
    if (s >= 0 && s < total) {
      kids.erase(kids.begin() + s, kids.end());
    } else if (s < 0 && -s < total) {
      kids.erase(kids.begin(), kids.end() + s);
    }
  }
  return Status::OK();
}

}  // namespace

Status ApplyUpdateOp(const UpdateOp& op, const BsonObj& original, MutableDocument* doc) {
  MutableNode* n = nullptr;
  bool existed = false;
  switch (op.type) {
    case UpdateOpType::kSet:
    case UpdateOpType::kSetOnInsert:
      HG_RETURN_IF_ERROR(Locate(doc, op.parts, true, &n, &existed));
      n->SetValue(op.arg);
      return Status::OK();
    case UpdateOpType::kUnset:
      Remove(doc, op.parts);
      return Status::OK();
    case UpdateOpType::kInc:
    case UpdateOpType::kMul: {
      HG_RETURN_IF_ERROR(Locate(doc, op.parts, true, &n, &existed));
      bool mul = op.type == UpdateOpType::kMul;
      if (!existed) {
        if (!mul) {
          n->SetValue(op.arg);
        } else {
          bson::BsonBuilder zero;
          switch (op.arg.type()) {
            case BsonType::kInt32:
              zero.AppendInt32("", 0);
              break;
            case BsonType::kInt64:
              zero.AppendInt64("", 0);
              break;
            case BsonType::kDouble:
              zero.AppendDouble("", 0.0);
              break;
            default:  // Decimal128: 0 times the multiplier, as MongoDB computes it
              zero.AppendDecimal(
                  "", bson::decimal::Multiply(bson::decimal::FromInt64(0), op.arg.Decimal()));
              break;
          }
          n->SetValue(MakeOwned(zero.Obj()).element);
        }
        return Status::OK();
      }
      BsonElement cur = n->Value();
      if (!cur.IsNumber()) {
        return Status(ErrorCode::kTypeMismatch,
                      "Cannot apply " + op.op_name + " to a value of non-numeric type. {_id: " +
                          IdString(original) + "} has the field '" + op.parts.back() +
                          "' of non-numeric type " + std::string(bson::TypeName(cur.type())));
      }
      HG_ASSIGN_OR_RETURN(OwnedElement r, Arithmetic(mul, cur, op.arg, op, original));
      n->SetValue(r.element);
      return Status::OK();
    }
    case UpdateOpType::kMin:
    case UpdateOpType::kMax: {
      HG_RETURN_IF_ERROR(Locate(doc, op.parts, true, &n, &existed));
      if (!existed) {
        n->SetValue(op.arg);
        return Status::OK();
      }
      int c = bson::CompareElementValues(op.arg, n->Value(), op.strings.get());
      if (op.type == UpdateOpType::kMin ? c < 0 : c > 0) n->SetValue(op.arg);
      return Status::OK();
    }
    case UpdateOpType::kCurrentDate: {
      HG_RETURN_IF_ERROR(Locate(doc, op.parts, true, &n, &existed));
      auto now = std::chrono::system_clock::now().time_since_epoch();
      int64_t millis = std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
      bson::BsonBuilder b;
      if (op.timestamp) {
        b.AppendTimestamp("", (static_cast<uint64_t>(millis / 1000) << 32) | 1u);
      } else {
        b.AppendDate("", millis);
      }
      n->SetValue(MakeOwned(b.Obj()).element);
      return Status::OK();
    }
    case UpdateOpType::kRename: {
      HG_RETURN_IF_ERROR(Locate(doc, op.parts, false, &n, &existed,
                                "The source field cannot be an array element"));
      if (n == nullptr || !existed) return Status::OK();
      MutableNode moved = MutableNode::OwnedValue(op.to_parts.back(), n->Value());
      // Check the destination before removing the source so a failure leaves no half-done move.
      MutableNode* dest = nullptr;
      bool dest_existed = false;
      Remove(doc, op.parts);
      HG_RETURN_IF_ERROR(Locate(doc, op.to_parts, true, &dest, &dest_existed,
                                "The destination field cannot be an array element"));
      dest->SetNode(std::move(moved));
      return Status::OK();
    }
    case UpdateOpType::kPush:
    case UpdateOpType::kAddToSet: {
      HG_RETURN_IF_ERROR(Locate(doc, op.parts, true, &n, &existed));
      if (!existed) n->SetNode(MutableNode::NewArray(""));
      HG_RETURN_IF_ERROR(RequireArray(n, op, original));
      if (op.type == UpdateOpType::kPush) return ApplyPush(op, n);
      for (const BsonElement& v : op.each) {
        bool present = false;
        for (MutableNode& k : n->Children()) {
          if (bson::CompareElementValues(k.Value(), v, op.strings.get()) == 0) {
            present = true;
            break;
          }
        }
        if (!present) n->Append(MutableNode("", v));
      }
      return Status::OK();
    }
    case UpdateOpType::kPop: {
      HG_RETURN_IF_ERROR(Locate(doc, op.parts, false, &n, &existed));
      if (n == nullptr) return Status::OK();
      if (!n->IsArray()) {
        return Status(ErrorCode::kTypeMismatch, "Path '" + op.path +
                                                    "' contains an element of non-array type '" +
                                                    std::string(bson::TypeName(n->type())) + "'");
      }
      std::vector<MutableNode>& kids = n->Children();
      if (kids.empty()) return Status::OK();
      if (op.arg.NumberDouble() < 0) {
        kids.erase(kids.begin());
      } else {
        kids.pop_back();
      }
      return Status::OK();
    }
    case UpdateOpType::kBit: {
      HG_RETURN_IF_ERROR(Locate(doc, op.parts, true, &n, &existed));
      // A missing field starts as int 0; int op long gives a long, as in MongoDB.
      bool is_long = false;
      int64_t v = 0;
      if (existed) {
        BsonElement cur = n->Value();
        if (cur.type() != BsonType::kInt32 && cur.type() != BsonType::kInt64) {
          return BadValue("Cannot apply $bit to a value of non-integral type.{_id: " +
                          IdString(original) + "} has the field " + op.parts.back() +
                          " of non-integer type " + std::string(bson::TypeName(cur.type())));
        }
        is_long = cur.type() == BsonType::kInt64;
        v = cur.NumberLong();
      }
      for (const BsonElement& b : op.arg.Obj()) {
        int64_t x = b.NumberLong();
        is_long = is_long || b.type() == BsonType::kInt64;
        std::string_view kind = b.FieldName();
        v = kind == "and" ? (v & x) : kind == "or" ? (v | x) : (v ^ x);
      }
      bson::BsonBuilder out;
      if (is_long) {
        out.AppendInt64("", v);
      } else {
        out.AppendInt32("", static_cast<int32_t>(v));
      }
      n->SetValue(MakeOwned(out.Obj()).element);
      return Status::OK();
    }
    case UpdateOpType::kPull:
    case UpdateOpType::kPullAll: {
      HG_RETURN_IF_ERROR(Locate(doc, op.parts, false, &n, &existed));
      if (n == nullptr) return Status::OK();
      if (!n->IsArray()) return BadValue("Cannot apply " + op.op_name + " to a non-array value");
      std::vector<MutableNode>& kids = n->Children();
      auto remove = [&](MutableNode& k) {
        BsonElement v = k.Value();
        if (op.type == UpdateOpType::kPullAll) {
          for (const BsonElement& x : op.arg.Obj()) {
            if (bson::CompareElementValues(v, x, op.strings.get()) == 0) return true;
          }
          return false;
        }
        if (op.pull_matcher) return op.pull_matcher->Matches(v);
        return bson::CompareElementValues(v, op.arg, op.strings.get()) == 0;
      };
      kids.erase(std::remove_if(kids.begin(), kids.end(), remove), kids.end());
      return Status::OK();
    }
  }
  return Status::OK();
}

}  // namespace hourglass::query
