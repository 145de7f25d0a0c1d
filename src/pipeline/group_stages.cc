// $group and the stages defined in terms of it: $sortByCount ($group + $sort) and $bucket
// ($group on a bucket-lower-bound key, output in key order); $bucketAuto (sorts its input and
// cuts it into buckets of about equal size, optionally on a preferred-number series).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "bson/bson_compare.h"
#include "bson/decimal128.h"
#include "pipeline/accumulator.h"
#include "pipeline/column_block.h"
#include "pipeline/external_sorter.h"
#include "pipeline/group_block.h"
#include "pipeline/group_table.h"
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
  // MakeAccumulator(op) (the simple collation).
  std::function<std::unique_ptr<Accumulator>()> make;
  std::function<StatusWith<std::unique_ptr<Accumulator>>(const Value&)> make_for_group;

  // Fresh state for the group whose key (its `_id`) is `key`, by the rule above.
  StatusWith<std::unique_ptr<Accumulator>> NewState(const Value& key) const {
    if (make_for_group) return make_for_group(key);
    return make ? make() : MakeAccumulator(op);
  }
};

constexpr const char* kGroupExceededMessage =
    "Exceeded memory limit for $group, but didn't allow external sort. Pass allowDiskUse:true to "
    "opt in.";

class GroupStage : public Stage {
 public:
  ExpressionPtr id;
  // Set for a compound _id {a: <expr>, ...}: missing members become null, like MongoDB.
  std::vector<std::pair<std::string, ExpressionPtr>> id_fields;
  std::vector<AccumulatorSpec> accumulators;
  PipelineContext ctx;
  // Set when the stage can fold column blocks (group_block.h) and its input offers them.
  std::optional<GroupBlockPlan> block_plan;

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

  // Groups are held in a GroupTable. Over the memory limit with allowDiskUse, the groups are
  // written in key order as a sorted run of rows {k: key} / {s: [partial state per accumulator]}
  // through an ExternalSorter and emptied; at the end the sorter merges the runs by key (ties in
  // run order, which is input order) and each key's partial states are merged into fresh
  // accumulators. Output is in key order either way.
  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const GroupStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)), in_(std::move(in)) {}
      StatusWith<OptDoc> Next() override {
        if (!loaded_) {
          HG_RETURN_IF_ERROR(Load());
          loaded_ = true;
        }
        if (sorter_) return NextMerged();
        const std::vector<const GroupTable::Group*>& ordered = groups_.Ordered();
        if (next_ == ordered.size()) return OptDoc();
        const GroupTable::Group& g = *ordered[next_++];
        BsonBuilder b;
        g.key.AppendTo(b, "_id");
        for (size_t i = 0; i < s_->accumulators.size(); ++i) {
          g.accs[i]->Finalize().AppendTo(b, s_->accumulators[i].field);
        }
        return OptDoc(b.Obj());
      }

      // Groups come out in key order, whether merged from spilled runs or not; a $sort on an
      // array _id orders by its elements instead.
      bool InIdOrder() const override { return loaded_ && !array_key_; }
      std::vector<std::string> IdMembers() const override {
        std::vector<std::string> names;
        if (!InIdOrder() || member_array_) return names;
        for (const auto& [name, e] : s_->id_fields) {
          if (name.find('.') != std::string::npos) return {};
          names.push_back(name);
        }
        return names;
      }

     private:
      using Accs = GroupTable::Accs;
      Status Load() {
        Variables vars(s_->ctx.now_millis);
        if (s_->block_plan) {
          if (BlockSource* blocks = in_->AsBlockSource()) {
            GroupBlockPlan::Sink sink{[&](const BsonObj& doc) { return s_->Key(doc, vars); },
                                      [&](const Value& key) { return GroupFor(key); },
                                      [&](int64_t added) { return Account(added); }};
            HG_RETURN_IF_ERROR(s_->block_plan->Consume(*blocks, sink));
            return FinishLoad();
          }
        }
        while (true) {
          HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
          if (!d) break;
          HG_ASSIGN_OR_RETURN(Value key, s_->Key(*d, vars));
          HG_ASSIGN_OR_RETURN(Accs * accs, GroupFor(key));
          int64_t added = 0;
          for (size_t i = 0; i < s_->accumulators.size(); ++i) {
            HG_ASSIGN_OR_RETURN(Value v, s_->accumulators[i].expr->Evaluate(*d, vars));
            Accumulator& acc = *(*accs)[i];
            int64_t before = acc.ApproxBytes();
            HG_RETURN_IF_ERROR(acc.Process(v));
            added += acc.ApproxBytes() - before;
          }
          HG_RETURN_IF_ERROR(Account(added).status());
        }
        return FinishLoad();
      }

      // The accumulators of the group of `key`, created on first use (their memory is counted
      // at the next Account).
      StatusWith<Accs*> GroupFor(const Value& key) {
        if (Accs* accs = groups_.Find(key)) return accs;
        Accs accs;
        for (const auto& a : s_->accumulators) {
          HG_ASSIGN_OR_RETURN(auto acc, a.NewState(key));
          bytes_ += acc->ApproxBytes();
          accs.push_back(std::move(acc));
        }
        bytes_ += 64 + 2 * key.element().size();  // the key, and its key string
        array_key_ = array_key_ || key.element().type() == BsonType::kArray;
        if (!s_->id_fields.empty() && !member_array_) {
          for (const BsonElement& m : key.element().Obj()) {
            member_array_ = member_array_ || m.type() == BsonType::kArray;
          }
        }
        return groups_.Add(key, std::move(accs));
      }

      // Adds `added` bytes to the memory the groups hold. Over the limit the groups are spilled
      // (true: every group, and every pointer GroupFor gave, is gone), or without allowDiskUse
      // the stage fails with 292.
      StatusWith<bool> Account(int64_t added) {
        bytes_ += added;
        if (bytes_ <= s_->ctx.limits.group) return false;
        if (!s_->ctx.allow_disk_use || s_->ctx.tmp_dir.empty()) {
          return Status(ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed,
                        kGroupExceededMessage);
        }
        HG_RETURN_IF_ERROR(Spill());
        bytes_ = 0;
        return true;
      }

      Status FinishLoad() {
        if (sorter_) {
          HG_RETURN_IF_ERROR(Spill());
          HG_RETURN_IF_ERROR(sorter_->Finish());
          HG_ASSIGN_OR_RETURN(next_row_, sorter_->Next());
        }
        return Status::OK();
      }

      // Writes the groups held as one sorted run and forgets them.
      Status Spill() {
        if (!sorter_) {
          ExternalSorterOptions o =
              ExternalSorterOptions::ForStage(s_->ctx, s_->ctx.limits.group, kGroupExceededMessage);
          o.spill_prefix = "group";
          sorter_ = std::make_unique<ExternalSorter>(
              [strings = s_->ctx.collator.get()](const BsonObj& a, const BsonObj& b) {
                return bson::CompareElementValues(a.FirstElement(), b.FirstElement(), strings);
              },
              std::move(o));
        }
        std::vector<Value> partials;
        for (const GroupTable::Group* g : groups_.Ordered()) {
          BsonBuilder k;
          g->key.AppendTo(k, "k");
          partials.clear();
          for (const auto& acc : g->accs) partials.push_back(acc->PartialState());
          BsonBuilder st;
          Value::Array(partials).AppendTo(st, "s");
          HG_RETURN_IF_ERROR(sorter_->AppendToSortedRun(k.Obj(), st.Obj()));
        }
        HG_RETURN_IF_ERROR(sorter_->EndSortedRun());
        groups_.Clear();
        ++GlobalSpillMetrics().group_spills;
        return Status::OK();
      }

      // The next group from the merged runs: the rows of one key, their partial states merged.
      StatusWith<OptDoc> NextMerged() {
        if (!next_row_) return OptDoc();
        const BsonObj key_row = next_row_->key;  // owned: outlives next_row_
        const Value key = Value::FromElement(key_row.FirstElement());
        Accs accs;
        for (const auto& a : s_->accumulators) {
          HG_ASSIGN_OR_RETURN(auto acc, a.NewState(key));
          accs.push_back(std::move(acc));
        }
        while (next_row_ &&
               bson::CompareElementValues(next_row_->key.FirstElement(), key_row.FirstElement(),
                                          s_->ctx.collator.get()) == 0) {
          const std::vector<Value> partials =
              Value::FromElement(next_row_->doc.FirstElement()).ArrayValues();
          for (size_t i = 0; i < accs.size(); ++i) {
            HG_RETURN_IF_ERROR(accs[i]->MergePartial(partials[i]));
          }
          HG_ASSIGN_OR_RETURN(next_row_, sorter_->Next());
        }
        BsonBuilder b;
        key.AppendTo(b, "_id");
        for (size_t i = 0; i < accs.size(); ++i) {
          accs[i]->Finalize().AppendTo(b, s_->accumulators[i].field);
        }
        return OptDoc(b.Obj());
      }

      std::shared_ptr<const GroupStage> s_;
      std::unique_ptr<DocumentStream> in_;
      // 1 and 1.0 are one group, as in MongoDB; under a collation, strings it deems equal too
      // (the group keeps the first key seen).
      GroupTable groups_{s_->ctx.collator.get()};
      size_t next_ = 0;    // the next of groups_.Ordered() to return
      int64_t bytes_ = 0;  // memory held by groups_ (approximate)
      bool loaded_ = false;
      bool array_key_ = false;     // some group's key is an array
      bool member_array_ = false;  // some member of a compound key is an array
      // Spilling: the sorter holding the runs, and the merge's next row.
      std::unique_ptr<ExternalSorter> sorter_;
      std::optional<SortRow> next_row_;
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
    HG_ASSIGN_OR_RETURN(ParsedAccumulator parsed, ParseAccumulator(op, acc, g->ctx.Expressions()));
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
    HG_ASSIGN_OR_RETURN(expr, Expression::ParseExpression(acc, g->ctx.Expressions()));
  }
  // $min, $max and $addToSet compare under the aggregate's collation.
  g->accumulators.push_back({std::string(name),
                             std::string(op),
                             std::move(expr),
                             [op = std::string(op), strings = g->ctx.collator.get()] {
                               return MakeAccumulator(op, strings);
                             },
                             {}});
  return Status::OK();
}

Status ParseGroupId(const BsonElement& f, GroupStage* g) {
  if (f.type() == BsonType::kObject && !f.Obj().IsEmpty() &&
      f.Obj().FirstElement().FieldName().substr(0, 1) != "$") {
    for (const auto& sub : f.Obj()) {
      HG_ASSIGN_OR_RETURN(auto e, Expression::ParseExpression(sub, g->ctx.Expressions()));
      g->id_fields.emplace_back(std::string(sub.FieldName()), std::move(e));
    }
    return Status::OK();
  }
  HG_ASSIGN_OR_RETURN(g->id, Expression::ParseExpression(f, g->ctx.Expressions()));
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
  Value default_value;                              // missing: no default
  const bson::StringComparator* strings = nullptr;  // the aggregate's collation
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value v, group_by->Evaluate(root, vars));
    if (!v.missing() && Compare(v, boundaries.front(), strings) >= 0 &&
        Compare(v, boundaries.back(), strings) < 0) {
      for (size_t i = 0; i + 1 < boundaries.size(); ++i) {
        if (Compare(v, boundaries[i + 1], strings) < 0) return boundaries[i];
      }
    }
    if (default_value.missing()) return NoBucketError();
    return default_value;
  }
  // What a value in no bucket gets without a default (as $bucket's $switch reports it).
  static Status NoBucketError() {
    return PipelineError(40066,
                         "$switch could not find a matching branch for an input, and no "
                         "default was specified.");
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
  BsonElement id;
  std::vector<BsonElement> outputs;
  for (const auto& f : spec.Obj()) {
    if (f.FieldName() == "_id") {
      if (have_id) return PipelineError(15948, "a group's _id may only be specified once");
      have_id = true;
      id = f;
      HG_RETURN_IF_ERROR(ParseGroupId(f, g.get()));
    } else {
      HG_RETURN_IF_ERROR(ParseAccumulatorField(f, g.get()));
      outputs.push_back(f);
    }
  }
  if (!have_id) return PipelineError(15955, "a group specification must include an _id");
  g->block_plan = GroupBlockPlan::Make(id, outputs);
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
  HG_ASSIGN_OR_RETURN(g->id, Expression::ParseExpression(spec, ctx.Expressions()));
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
  key->strings = ctx.collator.get();
  auto g = std::make_shared<GroupStage>();
  g->ctx = ctx;
  bool have_output = false;
  // For block processing: the groupBy the key evaluates (the last one given) and the
  // accumulators, as parsed.
  BsonElement group_by;
  std::vector<BsonElement> outputs;
  for (const auto& f : spec.Obj()) {
    std::string_view n = f.FieldName();
    if (n == "groupBy") {
      if (!IsGroupByExpression(f)) {
        return PipelineError(40202,
                             "The $bucket 'groupBy' field must be defined as a "
                             "$-prefixed path or an expression, but found: " +
                                 Value::FromElement(f).ToString() + ".");
      }
      HG_ASSIGN_OR_RETURN(key->group_by, Expression::ParseExpression(f, ctx.Expressions()));
      group_by = f;
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
      for (const auto& acc : f.Obj()) {
        HG_RETURN_IF_ERROR(ParseAccumulatorField(acc, g.get()));
        outputs.push_back(acc);
      }
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
    if (Compare(bounds[i], bounds[i + 1], key->strings) >= 0) {
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
      Compare(key->default_value, bounds.front(), key->strings) >= 0 &&
      Compare(key->default_value, bounds.back(), key->strings) < 0) {
    return PipelineError(40199,
                         "The $bucket 'default' field must be less than the lowest "
                         "boundary or greater than or equal to the highest boundary.");
  }
  // Without an output, MongoDB's {count: {$sum: 1}}, parsed as if given.
  BsonBuilder count_spec;
  count_spec.AppendObject("count", BsonBuilder().AppendInt32("$sum", 1).Obj());
  const BsonObj count = count_spec.Obj();
  if (!have_output) {
    HG_RETURN_IF_ERROR(ParseAccumulatorField(count.FirstElement(), g.get()));
    outputs.push_back(count.FirstElement());
  }
  g->block_plan = GroupBlockPlan::MakeBucket(group_by, key->boundaries, key->default_value,
                                             BucketKeyExpression::NoBucketError(), outputs);
  g->id = std::move(key);
  // The group's output is already in canonical _id order, which is the bucket order.
  out->push_back(std::move(g));
  return Status::OK();
}

}  // namespace hourglass::pipeline

// ---- $bucketAuto ----

namespace hourglass::pipeline {

namespace {

// The arithmetic GranularityRounder's series walk needs, for doubles and (exactly) for decimals.
template <typename N>
struct SeriesNum;

template <>
struct SeriesNum<double> {
  static double Of(double b) { return b; }
  static double Mul(double a, double b) { return a * b; }
  static double Div(double a, double b) { return a / b; }
  static int Cmp(double a, double b) { return a < b ? -1 : (a > b ? 1 : 0); }
  static Value Wrap(double x) { return Value::Double(x); }
};

template <>
struct SeriesNum<bson::Decimal128> {
  using D = bson::Decimal128;
  static D Of(double b) { return bson::decimal::FromInt64(static_cast<int64_t>(b)); }
  static D Mul(const D& a, const D& b) { return bson::decimal::Multiply(a, b); }
  static D Div(const D& a, const D& b) { return bson::decimal::Divide(a, b); }
  static int Cmp(const D& a, const D& b) { return bson::CompareDecimals(a, b); }
  static Value Wrap(const D& x) { return Value::Decimal(x); }
};

// Rounds bucket boundaries to a granularity: a preferred-number series (MongoDB's base values,
// scaled by powers of ten) or the powers of two. Rounding is strict: up gives the next boundary
// above the value, down the one below; zero stays zero. Values must be non-negative numbers.
class GranularityRounder {
 public:
  static std::optional<GranularityRounder> Make(std::string_view name) {
    // The series as MongoDB defines them (its R40 and R80 differ from the textbook ones).
    static const std::map<std::string_view, std::vector<double>> kSeries = {
        {"R5", {10, 16, 25, 40, 63}},
        {"R10", {100, 125, 160, 200, 250, 315, 400, 500, 630, 800}},
        {"R20", {100, 112, 125, 140, 160, 180, 200, 224, 250, 280,
                 315, 355, 400, 450, 500, 560, 630, 710, 800, 900}},
        {"R40", {100, 106, 112, 118, 125, 132, 140, 150, 160, 170, 180, 190, 200,
                 212, 224, 236, 250, 265, 280, 300, 315, 355, 375, 400, 425, 450,
                 475, 500, 530, 560, 600, 630, 670, 710, 750, 800, 850, 900, 950}},
        {"R80", {103, 109, 115, 122, 128, 136, 145, 155, 165, 175, 185, 195, 206, 218,
                 230, 243, 258, 272, 290, 307, 325, 345, 365, 387, 412, 437, 462, 487,
                 515, 545, 575, 615, 650, 690, 730, 775, 825, 875, 925, 975}},
        {"1-2-5", {10, 20, 50}},
        {"E6", {10, 15, 22, 33, 47, 68}},
        {"E12", {10, 12, 15, 18, 22, 27, 33, 39, 47, 56, 68, 82}},
        {"E24", {10, 11, 12, 13, 15, 16, 18, 20, 22, 24, 27, 30,
                 33, 36, 39, 43, 47, 51, 56, 62, 68, 75, 82, 91}},
        {"E48", {100, 105, 110, 115, 121, 127, 133, 140, 147, 154, 162, 169, 178, 187, 196, 205,
                 215, 226, 237, 249, 261, 274, 287, 301, 316, 332, 348, 365, 383, 402, 422, 442,
                 464, 487, 511, 536, 562, 590, 619, 649, 681, 715, 750, 787, 825, 866, 909, 953}},
        {"E96", {100, 102, 105, 107, 110, 113, 115, 118, 121, 124, 127, 130, 133, 137, 140, 143,
                 147, 150, 154, 158, 162, 165, 169, 174, 178, 182, 187, 191, 196, 200, 205, 210,
                 215, 221, 226, 232, 237, 243, 249, 255, 261, 267, 274, 280, 287, 294, 301, 309,
                 316, 324, 332, 340, 348, 357, 365, 374, 383, 392, 402, 412, 422, 432, 442, 453,
                 464, 475, 487, 499, 511, 523, 536, 549, 562, 576, 590, 604, 619, 634, 649, 665,
                 681, 698, 715, 732, 750, 768, 787, 806, 825, 845, 866, 887, 909, 931, 953, 976}},
        {"E192",
         {100, 101, 102, 104, 105, 106, 107, 109, 110, 111, 113, 114, 115, 117, 118, 120, 121, 123,
          124, 126, 127, 129, 130, 132, 133, 135, 137, 138, 140, 142, 143, 145, 147, 149, 150, 152,
          154, 156, 158, 160, 162, 164, 165, 167, 169, 172, 174, 176, 178, 180, 182, 184, 187, 189,
          191, 193, 196, 198, 200, 203, 205, 208, 210, 213, 215, 218, 221, 223, 226, 229, 232, 234,
          237, 240, 243, 246, 249, 252, 255, 258, 261, 264, 267, 271, 274, 277, 280, 284, 287, 291,
          294, 298, 301, 305, 309, 312, 316, 320, 324, 328, 332, 336, 340, 344, 348, 352, 357, 361,
          365, 370, 374, 379, 383, 388, 392, 397, 402, 407, 412, 417, 422, 427, 432, 437, 442, 448,
          453, 459, 464, 470, 475, 481, 487, 493, 499, 505, 511, 517, 523, 530, 536, 542, 549, 556,
          562, 569, 576, 583, 590, 597, 604, 612, 619, 626, 634, 642, 649, 657, 665, 673, 681, 690,
          698, 706, 715, 723, 732, 741, 750, 759, 768, 777, 787, 796, 806, 816, 825, 835, 845, 856,
          866, 876, 887, 898, 909, 920, 931, 942, 953, 965, 976, 988}},
    };
    GranularityRounder r;
    if (name == "POWERSOF2") {
      r.powers_of_two_ = true;
      return r;
    }
    auto it = kSeries.find(name);
    if (it == kSeries.end()) return std::nullopt;
    r.series_ = &it->second;
    return r;
  }

  Value RoundUp(const Value& v) const {
    if (v.type() == BsonType::kDecimal128) {
      const bson::Decimal128 x = v.element().Decimal();
      if (bson::decimal::IsZero(x)) return v;
      if (powers_of_two_) return DecimalPowerOfTwo(std::floor(Log2(x)) + 1);
      return SeriesUp(*series_, x);
    }
    const double x = v.NumberDouble();
    if (x == 0) return v;
    if (powers_of_two_) return PowerOfTwo(static_cast<int>(std::floor(std::log2(x))) + 1);
    return SeriesUp(*series_, x);
  }

  Value RoundDown(const Value& v) const {
    if (v.type() == BsonType::kDecimal128) {
      const bson::Decimal128 x = v.element().Decimal();
      if (bson::decimal::IsZero(x)) return v;
      if (powers_of_two_) return DecimalPowerOfTwo(std::ceil(Log2(x)) - 1);
      return SeriesDown(*series_, x);
    }
    const double x = v.NumberDouble();
    if (x == 0) return v;
    if (powers_of_two_) return PowerOfTwo(static_cast<int>(std::ceil(std::log2(x))) - 1);
    return SeriesDown(*series_, x);
  }

 private:
  // Scales the series by powers of ten until it spans x, then takes the first value above it.
  template <typename N>
  static Value SeriesUp(const std::vector<double>& s, const N& x) {
    using O = SeriesNum<N>;
    const N ten = O::Of(10);
    N m = O::Of(1);
    while (O::Cmp(x, O::Mul(O::Of(s.back()), m)) >= 0) m = O::Mul(m, ten);
    while (O::Cmp(x, O::Mul(O::Of(s.front()), m)) < 0) {
      const N previous_min = O::Mul(O::Of(s.front()), m);
      m = O::Div(m, ten);
      if (O::Cmp(x, O::Mul(O::Of(s.back()), m)) >= 0) return O::Wrap(previous_min);
    }
    for (double b : s) {
      if (O::Cmp(x, O::Mul(O::Of(b), m)) < 0) return O::Wrap(O::Mul(O::Of(b), m));
    }
    return O::Wrap(O::Mul(O::Mul(O::Of(s.front()), m), ten));  // not reached: x < s.back() * m
  }

  // The last series value below x.
  template <typename N>
  static Value SeriesDown(const std::vector<double>& s, const N& x) {
    using O = SeriesNum<N>;
    const N ten = O::Of(10);
    N m = O::Of(1);
    while (O::Cmp(x, O::Mul(O::Of(s.front()), m)) <= 0) m = O::Div(m, ten);
    while (O::Cmp(x, O::Mul(O::Of(s.back()), m)) > 0) {
      const N previous_max = O::Mul(O::Of(s.back()), m);
      m = O::Mul(m, ten);
      if (O::Cmp(x, O::Mul(O::Of(s.front()), m)) <= 0) return O::Wrap(previous_max);
    }
    for (auto it = s.rbegin(); it != s.rend(); ++it) {
      if (O::Cmp(O::Mul(O::Of(*it), m), x) < 0) return O::Wrap(O::Mul(O::Of(*it), m));
    }
    return O::Wrap(O::Div(O::Mul(O::Of(s.back()), m), ten));  // not reached: x > s.front() * m
  }

  static double Log2(const bson::Decimal128& x) {
    return bson::decimal::ToDouble(bson::decimal::Log(x, bson::decimal::FromInt64(2)));
  }
  // 2^exp as $pow(2, exp) gives it for a decimal exponent: a decimal.
  static Value DecimalPowerOfTwo(double exp) {
    return Value::Decimal(bson::decimal::Pow(bson::decimal::FromInt64(2),
                                             bson::decimal::FromInt64(static_cast<int64_t>(exp))));
  }

  // 2^exp as $pow(2, exp) gives it: an int or long for exp >= 0, a double below.
  static Value PowerOfTwo(int exp) {
    if (exp >= 0 && exp < 63) return Value::IntOrLong(int64_t{1} << exp);
    return Value::Double(std::exp2(exp));
  }

  const std::vector<double>* series_ = nullptr;
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

  // The input is sorted by the groupBy value through an ExternalSorter (which may spill), then
  // read back once, cutting buckets as it goes: each Next() consumes one bucket's documents.
  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const BucketAutoStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)),
            strings_(s_->ctx.collator.get()),
            in_(std::move(in)),
            sorter_(MakeSorter(*s_)) {
        for (const auto& a : s_->accumulators) keyed_state_ = keyed_state_ || a.make_for_group;
      }
      StatusWith<OptDoc> Next() override {
        if (!loaded_) {
          HG_RETURN_IF_ERROR(Load());
          loaded_ = true;
        }
        if (index_ >= s_->buckets || !peek_) return OptDoc();
        Variables vars(s_->ctx.now_millis);
        // Without accumulators whose state depends on the bucket's _id, documents are folded in
        // as they are read; otherwise the bucket's documents are held until its _id is known.
        accs_.clear();
        members_.clear();
        if (!keyed_state_) {
          for (const auto& spec : s_->accumulators) {
            HG_ASSIGN_OR_RETURN(auto acc, spec.NewState(Value()));
            accs_.push_back(std::move(acc));
          }
        }
        const auto& rounder = s_->rounder;
        Value min = peek_key_, max = peek_key_;
        // With a granularity the boundaries are contiguous and on the series: the first bucket
        // starts at its value rounded down, the others at the previous bucket's max.
        if (rounder) min = index_ == 0 ? rounder->RoundDown(min) : prev_max_;
        HG_RETURN_IF_ERROR(Take(vars));
        const bool last = index_ == s_->buckets - 1;
        for (int64_t j = 1; peek_ && (j < approx_ || last); ++j) {
          max = peek_key_;
          HG_RETURN_IF_ERROR(Take(vars));
        }
        if (rounder) {
          // Every value below the rounded-up max joins the bucket, as do values equal to its
          // max (so a max of 0, which rounds to 0, still takes all the zeros).
          Value boundary = rounder->RoundUp(max);
          while (peek_ && (Compare(peek_key_, boundary, strings_) < 0 ||
                           Compare(peek_key_, max, strings_) == 0)) {
            max = peek_key_;
            HG_RETURN_IF_ERROR(Take(vars));
          }
          max = boundary.NumberDouble() == 0 && peek_ ? rounder->RoundDown(peek_key_) : boundary;
        } else {
          // Equal values never straddle two buckets, and a bucket's max is the next bucket's
          // min (exclusive) except for the last bucket's (inclusive).
          while (peek_ && Compare(peek_key_, max, strings_) == 0) HG_RETURN_IF_ERROR(Take(vars));
          if (peek_) max = peek_key_;
        }
        prev_max_ = max;
        ++index_;
        // The bucket's _id {min, max} is also the group key of accumulators whose n depends on it.
        BsonBuilder idb;
        size_t t = idb.OpenObject("_id");
        min.AppendTo(idb, "min");
        max.AppendTo(idb, "max");
        idb.Close(t);
        const BsonObj id = idb.Obj();
        BsonBuilder out;
        out.AppendElement(id.FirstElement());
        for (size_t a = 0; a < s_->accumulators.size(); ++a) {
          const auto& spec = s_->accumulators[a];
          if (keyed_state_) {
            HG_ASSIGN_OR_RETURN(auto acc, spec.NewState(Value::FromElement(id.FirstElement())));
            for (const BsonObj& doc : members_) {
              HG_ASSIGN_OR_RETURN(Value v, spec.expr->Evaluate(doc, vars));
              HG_RETURN_IF_ERROR(acc->Process(v));
            }
            accs_.push_back(std::move(acc));
          }
          // Like $group, a missing result is null.
          Value result = accs_[a]->Finalize();
          (result.missing() ? Value::Null() : result).AppendTo(out, spec.field);
        }
        return OptDoc(out.Obj());
      }

     private:
      static ExternalSorter MakeSorter(const BucketAutoStage& s) {
        auto o = ExternalSorterOptions::ForStage(
            s.ctx, s.ctx.limits.bucket_auto,
            "Exceeded memory limit for $bucketAuto, but didn't allow external sort. Pass "
            "allowDiskUse:true to opt in.");
        return ExternalSorter(
            [strings = s.ctx.collator.get()](const BsonObj& a, const BsonObj& b) {
              return bson::CompareElementValues(a.FirstElement(), b.FirstElement(), strings);
            },
            std::move(o));
      }

      Status Load() {
        Variables vars(s_->ctx.now_millis);
        int64_t n = 0;
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
            if (std::isnan(x)) {
              return PipelineError(40259,
                                   "$bucketAuto can specify a 'granularity' with numeric "
                                   "boundaries only, but found a NaN");
            }
            const bool negative_decimal = key.type() == BsonType::kDecimal128 &&
                                          bson::decimal::IsNegative(key.element().Decimal()) &&
                                          !bson::decimal::IsZero(key.element().Decimal());
            if (x < 0 || negative_decimal) {
              return PipelineError(40260,
                                   "$bucketAuto can specify a 'granularity' with non-negative "
                                   "numbers only, but found a negative number");
            }
          }
          BsonBuilder kb;
          key.AppendTo(kb, "");
          HG_RETURN_IF_ERROR(sorter_.Add(kb.Obj(), std::move(*d)));
          ++n;
        }
        HG_RETURN_IF_ERROR(sorter_.Finish());
        approx_ = std::llround(static_cast<double>(n) / s_->buckets);
        if (approx_ < 1) approx_ = 1;
        return Advance();
      }

      // Reads the next sorted row into peek_.
      Status Advance() {
        HG_ASSIGN_OR_RETURN(peek_, sorter_.Next());
        if (peek_) peek_key_ = Value::FromElement(peek_->key.FirstElement());
        return Status::OK();
      }

      // Adds the peeked document to the current bucket and advances.
      Status Take(Variables& vars) {
        if (keyed_state_) {
          members_.push_back(std::move(peek_->doc));
        } else {
          for (size_t a = 0; a < s_->accumulators.size(); ++a) {
            HG_ASSIGN_OR_RETURN(Value v, s_->accumulators[a].expr->Evaluate(peek_->doc, vars));
            HG_RETURN_IF_ERROR(accs_[a]->Process(v));
          }
        }
        return Advance();
      }

      std::shared_ptr<const BucketAutoStage> s_;
      const bson::StringComparator* strings_;  // the aggregate's collation
      std::unique_ptr<DocumentStream> in_;
      ExternalSorter sorter_;
      bool keyed_state_ = false;
      bool loaded_ = false;
      int64_t approx_ = 1;
      int32_t index_ = 0;
      std::optional<SortRow> peek_;
      Value peek_key_;
      Value prev_max_;
      std::vector<std::unique_ptr<Accumulator>> accs_;
      std::vector<BsonObj> members_;
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
  std::optional<int32_t> buckets;
  for (const auto& f : spec.Obj()) {
    std::string_view n = f.FieldName();
    if (n == "groupBy") {
      // Stricter than $bucket: an object must be an operator, a path must name a field.
      const bool ok = f.type() == BsonType::kObject
                          ? !f.Obj().IsEmpty() && f.Obj().FirstElement().FieldName()[0] == '$'
                          : IsGroupByExpression(f) && f.Str().size() > 1;
      if (!ok) {
        return PipelineError(40239,
                             "The $bucketAuto 'groupBy' field must be defined as a $-prefixed "
                             "path or an expression object, but found: " +
                                 Value::FromElement(f).ToString() + ".");
      }
      HG_ASSIGN_OR_RETURN(s->group_by, Expression::ParseExpression(f, ctx.Expressions()));
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
      buckets = static_cast<int32_t>(d);
    } else if (n == "output") {
      if (f.type() != BsonType::kObject) {
        return PipelineError(40244,
                             "The $bucketAuto 'output' field must be an object, but found type: " +
                                 std::string(bson::TypeName(f.type())) + ".");
      }
      GroupStage g;
      g.ctx = ctx;
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
  if (!s->group_by || !buckets) {
    return PipelineError(40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified");
  }
  if (*buckets <= 0) {
    return PipelineError(40243,
                         "The $bucketAuto 'buckets' field must be greater than 0, but found: " +
                             std::to_string(*buckets));
  }
  s->buckets = *buckets;
  if (!have_output) {
    s->accumulators.push_back({"count", "$sum", Expression::MakeConstant(Value::Int(1)), {}, {}});
  }
  out->push_back(std::move(s));
  return Status::OK();
}

}  // namespace hourglass::pipeline
