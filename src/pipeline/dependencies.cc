#include "pipeline/dependencies.h"

#include <string_view>

namespace hourglass::pipeline {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

void FieldDependencies::Add(std::string_view path) {
  fields.insert(std::string(path.substr(0, path.find('.'))));
}

void FieldDependencies::AddAll(const FieldDependencies& other) {
  needs_whole_document |= other.needs_whole_document;
  random |= other.random;
  fields.insert(other.fields.begin(), other.fields.end());
}

namespace {

// Operators that read the current document by a computed or implicit name.
bool ReadsWholeDocument(std::string_view op) {
  return op == "$getField" || op == "$setField" || op == "$unsetField" || op == "$function" ||
         op == "$accumulator";
}

// $getField, $setField, $unsetField with an explicit `input` read only what their arguments read.
bool HasExplicitInput(std::string_view op, const BsonElement& operand) {
  return (op == "$getField" || op == "$setField" || op == "$unsetField") &&
         operand.type() == BsonType::kObject && !operand.Obj()["input"].eoo();
}

void AddExpression(const BsonElement& e, FieldDependencies* deps) {
  switch (e.type()) {
    case BsonType::kString: {
      std::string_view s = e.Str();
      if (s.size() < 2 || s[0] != '$') return;
      if (s[1] != '$') {
        deps->Add(s.substr(1));
        return;
      }
      // $$ROOT / $$CURRENT (alone or with a path) read the document; other variables do not.
      std::string_view var = s.substr(
          2, s.find('.') == std::string_view::npos ? std::string_view::npos : s.find('.') - 2);
      if (var == "ROOT" || var == "CURRENT") {
        size_t dot = s.find('.');
        if (dot == std::string_view::npos) {
          deps->needs_whole_document = true;
        } else {
          deps->Add(s.substr(dot + 1));
        }
      }
      return;
    }
    case BsonType::kObject: {
      for (BsonElement c : e.Obj()) {
        std::string_view name = c.FieldName();
        if (name == "$literal" || name == "$const") continue;
        if (name == "$rand") deps->random = true;
        if (name == "sortBy" && c.type() == BsonType::kObject) {  // $top, $bottom, $topN...
          for (BsonElement k : c.Obj()) deps->Add(k.FieldName());
          continue;
        }
        if (ReadsWholeDocument(name) && !HasExplicitInput(name, c)) {
          deps->needs_whole_document = true;
          return;
        }
        AddExpression(c, deps);
      }
      return;
    }
    case BsonType::kArray:
      for (BsonElement c : e.Obj()) AddExpression(c, deps);
      return;
    default:
      return;
  }
}

void AddFilter(const BsonObj& filter, FieldDependencies* deps) {
  for (BsonElement e : filter) {
    std::string_view name = e.FieldName();
    if (name.empty() || name[0] != '$') {
      deps->Add(name);
      continue;
    }
    if (name == "$and" || name == "$or" || name == "$nor") {
      if (e.type() != BsonType::kArray) {
        deps->needs_whole_document = true;
        continue;
      }
      for (BsonElement c : e.Obj()) {
        if (c.type() == BsonType::kObject) {
          AddFilter(c.Obj(), deps);
        } else {
          deps->needs_whole_document = true;
        }
      }
    } else if (name == "$expr") {
      AddExpression(e, deps);
    } else if (name == "$comment") {
      continue;
    } else {
      deps->needs_whole_document = true;  // $where, $jsonSchema, $text, $alwaysTrue, ...
    }
  }
}

bool IsInclusionValue(const BsonElement& v) {
  if (v.type() == BsonType::kBool) return v.Bool();
  return v.IsNumber() && v.NumberDouble() != 0;
}

// A $project: adds what it reads; returns true when it replaces the document (inclusion or
// computed fields), false for an exclusion, which passes every other field through.
bool AddProject(const BsonObj& spec, FieldDependencies* deps) {
  bool exclusion = false;
  bool id_excluded = false;
  int others = 0;
  for (BsonElement e : spec) {
    if (e.FieldName() == "_id") {
      id_excluded = IsExclusionValue(e);
      continue;
    }
    ++others;
    if (IsExclusionValue(e)) exclusion = true;
    if (e.type() == BsonType::kObject) {
      // A nested projection {a: {b: 0}} is an exclusion; {a: {b: 1}} or {a: {$op...}} is not.
      for (BsonElement c : e.Obj()) {
        if (IsExclusionValue(c)) exclusion = true;
      }
    }
  }
  if (others == 0 && id_excluded) exclusion = true;  // {_id: 0} alone
  if (exclusion) {
    // Exclusions pass the rest of the document on: whatever follows decides.
    for (BsonElement e : spec) {
      if (!IsExclusionValue(e) && !IsInclusionValue(e)) AddExpression(e, deps);
    }
    return false;
  }
  if (!id_excluded) deps->Add("_id");
  for (BsonElement e : spec) {
    if (e.FieldName() == "_id" && id_excluded) continue;
    if (IsInclusionValue(e)) {
      deps->Add(e.FieldName());
    } else if (e.type() == BsonType::kObject &&
               e.Obj().FirstElement().FieldName().substr(0, 1) != "$") {
      // A nested inclusion or object expression: the sub-fields of the same top-level name,
      // and whatever its expressions read.
      deps->Add(e.FieldName());
      AddExpression(e, deps);
    } else {
      AddExpression(e, deps);
      // A computed dotted path ({"c.a": ...}) keeps the shape of what is there: an array of
      // objects at `c` gets the field in each element.
      std::string_view name = e.FieldName();
      if (size_t dot = name.rfind('.'); dot != std::string_view::npos) {
        deps->Add(name.substr(0, dot));
      }
    }
  }
  return true;
}

}  // namespace

bool IsExclusionValue(const BsonElement& v) {
  if (v.type() == BsonType::kBool) return !v.Bool();
  return v.IsNumber() && v.NumberDouble() == 0;
}

FieldDependencies ExpressionDependencies(const BsonElement& e) {
  FieldDependencies deps;
  AddExpression(e, &deps);
  return deps;
}

std::optional<std::string_view> TopLevelFieldReference(const BsonElement& e) {
  if (e.type() != BsonType::kString) return std::nullopt;
  const std::string_view s = e.Str();
  if (s.size() < 2 || s[0] != '$' || s[1] == '$' || s.find('.') != std::string_view::npos) {
    return std::nullopt;
  }
  return s.substr(1);
}

FieldDependencies FilterDependencies(const BsonObj& filter) {
  FieldDependencies deps;
  AddFilter(filter, &deps);
  return deps;
}

FieldDependencies PipelineDependencies(const std::vector<BsonObj>& stages) {
  FieldDependencies deps;
  for (const BsonObj& stage : stages) {
    if (deps.needs_whole_document) return deps;
    BsonElement s = stage.FirstElement();
    std::string_view name = s.FieldName();
    bool is_obj = s.type() == BsonType::kObject;
    if (name == "$match" && is_obj) {
      AddFilter(s.Obj(), &deps);
    } else if (name == "$sort" && is_obj) {
      for (BsonElement k : s.Obj()) deps.Add(k.FieldName());
    } else if (name == "$limit" || name == "$skip") {
      continue;
    } else if ((name == "$addFields" || name == "$set") && is_obj) {
      for (BsonElement f : s.Obj()) AddExpression(f, &deps);
    } else if (name == "$unset") {
      continue;
    } else if (name == "$project" && is_obj) {
      if (AddProject(s.Obj(), &deps)) return deps;
    } else if (name == "$unwind") {
      BsonElement path = is_obj ? s.Obj()["path"] : s;
      AddExpression(path, &deps);
    } else if (name == "$count") {
      return deps;
    } else if ((name == "$group" || name == "$bucket") && is_obj) {
      for (BsonElement f : s.Obj()) AddExpression(f, &deps);
      return deps;
    } else if (name == "$sortByCount") {
      AddExpression(s, &deps);
      return deps;
    } else if ((name == "$replaceRoot") && is_obj) {
      AddExpression(s.Obj()["newRoot"], &deps);
      return deps;
    } else if (name == "$replaceWith") {
      AddExpression(s, &deps);
      return deps;
    } else {
      deps.needs_whole_document = true;  // $lookup, $facet, $setWindowFields, $out, ...
      return deps;
    }
  }
  deps.needs_whole_document = true;  // the pipeline's output is its input documents
  return deps;
}

}  // namespace hourglass::pipeline
