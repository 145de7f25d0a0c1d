// The query layer's door to the aggregation expression language, which lives in src/pipeline (a
// module that depends on this one, so this one may not call it directly). src/pipeline installs
// the hooks at static initialization (pipeline/query_hooks.cc); the query layer then uses them
// for `$expr` in filters, pipeline-style updates and expressions in find projections. When no
// hooks are installed (a binary without the pipeline module, e.g. query_test), those features
// fail to parse with CommandNotSupported (115) instead of answering wrongly.
//
// Thread-safety: the hooks are set once before any thread parses a query and are read-only
// afterwards; compiled objects are immutable and may be shared between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "bson/bson_compare.h"

namespace hourglass::query {

// The user variables defined outside any expression: a command's `let` (find, aggregate, update,
// delete, findAndModify) and, inside a $lookup sub-pipeline or a $merge update pipeline, that
// stage's `let`. Expressions parsed with a context holding them may read them as "$$name" (an
// inner $let/$map/$filter/$reduce variable of the same name shadows them).
//
// Names are fixed when expressions are parsed; values ({"": v} documents, empty for missing, in
// name order) are read when the expressions are evaluated. A command's values are set once; a
// $lookup or $merge sets its own again for each input document before it runs the expressions
// parsed with them, so those must not be evaluated from two threads or interleaved streams.
class LetVariables {
 public:
  LetVariables(std::vector<std::string> names, std::vector<bson::BsonObj> values)
      : names_(std::move(names)), values_(std::move(values)) {}
  const std::vector<std::string>& names() const { return names_; }
  // The position of `name`, or -1 when it is not defined here.
  int IndexOf(std::string_view name) const {
    for (size_t i = names_.size(); i-- > 0;) {
      if (names_[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
  const std::vector<bson::BsonObj>& values() const { return values_; }
  // The {"": v} document of the variable at `index` (empty when missing).
  bson::BsonObj holder(int index) const {
    return index < static_cast<int>(values_.size()) ? values_[index] : bson::BsonObj();
  }
  void SetValues(std::vector<bson::BsonObj> values) { values_ = std::move(values); }

 private:
  std::vector<std::string> names_;
  std::vector<bson::BsonObj> values_;
};

// What an expression may read besides the document: the operation's $$NOW and the variables of
// its `let` (null: none).
struct ExpressionContext {
  int64_t now_millis = 0;
  std::shared_ptr<const LetVariables> let;
  // The operation's collation (null: the simple binary order of strings): filters parsed with
  // this context compare strings under it.
  std::shared_ptr<const bson::StringComparator> collator;
  // The current wall clock in milliseconds, for operations that have no $$NOW of their own.
  static ExpressionContext Now();
};

// A parsed aggregation expression; the document is $$ROOT and $$CURRENT.
class CompiledExpression {
 public:
  virtual ~CompiledExpression() = default;
  // Whether the result is truthy ($expr's rule). Evaluation errors keep their codes.
  virtual StatusWith<bool> EvaluateTruthy(const bson::BsonObj& doc) const = 0;
};

// A parsed document-to-document transformation (update pipelines, expression projections).
class DocumentTransform {
 public:
  virtual ~DocumentTransform() = default;
  virtual StatusWith<bson::BsonObj> Apply(const bson::BsonObj& doc) const = 0;
};

using CompiledExpressionPtr = std::shared_ptr<const CompiledExpression>;
using DocumentTransformPtr = std::shared_ptr<const DocumentTransform>;

struct ExpressionHooks {
  // Parses the value of `e` as an aggregation expression.
  StatusWith<CompiledExpressionPtr> (*parse_expression)(const bson::BsonElement& e,
                                                        const ExpressionContext& ctx) = nullptr;
  // Parses the stages of a pipeline-style update (a BSON array of $addFields, $set, $project,
  // $unset, $replaceRoot and $replaceWith stages).
  StatusWith<DocumentTransformPtr> (*parse_update_pipeline)(const bson::BsonObj& stages,
                                                            const ExpressionContext& ctx) = nullptr;
  // Parses a find projection that uses aggregation expressions, as a $project stage.
  StatusWith<DocumentTransformPtr> (*parse_projection)(const bson::BsonObj& spec,
                                                       const ExpressionContext& ctx) = nullptr;
};

// Installs `hooks` (call before serving queries; later calls replace earlier ones).
void SetExpressionHooks(const ExpressionHooks& hooks);
// The installed hooks; members are null when none were installed.
const ExpressionHooks& GetExpressionHooks();

// CommandNotSupported (115) naming `feature`, for when a hook is missing.
Status MissingExpressionHook(std::string_view feature);

}  // namespace hourglass::query
