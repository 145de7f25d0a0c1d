#include "query/update.h"

#include <algorithm>

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
  };
  for (const auto& [n, t] : kOps) {
    if (n == name) return t;
  }
  return Status(ErrorCode::kFailedToParse,
                "Unknown modifier: " + std::string(name) +
                    ". Expected a valid update modifier or pipeline-style update specified as an "
                    "array");
}

Status ValidatePath(const std::string& path) {
  if (path.empty()) return Status(ErrorCode::kEmptyFieldName, "An empty update path is not valid.");
  for (const std::string& c : SplitPath(path)) {
    if (c.empty()) {
      return Status(
          ErrorCode::kEmptyFieldName,
          "The update path '" + path + "' contains an empty field name, which is not allowed.");
    }
    if (c == "$" || (c.starts_with("$[") && c.ends_with("]"))) {
      return BadValue(
          "positional update operators ('$', '$[]', '$[<identifier>]') are not "
          "supported yet (path '" +
          path + "')");
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
      HG_RETURN_IF_ERROR(ValidatePath(op->to_path));
      if (op->to_path == op->path) {
        return BadValue("The source and target field for $rename must differ: " +
                        ElementToString(a));
      }
      if (op->to_path.starts_with(op->path + ".") || op->path.starts_with(op->to_path + ".")) {
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
            ElementMatcher::Parse(bson::BsonBuilder().AppendElementAs(a, "$regex").Obj()));
        op->pull_matcher = std::make_shared<ElementMatcher>(std::move(m));
      } else if (a.type() == BsonType::kObject) {
        HG_ASSIGN_OR_RETURN(ElementMatcher m, ElementMatcher::Parse(a.Obj()));
        op->pull_matcher = std::make_shared<ElementMatcher>(std::move(m));
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

}  // namespace

StatusWith<UpdateDriver> UpdateDriver::ParsePipeline(const BsonObj&) {
  return BadValue("pipeline-style updates are not supported yet");
}

StatusWith<UpdateDriver> UpdateDriver::Parse(const BsonObj& update, const BsonObj& array_filters) {
  if (!array_filters.IsEmpty()) return BadValue("arrayFilters are not supported yet");
  UpdateDriver d;
  d.update_ = update.Owned();
  auto ops = std::make_shared<std::vector<UpdateOp>>();
  bool operator_style =
      !d.update_.IsEmpty() && d.update_.FirstElement().FieldName().starts_with("$");
  if (!operator_style) {
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
      HG_RETURN_IF_ERROR(ValidatePath(op.path));
      op.parts = SplitPath(op.path);
      op.arg = field;
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
  std::stable_sort(ops->begin(), ops->end(),
                   [](const UpdateOp& a, const UpdateOp& b) { return PathLess(a.parts, b.parts); });
  d.ops_ = std::move(ops);
  return d;
}

StatusWith<BsonObj> UpdateDriver::Apply(const BsonObj& doc, bool is_upsert_insert,
                                        bool* modified) const {
  BsonElement old_id = doc.GetField("_id");
  BsonObj result;
  if (replacement_) {
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
    MutableDocument md(doc);
    for (const UpdateOp& op : *ops_) {
      if (op.type == UpdateOpType::kSetOnInsert && !is_upsert_insert) continue;
      HG_RETURN_IF_ERROR(ApplyUpdateOp(op, doc, &md));
    }
    result = md.ToObj();
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
