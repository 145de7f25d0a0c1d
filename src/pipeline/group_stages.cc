// $group and the stages defined in terms of it: $sortByCount ($group + $sort) and $bucket
// ($group on a bucket-lower-bound key, output in key order).
#include <functional>
#include <map>

#include "bson/bson_compare.h"
#include "pipeline/accumulator.h"
#include "pipeline/stage.h"
#include "query/sort.h"

namespace hourglass::pipeline {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using OptDoc = std::optional<BsonObj>;

namespace {

struct AccumulatorSpec {
  std::string field;
  std::string op;
  ExpressionPtr expr;
  // Fresh state for one group: make_for_group(key) if set, else make(), else
  // MakeAccumulator(op).
  std::function<std::unique_ptr<Accumulator>()> make;
  std::function<StatusWith<std::unique_ptr<Accumulator>>(const Value&)> make_for_group;
};

class GroupStage : public Stage {
 public:
  ExpressionPtr id;
  // Set for a compound _id {a: <expr>, ...}: missing members become null, like MongoDB.
  std::vector<std::pair<std::string, ExpressionPtr>> id_fields;
  std::vector<AccumulatorSpec> accumulators;
  PipelineContext ctx;

  std::string_view name() const override { return "$group"; }

  StatusWith<Value> Key(const BsonObj& doc, Variables& vars) const {
    if (!id_fields.empty()) {
      BsonBuilder b;
      for (const auto& [name, e] : id_fields) {
        HG_ASSIGN_OR_RETURN(Value v, e->Evaluate(doc, vars));
        (v.missing() ? Value::Null() : v).AppendTo(b, name);
      }
      return Value::Object(b.Obj());
    }
    HG_ASSIGN_OR_RETURN(Value v, id->Evaluate(doc, vars));
    return v.missing() ? Value::Null() : v;
  }

  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const GroupStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)), in_(std::move(in)) {}
      StatusWith<OptDoc> Next() override {
        if (!loaded_) {
          HG_RETURN_IF_ERROR(Load());
          loaded_ = true;
          it_ = groups_.begin();
        }
        if (it_ == groups_.end()) return OptDoc();
        BsonBuilder b;
        it_->first.AppendTo(b, "_id");
        for (size_t i = 0; i < s_->accumulators.size(); ++i) {
          it_->second[i]->Finalize().AppendTo(b, s_->accumulators[i].field);
        }
        ++it_;
        return OptDoc(b.Obj());
      }

     private:
      using Accs = std::vector<std::unique_ptr<Accumulator>>;
      Status Load() {
        Variables vars(s_->ctx.now_millis);
        int64_t bytes = 0;
        while (true) {
          HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
          if (!d) break;
          HG_ASSIGN_OR_RETURN(Value key, s_->Key(*d, vars));
          auto it = groups_.find(key);
          if (it == groups_.end()) {
            Accs accs;
            for (const auto& a : s_->accumulators) {
              if (a.make_for_group) {
                HG_ASSIGN_OR_RETURN(auto acc, a.make_for_group(key));
                accs.push_back(std::move(acc));
              } else {
                accs.push_back(a.make ? a.make() : MakeAccumulator(a.op));
              }
            }
            bytes += 64 + key.element().size();
            it = groups_.emplace(key, std::move(accs)).first;
          }
          for (size_t i = 0; i < s_->accumulators.size(); ++i) {
            HG_ASSIGN_OR_RETURN(Value v, s_->accumulators[i].expr->Evaluate(*d, vars));
            Accumulator& acc = *it->second[i];
            int64_t before = acc.ApproxBytes();
            HG_RETURN_IF_ERROR(acc.Process(v));
            bytes += acc.ApproxBytes() - before;
          }
          if (bytes > s_->ctx.memory_limit_bytes && !s_->ctx.allow_disk_use) {
            return Status(ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed,
                          "Exceeded memory limit for $group, but didn't allow external sort. "
                          "Pass allowDiskUse:true to opt in.");
          }
        }
        return Status::OK();
      }
      std::shared_ptr<const GroupStage> s_;
      std::unique_ptr<DocumentStream> in_;
      // Groups in canonical key order (1 and 1.0 are one group, as in MongoDB).
      std::map<Value, Accs, ValueLess> groups_;
      std::map<Value, Accs, ValueLess>::iterator it_;
      bool loaded_ = false;
    };
    return std::make_unique<Stream>(std::static_pointer_cast<const GroupStage>(shared_from_this()),
                                    std::move(input));
  }
};

// Parses {field: {$acc: <expr>}, ...} (every field but _id) into `g`.
Status ParseAccumulatorField(const BsonElement& f, GroupStage* g) {
  std::string_view name = f.FieldName();
  if (name.find('.') != std::string_view::npos) {
    return PipelineError(40235, "The field name '" + std::string(name) + "' cannot contain '.'");
  }
  if (!name.empty() && name[0] == '$') {
    return PipelineError(40236,
                         "The field name '" + std::string(name) + "' cannot be an operator name");
  }
  if (f.type() != BsonType::kObject) {
    return PipelineError(40234,
                         "The field '" + std::string(name) + "' must be an accumulator object");
  }
  BsonObj spec = f.Obj();
  if (spec.NumFields() != 1) {
    return PipelineError(40238,
                         "The field '" + std::string(name) + "' must specify one accumulator");
  }
  BsonElement acc = spec.FirstElement();
  std::string_view op = acc.FieldName();
  if (!IsAnyAccumulatorName(op)) {
    return PipelineError(15952, "unknown group operator '" + std::string(op) + "'");
  }
  ExpressionPtr expr;
  if (!IsAccumulatorName(op)) {
    // Accumulators with options ($topN: {n, sortBy, output}, ...).
    HG_ASSIGN_OR_RETURN(ParsedAccumulator parsed, ParseAccumulator(op, acc, ParseContext()));
    g->accumulators.push_back({std::string(name), std::string(op), std::move(parsed.input),
                               std::move(parsed.make), std::move(parsed.make_for_group)});
    return Status::OK();
  }
  if (op == "$count") {
    if (acc.type() != BsonType::kObject || !acc.Obj().IsEmpty()) {
      return PipelineError(2, "$count takes no arguments, i.e. $count:{}");
    }
    expr = Expression::MakeConstant(Value::Int(1));
  } else {
    if (acc.type() == BsonType::kArray) {
      return PipelineError(40237, "The " + std::string(op) + " accumulator is a unary operator");
    }
    HG_ASSIGN_OR_RETURN(expr, Expression::ParseExpression(acc, ParseContext()));
  }
  g->accumulators.push_back({std::string(name), std::string(op), std::move(expr), {}, {}});
  return Status::OK();
}

Status ParseGroupId(const BsonElement& f, GroupStage* g) {
  if (f.type() == BsonType::kObject && !f.Obj().IsEmpty() &&
      f.Obj().FirstElement().FieldName().substr(0, 1) != "$") {
    for (const auto& sub : f.Obj()) {
      HG_ASSIGN_OR_RETURN(auto e, Expression::ParseExpression(sub, ParseContext()));
      g->id_fields.emplace_back(std::string(sub.FieldName()), std::move(e));
    }
    return Status::OK();
  }
  HG_ASSIGN_OR_RETURN(g->id, Expression::ParseExpression(f, ParseContext()));
  return Status::OK();
}

// The $bucket key: the lower boundary of the bucket holding the groupBy value, else `default`.
class BucketKeyExpression : public Expression {
 public:
  ExpressionPtr group_by;
  std::vector<Value> boundaries;
  Value default_value;  // missing: no default
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value v, group_by->Evaluate(root, vars));
    if (!v.missing() && Compare(v, boundaries.front()) >= 0 && Compare(v, boundaries.back()) < 0) {
      for (size_t i = 0; i + 1 < boundaries.size(); ++i) {
        if (Compare(v, boundaries[i + 1]) < 0) return boundaries[i];
      }
    }
    if (default_value.missing()) {
      return PipelineError(40066,
                           "$switch could not find a matching branch for an input, and no "
                           "default was specified.");
    }
    return default_value;
  }
};

}  // namespace

Status ParseGroupStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  if (spec.type() != BsonType::kObject) {
    return PipelineError(15947, "a group's fields must be specified in an object");
  }
  auto g = std::make_shared<GroupStage>();
  g->ctx = ctx;
  bool have_id = false;
  for (const auto& f : spec.Obj()) {
    if (f.FieldName() == "_id") {
      if (have_id) return PipelineError(15948, "a group's _id may only be specified once");
      have_id = true;
      HG_RETURN_IF_ERROR(ParseGroupId(f, g.get()));
    } else {
      HG_RETURN_IF_ERROR(ParseAccumulatorField(f, g.get()));
    }
  }
  if (!have_id) return PipelineError(15955, "a group specification must include an _id");
  out->push_back(std::move(g));
  return Status::OK();
}

Status ParseSortByCountStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  const bool ok =
      (spec.type() == BsonType::kString && !spec.Str().empty() && spec.Str()[0] == '$') ||
      (spec.type() == BsonType::kObject && spec.Obj().NumFields() == 1 &&
       spec.Obj().FirstElement().FieldName().substr(0, 1) == "$");
  if (!ok) {
    return PipelineError(40148,
                         "the sortBy field must be defined as a $-prefixed path or an "
                         "expression");
  }
  auto g = std::make_shared<GroupStage>();
  g->ctx = ctx;
  HG_ASSIGN_OR_RETURN(g->id, Expression::ParseExpression(spec, ParseContext()));
  g->accumulators.push_back({"count", "$sum", Expression::MakeConstant(Value::Int(1)), {}, {}});
  out->push_back(std::move(g));
  BsonBuilder sort;
  size_t t = sort.OpenObject("$sort");
  sort.AppendInt32("count", -1);
  sort.Close(t);
  BsonObj sort_spec = sort.Obj();
  return ParseSortStage(sort_spec.FirstElement(), ctx, out);
}

Status ParseBucketStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  if (spec.type() != BsonType::kObject) {
    return PipelineError(40201, "Argument to $bucket stage must be an object, but found type: " +
                                    std::string(bson::TypeName(spec.type())));
  }
  auto key = std::make_unique<BucketKeyExpression>();
  auto g = std::make_shared<GroupStage>();
  g->ctx = ctx;
  bool have_output = false;
  for (const auto& f : spec.Obj()) {
    std::string_view n = f.FieldName();
    if (n == "groupBy") {
      const bool ok = (f.type() == BsonType::kString && !f.Str().empty() && f.Str()[0] == '$') ||
                      f.type() == BsonType::kObject;
      if (!ok) {
        return PipelineError(40202,
                             "The $bucket 'groupBy' field must be defined as a "
                             "$-prefixed path or an expression, but found: " +
                                 Value::FromElement(f).ToString() + ".");
      }
      HG_ASSIGN_OR_RETURN(key->group_by, Expression::ParseExpression(f, ParseContext()));
    } else if (n == "boundaries") {
      if (f.type() != BsonType::kArray) {
        return PipelineError(40200,
                             "The $bucket 'boundaries' field must be an array, but found "
                             "type: " +
                                 std::string(bson::TypeName(f.type())) + ".");
      }
      for (const auto& b : f.Obj()) key->boundaries.push_back(Value::FromElement(b));
    } else if (n == "default") {
      key->default_value = Value::FromElement(f);
    } else if (n == "output") {
      if (f.type() != BsonType::kObject) {
        return PipelineError(40196,
                             "The $bucket 'output' field must be an object, but found "
                             "type: " +
                                 std::string(bson::TypeName(f.type())) + ".");
      }
      for (const auto& acc : f.Obj()) HG_RETURN_IF_ERROR(ParseAccumulatorField(acc, g.get()));
      have_output = true;
    } else {
      return PipelineError(40197, "Unrecognized option to $bucket: " + std::string(n) + ".");
    }
  }
  if (!key->group_by || key->boundaries.empty()) {
    return PipelineError(40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.");
  }
  const auto& bounds = key->boundaries;
  if (bounds.size() < 2) {
    return PipelineError(40192,
                         "The $bucket 'boundaries' field must have at least 2 values, but "
                         "found " +
                             std::to_string(bounds.size()) + " value(s).");
  }
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    const bool same_bracket =
        bson::CanonicalTypeRank(bounds[i].type()) == bson::CanonicalTypeRank(bounds[i + 1].type());
    if (!same_bracket) {
      return PipelineError(40193,
                           "All values in the the 'boundaries' option to $bucket must have "
                           "the same type. Found conflicting types " +
                               std::string(bson::TypeName(bounds[i].type())) + " and " +
                               std::string(bson::TypeName(bounds[i + 1].type())) + ".");
    }
    if (Compare(bounds[i], bounds[i + 1]) >= 0) {
      return PipelineError(40194,
                           "The 'boundaries' option to $bucket must be sorted in ascending "
                           "order, but elements " +
                               std::to_string(i) + " and " + std::to_string(i + 1) +
                               " are not in ascending order (" + bounds[i].ToString() +
                               " is not less than " + bounds[i + 1].ToString() + ").");
    }
  }
  if (!key->default_value.missing() &&
      bson::CanonicalTypeRank(key->default_value.type()) ==
          bson::CanonicalTypeRank(bounds.front().type()) &&
      Compare(key->default_value, bounds.front()) >= 0 &&
      Compare(key->default_value, bounds.back()) < 0) {
    return PipelineError(40199,
                         "The $bucket 'default' field must be less than the lowest "
                         "boundary or greater than or equal to the highest boundary.");
  }
  if (!have_output) {
    g->accumulators.push_back({"count", "$sum", Expression::MakeConstant(Value::Int(1)), {}, {}});
  }
  g->id = std::move(key);
  // The group's output is already in canonical _id order, which is the bucket order.
  out->push_back(std::move(g));
  return Status::OK();
}

}  // namespace hourglass::pipeline
