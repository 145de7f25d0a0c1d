#include "pipeline/expression.h"

#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "bson/decimal128.h"
#include "bson/field_check.h"
#include "pipeline/dependencies.h"
#include "pipeline/expression_internal.h"
#include "query/path.h"

namespace hourglass::pipeline {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using internal::OperatorDef;

int ParseContext::Lookup(std::string_view name) const {
  for (auto it = scope_.rbegin(); it != scope_.rend(); ++it) {
    if (it->first == name) return it->second;
  }
  return -1;
}

ParseContext ParseContext::WithVariable(std::string name, int* slot) const {
  ParseContext child = *this;
  *slot = (*next_slot_)++;
  child.scope_.emplace_back(std::move(name), *slot);
  return child;
}

namespace {

Status ValidatePath(std::string_view path) {
  if (path.empty()) return PipelineError(16872, "'$' by itself is not a valid FieldPath");
  for (const auto& part : query::SplitPath(path)) {
    if (part.empty()) {
      return PipelineError(15998, "FieldPath field names may not be empty strings.");
    }
    if (part[0] == '$') {
      return PipelineError(16410, "FieldPath field names may not start with '$'.");
    }
  }
  return Status::OK();
}

Value WalkArray(const BsonObj& arr, const std::vector<std::string>& path, size_t i);

Value Walk(const BsonObj& obj, const std::vector<std::string>& path, size_t i) {
  BsonElement e = obj.GetField(path[i]);
  if (e.eoo()) return Value::Missing();
  if (i + 1 == path.size()) return Value::FromElement(e);
  if (e.type() == BsonType::kObject) return Walk(e.Obj(), path, i + 1);
  if (e.type() == BsonType::kArray) return WalkArray(e.Obj(), path, i + 1);
  return Value::Missing();
}

Value WalkArray(const BsonObj& arr, const std::vector<std::string>& path, size_t i) {
  std::vector<Value> out;
  for (const auto& m : arr) {
    if (m.type() == BsonType::kObject) {
      Value v = Walk(m.Obj(), path, i);
      if (!v.missing()) out.push_back(std::move(v));
    } else if (m.type() == BsonType::kArray) {
      out.push_back(WalkArray(m.Obj(), path, i));
    }
  }
  return Value::Array(out);
}

// Applies the rest of a path to a value (used for "$$var.a.b").
Value WalkValue(const Value& v, const std::vector<std::string>& path) {
  if (path.empty()) return v;
  if (v.IsObject()) return Walk(v.Obj(), path, 0);
  if (v.IsArray()) return WalkArray(v.Obj(), path, 0);
  return Value::Missing();
}

class ConstantExpression : public Expression {
 public:
  explicit ConstantExpression(Value v) : v_(std::move(v)) {}
  StatusWith<Value> Evaluate(const BsonObj&, Variables&) const override { return v_; }
  const Value* ConstantValue() const override { return &v_; }

 private:
  Value v_;
};

class FieldPathExpression : public Expression {
 public:
  explicit FieldPathExpression(std::vector<std::string> path) : path_(std::move(path)) {}
  StatusWith<Value> Evaluate(const BsonObj& root, Variables&) const override {
    return EvaluateFieldPath(root, path_);
  }

 private:
  std::vector<std::string> path_;
};

enum class Builtin { kRoot, kNow, kRemove, kUser, kLet, kUserRoles, kSearchMeta, kUnavailable };

class VariableExpression : public Expression {
 public:
  VariableExpression(Builtin which, int slot, std::vector<std::string> rest)
      : which_(which), slot_(slot), rest_(std::move(rest)) {}
  // A variable of a `let` option: read from `let` when evaluated.
  VariableExpression(std::shared_ptr<const query::LetVariables> let, int index,
                     std::vector<std::string> rest)
      : which_(Builtin::kLet), slot_(index), rest_(std::move(rest)), let_(std::move(let)) {}
  // A system variable that has no value here ($$CLUSTER_TIME on a standalone, $$JS_SCOPE...).
  explicit VariableExpression(std::string name)
      : which_(Builtin::kUnavailable), slot_(-1), name_(std::move(name)) {}
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    switch (which_) {
      case Builtin::kRoot:
        if (rest_.empty()) return Value::Object(root);
        return EvaluateFieldPath(root, rest_);
      case Builtin::kNow:
        return WalkValue(Value::Date(vars.now_millis()), rest_);
      case Builtin::kRemove:
      case Builtin::kSearchMeta:  // no $search ran: missing, as in MongoDB
        return Value::Missing();
      case Builtin::kUser:
        return WalkValue(vars.Get(slot_), rest_);
      case Builtin::kLet:
        return WalkValue(Value::FromHolder(let_->holder(slot_)), rest_);
      case Builtin::kUserRoles:  // no authentication: no roles
        return WalkValue(Value::Array({}), rest_);
      case Builtin::kUnavailable:
        return PipelineError(51144, "Builtin variable '$$" + name_ + "' is not available");
    }
    return Value::Missing();
  }

 private:
  Builtin which_;
  int slot_;
  std::vector<std::string> rest_;
  std::shared_ptr<const query::LetVariables> let_;
  std::string name_;
};

class ArrayExpression : public Expression {
 public:
  explicit ArrayExpression(std::vector<ExpressionPtr> items) : items_(std::move(items)) {}
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(auto values, internal::EvaluateAll(items_, root, vars));
    return Value::Array(values);
  }

 private:
  std::vector<ExpressionPtr> items_;
};

class ObjectExpression : public Expression {
 public:
  explicit ObjectExpression(std::vector<std::pair<std::string, ExpressionPtr>> fields)
      : fields_(std::move(fields)) {}
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    bson::BsonBuilder b;
    for (const auto& [name, expr] : fields_) {
      HG_ASSIGN_OR_RETURN(Value v, expr->Evaluate(root, vars));
      v.AppendTo(b, name);
    }
    return Value::Object(b.Obj());
  }

 private:
  std::vector<std::pair<std::string, ExpressionPtr>> fields_;
};

StatusWith<ExpressionPtr> ParseVariable(std::string_view text, const ParseContext& ctx) {
  // text is "name" or "name.rest" (after "$$").
  size_t dot = text.find('.');
  std::string name(text.substr(0, dot));
  std::vector<std::string> rest;
  if (dot != std::string_view::npos) {
    HG_RETURN_IF_ERROR(ValidatePath(text.substr(dot + 1)));
    rest = query::SplitPath(text.substr(dot + 1));
  }
  if (name == "CURRENT") {
    // $$CURRENT is $$ROOT unless an enclosing $let (or $map/$filter `as`) rebinds it.
    const int slot = ctx.Lookup(name);
    return ExpressionPtr(
        new VariableExpression(slot >= 0 ? Builtin::kUser : Builtin::kRoot, slot, std::move(rest)));
  }
  if (name == "ROOT") {
    return ExpressionPtr(new VariableExpression(Builtin::kRoot, -1, std::move(rest)));
  }
  if (name == "NOW") {
    return ExpressionPtr(new VariableExpression(Builtin::kNow, -1, std::move(rest)));
  }
  if (name == "REMOVE") {
    return ExpressionPtr(new VariableExpression(Builtin::kRemove, -1, std::move(rest)));
  }
  if (name == "SEARCH_META") {
    return ExpressionPtr(new VariableExpression(Builtin::kSearchMeta, -1, std::move(rest)));
  }
  if (name == "USER_ROLES") {
    return ExpressionPtr(new VariableExpression(Builtin::kUserRoles, -1, std::move(rest)));
  }
  if (name == "CLUSTER_TIME" || name == "JS_SCOPE" || name == "IS_MR") {
    return ExpressionPtr(new VariableExpression(name));
  }
  if (int slot = ctx.Lookup(name); slot >= 0) {
    return ExpressionPtr(new VariableExpression(Builtin::kUser, slot, std::move(rest)));
  }
  if (ctx.let()) {
    if (int index = ctx.let()->IndexOf(name); index >= 0) {
      return ExpressionPtr(new VariableExpression(ctx.let(), index, std::move(rest)));
    }
  }
  if (name.empty()) return PipelineError(16869, "empty variable names are not allowed");
  return PipelineError(17276, "Use of undefined variable: " + name);
}

// $literal: the operand unevaluated.
StatusWith<ExpressionPtr> ParseLiteral(std::string_view, const BsonElement& operand,
                                       const ParseContext&) {
  return Expression::MakeConstant(Value::FromElement(operand));
}

class LetExpression : public Expression {
 public:
  std::vector<std::pair<int, ExpressionPtr>> vars;
  ExpressionPtr in;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& v) const override {
    for (const auto& [slot, expr] : vars) {
      HG_ASSIGN_OR_RETURN(Value val, expr->Evaluate(root, v));
      v.Set(slot, std::move(val));
    }
    return in->Evaluate(root, v);
  }
};

StatusWith<ExpressionPtr> ParseLet(std::string_view, const BsonElement& operand,
                                   const ParseContext& ctx) {
  if (operand.type() != BsonType::kObject) {
    return PipelineError(16874, "$let only supports an object as its argument");
  }
  BsonElement vars_spec, in_spec;
  for (const auto& f : operand.Obj()) {
    if (f.FieldName() == "vars") {
      vars_spec = f;
    } else if (f.FieldName() == "in") {
      in_spec = f;
    } else {
      return PipelineError(16875, "Unrecognized parameter to $let: " + std::string(f.FieldName()));
    }
  }
  if (vars_spec.eoo()) return PipelineError(16876, "Missing 'vars' parameter to $let");
  if (in_spec.eoo()) return PipelineError(16877, "Missing 'in' parameter to $let");
  if (vars_spec.type() != BsonType::kObject) {
    return Status(ErrorCode::kTypeMismatch, "invalid parameter: expected an object (vars)");
  }
  auto let = std::make_unique<LetExpression>();
  ParseContext inner = ctx;
  for (const auto& v : vars_spec.Obj()) {
    HG_RETURN_IF_ERROR(ValidateVariableName(v.FieldName()));
    // Variable definitions see the outer scope only.
    HG_ASSIGN_OR_RETURN(auto expr, Expression::ParseExpression(v, ctx));
    int slot;
    inner = inner.WithVariable(std::string(v.FieldName()), &slot);
    let->vars.emplace_back(slot, std::move(expr));
  }
  HG_ASSIGN_OR_RETURN(let->in, Expression::ParseExpression(in_spec, inner));
  return ExpressionPtr(std::move(let));
}

const std::unordered_map<std::string_view, OperatorDef>& OperatorTable() {
  static const auto* table = [] {
    std::vector<OperatorDef> defs;
    defs.push_back({"$literal", 0, 0, nullptr, &ParseLiteral});
    defs.push_back({"$const", 0, 0, nullptr, &ParseLiteral});  // MongoDB's alias of $literal
    defs.push_back({"$let", 0, 0, nullptr, &ParseLet});
    internal::AddArithmeticOperators(defs);
    internal::AddLogicOperators(defs);
    internal::AddStringOperators(defs);
    internal::AddArrayOperators(defs);
    internal::AddTypeOperators(defs);
    internal::AddDateOperators(defs);
    internal::AddSetOperators(defs);
    internal::AddRegexOperators(defs);
    internal::AddMiscOperators(defs);
    auto* m = new std::unordered_map<std::string_view, OperatorDef>();
    for (const auto& d : defs) m->emplace(d.name, d);
    return m;
  }();
  return *table;
}

}  // namespace

Status ValidateVariableName(std::string_view name) {
  if (name.empty()) {
    return Status(ErrorCode::kFailedToParse, "empty variable names are not allowed");
  }
  if (name == "CURRENT") return Status::OK();  // rebinding it moves field paths (ParseVariable)
  auto c0 = static_cast<unsigned char>(name[0]);
  if (!((c0 >= 'a' && c0 <= 'z') || c0 >= 0x80)) {
    return Status(
        ErrorCode::kFailedToParse,
        "'" + std::string(name) + "' starts with an invalid character for a user variable name");
  }
  for (char ch : name) {
    auto c = static_cast<unsigned char>(ch);
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c >= 0x80)) {
      return Status(ErrorCode::kFailedToParse, "'" + std::string(name) +
                                                   "' contains an invalid character for a "
                                                   "variable name: '" +
                                                   std::string(1, ch) + "'");
    }
  }
  return Status::OK();
}

std::vector<BsonObj> LetValueDocuments(const std::vector<Value>& vars) {
  std::vector<BsonObj> out;
  out.reserve(vars.size());
  for (const Value& v : vars) {
    bson::BsonBuilder b;
    v.AppendTo(b, "");
    out.push_back(b.Obj());
  }
  return out;
}

StatusWith<std::shared_ptr<const query::LetVariables>> ParseCommandLet(const BsonElement& let,
                                                                       int64_t now_millis) {
  if (let.eoo() || let.type() == BsonType::kNull) {
    return std::shared_ptr<const query::LetVariables>();
  }
  if (let.type() != BsonType::kObject) {
    return bson::WrongTypeAtPath("let", let, "object");
  }
  if (let.Obj().IsEmpty()) return std::shared_ptr<const query::LetVariables>();
  std::vector<std::string> names;
  std::vector<Value> values;
  std::shared_ptr<const query::LetVariables> defined;  // the variables before the current one
  for (const BsonElement& v : let.Obj()) {
    std::string_view name = v.FieldName();
    if (name == "NOW" || name == "CLUSTER_TIME" || name == "JS_SCOPE" || name == "IS_MR" ||
        name == "USER_ROLES") {
      return PipelineError(4738901, "Attempt to set internal constant: " + std::string(name));
    }
    if (name == "CURRENT") {
      return Status(ErrorCode::kCommandNotSupported,
                    "binding $$CURRENT in a command's 'let' is not supported yet");
    }
    if (Status s = ValidateVariableName(name); !s.ok()) {
      return Status(s.code(), "Invalid 'let' parameter :: caused by :: " + s.reason());
    }
    HG_ASSIGN_OR_RETURN(ExpressionPtr expr, Expression::ParseExpression(v, ParseContext(defined)));
    FieldDependencies deps = ExpressionDependencies(v);
    if (deps.needs_whole_document || !deps.fields.empty()) {
      return PipelineError(4890500,
                           "Command let Expression tried to access a field, but this is not "
                           "allowed because Command let Expressions run before the query "
                           "examines any documents.");
    }
    Variables vars(now_millis);
    HG_ASSIGN_OR_RETURN(Value value, expr->Evaluate(BsonObj(), vars));
    names.emplace_back(name);
    values.push_back(std::move(value));
    defined = std::make_shared<const query::LetVariables>(names, LetValueDocuments(values));
  }
  return defined;
}

Value EvaluateFieldPath(const BsonObj& doc, const std::vector<std::string>& path) {
  if (path.empty()) return Value::Object(doc);
  return Walk(doc, path, 0);
}

ExpressionPtr Expression::MakeFieldPath(std::string_view path) {
  return std::make_unique<FieldPathExpression>(query::SplitPath(path));
}

ExpressionPtr Expression::MakeConstant(Value v) {
  return std::make_unique<ConstantExpression>(std::move(v));
}

StatusWith<ExpressionPtr> Expression::ParseExpression(const BsonElement& e,
                                                      const ParseContext& ctx) {
  switch (e.type()) {
    case BsonType::kString: {
      std::string_view s = e.Str();
      if (s.size() >= 2 && s[0] == '$' && s[1] == '$') return ParseVariable(s.substr(2), ctx);
      if (!s.empty() && s[0] == '$') {
        HG_RETURN_IF_ERROR(ValidatePath(s.substr(1)));
        // "$a.b" is "$$CURRENT.a.b": under a rebound $$CURRENT, a path into its value.
        if (const int slot = ctx.Lookup("CURRENT"); slot >= 0) {
          return ExpressionPtr(
              new VariableExpression(Builtin::kUser, slot, query::SplitPath(s.substr(1))));
        }
        return MakeFieldPath(s.substr(1));
      }
      return MakeConstant(Value::FromElement(e));
    }
    case BsonType::kObject:
      return ParseObject(e.Obj(), ctx);
    case BsonType::kArray: {
      std::vector<ExpressionPtr> items;
      for (const auto& m : e.Obj()) {
        HG_ASSIGN_OR_RETURN(auto item, ParseExpression(m, ctx));
        items.push_back(std::move(item));
      }
      return ExpressionPtr(new ArrayExpression(std::move(items)));
    }
    default:
      return MakeConstant(Value::FromElement(e));
  }
}

StatusWith<ExpressionPtr> Expression::ParseObject(const BsonObj& obj, const ParseContext& ctx) {
  BsonElement first = obj.FirstElement();
  if (!first.eoo() && !first.FieldName().empty() && first.FieldName()[0] == '$') {
    if (obj.NumFields() != 1) {
      return PipelineError(
          15983,
          "An object representing an expression must have exactly one field: " + obj.ToJson());
    }
    const auto& table = OperatorTable();
    auto it = table.find(first.FieldName());
    if (it == table.end()) {
      return Status(ErrorCode::kInvalidPipelineOperator,
                    "Unrecognized expression '" + std::string(first.FieldName()) + "'");
    }
    const OperatorDef& def = it->second;
    if (def.parser != nullptr) return def.parser(def.name, first, ctx);
    HG_ASSIGN_OR_RETURN(auto args, internal::ParseArguments(first, ctx));
    HG_RETURN_IF_ERROR(internal::CheckArity(def.name, args.size(), def.min_args, def.max_args));
    return ExpressionPtr(new internal::SimpleExpression(def, ctx.strings(), std::move(args)));
  }
  std::vector<std::pair<std::string, ExpressionPtr>> fields;
  for (const auto& f : obj) {
    std::string_view name = f.FieldName();
    if (name.empty())
      return PipelineError(16410, "FieldPath field names may not be empty strings.");
    if (name[0] == '$') {
      return PipelineError(16404, "Field names may not start with '$': " + std::string(name));
    }
    if (name.find('.') != std::string_view::npos) {
      return PipelineError(16412, "FieldPath field names may not contain '.'.");
    }
    HG_ASSIGN_OR_RETURN(auto expr, ParseExpression(f, ctx));
    fields.emplace_back(std::string(name), std::move(expr));
  }
  return ExpressionPtr(new ObjectExpression(std::move(fields)));
}

namespace internal {

StatusWith<std::vector<ExpressionPtr>> ParseArguments(const BsonElement& operand,
                                                      const ParseContext& ctx) {
  std::vector<ExpressionPtr> args;
  if (operand.type() == BsonType::kArray) {
    for (const auto& m : operand.Obj()) {
      HG_ASSIGN_OR_RETURN(auto a, Expression::ParseExpression(m, ctx));
      args.push_back(std::move(a));
    }
  } else {
    HG_ASSIGN_OR_RETURN(auto a, Expression::ParseExpression(operand, ctx));
    args.push_back(std::move(a));
  }
  return args;
}

Status CheckArity(std::string_view op, size_t n, int min_args, int max_args) {
  const int count = static_cast<int>(n);
  if (min_args == max_args) {
    if (count != min_args) {
      return PipelineError(16020, "Expression " + std::string(op) + " takes exactly " +
                                      std::to_string(min_args) + " arguments. " +
                                      std::to_string(count) + " were passed in.");
    }
    return Status::OK();
  }
  if (count < min_args && max_args == kVariadic) {
    return PipelineError(16021, "Expression " + std::string(op) + " takes at least " +
                                    std::to_string(min_args) + " arguments, but " +
                                    std::to_string(count) + " were passed in.");
  }
  if (count < min_args || (max_args != kVariadic && count > max_args)) {
    return PipelineError(28667, "Expression " + std::string(op) + " takes at least " +
                                    std::to_string(min_args) + " arguments, and at most " +
                                    std::to_string(max_args) + ", but " + std::to_string(count) +
                                    " were passed in.");
  }
  return Status::OK();
}

StatusWith<std::vector<Value>> EvaluateAll(const std::vector<ExpressionPtr>& args,
                                           const BsonObj& root, Variables& vars) {
  std::vector<Value> out;
  out.reserve(args.size());
  for (const auto& a : args) {
    HG_ASSIGN_OR_RETURN(Value v, a->Evaluate(root, vars));
    out.push_back(std::move(v));
  }
  return out;
}

NumKind KindOf(const Value& v) {
  switch (v.type()) {
    case BsonType::kInt32:
      return NumKind::kInt;
    case BsonType::kInt64:
      return NumKind::kLong;
    case BsonType::kDecimal128:
      return NumKind::kDecimal;
    default:
      return NumKind::kDouble;
  }
}

bson::Decimal128 ToDecimal(const Value& v) { return bson::decimal::FromNumber(v.element()); }

std::string TypeNameOf(const Value& v) { return std::string(bson::TypeName(v.type())); }

}  // namespace internal
}  // namespace hourglass::pipeline
