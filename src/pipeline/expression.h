// The aggregation expression language: parsing {$op: args} trees and evaluating them against a
// document.
//
// An Expression is parsed once (ParseExpression) and evaluated many times; Evaluate() is const
// and keeps no state, so one tree may be evaluated from several threads as long as each thread
// uses its own Variables. Results are owned Values (see value.h); "missing" is a distinct result
// (a field path to an absent field, $$REMOVE).
//
// Errors: parse errors return InvalidPipelineOperator (168) for an unknown $operator, 16020 /
// 28667 for a wrong number of arguments, 17276 for an undefined variable, 15983 for an operator
// object with several fields, and the operator's own MongoDB code otherwise. Evaluation errors
// (e.g. $add of a string, 16554) come back from Evaluate as a Status (see errors.h).
//
// See README.md in this folder for the evaluation rules (numeric promotion, null handling,
// array traversal of field paths).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "pipeline/value.h"
#include "query/expression_hooks.h"

namespace hourglass::pipeline {

// Runtime values of variables: $$NOW and the user variables bound by $let, $filter, $map,
// $reduce. Variables are addressed by the slot ParseContext gave them at parse time.
class Variables {
 public:
  explicit Variables(int64_t now_millis = 0) : now_millis_(now_millis) {}
  int64_t now_millis() const { return now_millis_; }
  void Set(int slot, Value v) {
    if (slot >= static_cast<int>(slots_.size())) slots_.resize(slot + 1);
    slots_[slot] = std::move(v);
  }
  Value Get(int slot) const {
    return slot < static_cast<int>(slots_.size()) ? slots_[slot] : Value::Missing();
  }

 private:
  int64_t now_millis_;
  std::vector<Value> slots_;
};

// Names in scope while parsing: the variables of $let/$map/$filter/$reduce, each mapped to a
// Variables slot, and beneath them those of a command's or stage's `let` (query::LetVariables,
// whose values the expression reads when it is evaluated). Copying a context shares its slot
// counter, so nested scopes never reuse a slot that an outer scope still holds. It also carries
// the collation the expressions compare strings under ($eq, $in, set operators, $min...): null
// for the simple one; whoever parses keeps it alive as long as the expressions (a pipeline's
// context holds it).
class ParseContext {
 public:
  ParseContext() : next_slot_(std::make_shared<int>(0)) {}
  // A context whose outermost scope is `let` (null: none).
  explicit ParseContext(std::shared_ptr<const query::LetVariables> let)
      : next_slot_(std::make_shared<int>(0)), let_(std::move(let)) {}
  // The slot of the user variable `name` bound by an enclosing expression, or -1.
  int Lookup(std::string_view name) const;
  // A child context with `name` bound to a fresh slot, stored in *slot.
  ParseContext WithVariable(std::string name, int* slot) const;
  const std::shared_ptr<const query::LetVariables>& let() const { return let_; }
  const bson::StringComparator* strings() const { return collator_.get(); }
  const std::shared_ptr<const bson::StringComparator>& collator() const { return collator_; }
  // This context comparing strings under `collator` (null: simple).
  ParseContext WithCollator(std::shared_ptr<const bson::StringComparator> collator) const {
    ParseContext c = *this;
    c.collator_ = std::move(collator);
    return c;
  }

 private:
  std::shared_ptr<int> next_slot_;
  std::vector<std::pair<std::string, int>> scope_;
  std::shared_ptr<const query::LetVariables> let_;
  std::shared_ptr<const bson::StringComparator> collator_;
};

// FailedToParse (9) unless `name` may name a user variable ($let, $map/$filter `as`, a `let`
// option): it must start with a lowercase ASCII letter or a non-ASCII byte and go on with ASCII
// letters, digits, '_' or non-ASCII bytes; or CURRENT, which rebinds $$CURRENT (field paths in
// its scope read its value). A command's `let` may not rebind CURRENT yet (115).
Status ValidateVariableName(std::string_view name);

// A command's `let` option (find, aggregate, update, delete, findAndModify), parsed and evaluated
// once, in order: each expression may use $$NOW and the variables defined before it, never a
// document field (4890500). Returns null for an absent, null or empty `let`. Errors: not an
// object TypeMismatch (14); a bad name FailedToParse (9); a system variable's name (NOW,
// CLUSTER_TIME, JS_SCOPE, IS_MR, USER_ROLES) 4738901; the expression's own errors (17276...).
StatusWith<std::shared_ptr<const query::LetVariables>> ParseCommandLet(const bson::BsonElement& let,
                                                                       int64_t now_millis);

// The values of `vars` as query::LetVariables stores them ({"": v}, empty for missing).
std::vector<bson::BsonObj> LetValueDocuments(const std::vector<Value>& vars);

class Expression {
 public:
  virtual ~Expression() = default;

  // Evaluates against `root` (also $$CURRENT). Returns the result or an evaluation error.
  virtual StatusWith<Value> Evaluate(const bson::BsonObj& root, Variables& vars) const = 0;

  // The value when this expression is a constant (a literal), else nullptr.
  virtual const Value* ConstantValue() const { return nullptr; }

  // Parses the value of `e` (its name is ignored) as an expression: "$path", "$$var", a literal,
  // an array of expressions, an object of expressions {a: ...} or an operator {$op: args}.
  static StatusWith<std::unique_ptr<Expression>> ParseExpression(const bson::BsonElement& e,
                                                                 const ParseContext& ctx);
  // Parses a document as an expression: an operator {$op: args} or an object expression.
  static StatusWith<std::unique_ptr<Expression>> ParseObject(const bson::BsonObj& obj,
                                                             const ParseContext& ctx);
  // A field path expression for `path` (without the leading '$', e.g. "a.b").
  static std::unique_ptr<Expression> MakeFieldPath(std::string_view path);
  static std::unique_ptr<Expression> MakeConstant(Value v);
};

using ExpressionPtr = std::unique_ptr<Expression>;

// Evaluates a field path "a.b.c" over `doc` with MongoDB's array traversal: when a step meets
// an array, the rest of the path is applied to each member and the results collected into an
// array (members that yield missing are dropped; non-object members are skipped).
Value EvaluateFieldPath(const bson::BsonObj& doc, const std::vector<std::string>& path);

}  // namespace hourglass::pipeline
