#include "query/update.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "query/path.h"
#include "query/query_errors.h"
#include "query/update_op.h"

namespace hourglass::query {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

Status BadValue(std::string reason) { return Status(ErrorCode::kBadValue, std::move(reason)); }

std::string ElementToString(const BsonElement& e) {
  return bson::BsonBuilder().AppendElement(e).Obj().ToJson();
}

StatusWith<UpdateOpType> OpTypeFromName(std::string_view name) {
  static const std::pair<std::string_view, UpdateOpType> kOps[] = {
      {"$set", UpdateOpType::kSet},
      {"$setOnInsert", UpdateOpType::kSetOnInsert},
      {"$unset", UpdateOpType::kUnset},
      {"$inc", UpdateOpType::kInc},
      {"$mul", UpdateOpType::kMul},
      {"$min", UpdateOpType::kMin},
      {"$max", UpdateOpType::kMax},
      {"$rename", UpdateOpType::kRename},
      {"$currentDate", UpdateOpType::kCurrentDate},
      {"$push", UpdateOpType::kPush},
      {"$addToSet", UpdateOpType::kAddToSet},
      {"$pop", UpdateOpType::kPop},
      {"$pull", UpdateOpType::kPull},
      {"$pullAll", UpdateOpType::kPullAll},
      {"$bit", UpdateOpType::kBit},
  };
  for (const auto& [n, t] : kOps) {
    if (n == name) return t;
  }
  return Status(ErrorCode::kFailedToParse,
                "Unknown modifier: " + std::string(name) +
                    ". Expected a valid update modifier or pipeline-style update specified as an "
                    "array");
}

bool IsPositionalComponent(std::string_view c) {
  return c == "$" || (c.starts_with("$[") && c.ends_with("]"));
}

// Checks an update path; *positional is set when it has positional components, and `filters`
// (null: none allowed) lists the arrayFilters identifiers "$[<id>]" may name, *used collecting
// the ones it does.
Status ValidatePath(const std::string& path, bool* positional = nullptr,
                    const std::vector<ArrayFilter>* filters = nullptr,
                    std::set<std::string>* used = nullptr) {
  if (path.empty()) return Status(ErrorCode::kEmptyFieldName, "An empty update path is not valid.");
  FieldPath parts = SplitPath(path);
  int dollars = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& c = parts[i];
    if (c.empty()) {
      return Status(
          ErrorCode::kEmptyFieldName,
          "The update path '" + path + "' contains an empty field name, which is not allowed.");
    }
    if (IsPositionalComponent(c)) {
      if (positional == nullptr) {
        return BadValue("The path '" + path + "' may not contain positional components here");
      }
      if (i == 0) {
        return BadValue(std::string(c == "$"
                                        ? "Cannot have positional (i.e. '$')"
                                        : "Cannot have array filter identifier (i.e. '$[<id>]')") +
                        " element in the first position in path '" + path + "'");
      }
      *positional = true;
      if (c == "$" && ++dollars > 1) {
        return BadValue("Too many positional (i.e. '$') elements found in path '" + path + "'");
      }
      if (c.size() > 3) {
        std::string id = c.substr(2, c.size() - 3);
        bool found = filters != nullptr &&
                     std::any_of(filters->begin(), filters->end(),
                                 [&](const ArrayFilter& f) { return f.identifier == id; });
        if (!found) {
          return BadValue("No array filter found for identifier '" + id + "' in path '" + path +
                          "'");
        }
        if (used != nullptr) used->insert(id);
      }
      continue;
    }
    if (c.starts_with("$")) {
      return Status(
          ErrorCode::kDollarPrefixedFieldName,
          "The dollar ($) prefixed field '" + c + "' in '" + path + "' is not valid for storage.");
    }
  }
  return Status::OK();
}

bool IsWholeNumber(const BsonElement& e, int64_t* out) {
  if (!e.IsNumber()) return false;
  double d = e.NumberDouble();
  if (d != d || d != static_cast<double>(static_cast<int64_t>(d))) return false;
  *out = e.type() == BsonType::kDouble || e.type() == BsonType::kDecimal128
             ? static_cast<int64_t>(d)
             : e.NumberLong();
  return true;
}

Status ParsePushModifiers(UpdateOp* op) {
  BsonObj spec = op->arg.Obj();
  for (const BsonElement& m : spec) {
    std::string_view n = m.FieldName();
    if (n == "$each") {
      if (m.type() != BsonType::kArray) {
        return BadValue(
            "The argument to $each in " + op->op_name +
            " must be an array but it was of type: " + std::string(bson::TypeName(m.type())));
      }
      for (const BsonElement& v : m.Obj()) op->each.push_back(v);
    } else if (op->type == UpdateOpType::kAddToSet) {
      return BadValue("Found unexpected fields after $each in $addToSet: " + spec.ToJson());
    } else if (n == "$slice") {
      int64_t v;
      if (!IsWholeNumber(m, &v)) {
        return BadValue("The value for $slice must be an integer value but was given type: " +
                        std::string(bson::TypeName(m.type())));
      }
      op->slice = v;
    } else if (n == "$position") {
      int64_t v;
      if (!IsWholeNumber(m, &v)) {
        return BadValue("The value for $position must be an integer value, not of type: " +
                        std::string(bson::TypeName(m.type())));
      }
      op->position = v;
    } else if (n == "$sort") {
      if (m.IsNumber() && (m.NumberDouble() == 1 || m.NumberDouble() == -1)) {
        op->sort_whole = m.NumberDouble() == 1 ? 1 : -1;
      } else if (m.type() == BsonType::kObject && !m.Obj().IsEmpty()) {
        HG_ASSIGN_OR_RETURN(SortPattern p, SortPattern::Parse(m.Obj()));
        p.SetCollator(op->strings);
        op->sort_pattern = std::make_shared<SortPattern>(std::move(p));
      } else {
        return BadValue(
            "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} "
            "to sort embedded fields");
      }
    } else {
      return BadValue("Unrecognized clause in $push: " + std::string(n));
    }
  }
  return Status::OK();
}

Status ParseOpArgument(UpdateOp* op) {
  const BsonElement& a = op->arg;
  switch (op->type) {
    case UpdateOpType::kInc:
    case UpdateOpType::kMul:
      if (!a.IsNumber()) {
        return Status(
            ErrorCode::kTypeMismatch,
            std::string(op->type == UpdateOpType::kInc ? "Cannot increment" : "Cannot multiply") +
                " with non-numeric argument: {" + op->path + ": " + ElementToString(a) + "}");
      }
      return Status::OK();
    case UpdateOpType::kRename:
      if (a.type() != BsonType::kString) {
        return BadValue("The 'to' field for $rename must be a string: " + ElementToString(a));
      }
      op->to_path = std::string(a.Str());
      if (op->positional) {
        return BadValue("The source field for $rename may not be dynamic: " + op->path);
      }
      for (const std::string& c : SplitPath(op->to_path)) {
        if (IsPositionalComponent(c)) {
          return BadValue("The destination field for $rename may not be dynamic: " + op->to_path);
        }
      }
      HG_RETURN_IF_ERROR(ValidatePath(op->to_path));
      if (op->to_path == op->path) {
        return BadValue("The source and target field for $rename must differ: " +
                        ElementToString(a));
      }
      if (PathIsBelow(op->to_path, op->path) || PathIsBelow(op->path, op->to_path)) {
        return BadValue("The source and target field for $rename must not be on the same path: " +
                        ElementToString(a));
      }
      op->to_parts = SplitPath(op->to_path);
      return Status::OK();
    case UpdateOpType::kCurrentDate:
      if (a.type() == BsonType::kBool) return Status::OK();
      if (a.type() == BsonType::kObject && a.Obj().NumFields() == 1 &&
          a.Obj().FirstElement().FieldName() == "$type" &&
          a.Obj().FirstElement().type() == BsonType::kString) {
        std::string_view t = a.Obj().FirstElement().Str();
        if (t == "date" || t == "timestamp") {
          op->timestamp = t == "timestamp";
          return Status::OK();
        }
        return BadValue(
            "The '$type' string field is required to be 'date' or 'timestamp': "
            "{$currentDate: {field : {$type: 'date'}}}");
      }
      return BadValue(std::string(bson::TypeName(a.type())) +
                      " is not valid type for $currentDate. Please use a boolean ('true') or a "
                      "$type expression ({$type: 'timestamp/date'}).");
    case UpdateOpType::kPush:
    case UpdateOpType::kAddToSet:
      if (a.type() == BsonType::kObject && a.Obj().HasField("$each")) {
        return ParsePushModifiers(op);
      }
      op->each.push_back(a);
      return Status::OK();
    case UpdateOpType::kPop: {
      double d = a.IsNumber() ? a.NumberDouble() : 0;
      if (d != 1 && d != -1) {
        return Status(ErrorCode::kFailedToParse,
                      "$pop expects 1 or -1, found: " + ElementToString(a));
      }
      return Status::OK();
    }
    case UpdateOpType::kPull:
      if (a.type() == BsonType::kRegex) {
        HG_ASSIGN_OR_RETURN(
            ElementMatcher m,
            ElementMatcher::Parse(bson::BsonBuilder().AppendElementAs(a, "$regex").Obj(),
                                  op->strings));
        op->pull_matcher = std::make_shared<ElementMatcher>(std::move(m));
      } else if (a.type() == BsonType::kObject) {
        HG_ASSIGN_OR_RETURN(ElementMatcher m, ElementMatcher::Parse(a.Obj(), op->strings));
        op->pull_matcher = std::make_shared<ElementMatcher>(std::move(m));
      }
      return Status::OK();
    case UpdateOpType::kBit:
      if (a.type() != BsonType::kObject) {
        return BadValue("The $bit modifier is not compatible with a " +
                        std::string(bson::TypeName(a.type())) +
                        ". You must pass in an embedded document: {$bit: {field: {and/or/xor: "
                        "#}}");
      }
      if (a.Obj().IsEmpty()) {
        return BadValue(
            "You must pass in at least one bitwise operation. The format is: "
            "{$bit: {field: {and/or/xor: #}}");
      }
      for (const BsonElement& b : a.Obj()) {
        std::string_view n = b.FieldName();
        if (n != "and" && n != "or" && n != "xor") {
          return BadValue("The $bit modifier only supports 'and', 'or', and 'xor', not '" +
                          std::string(n) + "' which is an unknown operator: " + ElementToString(b));
        }
        if (b.type() != BsonType::kInt32 && b.type() != BsonType::kInt64) {
          return BadValue("The $bit modifier field must be an Integer(32/64 bit); a '" +
                          std::string(bson::TypeName(b.type())) +
                          "' is not supported here: " + ElementToString(b));
        }
      }
      return Status::OK();
    case UpdateOpType::kPullAll:
      if (a.type() != BsonType::kArray) {
        return BadValue("$pullAll requires an array argument but was given a " +
                        std::string(bson::TypeName(a.type())));
      }
      return Status::OK();
    default:
      return Status::OK();
  }
}

bool IsPrefixOrEqual(const FieldPath& a, const FieldPath& b) {
  if (a.size() > b.size()) return false;
  return std::equal(a.begin(), a.end(), b.begin());
}

// Orders paths component by component, numeric components numerically, so that new fields are
// appended in the order MongoDB 5.0+ appends them.
bool PathLess(const FieldPath& a, const FieldPath& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    auto na = ParseArrayIndex(a[i]);
    auto nb = ParseArrayIndex(b[i]);
    if (na && nb) {
      if (*na != *nb) return *na < *nb;
    } else if (a[i] != b[i]) {
      return a[i] < b[i];
    }
  }
  return a.size() < b.size();
}

bool IsIdentifier(std::string_view s) {
  if (s.empty() || !std::islower(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
}

// The identifier a filter's fields are about: the first component of every path, including
// those inside $and/$or/$nor. "" when the filter has none.
Status CollectIdentifier(const BsonObj& filter, std::string* id) {
  for (const BsonElement& e : filter) {
    std::string_view name = e.FieldName();
    if (name == "$and" || name == "$or" || name == "$nor") {
      if (e.type() != BsonType::kArray) continue;  // the matcher reports it
      for (const BsonElement& sub : e.Obj()) {
        if (sub.type() == BsonType::kObject) HG_RETURN_IF_ERROR(CollectIdentifier(sub.Obj(), id));
      }
      continue;
    }
    if (name.starts_with("$")) continue;
    std::string_view top = name.substr(0, name.find('.'));
    if (!id->empty() && *id != top) {
      return Status(ErrorCode::kFailedToParse,
                    "Error parsing array filter :: caused by :: Expected a single top-level field "
                    "name, found '" +
                        *id + "' and '" + std::string(top) + "'");
    }
    *id = std::string(top);
  }
  return Status::OK();
}

StatusWith<std::vector<ArrayFilter>> ParseArrayFilters(const BsonObj& array_filters,
                                                       const ExpressionContext& ctx) {
  std::vector<ArrayFilter> out;
  for (const BsonElement& f : array_filters) {
    if (f.type() != BsonType::kObject) {
      return Status(ErrorCode::kFailedToParse,
                    "Error parsing array filter :: caused by :: each arrayFilters entry must be an "
                    "object, found " +
                        std::string(bson::TypeName(f.type())));
    }
    std::string id;
    HG_RETURN_IF_ERROR(CollectIdentifier(f.Obj(), &id));
    if (id.empty()) {
      return Status(ErrorCode::kFailedToParse,
                    "Error parsing array filter :: caused by :: Cannot use an expression without a "
                    "top-level field name in arrayFilters");
    }
    if (!IsIdentifier(id)) {
      return BadValue(
          "Error parsing array filter :: caused by :: The top-level field name must be an "
          "alphanumeric string beginning with a lowercase letter, found '" +
          id + "'");
    }
    for (const ArrayFilter& other : out) {
      if (other.identifier == id) {
        return Status(ErrorCode::kFailedToParse,
                      "Found multiple array filters with the same top-level field name " + id);
      }
    }
    StatusWith<Matcher> m = Matcher::Parse(f.Obj(), ctx);
    if (!m.ok()) return m.status().WithContext("Error parsing array filter :: caused by :: ");
    out.push_back(ArrayFilter{id, std::make_shared<const Matcher>(std::move(m).value())});
  }
  return out;
}

// Expands a path with positional components into the concrete paths it names in `doc` (the
// document before the update), as MongoDB resolves them: "$" is the array index the query
// matched, "$[]" every index, "$[<id>]" the indexes whose element passes the id's array filter.
struct PositionalContext {
  const BsonObj* doc;
  const Matcher* query;
  const std::vector<ArrayFilter>* filters;
  bool upsert_insert;
};

Status ExpandPath(const BsonElement& cur, bool have_cur, const FieldPath& parts, size_t i,
                  FieldPath* prefix, const PositionalContext& ctx, std::vector<FieldPath>* out) {
  if (i == parts.size()) {
    out->push_back(*prefix);
    return Status::OK();
  }
  std::string c = parts[i];
  if (c == "$") {
    std::optional<size_t> idx;
    if (ctx.query != nullptr && !ctx.upsert_insert) {
      idx = ctx.query->MatchedArrayIndex(*ctx.doc, *prefix);
    }
    if (!idx)
      return BadValue("The positional operator did not find the match needed from the query.");
    c = std::to_string(*idx);
  } else if (IsPositionalComponent(c)) {
    if (!have_cur) {  // also on upsert inserts, as in MongoDB
      return BadValue("The path '" + JoinPath(*prefix) +
                      "' must exist in the document in order to apply array updates.");
    }
    if (cur.type() != BsonType::kArray) {
      return BadValue("Cannot apply array updates to non-array element " +
                      bson::BsonBuilder().AppendElementAs(cur, prefix->back()).Obj().ToJson());
    }
    const Matcher* filter = nullptr;
    std::string id = c.substr(2, c.size() - 3);
    if (!id.empty()) {
      for (const ArrayFilter& f : *ctx.filters) {
        if (f.identifier == id) filter = f.matcher.get();
      }
    }
    size_t k = 0;
    for (const BsonElement& item : cur.Obj()) {
      bool take = true;
      if (filter != nullptr) {
        BsonObj wrapped = bson::BsonBuilder().AppendElementAs(item, id).Obj();
        HG_ASSIGN_OR_RETURN(take, filter->Evaluate(wrapped));
      }
      if (take) {
        prefix->push_back(std::to_string(k));
        HG_RETURN_IF_ERROR(ExpandPath(item, true, parts, i + 1, prefix, ctx, out));
        prefix->pop_back();
      }
      ++k;
    }
    return Status::OK();
  }
  BsonElement next;
  if (have_cur && cur.IsObjectOrArray()) next = cur.Obj().GetField(c);
  prefix->push_back(c);
  Status st = ExpandPath(next, !next.eoo(), parts, i + 1, prefix, ctx, out);
  prefix->pop_back();
  return st;
}

}  // namespace

StatusWith<UpdateDriver> UpdateDriver::ParsePipeline(const BsonObj& stages,
                                                     const BsonObj& array_filters,
                                                     const ExpressionContext& ctx) {
  if (!array_filters.IsEmpty()) {
    return Status(ErrorCode::kFailedToParse,
                  "arrayFilters may not be specified for pipeline-style updates");
  }
  const ExpressionHooks& hooks = GetExpressionHooks();
  if (hooks.parse_update_pipeline == nullptr) {
    return MissingExpressionHook("a pipeline-style update");
  }
  UpdateDriver d;
  d.update_ = stages.Owned();
  HG_ASSIGN_OR_RETURN(d.pipeline_, hooks.parse_update_pipeline(d.update_, ctx));
  d.ops_ = std::make_shared<std::vector<UpdateOp>>();
  return d;
}

StatusWith<UpdateDriver> UpdateDriver::Parse(const BsonObj& update, const BsonObj& array_filters,
                                             const ExpressionContext& ctx) {
  UpdateDriver d;
  d.update_ = update.Owned();
  d.array_filters_ = array_filters.Owned();
  HG_ASSIGN_OR_RETURN(std::vector<ArrayFilter> filters, ParseArrayFilters(d.array_filters_, ctx));
  std::set<std::string> used_ids;
  auto ops = std::make_shared<std::vector<UpdateOp>>();
  bool operator_style =
      !d.update_.IsEmpty() && d.update_.FirstElement().FieldName().starts_with("$");
  if (!operator_style) {
    if (!filters.empty()) {
      return Status(ErrorCode::kFailedToParse,
                    "arrayFilters may not be specified for replacement-style updates");
    }
    d.replacement_ = true;
    for (const BsonElement& e : d.update_) {
      if (e.FieldName().starts_with("$")) {
        return Status(ErrorCode::kDollarPrefixedFieldName,
                      "The dollar ($) prefixed field '" + std::string(e.FieldName()) + "' in '" +
                          std::string(e.FieldName()) +
                          "' is not allowed in the context of an update's replacement document. "
                          "Consider using an aggregation pipeline with $replaceWith.");
      }
    }
    d.ops_ = std::move(ops);
    return d;
  }
  for (const BsonElement& group : d.update_) {
    HG_ASSIGN_OR_RETURN(UpdateOpType type, OpTypeFromName(group.FieldName()));
    if (group.type() != BsonType::kObject) {
      return Status(ErrorCode::kFailedToParse,
                    "Modifiers operate on fields but we found type " +
                        std::string(bson::TypeName(group.type())) +
                        " instead. For example: {$mod: {<field>: ...}} not {" +
                        std::string(group.FieldName()) + ": " +
                        std::string(bson::TypeName(group.type())) + "}");
    }
    for (const BsonElement& field : group.Obj()) {
      UpdateOp op;
      op.type = type;
      op.op_name = std::string(group.FieldName());
      op.path = std::string(field.FieldName());
      HG_RETURN_IF_ERROR(ValidatePath(op.path, &op.positional, &filters, &used_ids));
      d.positional_ = d.positional_ || op.positional;
      op.parts = SplitPath(op.path);
      op.arg = field;
      op.strings = ctx.collator;
      HG_RETURN_IF_ERROR(ParseOpArgument(&op));
      ops->push_back(std::move(op));
    }
  }
  // No two operations may touch the same path or a path and its prefix.
  std::vector<std::pair<const FieldPath*, const std::string*>> targets;
  for (const UpdateOp& op : *ops) {
    targets.emplace_back(&op.parts, &op.path);
    if (op.type == UpdateOpType::kRename) targets.emplace_back(&op.to_parts, &op.to_path);
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const FieldPath& a = *targets[j].first;
      const FieldPath& b = *targets[i].first;
      if (IsPrefixOrEqual(a, b) || IsPrefixOrEqual(b, a)) {
        const std::string& shorter = a.size() <= b.size() ? *targets[j].second : *targets[i].second;
        return Status(kConflictingUpdateOperatorsCode, "Updating the path '" + *targets[i].second +
                                                           "' would create a conflict at '" +
                                                           shorter + "'");
      }
    }
  }
  for (const ArrayFilter& f : filters) {
    if (!used_ids.contains(f.identifier)) {
      return Status(ErrorCode::kFailedToParse, "The array filter for identifier '" + f.identifier +
                                                   "' was not used in the update " +
                                                   d.update_.ToJson());
    }
  }
  std::stable_sort(ops->begin(), ops->end(),
                   [](const UpdateOp& a, const UpdateOp& b) { return PathLess(a.parts, b.parts); });
  d.ops_ = std::move(ops);
  d.filters_ = std::make_shared<const std::vector<ArrayFilter>>(std::move(filters));
  return d;
}

StatusWith<BsonObj> UpdateDriver::ApplyOperators(const BsonObj& doc, bool is_upsert_insert,
                                                 const Matcher* query) const {
  MutableDocument md(doc);
  if (!positional_) {
    for (const UpdateOp& op : *ops_) {
      if (op.type == UpdateOpType::kSetOnInsert && !is_upsert_insert) continue;
      HG_RETURN_IF_ERROR(ApplyUpdateOp(op, doc, &md));
    }
    return md.ToObj();
  }
  // Resolve positional paths against the original document, then apply the concrete
  // operations in path order; two of them may not touch overlapping paths.
  BsonObj root = bson::BsonBuilder().AppendObject("", doc).Obj();
  PositionalContext ctx{&doc, query, filters_.get(), is_upsert_insert};
  std::vector<UpdateOp> concrete;
  for (const UpdateOp& op : *ops_) {
    if (op.type == UpdateOpType::kSetOnInsert && !is_upsert_insert) continue;
    if (!op.positional) {
      concrete.push_back(op);
      continue;
    }
    std::vector<FieldPath> paths;
    FieldPath prefix;
    HG_RETURN_IF_ERROR(ExpandPath(root.FirstElement(), true, op.parts, 0, &prefix, ctx, &paths));
    for (FieldPath& p : paths) {
      UpdateOp c = op;
      c.path = JoinPath(p);
      c.parts = std::move(p);
      concrete.push_back(std::move(c));
    }
  }
  for (size_t i = 0; i < concrete.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const FieldPath& a = concrete[j].parts;
      const FieldPath& b = concrete[i].parts;
      if (IsPrefixOrEqual(a, b) || IsPrefixOrEqual(b, a)) {
        return Status(kConflictingUpdateOperatorsCode,
                      "Update created a conflict at '" +
                          (a.size() <= b.size() ? concrete[j].path : concrete[i].path) + "'");
      }
    }
  }
  std::stable_sort(concrete.begin(), concrete.end(),
                   [](const UpdateOp& a, const UpdateOp& b) { return PathLess(a.parts, b.parts); });
  for (const UpdateOp& op : concrete) HG_RETURN_IF_ERROR(ApplyUpdateOp(op, doc, &md));
  return md.ToObj();
}

StatusWith<BsonObj> UpdateDriver::Apply(const BsonObj& doc, bool is_upsert_insert, bool* modified,
                                        const Matcher* query) const {
  BsonElement old_id = doc.GetField("_id");
  BsonObj result;
  if (pipeline_) {
    HG_ASSIGN_OR_RETURN(result, pipeline_->Apply(doc));
    if (!old_id.eoo()) {
      BsonElement new_id = result.GetField("_id");
      if (new_id.eoo()) {
        return Status(ErrorCode::kImmutableField,
                      "After applying the update, the (immutable) field '_id' was found to have "
                      "been removed");
      }
      if (new_id.type() != old_id.type() ||
          std::string_view(old_id.value(), old_id.ValueSize()) !=
              std::string_view(new_id.value(), new_id.ValueSize())) {
        return Status(ErrorCode::kImmutableField,
                      "After applying the update, the (immutable) field '_id' was found to have "
                      "been altered to " +
                          ElementToString(new_id));
      }
    }
  } else if (replacement_) {
    BsonElement new_id = update_.GetField("_id");
    if (!old_id.eoo() && !new_id.eoo() &&
        (old_id.type() != new_id.type() ||
         std::string_view(old_id.value(), old_id.ValueSize()) !=
             std::string_view(new_id.value(), new_id.ValueSize()))) {
      return Status(ErrorCode::kImmutableField,
                    "After applying the update, the (immutable) field '_id' was found to have "
                    "been altered to " +
                        ElementToString(new_id));
    }
    bson::BsonBuilder b;
    if (!old_id.eoo()) {
      b.AppendElement(old_id);
    } else if (!new_id.eoo()) {
      b.AppendElement(new_id);
    }
    for (const BsonElement& e : update_) {
      if (e.FieldName() != "_id") b.AppendElement(e);
    }
    result = b.Obj();
  } else {
    HG_ASSIGN_OR_RETURN(result, ApplyOperators(doc, is_upsert_insert, query));
    if (!old_id.eoo()) {
      BsonElement new_id = result.GetField("_id");
      if (new_id.eoo() || new_id.type() != old_id.type() ||
          std::string_view(old_id.value(), old_id.ValueSize()) !=
              std::string_view(new_id.value(), new_id.ValueSize())) {
        return Status(ErrorCode::kImmutableField,
                      "Performing an update on the path '_id' would modify the immutable field "
                      "'_id'");
      }
    }
  }
  if (modified != nullptr) *modified = !result.BinaryEqual(doc);
  return result;
}

}  // namespace hourglass::query
