// $redact: evaluates its expression at the document and, for $$DESCEND, at every embedded
// document (including documents inside arrays), keeping ($$KEEP), dropping ($$PRUNE) or
// descending into each level. Field paths in the expression refer to the level being examined.
#include "pipeline/stage.h"

namespace hourglass::pipeline {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using OptDoc = std::optional<BsonObj>;

namespace {

// The values of $$KEEP, $$PRUNE and $$DESCEND: strings no field path or plain literal yields.
constexpr std::string_view kKeep = "$$KEEP";
constexpr std::string_view kPrune = "$$PRUNE";
constexpr std::string_view kDescend = "$$DESCEND";

class RedactStage : public Stage {
 public:
  ExpressionPtr expr;
  int keep_slot = -1, prune_slot = -1, descend_slot = -1;
  int64_t now_millis = 0;

  std::string_view name() const override { return "$redact"; }

  // The redacted level, or nullopt when pruned.
  StatusWith<OptDoc> Redact(const BsonObj& doc, Variables& vars) const {
    HG_ASSIGN_OR_RETURN(Value v, expr->Evaluate(doc, vars));
    if (v.IsString() && v.Str() == kKeep) return OptDoc(doc);
    if (v.IsString() && v.Str() == kPrune) return OptDoc();
    if (!v.IsString() || v.Str() != kDescend) {
      return PipelineError(17053,
                           "$redact's expression should not return anything aside from the "
                           "variables $$KEEP, $$DESCEND, and $$PRUNE, but returned " +
                               v.ToString());
    }
    BsonBuilder b;
    for (const BsonElement& e : doc) {
      if (e.type() == BsonType::kObject) {
        HG_ASSIGN_OR_RETURN(OptDoc sub, Redact(e.Obj(), vars));
        if (sub) b.AppendObject(e.FieldName(), *sub);
      } else if (e.type() == BsonType::kArray) {
        HG_ASSIGN_OR_RETURN(BsonObj arr, RedactArray(e.Obj(), vars));
        b.AppendArray(e.FieldName(), arr);
      } else {
        b.AppendElement(e);
      }
    }
    return OptDoc(b.Obj());
  }

  // Documents in arrays (also nested arrays) are redacted; other values are kept.
  StatusWith<BsonObj> RedactArray(const BsonObj& arr, Variables& vars) const {
    bson::BsonArrayBuilder out;
    for (const BsonElement& e : arr) {
      if (e.type() == BsonType::kObject) {
        HG_ASSIGN_OR_RETURN(OptDoc sub, Redact(e.Obj(), vars));
        if (sub) out.AppendObject(*sub);
      } else if (e.type() == BsonType::kArray) {
        HG_ASSIGN_OR_RETURN(BsonObj sub, RedactArray(e.Obj(), vars));
        out.builder().AppendArray(out.NextKey(), sub);
      } else {
        out.Append(e);
      }
    }
    return out.Obj();
  }

  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const RedactStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)), in_(std::move(in)) {}
      StatusWith<OptDoc> Next() override {
        while (true) {
          HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
          if (!d) return d;
          Variables vars(s_->now_millis);
          vars.Set(s_->keep_slot, Value::String(kKeep));
          vars.Set(s_->prune_slot, Value::String(kPrune));
          vars.Set(s_->descend_slot, Value::String(kDescend));
          HG_ASSIGN_OR_RETURN(OptDoc out, s_->Redact(*d, vars));
          if (out) return out;
        }
      }

     private:
      std::shared_ptr<const RedactStage> s_;
      std::unique_ptr<DocumentStream> in_;
    };
    return std::make_unique<Stream>(Self(this), std::move(input));
  }
};

}  // namespace

Status ParseRedactStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  auto s = std::make_shared<RedactStage>();
  s->now_millis = ctx.now_millis;
  // The three system variables are bound like user variables, to constant marker strings.
  ParseContext pc = ctx.Expressions()
                        .WithVariable("KEEP", &s->keep_slot)
                        .WithVariable("PRUNE", &s->prune_slot)
                        .WithVariable("DESCEND", &s->descend_slot);
  HG_ASSIGN_OR_RETURN(s->expr, Expression::ParseExpression(spec, pc));
  out->push_back(std::move(s));
  return Status::OK();
}

}  // namespace hourglass::pipeline
