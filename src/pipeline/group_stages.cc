// $group and the stages defined in terms of it: $sortByCount ($group + $sort) and $bucket
// ($group on a bucket-lower-bound key, output in key order); $bucketAuto (sorts its input and
// cuts it into buckets of about equal size, optionally on a preferred-number series).
#include <cmath>
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

// $bucket's and $bucketAuto's groupBy: a "$path" or an expression object.
bool IsGroupByExpression(const BsonElement& f) {
  return (f.type() == BsonType::kString && !f.Str().empty() && f.Str()[0] == '$') ||
         f.type() == BsonType::kObject;
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
      if (!IsGroupByExpression(f)) {
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

// ---- $bucketAuto ----

namespace hourglass::pipeline {

namespace {

// Rounds bucket boundaries to a granularity: a preferred-number series (the series' values in
// [1, 10), repeated at every power of ten) or the powers of two.
class GranularityRounder {
 public:
  static std::optional<GranularityRounder> Make(std::string_view name) {
    static const std::vector<double> kE192 = {
        1.00, 1.01, 1.02, 1.04, 1.05, 1.06, 1.07, 1.09, 1.10, 1.11, 1.13, 1.14, 1.15, 1.17, 1.18,
        1.20, 1.21, 1.23, 1.24, 1.26, 1.27, 1.29, 1.30, 1.32, 1.33, 1.35, 1.37, 1.38, 1.40, 1.42,
        1.43, 1.45, 1.47, 1.49, 1.50, 1.52, 1.54, 1.56, 1.58, 1.60, 1.62, 1.64, 1.65, 1.67, 1.69,
        1.72, 1.74, 1.76, 1.78, 1.80, 1.82, 1.84, 1.87, 1.89, 1.91, 1.93, 1.96, 1.98, 2.00, 2.03,
        2.05, 2.08, 2.10, 2.13, 2.15, 2.18, 2.21, 2.23, 2.26, 2.29, 2.32, 2.34, 2.37, 2.40, 2.43,
        2.46, 2.49, 2.52, 2.55, 2.58, 2.61, 2.64, 2.67, 2.71, 2.74, 2.77, 2.80, 2.84, 2.87, 2.91,
        2.94, 2.98, 3.01, 3.05, 3.09, 3.12, 3.16, 3.20, 3.24, 3.28, 3.32, 3.36, 3.40, 3.44, 3.48,
        3.52, 3.57, 3.61, 3.65, 3.70, 3.74, 3.79, 3.83, 3.88, 3.92, 3.97, 4.02, 4.07, 4.12, 4.17,
        4.22, 4.27, 4.32, 4.37, 4.42, 4.48, 4.53, 4.59, 4.64, 4.70, 4.75, 4.81, 4.87, 4.93, 4.99,
        5.05, 5.11, 5.17, 5.23, 5.30, 5.36, 5.42, 5.49, 5.56, 5.62, 5.69, 5.76, 5.83, 5.90, 5.97,
        6.04, 6.12, 6.19, 6.26, 6.34, 6.42, 6.49, 6.57, 6.65, 6.73, 6.81, 6.90, 6.98, 7.06, 7.15,
        7.23, 7.32, 7.41, 7.50, 7.59, 7.68, 7.77, 7.87, 7.96, 8.06, 8.16, 8.25, 8.35, 8.45, 8.56,
        8.66, 8.76, 8.87, 8.98, 9.09, 9.20, 9.31, 9.42, 9.53, 9.65, 9.76, 9.88};
    auto every = [](const std::vector<double>& v, size_t step) {
      std::vector<double> out;
      for (size_t i = 0; i < v.size(); i += step) out.push_back(v[i]);
      return out;
    };
    GranularityRounder r;
    if (name == "POWERSOF2") {
      r.powers_of_two_ = true;
    } else if (name == "R5") {
      r.series_ = {1.0, 1.6, 2.5, 4.0, 6.3};
    } else if (name == "R10") {
      r.series_ = {1.0, 1.25, 1.6, 2.0, 2.5, 3.15, 4.0, 5.0, 6.3, 8.0};
    } else if (name == "R20") {
      r.series_ = {1.0,  1.12, 1.25, 1.4, 1.6, 1.8, 2.0, 2.24, 2.5, 2.8,
                   3.15, 3.55, 4.0,  4.5, 5.0, 5.6, 6.3, 7.1,  8.0, 9.0};
    } else if (name == "R40") {
      r.series_ = {1.0,  1.06, 1.12, 1.18, 1.25, 1.32, 1.4,  1.5,  1.6,  1.7,  1.8, 1.9,  2.0, 2.12,
                   2.24, 2.36, 2.5,  2.65, 2.8,  3.0,  3.15, 3.35, 3.55, 3.75, 4.0, 4.25, 4.5, 4.75,
                   5.0,  5.3,  5.6,  6.0,  6.3,  6.7,  7.1,  7.5,  8.0,  8.5,  9.0, 9.5};
    } else if (name == "R80") {
      r.series_ = {1.0, 1.03, 1.06, 1.09, 1.12, 1.15, 1.18, 1.22, 1.25, 1.28, 1.32, 1.36,
                   1.4, 1.45, 1.5,  1.55, 1.6,  1.65, 1.7,  1.75, 1.8,  1.85, 1.9,  1.95,
                   2.0, 2.06, 2.12, 2.18, 2.24, 2.3,  2.36, 2.43, 2.5,  2.58, 2.65, 2.72,
                   2.8, 2.9,  3.0,  3.07, 3.15, 3.25, 3.35, 3.45, 3.55, 3.65, 3.75, 3.87,
                   4.0, 4.12, 4.25, 4.37, 4.5,  4.62, 4.75, 4.87, 5.0,  5.15, 5.3,  5.45,
                   5.6, 5.8,  6.0,  6.15, 6.3,  6.5,  6.7,  6.9,  7.1,  7.3,  7.5,  7.75,
                   8.0, 8.25, 8.5,  8.75, 9.0,  9.25, 9.5,  9.75};
    } else if (name == "1-2-5") {
      r.series_ = {1.0, 2.0, 5.0};
    } else if (name == "E6") {
      r.series_ = {1.0, 1.5, 2.2, 3.3, 4.7, 6.8};
    } else if (name == "E12") {
      r.series_ = {1.0, 1.2, 1.5, 1.8, 2.2, 2.7, 3.3, 3.9, 4.7, 5.6, 6.8, 8.2};
    } else if (name == "E24") {
      r.series_ = {1.0, 1.1, 1.2, 1.3, 1.5, 1.6, 1.8, 2.0, 2.2, 2.4, 2.7, 3.0,
                   3.3, 3.6, 3.9, 4.3, 4.7, 5.1, 5.6, 6.2, 6.8, 7.5, 8.2, 9.1};
    } else if (name == "E48") {
      r.series_ = every(kE192, 4);
    } else if (name == "E96") {
      r.series_ = every(kE192, 2);
    } else if (name == "E192") {
      r.series_ = kE192;
    } else {
      return std::nullopt;
    }
    return r;
  }

  // The smallest boundary strictly above `v` (v >= 0; 0 stays 0).
  Value RoundUp(const Value& v) const { return Round(v, true); }
  // The largest boundary strictly below `v` (v >= 0; 0 stays 0).
  Value RoundDown(const Value& v) const { return Round(v, false); }

 private:
  static double Scale(double x, int p) {
    return p >= 0 ? x * std::pow(10.0, p) : x / std::pow(10.0, -p);
  }

  Value Round(const Value& v, bool up) const {
    double x = v.NumberDouble();
    if (x == 0) return v;
    if (powers_of_two_) {
      int e = static_cast<int>(std::floor(std::log2(x)));
      const bool exact = std::exp2(e) == x;
      int exp = up ? e + 1 : (exact ? e - 1 : e);
      if (exp >= 0 && exp < 63) return Value::IntOrLong(int64_t{1} << exp);
      return Value::Double(std::exp2(exp));
    }
    int p = static_cast<int>(std::floor(std::log10(x / series_.front())));
    if (x < Scale(series_.front(), p)) --p;
    if (x >= Scale(series_.front(), p + 1)) ++p;
    if (up) {
      for (double s : series_) {
        double c = Scale(s, p);
        if (c > x) return Value::Double(c);
      }
      return Value::Double(Scale(series_.front(), p + 1));
    }
    for (auto it = series_.rbegin(); it != series_.rend(); ++it) {
      double c = Scale(*it, p);
      if (c < x) return Value::Double(c);
    }
    return Value::Double(Scale(series_.back(), p - 1));
  }

  std::vector<double> series_;
  bool powers_of_two_ = false;
};

class BucketAutoStage : public Stage {
 public:
  ExpressionPtr group_by;
  int32_t buckets = 0;
  std::vector<AccumulatorSpec> accumulators;
  std::optional<GranularityRounder> rounder;
  PipelineContext ctx;

  std::string_view name() const override { return "$bucketAuto"; }

  struct Bucket {
    Value min, max;
    std::vector<size_t> members;  // positions in the sorted input
  };

  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const BucketAutoStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)), in_(std::move(in)) {}
      StatusWith<OptDoc> Next() override {
        if (!loaded_) {
          HG_RETURN_IF_ERROR(Load());
          loaded_ = true;
        }
        if (next_ >= buckets_.size()) return OptDoc();
        const Bucket& b = buckets_[next_];
        BsonBuilder out;
        size_t t = out.OpenObject("_id");
        b.min.AppendTo(out, "min");
        b.max.AppendTo(out, "max");
        out.Close(t);
        Variables vars(s_->ctx.now_millis);
        for (const auto& spec : s_->accumulators) {
          auto acc = MakeAccumulator(spec.op);
          for (size_t i : b.members) {
            HG_ASSIGN_OR_RETURN(Value v, spec.expr->Evaluate(entries_[i].second, vars));
            HG_RETURN_IF_ERROR(acc->Process(v));
          }
          acc->Finalize().AppendTo(out, spec.field);
        }
        ++next_;
        return OptDoc(out.Obj());
      }

     private:
      Status Load() {
        Variables vars(s_->ctx.now_millis);
        int64_t bytes = 0;
        while (true) {
          HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
          if (!d) break;
          HG_ASSIGN_OR_RETURN(Value key, s_->group_by->Evaluate(*d, vars));
          if (key.missing()) key = Value::Null();
          if (s_->rounder) {
            if (!key.numeric()) {
              return PipelineError(40258,
                                   "$bucketAuto can specify a 'granularity' with numeric "
                                   "boundaries only, but found a value with type: " +
                                       std::string(bson::TypeName(key.type())));
            }
            double x = key.NumberDouble();
            if (std::isnan(x) || std::isinf(x)) {
              return PipelineError(40259,
                                   "$bucketAuto can specify a 'granularity' with numeric "
                                   "boundaries only, but found a value that is not finite: " +
                                       key.ToString());
            }
            if (x < 0) {
              return PipelineError(40260,
                                   "$bucketAuto can specify a 'granularity' with numeric "
                                   "boundaries only, but found a negative value: " +
                                       key.ToString());
            }
          }
          bytes += d->size() + key.element().size() + 32;
          if (bytes > s_->ctx.memory_limit_bytes && !s_->ctx.allow_disk_use) {
            return Status(ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed,
                          "Exceeded memory limit for $bucketAuto, but didn't allow external "
                          "sort. Pass allowDiskUse:true to opt in.");
          }
          entries_.emplace_back(std::move(key), std::move(*d));
        }
        std::stable_sort(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
          return Compare(a.first, b.first) < 0;
        });
        const size_t n = entries_.size();
        const int32_t nb = s_->buckets;
        int64_t approx = std::llround(static_cast<double>(n) / nb);
        if (approx < 1) approx = 1;
        const auto& rounder = s_->rounder;
        size_t pos = 0;
        for (int32_t i = 0; i < nb && pos < n; ++i) {
          Bucket b;
          b.min = b.max = entries_[pos].first;
          b.members.push_back(pos++);
          // With a granularity the boundaries are contiguous: a bucket starts at the last one's
          // max.
          if (rounder && !buckets_.empty()) b.min = buckets_.back().max;
          if (i == nb - 1) {
            while (pos < n) b.members.push_back(pos++);
            b.max = entries_[n - 1].first;
          } else {
            for (int64_t j = 1; j < approx && pos < n; ++j) {
              b.max = entries_[pos].first;
              b.members.push_back(pos++);
            }
            if (rounder) {
              Value boundary = rounder->RoundUp(b.max);
              while (pos < n && Compare(entries_[pos].first, boundary) < 0) {
                b.members.push_back(pos++);
              }
              b.max = boundary;
            } else {
              // Equal values never straddle two buckets.
              while (pos < n && Compare(entries_[pos].first, b.max) == 0) {
                b.members.push_back(pos++);
              }
              // A bucket's max is exclusive: the next bucket's min.
              if (pos < n) b.max = entries_[pos].first;
            }
          }
          buckets_.push_back(std::move(b));
        }
        if (rounder && !buckets_.empty()) {
          buckets_.front().min = rounder->RoundDown(buckets_.front().min);
          buckets_.back().max = rounder->RoundUp(buckets_.back().max);
        }
        return Status::OK();
      }

      std::shared_ptr<const BucketAutoStage> s_;
      std::unique_ptr<DocumentStream> in_;
      std::vector<std::pair<Value, BsonObj>> entries_;
      std::vector<Bucket> buckets_;
      size_t next_ = 0;
      bool loaded_ = false;
    };
    return std::make_unique<Stream>(Self(this), std::move(input));
  }
};

}  // namespace

Status ParseBucketAutoStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  if (spec.type() != BsonType::kObject) {
    return PipelineError(40240, "The argument to $bucketAuto must be an object, but found type: " +
                                    std::string(bson::TypeName(spec.type())) + ".");
  }
  auto s = std::make_shared<BucketAutoStage>();
  s->ctx = ctx;
  bool have_output = false;
  for (const auto& f : spec.Obj()) {
    std::string_view n = f.FieldName();
    if (n == "groupBy") {
      if (!IsGroupByExpression(f)) {
        return PipelineError(40239,
                             "The $bucketAuto 'groupBy' field must be defined as a $-prefixed "
                             "path or an expression object, but found: " +
                                 Value::FromElement(f).ToString() + ".");
      }
      HG_ASSIGN_OR_RETURN(s->group_by, Expression::ParseExpression(f, ParseContext()));
    } else if (n == "buckets") {
      if (!f.IsNumber()) {
        return PipelineError(40241,
                             "The $bucketAuto 'buckets' field must be a numeric value, "
                             "but found type: " +
                                 std::string(bson::TypeName(f.type())) + ".");
      }
      double d = f.NumberDouble();
      if (d != std::trunc(d) || d < INT32_MIN || d > INT32_MAX) {
        return PipelineError(40242,
                             "The $bucketAuto 'buckets' field must be representable as a 32-bit "
                             "integer, but found " +
                                 Value::FromElement(f).ToString() + ".");
      }
      if (d <= 0) {
        return PipelineError(40243,
                             "The $bucketAuto 'buckets' field must be greater than 0, but found: " +
                                 Value::FromElement(f).ToString() + ".");
      }
      s->buckets = static_cast<int32_t>(d);
    } else if (n == "output") {
      if (f.type() != BsonType::kObject) {
        return PipelineError(40244,
                             "The $bucketAuto 'output' field must be an object, but found type: " +
                                 std::string(bson::TypeName(f.type())) + ".");
      }
      GroupStage g;
      for (const auto& acc : f.Obj()) HG_RETURN_IF_ERROR(ParseAccumulatorField(acc, &g));
      s->accumulators = std::move(g.accumulators);
      have_output = true;
    } else if (n == "granularity") {
      if (f.type() != BsonType::kString) {
        return PipelineError(40261,
                             "The $bucketAuto 'granularity' field must be a string, but found "
                             "type: " +
                                 std::string(bson::TypeName(f.type())) + ".");
      }
      s->rounder = GranularityRounder::Make(f.Str());
      if (!s->rounder) {
        return PipelineError(40257, "Rounding granularity not recognized: " + std::string(f.Str()));
      }
    } else {
      return PipelineError(40245, "Unrecognized option to $bucketAuto: " + std::string(n) + ".");
    }
  }
  if (!s->group_by || s->buckets == 0) {
    return PipelineError(40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified");
  }
  if (!have_output) {
    s->accumulators.push_back({"count", "$sum", Expression::MakeConstant(Value::Int(1)), {}, {}});
  }
  out->push_back(std::move(s));
  return Status::OK();
}

}  // namespace hourglass::pipeline
