#include "pipeline/query_hooks.h"

#include <algorithm>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>

#include "pipeline/expression.h"
#include "pipeline/pipeline.h"
#include "query/expression_hooks.h"

namespace hourglass::pipeline {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

class HookExpression final : public query::CompiledExpression {
 public:
  HookExpression(ExpressionPtr expr, int64_t now) : expr_(std::move(expr)), now_(now) {}
  StatusWith<bool> EvaluateTruthy(const BsonObj& doc) const override {
    Variables vars(now_);
    HG_ASSIGN_OR_RETURN(Value v, expr_->Evaluate(doc, vars));
    return v.Truthy();
  }

 private:
  ExpressionPtr expr_;
  int64_t now_;
};

// The source of a HookTransform's stages: the one document being transformed.
class OneDocumentStream final : public DocumentStream {
 public:
  void Set(BsonObj doc) { doc_ = std::move(doc); }
  StatusWith<std::optional<BsonObj>> Next() override {
    std::optional<BsonObj> d = std::move(doc_);
    doc_.reset();
    return d;
  }

 private:
  std::optional<BsonObj> doc_;
};

// A pipeline run over one document at a time, which must yield exactly one document. Its stages
// are bound once, to a one-document source fed by each Apply: the stages an update or a find
// projection may use ($addFields, $project, $unset, $replaceRoot) map each input document to one
// output and keep no state between documents. Apply may be called from several threads (the
// header's contract): a mutex serializes them over the one bound stream.
class HookTransform final : public query::DocumentTransform {
 public:
  explicit HookTransform(std::unique_ptr<Pipeline> p) : pipeline_(std::move(p)) {
    auto source = std::make_unique<OneDocumentStream>();
    source_ = source.get();
    stream_ = pipeline_->Bind(std::move(source));
  }
  StatusWith<BsonObj> Apply(const BsonObj& doc) const override {
    std::lock_guard<std::mutex> lock(mu_);
    source_->Set(doc);
    HG_ASSIGN_OR_RETURN(std::optional<BsonObj> out, stream_->Next());
    if (!out) return WrongCount(0);
    HG_ASSIGN_OR_RETURN(std::optional<BsonObj> more, stream_->Next());
    if (more) return WrongCount(2);
    return std::move(*out);
  }

 private:
  static Status WrongCount(int n) {
    return Status(
        ErrorCode::kInternalError,
        "an update pipeline produced " + std::string(n == 0 ? "0" : "more than 1") + " documents");
  }

  std::unique_ptr<Pipeline> pipeline_;
  mutable std::mutex mu_;
  OneDocumentStream* source_;  // owned by stream_
  std::unique_ptr<DocumentStream> stream_;
};

StatusWith<query::CompiledExpressionPtr> ParseExpressionHook(const BsonElement& e,
                                                             const query::ExpressionContext& ctx) {
  HG_ASSIGN_OR_RETURN(ExpressionPtr expr, Expression::ParseExpression(
                                              e, ParseContext(ctx.let).WithCollator(ctx.collator)));
  return query::CompiledExpressionPtr(
      std::make_shared<HookExpression>(std::move(expr), ctx.now_millis));
}

StatusWith<query::DocumentTransformPtr> MakeTransform(const BsonObj& stages,
                                                      const query::ExpressionContext& ctx) {
  PipelineContext pctx;
  pctx.now_millis = ctx.now_millis;
  pctx.let = ctx.let;
  pctx.collator = ctx.collator;  // expressions compare under the operation's collation
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> p, Pipeline::Parse(stages, pctx));
  return query::DocumentTransformPtr(std::make_shared<HookTransform>(std::move(p)));
}

StatusWith<query::DocumentTransformPtr> ParseUpdatePipelineHook(
    const BsonObj& stages, const query::ExpressionContext& ctx) {
  static constexpr std::string_view kAllowed[] = {"$addFields", "$set",         "$project",
                                                  "$unset",     "$replaceRoot", "$replaceWith"};
  // Unknown or malformed stages report their own errors first, as in MongoDB.
  HG_ASSIGN_OR_RETURN(query::DocumentTransformPtr t, MakeTransform(stages, ctx));
  for (const BsonElement& s : stages) {
    std::string_view name = s.Obj().FirstElement().FieldName();
    if (std::find(std::begin(kAllowed), std::end(kAllowed), name) == std::end(kAllowed)) {
      return Status(ErrorCode::kInvalidOptions,
                    std::string(name) + " is not allowed to be used within an update");
    }
  }
  return t;
}

StatusWith<query::DocumentTransformPtr> ParseProjectionHook(const BsonObj& spec,
                                                            const query::ExpressionContext& ctx) {
  bson::BsonBuilder stage;
  stage.AppendObject("$project", spec);
  bson::BsonBuilder arr;
  arr.AppendObject("0", stage.Obj());
  return MakeTransform(arr.Obj(), ctx);
}

}  // namespace

bool InstallQueryHooks() {
  query::ExpressionHooks hooks;
  hooks.parse_expression = &ParseExpressionHook;
  hooks.parse_update_pipeline = &ParseUpdatePipelineHook;
  hooks.parse_projection = &ParseProjectionHook;
  query::SetExpressionHooks(hooks);
  return true;
}

namespace {
[[maybe_unused]] const bool kQueryHooksInstalled = InstallQueryHooks();
}  // namespace

}  // namespace hourglass::pipeline
