// Comparison, boolean and conditional operators.
#include "pipeline/expression_internal.h"

namespace hourglass::pipeline::internal {
namespace {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

StatusWith<Value> Cmp(std::string_view op, const std::vector<Value>& args,
                      const bson::StringComparator* strings) {
  int c = Compare(args[0], args[1], strings);
  if (op == "$cmp") return Value::Int(c < 0 ? -1 : (c > 0 ? 1 : 0));
  if (op == "$eq") return Value::Bool(c == 0);
  if (op == "$ne") return Value::Bool(c != 0);
  if (op == "$gt") return Value::Bool(c > 0);
  if (op == "$gte") return Value::Bool(c >= 0);
  if (op == "$lt") return Value::Bool(c < 0);
  return Value::Bool(c <= 0);
}

StatusWith<Value> Not(std::string_view, const std::vector<Value>& args) {
  return Value::Bool(!args[0].Truthy());
}

// $and / $or evaluate left to right and stop at the first deciding operand, so later operands
// (e.g. a division by zero) are not evaluated.
class AndOrExpression : public Expression {
 public:
  AndOrExpression(bool is_and, std::vector<ExpressionPtr> args)
      : is_and_(is_and), args_(std::move(args)) {}
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    for (const auto& a : args_) {
      HG_ASSIGN_OR_RETURN(Value v, a->Evaluate(root, vars));
      if (v.Truthy() != is_and_) return Value::Bool(!is_and_);
    }
    return Value::Bool(is_and_);
  }

 private:
  bool is_and_;
  std::vector<ExpressionPtr> args_;
};

StatusWith<ExpressionPtr> ParseAndOr(std::string_view op, const BsonElement& operand,
                                     const ParseContext& ctx) {
  HG_ASSIGN_OR_RETURN(auto args, ParseArguments(operand, ctx));
  return ExpressionPtr(new AndOrExpression(op == "$and", std::move(args)));
}

class CondExpression : public Expression {
 public:
  ExpressionPtr if_, then_, else_;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value c, if_->Evaluate(root, vars));
    return c.Truthy() ? then_->Evaluate(root, vars) : else_->Evaluate(root, vars);
  }
};

StatusWith<ExpressionPtr> ParseCond(std::string_view op, const BsonElement& operand,
                                    const ParseContext& ctx) {
  auto cond = std::make_unique<CondExpression>();
  if (operand.type() == BsonType::kObject) {
    for (const auto& f : operand.Obj()) {
      HG_ASSIGN_OR_RETURN(auto e, Expression::ParseExpression(f, ctx));
      if (f.FieldName() == "if") {
        cond->if_ = std::move(e);
      } else if (f.FieldName() == "then") {
        cond->then_ = std::move(e);
      } else if (f.FieldName() == "else") {
        cond->else_ = std::move(e);
      } else {
        return PipelineError(17083,
                             "Unrecognized parameter to $cond: " + std::string(f.FieldName()));
      }
    }
    if (!cond->if_) return PipelineError(17080, "Missing 'if' parameter to $cond");
    if (!cond->then_) return PipelineError(17081, "Missing 'then' parameter to $cond");
    if (!cond->else_) return PipelineError(17082, "Missing 'else' parameter to $cond");
    return ExpressionPtr(std::move(cond));
  }
  HG_ASSIGN_OR_RETURN(auto args, ParseArguments(operand, ctx));
  HG_RETURN_IF_ERROR(CheckArity(op, args.size(), 3, 3));
  cond->if_ = std::move(args[0]);
  cond->then_ = std::move(args[1]);
  cond->else_ = std::move(args[2]);
  return ExpressionPtr(std::move(cond));
}

// $ifNull: the first operand that is neither null nor missing; the last operand otherwise.
class IfNullExpression : public Expression {
 public:
  explicit IfNullExpression(std::vector<ExpressionPtr> args) : args_(std::move(args)) {}
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    for (size_t i = 0; i + 1 < args_.size(); ++i) {
      HG_ASSIGN_OR_RETURN(Value v, args_[i]->Evaluate(root, vars));
      if (!v.nullish()) return v;
    }
    return args_.back()->Evaluate(root, vars);
  }

 private:
  std::vector<ExpressionPtr> args_;
};

StatusWith<ExpressionPtr> ParseIfNull(std::string_view op, const BsonElement& operand,
                                      const ParseContext& ctx) {
  HG_ASSIGN_OR_RETURN(auto args, ParseArguments(operand, ctx));
  if (args.size() < 2) {
    return PipelineError(1257300, std::string(op) + " needs at least two arguments, had: " +
                                      std::to_string(args.size()));
  }
  return ExpressionPtr(new IfNullExpression(std::move(args)));
}

class SwitchExpression : public Expression {
 public:
  std::vector<std::pair<ExpressionPtr, ExpressionPtr>> branches;
  ExpressionPtr default_;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    for (const auto& [c, then] : branches) {
      HG_ASSIGN_OR_RETURN(Value v, c->Evaluate(root, vars));
      if (v.Truthy()) return then->Evaluate(root, vars);
    }
    if (!default_) {
      return PipelineError(40066,
                           "$switch could not find a matching branch for an input, and no default "
                           "was specified.");
    }
    return default_->Evaluate(root, vars);
  }
};

StatusWith<ExpressionPtr> ParseSwitch(std::string_view, const BsonElement& operand,
                                      const ParseContext& ctx) {
  if (operand.type() != BsonType::kObject) {
    return PipelineError(40060, "$switch requires an object as an argument, found: " +
                                    std::string(bson::TypeName(operand.type())));
  }
  auto sw = std::make_unique<SwitchExpression>();
  for (const auto& f : operand.Obj()) {
    if (f.FieldName() == "branches") {
      if (f.type() != BsonType::kArray) {
        return PipelineError(40061, "$switch expected an array for 'branches'");
      }
      for (const auto& b : f.Obj()) {
        if (b.type() != BsonType::kObject) {
          return PipelineError(40062, "$switch expected each branch to be an object");
        }
        ExpressionPtr c, then;
        for (const auto& bf : b.Obj()) {
          HG_ASSIGN_OR_RETURN(auto e, Expression::ParseExpression(bf, ctx));
          if (bf.FieldName() == "case") {
            c = std::move(e);
          } else if (bf.FieldName() == "then") {
            then = std::move(e);
          } else {
            return PipelineError(40063, "$switch found an unknown argument to a branch: " +
                                            std::string(bf.FieldName()));
          }
        }
        if (!c)
          return PipelineError(40064, "$switch requires each branch have a 'case' expression");
        if (!then) {
          return PipelineError(40065, "$switch requires each branch have a 'then' expression.");
        }
        sw->branches.emplace_back(std::move(c), std::move(then));
      }
    } else if (f.FieldName() == "default") {
      HG_ASSIGN_OR_RETURN(sw->default_, Expression::ParseExpression(f, ctx));
    } else {
      return PipelineError(40067,
                           "$switch found an unknown argument: " + std::string(f.FieldName()));
    }
  }
  if (sw->branches.empty()) return PipelineError(40068, "$switch requires at least one branch.");
  return ExpressionPtr(std::move(sw));
}

}  // namespace

void AddLogicOperators(std::vector<OperatorDef>& out) {
  for (std::string_view op : {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$cmp"}) {
    out.push_back({op, 2, 2, nullptr, nullptr, &Cmp});
  }
  out.push_back({"$not", 1, 1, &Not, nullptr});
  out.push_back({"$and", 0, 0, nullptr, &ParseAndOr});
  out.push_back({"$or", 0, 0, nullptr, &ParseAndOr});
  out.push_back({"$cond", 0, 0, nullptr, &ParseCond});
  out.push_back({"$ifNull", 0, 0, nullptr, &ParseIfNull});
  out.push_back({"$switch", 0, 0, nullptr, &ParseSwitch});
}

}  // namespace hourglass::pipeline::internal
