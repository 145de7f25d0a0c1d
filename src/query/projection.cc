#include "query/projection.h"

#include <string>
#include <utility>
#include <vector>

#include "query/matcher.h"
#include "query/mutable_document.h"
#include "query/path.h"
#include "query/query_errors.h"

namespace hourglass::query {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

enum class ProjAction { kNone, kInclude, kExclude, kSlice, kElemMatch };

struct Projection::Node {
  // A named child. (Not a std::pair: a pair of the class being defined is an incomplete type to
  // clang's standard library checks; a vector of a declared struct is allowed.)
  struct Child;

  ProjAction action = ProjAction::kNone;
  std::vector<Child> children;
  int64_t skip = 0;   // $slice: elements skipped (negative: from the end)
  int64_t limit = 0;  // $slice: elements kept
  bool has_skip = false;
  std::shared_ptr<ElementMatcher> elem_match;

  Node* Find(std::string_view name);
  const Node* Find(std::string_view name) const { return const_cast<Node*>(this)->Find(name); }
};

struct Projection::Node::Child {
  std::string first;  // the field name
  Node second;
};

Projection::Node* Projection::Node::Find(std::string_view name) {
  for (auto& [n, c] : children) {
    if (n == name) return &c;
  }
  return nullptr;
}

namespace {

using Node = Projection::Node;

Status BadValue(std::string reason) { return Status(ErrorCode::kBadValue, std::move(reason)); }

Status Insert(Node* root, const std::string& dotted, Node leaf) {
  FieldPath parts = SplitPath(dotted);
  Node* cur = root;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].empty()) return BadValue("FieldPath field names may not be empty strings.");
    Node* next = cur->Find(parts[i]);
    bool last = i + 1 == parts.size();
    if (next != nullptr && (last || next->action != ProjAction::kNone)) {
      return Status(kProjectionPathCollisionCode,
                    "Path collision at " + dotted + " remaining portion " + JoinPath(parts, i + 1));
    }
    if (next == nullptr) {
      cur->children.push_back(Node::Child{parts[i], last ? std::move(leaf) : Node()});
      next = &cur->children.back().second;
    }
    cur = next;
  }
  return Status::OK();
}

// A find $slice that is neither a number nor [skip, limit]: MongoDB then tries the aggregation
// expression $slice (2 or 3 arguments) and reports both failures under 28667. `inner` is the
// find syntax's own error (Location31272 / 31273).
Status InvalidSlice(const BsonElement& arg, const std::string& inner) {
  const size_t args = arg.type() == BsonType::kArray ? arg.Obj().NumFields() : 1;
  bson::BsonBuilder given;
  given.AppendElement(arg);
  return Status(ErrorCode::kLocation28667,
                "Invalid $slice syntax. The given syntax " + given.Obj().ToJson() +
                    " did not match the find() syntax because :: " + inner +
                    " :: The given syntax did not match the expression $slice syntax. :: caused "
                    "by :: Expression $slice takes at least 2 arguments, and at most 3, but " +
                    std::to_string(args) + " were passed in.");
}

StatusWith<Node> ParseSlice(const BsonElement& arg) {
  Node n;
  n.action = ProjAction::kSlice;
  if (arg.IsNumber()) {
    n.limit = arg.NumberLong();
    return n;
  }
  if (arg.type() == BsonType::kArray) {
    std::vector<BsonElement> parts;
    for (const BsonElement& e : arg.Obj()) parts.push_back(e);
    // (Arrays holding anything but numbers are the expression $slice: see IsExpressionValue.)
    if (parts.size() != 2 || !parts[0].IsNumber() || !parts[1].IsNumber()) {
      return InvalidSlice(arg,
                          "Location31272: $slice array argument should be of form [skip, limit]");
    }
    if (parts[1].NumberLong() <= 0) {
      return Status(ErrorCode::kLocation28724,
                    "Second argument to $slice must be a positive number");
    }
    n.has_skip = true;
    n.skip = parts[0].NumberLong();
    n.limit = parts[1].NumberLong();
    return n;
  }
  return InvalidSlice(arg, "Location31273: $slice only supports numbers and [skip, limit] arrays");
}

BsonObj SliceArray(const Node& n, const BsonObj& arr) {
  int64_t size = arr.NumFields();
  int64_t start = 0;
  int64_t count = 0;
  if (n.has_skip) {
    start = n.skip < 0 ? std::max<int64_t>(0, size + n.skip) : std::min(n.skip, size);
    count = std::min(n.limit, size - start);
  } else if (n.limit >= 0) {
    count = std::min(n.limit, size);
  } else {
    start = std::max<int64_t>(0, size + n.limit);
    count = size - start;
  }
  bson::BsonArrayBuilder b;
  int64_t i = 0;
  for (const BsonElement& e : arr) {
    if (i >= start && i < start + count) b.Append(e);
    ++i;
  }
  return b.Obj();
}

void ApplyToValue(const Node& n, const BsonElement& e, std::string_view name, bool inclusion,
                  bson::BsonBuilder* out);

void ApplyToObject(const Node& n, const BsonObj& obj, bool inclusion, bool top_level,
                   bson::BsonBuilder* out) {
  for (const BsonElement& e : obj) {
    const Node* c = n.Find(e.FieldName());
    if (c == nullptr) {
      if (!inclusion || (top_level && e.FieldName() == "_id")) out->AppendElement(e);
      continue;
    }
    ApplyToValue(*c, e, e.FieldName(), inclusion, out);
  }
  if (inclusion) {
    // $elemMatch fields of an inclusion projection come after the other fields.
    for (const auto& [name, c] : n.children) {
      if (c.action != ProjAction::kElemMatch) continue;
      BsonElement e = obj.GetField(name);
      if (e.type() != BsonType::kArray) continue;
      for (const BsonElement& item : e.Obj()) {
        if (c.elem_match->Matches(item)) {
          size_t t = out->OpenArray(name);
          out->AppendElementAs(item, "0");
          out->Close(t);
          break;
        }
      }
    }
  }
}

void ApplyToArray(const Node& n, const BsonObj& arr, bool inclusion, bson::BsonBuilder* out) {
  int i = 0;
  for (const BsonElement& item : arr) {
    std::string key = std::to_string(i);
    if (item.type() == BsonType::kObject) {
      size_t t = out->OpenObject(key);
      ApplyToObject(n, item.Obj(), inclusion, false, out);
      out->Close(t);
    } else if (item.type() == BsonType::kArray) {
      size_t t = out->OpenArray(key);
      ApplyToArray(n, item.Obj(), inclusion, out);
      out->Close(t);
    } else if (!inclusion) {
      out->AppendElementAs(item, key);
    } else {
      continue;  // scalars inside arrays are dropped by inclusion of a sub-path
    }
    ++i;
  }
}

void ApplyToValue(const Node& n, const BsonElement& e, std::string_view name, bool inclusion,
                  bson::BsonBuilder* out) {
  switch (n.action) {
    case ProjAction::kInclude:
      out->AppendElementAs(e, name);
      return;
    case ProjAction::kExclude:
      return;
    case ProjAction::kSlice:
      if (e.type() == BsonType::kArray) {
        out->AppendArray(name, SliceArray(n, e.Obj()));
      } else {
        out->AppendElementAs(e, name);
      }
      return;
    case ProjAction::kElemMatch:
      if (inclusion) return;  // appended after the other fields
      if (e.type() != BsonType::kArray) return;
      for (const BsonElement& item : e.Obj()) {
        if (n.elem_match->Matches(item)) {
          size_t t = out->OpenArray(name);
          out->AppendElementAs(item, "0");
          out->Close(t);
          return;
        }
      }
      return;
    case ProjAction::kNone:
      if (e.type() == BsonType::kObject) {
        size_t t = out->OpenObject(name);
        ApplyToObject(n, e.Obj(), inclusion, false, out);
        out->Close(t);
      } else if (e.type() == BsonType::kArray) {
        size_t t = out->OpenArray(name);
        ApplyToArray(n, e.Obj(), inclusion, out);
        out->Close(t);
      } else if (!inclusion) {
        out->AppendElementAs(e, name);
      }
      return;
  }
}

// Whether `e` (a projection value) is an aggregation expression rather than a find projection
// flag or operator; *find_only is set for the find-only operators.
bool IsExpressionValue(const BsonElement& e, bool* find_only) {
  if (e.IsNumber() || e.type() == BsonType::kBool) return false;
  if (e.type() != BsonType::kObject || e.Obj().IsEmpty()) return true;
  BsonElement op = e.Obj().FirstElement();
  std::string_view n = op.FieldName();
  if (n == "$elemMatch" || n == "$meta") {
    *find_only = true;
    return false;
  }
  if (n == "$slice") {
    bool numeric = op.IsNumber();
    if (op.type() == BsonType::kArray) {
      numeric = true;
      for (const BsonElement& x : op.Obj()) numeric = numeric && x.IsNumber();
    }
    *find_only = *find_only || numeric;
    return !numeric;
  }
  return true;
}

// MongoDB's checks of a positional projection's form ("a.$" takes 1 or true, once, at the end
// of its path), made before anything else looks at the field.
Status CheckPositionalForm(const BsonElement& e) {
  std::string_view name = e.FieldName();
  if (name.find(".$.") != std::string_view::npos) {
    return Status(ErrorCode::kLocation31394,
                  "As of 4.4, it's illegal to specify positional operator in the middle of a "
                  "path. Positional projection may only be used at the end, for example: a.b.$.");
  }
  if (!name.ends_with(".$")) return Status::OK();
  if (e.type() == BsonType::kObject) {
    return Status(ErrorCode::kLocation31271,
                  "positional projection cannot be used with an expression or sub object");
  }
  if (!e.IsNumber() && e.type() != BsonType::kBool) {
    return Status(ErrorCode::kLocation31308, "positional projection cannot be used with a literal");
  }
  if (!e.Truthy()) {
    return Status(ErrorCode::kLocation31395, "positional projection cannot be used with exclusion");
  }
  return Status::OK();
}

}  // namespace

StatusWith<Projection> Projection::Parse(const BsonObj& spec, const BsonObj& query,
                                         const ExpressionContext& ctx) {
  bool has_expression = false, has_find_only = false;
  for (const BsonElement& e : spec) {
    HG_RETURN_IF_ERROR(CheckPositionalForm(e));
    if (e.FieldName().ends_with(".$")) has_find_only = true;
    if (IsExpressionValue(e, &has_find_only)) has_expression = true;
  }
  if (has_expression) {
    if (has_find_only) {
      return BadValue(
          "a find projection mixing aggregation expressions with $elemMatch, $slice, $meta or "
          "positional '.$' is not supported yet");
    }
    const ExpressionHooks& hooks = GetExpressionHooks();
    if (hooks.parse_projection == nullptr) return MissingExpressionHook("a projection expression");
    Projection p;
    HG_ASSIGN_OR_RETURN(p.transform_, hooks.parse_projection(spec, ctx));
    return p;
  }
  Projection p;
  auto root = std::make_shared<Node>();
  enum class Mode { kUnknown, kInclusion, kExclusion } mode = Mode::kUnknown;
  bool exclude_id = false;
  bool include_id = false;
  bool has_elem_match = false;
  for (const BsonElement& e : spec) {
    std::string name(e.FieldName());
    if (name.empty()) return BadValue("Projection field names may not be empty");
    if (name.ends_with(".$") && name.find('$') == name.size() - 1 &&
        (e.IsNumber() || e.type() == BsonType::kBool) && e.Truthy()) {
      if (p.positional_path_) {
        return Status(ErrorCode::kLocation31276,
                      "Cannot specify more than one positional projection per query.");
      }
      if (has_elem_match) {
        return Status(ErrorCode::kLocation31256,
                      "Cannot specify positional operator and $elemMatch.");
      }
      name.resize(name.size() - 2);
      p.positional_path_ = SplitPath(name);
      StatusWith<Matcher> m = Matcher::Parse(query, ctx);
      if (!m.ok()) return m.status();
      p.query_ = std::make_shared<const Matcher>(std::move(m).value());
    } else if (name.find('$') != std::string::npos) {
      if (name.ends_with(".$") || name == "$") {
        return BadValue("positional projection ('" + name + "') needs an inclusion (1 or true)");
      }
      return BadValue("FieldPath field names may not start with '$': " + name);
    }
    Node leaf;
    bool is_id = name == "_id";
    if (e.IsNumber() || e.type() == BsonType::kBool) {
      bool include = e.Truthy();
      leaf.action = include ? ProjAction::kInclude : ProjAction::kExclude;
      if (is_id) {
        (include ? include_id : exclude_id) = true;
        if (include) continue;  // _id is included by default either way
      } else if (include) {
        if (mode == Mode::kExclusion) {
          return Status(kInclusionInExclusionCode,
                        "Cannot do inclusion on field " + name + " in exclusion projection");
        }
        mode = Mode::kInclusion;
      } else {
        if (mode == Mode::kInclusion) {
          return Status(kExclusionInInclusionCode,
                        "Cannot do exclusion on field " + name + " in inclusion projection");
        }
        mode = Mode::kExclusion;
      }
    } else if (e.type() == BsonType::kObject && !e.Obj().IsEmpty() &&
               e.Obj().FirstElement().FieldName().starts_with("$")) {
      BsonObj op = e.Obj();
      std::string_view op_name = op.FirstElement().FieldName();
      if (op.NumFields() != 1) return BadValue("projection operators take a single field");
      if (op_name == "$slice") {
        HG_ASSIGN_OR_RETURN(leaf, ParseSlice(op.FirstElement()));
      } else if (op_name == "$elemMatch") {
        if (op.FirstElement().type() != BsonType::kObject) {
          return Status(ErrorCode::kLocation31274,
                        "elemMatch: Invalid argument, object required, but got " +
                            std::string(bson::TypeName(op.FirstElement().type())));
        }
        if (p.positional_path_) {
          return Status(ErrorCode::kLocation31255,
                        "Cannot specify positional operator and $elemMatch.");
        }
        if (name.find('.') != std::string::npos) {
          return Status(ErrorCode::kLocation31275,
                        "Cannot use $elemMatch projection on a nested field.");
        }
        HG_ASSIGN_OR_RETURN(ElementMatcher m, ElementMatcher::Parse(op.FirstElement().Obj()));
        leaf.action = ProjAction::kElemMatch;
        leaf.elem_match = std::make_shared<ElementMatcher>(std::move(m));
        has_elem_match = true;
      } else if (op_name == "$meta") {
        return BadValue("$meta projections are not supported yet");
      } else {
        return BadValue("projection expressions (" + std::string(op_name) +
                        ") are not supported yet");
      }
    } else {
      return BadValue("projection values other than 0/1/true/false (field " + name +
                      ") are expressions, which are not supported yet");
    }
    HG_RETURN_IF_ERROR(Insert(root.get(), name, std::move(leaf)));
  }
  p.inclusion_ = mode == Mode::kInclusion ||
                 (mode == Mode::kUnknown && (has_elem_match || (include_id && !exclude_id)));
  if (p.inclusion_ && !exclude_id && root->Find("_id") == nullptr) {
    Node id;
    id.action = ProjAction::kInclude;
    root->children.push_back(Node::Child{"_id", std::move(id)});
  }
  p.root_ = std::move(root);
  return p;
}

StatusWith<BsonObj> Projection::NarrowToMatchedElement(const BsonObj& doc) const {
  auto fail = [&]() {
    return Status(ErrorCode::kLocation51246,
                  "Executor error during find command :: caused by :: positional operator '" +
                      JoinPath(*positional_path_) +
                      ".$' couldn't find a matching element in the "
                      "array");
  };
  // Like MongoDB, a missing field or a non-array value is projected as it is.
  MutableDocument md(doc);
  MutableNode* n = &md.root();
  for (const std::string& part : *positional_path_) {
    n = n->IsObject() ? n->Child(part) : nullptr;
    if (n == nullptr) return doc;
  }
  if (!n->IsArray()) return doc;
  std::optional<size_t> idx = query_->MatchedArrayIndex(doc, *positional_path_);
  if (!idx || *idx >= n->Children().size()) return fail();
  BsonObj one = bson::BsonBuilder().AppendElementAs(n->Children()[*idx].Value(), "0").Obj();
  n->SetValue(bson::BsonBuilder().AppendArray("", one).Obj().FirstElement());
  return md.ToObj();
}

StatusWith<BsonObj> Projection::Apply(const BsonObj& doc) const {
  if (transform_) return transform_->Apply(doc);
  BsonObj source = doc;
  if (positional_path_) {
    HG_ASSIGN_OR_RETURN(source, NarrowToMatchedElement(doc));
  }
  bson::BsonBuilder b;
  ApplyToObject(*root_, source, inclusion_, true, &b);
  return b.Obj();
}

bool Projection::IsInclusion() const { return inclusion_; }

}  // namespace hourglass::query
