// $jsonSchema in filters: MongoDB's subset of JSON Schema draft 4 plus `bsonType`. A schema is
// parsed once into a tree of SchemaNode; keywords about one kind of value (minimum for numbers,
// minLength for strings, items for arrays, properties for objects) ignore values of other kinds,
// and only `type`/`bsonType` restrict the kind.

#include <algorithm>
#include <cmath>
#include <string>
#include <variant>

#include "bson/bson_compare.h"
#include "query/match_expression.h"

namespace hourglass::query {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

class SchemaNode;
using SchemaPtr = std::shared_ptr<const SchemaNode>;

Status ParseError(std::string reason) {
  return Status(ErrorCode::kFailedToParse, std::move(reason));
}
Status TypeError(std::string_view keyword, std::string_view expected) {
  return Status(ErrorCode::kTypeMismatch, "$jsonSchema keyword '" + std::string(keyword) +
                                              "' must be " + std::string(expected));
}

size_t CodePoints(std::string_view s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

class SchemaNode {
 public:
  // Validates a value found in a document (never missing).
  bool Validate(const BsonElement& v) const {
    if (!types_.empty() || any_number_) {
      bool ok = (any_number_ && v.IsNumber()) ||
                std::find(types_.begin(), types_.end(), v.type()) != types_.end();
      if (!ok) return false;
    }
    if (v.type() == BsonType::kObject) return ValidateCommon(v) && ValidateObject(v.Obj());
    return ValidateCommon(v);
  }

  // Validates the whole document (the top-level schema).
  bool ValidateDocument(const BsonObj& doc) const {
    if ((!types_.empty() || any_number_) &&
        std::find(types_.begin(), types_.end(), BsonType::kObject) == types_.end()) {
      return false;
    }
    return ValidateLogic(nullptr, &doc) && ValidateObject(doc);
  }

  static StatusWith<SchemaPtr> Parse(const BsonObj& schema, int depth);

 private:
  bool ValidateCommon(const BsonElement& v) const {
    if (!enum_.empty()) {
      bool found = false;
      for (const BsonElement& e : enum_) {
        if (bson::CanonicalTypeRank(e.type()) == bson::CanonicalTypeRank(v.type()) &&
            bson::CompareElementValues(e, v) == 0) {
          found = true;
          break;
        }
      }
      if (!found) return false;
    }
    if (v.IsNumber()) {
      double d = v.NumberDouble();
      // BSON order: NaN sorts below every other number.
      if (!minimum_.eoo()) {
        int c = bson::CompareElementValues(v, minimum_);
        if (c < 0 || (c == 0 && exclusive_minimum_)) return false;
      }
      if (!maximum_.eoo()) {
        int c = bson::CompareElementValues(v, maximum_);
        if (c > 0 || (c == 0 && exclusive_maximum_)) return false;
      }
      if (multiple_of_ > 0) {
        if (!std::isfinite(d) || std::fmod(d, multiple_of_) != 0) return false;
      }
    }
    if (v.type() == BsonType::kString) {
      size_t n = CodePoints(v.Str());
      if (min_length_ && n < *min_length_) return false;
      if (max_length_ && n > *max_length_) return false;
      if (pattern_ && !pattern_->Matches(v)) return false;
    }
    if (v.type() == BsonType::kArray && !ValidateArray(v.Obj())) return false;
    return ValidateLogic(&v, nullptr);
  }

  // allOf/anyOf/oneOf/not, on a value or (for the top level) on the document itself.
  bool ValidateLogic(const BsonElement* v, const BsonObj* doc) const {
    auto check = [&](const SchemaPtr& s) {
      return v ? s->Validate(*v) : s->ValidateDocument(*doc);
    };
    for (const SchemaPtr& s : all_of_) {
      if (!check(s)) return false;
    }
    if (!any_of_.empty() && std::none_of(any_of_.begin(), any_of_.end(), check)) return false;
    if (!one_of_.empty() && std::count_if(one_of_.begin(), one_of_.end(), check) != 1) {
      return false;
    }
    if (not_ && check(not_)) return false;
    return true;
  }

  bool ValidateArray(const BsonObj& arr) const {
    size_t n = static_cast<size_t>(arr.NumFields());
    if (min_items_ && n < *min_items_) return false;
    if (max_items_ && n > *max_items_) return false;
    if (unique_items_) {
      std::vector<BsonElement> seen;
      for (const BsonElement& e : arr) {
        for (const BsonElement& s : seen) {
          if (bson::CanonicalTypeRank(e.type()) == bson::CanonicalTypeRank(s.type()) &&
              bson::CompareElementValues(e, s) == 0) {
            return false;
          }
        }
        seen.push_back(e);
      }
    }
    size_t i = 0;
    for (const BsonElement& e : arr) {
      if (items_) {
        if (!items_->Validate(e)) return false;
      } else if (!tuple_items_.empty()) {
        if (i < tuple_items_.size()) {
          if (!tuple_items_[i]->Validate(e)) return false;
        } else if (additional_items_allowed_ == false) {
          return false;
        } else if (additional_items_ && !additional_items_->Validate(e)) {
          return false;
        }
      }
      ++i;
    }
    return true;
  }

  bool ValidateObject(const BsonObj& obj) const {
    size_t n = static_cast<size_t>(obj.NumFields());
    if (min_properties_ && n < *min_properties_) return false;
    if (max_properties_ && n > *max_properties_) return false;
    for (const std::string& r : required_) {
      if (obj.GetField(r).eoo()) return false;
    }
    for (const auto& [name, deps] : dependencies_) {
      if (obj.GetField(name).eoo()) continue;
      if (const auto* fields = std::get_if<std::vector<std::string>>(&deps)) {
        for (const std::string& f : *fields) {
          if (obj.GetField(f).eoo()) return false;
        }
      } else if (!std::get<SchemaPtr>(deps)->ValidateDocument(obj)) {
        return false;
      }
    }
    bool check_fields = !properties_.empty() || !pattern_properties_.empty() ||
                        additional_properties_allowed_.has_value() || additional_properties_;
    if (!check_fields) return true;
    for (const BsonElement& f : obj) {
      std::string_view name = f.FieldName();
      bool named = false;
      for (const auto& [p, schema] : properties_) {
        if (p == name) {
          named = true;
          if (!schema->Validate(f)) return false;
        }
      }
      if (!pattern_properties_.empty()) {
        BsonObj name_doc = bson::BsonBuilder().AppendString("", name).Obj();
        for (const auto& [re, schema] : pattern_properties_) {
          if (re->Matches(name_doc.FirstElement())) {
            named = true;
            if (!schema->Validate(f)) return false;
          }
        }
      }
      if (named) continue;
      if (additional_properties_allowed_ == false) return false;
      if (additional_properties_ && !additional_properties_->Validate(f)) return false;
    }
    return true;
  }

  Status ParseKeyword(const BsonElement& e, int depth);

  std::vector<BsonType> types_;
  bool any_number_ = false;
  std::vector<BsonElement> enum_;
  BsonElement minimum_, maximum_;
  bool exclusive_minimum_ = false, exclusive_maximum_ = false;
  double multiple_of_ = 0;
  std::optional<size_t> min_length_, max_length_, min_items_, max_items_, min_properties_,
      max_properties_;
  ElemPredPtr pattern_;
  bool unique_items_ = false;
  SchemaPtr items_;
  std::vector<SchemaPtr> tuple_items_;
  std::optional<bool> additional_items_allowed_;
  SchemaPtr additional_items_;
  std::vector<std::string> required_;
  std::vector<std::pair<std::string, SchemaPtr>> properties_;
  std::vector<std::pair<ElemPredPtr, SchemaPtr>> pattern_properties_;
  std::optional<bool> additional_properties_allowed_;
  SchemaPtr additional_properties_;
  std::vector<std::pair<std::string, std::variant<std::vector<std::string>, SchemaPtr>>>
      dependencies_;
  std::vector<SchemaPtr> all_of_, any_of_, one_of_;
  SchemaPtr not_;
};

StatusWith<size_t> NonNegativeCount(const BsonElement& e) {
  if (!e.IsNumber()) return TypeError(e.FieldName(), "a number");
  double d = e.NumberDouble();
  if (std::isnan(d) || d != std::trunc(d) || d > 9.2e18) {
    return Status(ErrorCode::kFailedToParse, "$jsonSchema keyword '" + std::string(e.FieldName()) +
                                                 "' must be representable as an integer");
  }
  if (d < 0) {
    return Status(ErrorCode::kFailedToParse,
                  "$jsonSchema keyword '" + std::string(e.FieldName()) + "' must be nonnegative");
  }
  return static_cast<size_t>(d);
}

StatusWith<SchemaPtr> SubSchema(const BsonElement& e, int depth) {
  if (e.type() != BsonType::kObject) return TypeError(e.FieldName(), "an object");
  return SchemaNode::Parse(e.Obj(), depth + 1);
}

StatusWith<std::vector<SchemaPtr>> SchemaList(const BsonElement& e, int depth) {
  if (e.type() != BsonType::kArray) return TypeError(e.FieldName(), "an array");
  if (e.Obj().IsEmpty()) {
    return ParseError("$jsonSchema keyword '" + std::string(e.FieldName()) +
                      "' must be a nonempty array");
  }
  std::vector<SchemaPtr> out;
  for (const BsonElement& s : e.Obj()) {
    if (s.type() != BsonType::kObject) return TypeError(e.FieldName(), "an array of objects");
    HG_ASSIGN_OR_RETURN(SchemaPtr p, SchemaNode::Parse(s.Obj(), depth + 1));
    out.push_back(std::move(p));
  }
  return out;
}

StatusWith<std::vector<std::string>> StringList(const BsonElement& e) {
  if (e.type() != BsonType::kArray) return TypeError(e.FieldName(), "an array of strings");
  std::vector<std::string> out;
  for (const BsonElement& s : e.Obj()) {
    if (s.type() != BsonType::kString) return TypeError(e.FieldName(), "an array of strings");
    if (std::find(out.begin(), out.end(), s.Str()) != out.end()) {
      return ParseError("$jsonSchema keyword '" + std::string(e.FieldName()) +
                        "' array cannot contain duplicate values");
    }
    out.emplace_back(s.Str());
  }
  if (out.empty()) {
    return ParseError("$jsonSchema keyword '" + std::string(e.FieldName()) +
                      "' cannot be an empty array");
  }
  return out;
}

Status AddJsonType(std::string_view name, std::vector<BsonType>* types, bool* any_number) {
  static const std::pair<std::string_view, BsonType> kJsonTypes[] = {
      {"object", BsonType::kObject}, {"array", BsonType::kArray}, {"boolean", BsonType::kBool},
      {"string", BsonType::kString}, {"null", BsonType::kNull},
  };
  if (name == "number") {
    *any_number = true;
    return Status::OK();
  }
  if (name == "integer") {
    return ParseError("$jsonSchema type 'integer' is not currently supported");
  }
  for (const auto& [n, t] : kJsonTypes) {
    if (n == name) {
      types->push_back(t);
      return Status::OK();
    }
  }
  return Status(ErrorCode::kBadValue, "Unknown type name alias: " + std::string(name));
}

Status SchemaNode::ParseKeyword(const BsonElement& e, int depth) {
  std::string_view k = e.FieldName();
  if (k == "bsonType" || k == "type") {
    bool json = k == "type";
    auto add = [&](const BsonElement& t) -> Status {
      if (t.type() != BsonType::kString) return TypeError(k, "a string or an array of strings");
      if (json) return AddJsonType(t.Str(), &types_, &any_number_);
      HG_ASSIGN_OR_RETURN(BsonType bt, TypeFromAlias(t.Str(), &any_number_));
      if (bt != BsonType::kEOO) types_.push_back(bt);
      return Status::OK();
    };
    if (e.type() == BsonType::kArray) {
      if (e.Obj().IsEmpty())
        return ParseError("$jsonSchema keyword '" + std::string(k) +
                          "' must name at least one type");
      for (const BsonElement& t : e.Obj()) HG_RETURN_IF_ERROR(add(t));
      return Status::OK();
    }
    return add(e);
  }
  if (k == "enum") {
    if (e.type() != BsonType::kArray) return TypeError(k, "an array");
    if (e.Obj().IsEmpty()) return ParseError("$jsonSchema keyword 'enum' cannot be empty");
    for (const BsonElement& v : e.Obj()) enum_.push_back(v);
    return Status::OK();
  }
  if (k == "minimum" || k == "maximum") {
    if (!e.IsNumber()) return TypeError(k, "a number");
    (k == "minimum" ? minimum_ : maximum_) = e;
    return Status::OK();
  }
  if (k == "exclusiveMinimum" || k == "exclusiveMaximum") {
    if (e.type() != BsonType::kBool) return TypeError(k, "a boolean");
    (k == "exclusiveMinimum" ? exclusive_minimum_ : exclusive_maximum_) = e.Truthy();
    return Status::OK();
  }
  if (k == "multipleOf") {
    if (!e.IsNumber()) return TypeError(k, "a number");
    if (!(e.NumberDouble() > 0))
      return ParseError("$jsonSchema keyword 'multipleOf' must be positive");
    multiple_of_ = e.NumberDouble();
    return Status::OK();
  }
  if (k == "minLength" || k == "maxLength" || k == "minItems" || k == "maxItems" ||
      k == "minProperties" || k == "maxProperties") {
    HG_ASSIGN_OR_RETURN(size_t n, NonNegativeCount(e));
    if (k == "minLength") min_length_ = n;
    if (k == "maxLength") max_length_ = n;
    if (k == "minItems") min_items_ = n;
    if (k == "maxItems") max_items_ = n;
    if (k == "minProperties") min_properties_ = n;
    if (k == "maxProperties") max_properties_ = n;
    return Status::OK();
  }
  if (k == "pattern") {
    if (e.type() != BsonType::kString) return TypeError(k, "a string");
    HG_ASSIGN_OR_RETURN(pattern_, MakeRegexPred(e.Str(), ""));
    return Status::OK();
  }
  if (k == "uniqueItems") {
    if (e.type() != BsonType::kBool) return TypeError(k, "a boolean");
    unique_items_ = e.Truthy();
    return Status::OK();
  }
  if (k == "items") {
    if (e.type() == BsonType::kObject) {
      HG_ASSIGN_OR_RETURN(items_, SchemaNode::Parse(e.Obj(), depth + 1));
      return Status::OK();
    }
    if (e.type() != BsonType::kArray) return TypeError(k, "an object or an array of objects");
    for (const BsonElement& s : e.Obj()) {
      if (s.type() != BsonType::kObject) return TypeError(k, "an object or an array of objects");
      HG_ASSIGN_OR_RETURN(SchemaPtr p, SchemaNode::Parse(s.Obj(), depth + 1));
      tuple_items_.push_back(std::move(p));
    }
    return Status::OK();
  }
  if (k == "additionalItems" || k == "additionalProperties") {
    bool items = k == "additionalItems";
    if (e.type() == BsonType::kBool) {
      (items ? additional_items_allowed_ : additional_properties_allowed_) = e.Truthy();
      return Status::OK();
    }
    if (e.type() != BsonType::kObject) return TypeError(k, "a boolean or an object");
    HG_ASSIGN_OR_RETURN(SchemaPtr p, SchemaNode::Parse(e.Obj(), depth + 1));
    (items ? additional_items_ : additional_properties_) = std::move(p);
    return Status::OK();
  }
  if (k == "required") {
    HG_ASSIGN_OR_RETURN(required_, StringList(e));
    return Status::OK();
  }
  if (k == "properties" || k == "patternProperties") {
    if (e.type() != BsonType::kObject) return TypeError(k, "an object");
    for (const BsonElement& p : e.Obj()) {
      if (p.type() != BsonType::kObject) {
        return TypeError(k, "an object whose values are objects");
      }
      HG_ASSIGN_OR_RETURN(SchemaPtr s, SchemaNode::Parse(p.Obj(), depth + 1));
      if (k == "properties") {
        properties_.emplace_back(std::string(p.FieldName()), std::move(s));
      } else {
        HG_ASSIGN_OR_RETURN(ElemPredPtr re, MakeRegexPred(p.FieldName(), ""));
        pattern_properties_.emplace_back(std::move(re), std::move(s));
      }
    }
    return Status::OK();
  }
  if (k == "dependencies") {
    if (e.type() != BsonType::kObject) return TypeError(k, "an object");
    for (const BsonElement& d : e.Obj()) {
      if (d.type() == BsonType::kObject) {
        HG_ASSIGN_OR_RETURN(SchemaPtr s, SchemaNode::Parse(d.Obj(), depth + 1));
        dependencies_.emplace_back(std::string(d.FieldName()), std::move(s));
      } else {
        HG_ASSIGN_OR_RETURN(std::vector<std::string> names, StringList(d));
        dependencies_.emplace_back(std::string(d.FieldName()), std::move(names));
      }
    }
    return Status::OK();
  }
  if (k == "allOf" || k == "anyOf" || k == "oneOf") {
    HG_ASSIGN_OR_RETURN(std::vector<SchemaPtr> list, SchemaList(e, depth));
    (k == "allOf" ? all_of_ : k == "anyOf" ? any_of_ : one_of_) = std::move(list);
    return Status::OK();
  }
  if (k == "not") {
    HG_ASSIGN_OR_RETURN(not_, SubSchema(e, depth));
    return Status::OK();
  }
  if (k == "description" || k == "title") {
    if (e.type() != BsonType::kString) return TypeError(k, "a string");
    return Status::OK();
  }
  if (k == "$ref" || k == "$schema" || k == "default" || k == "definitions" || k == "format" ||
      k == "id" || k == "encrypt" || k == "encryptMetadata") {
    return ParseError("$jsonSchema keyword '" + std::string(k) + "' is not currently supported");
  }
  return ParseError("Unknown $jsonSchema keyword: " + std::string(k));
}

StatusWith<SchemaPtr> SchemaNode::Parse(const BsonObj& schema, int depth) {
  if (depth > 100) return ParseError("$jsonSchema is nested too deeply");
  auto node = std::make_shared<SchemaNode>();
  if (schema.HasField("type") && schema.HasField("bsonType")) {
    return ParseError("Cannot specify both $jsonSchema keywords 'type' and 'bsonType'");
  }
  for (const BsonElement& e : schema) HG_RETURN_IF_ERROR(node->ParseKeyword(e, depth));
  if ((node->exclusive_minimum_ && node->minimum_.eoo()) ||
      (node->exclusive_maximum_ && node->maximum_.eoo())) {
    return ParseError(
        "$jsonSchema keywords 'exclusiveMinimum'/'exclusiveMaximum' need "
        "'minimum'/'maximum'");
  }
  return SchemaPtr(std::move(node));
}

class JsonSchemaNode final : public DocNode {
 public:
  explicit JsonSchemaNode(SchemaPtr schema) : schema_(std::move(schema)) {}
  bool Matches(const BsonObj& doc) const override { return schema_->ValidateDocument(doc); }

 private:
  SchemaPtr schema_;
};

}  // namespace

StatusWith<DocNodePtr> ParseJsonSchema(const BsonElement& schema) {
  if (schema.type() != BsonType::kObject) {
    return Status(ErrorCode::kTypeMismatch, "$jsonSchema must be an object");
  }
  HG_ASSIGN_OR_RETURN(SchemaPtr s, SchemaNode::Parse(schema.Obj(), 0));
  return DocNodePtr(std::make_shared<JsonSchemaNode>(std::move(s)));
}

}  // namespace hourglass::query
