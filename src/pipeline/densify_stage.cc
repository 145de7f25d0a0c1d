// $densify: fills gaps in a numeric or date field by generating documents at every step of a
// grid, within each partition.
//
// Like MongoDB the stage orders its input by the partition fields and the densified field (by
// the field alone for bounds "full"), through the external sorter (spilling with allowDiskUse),
// then streams it back. The grid starts at the
// lower bound: the explicit lower bound, the smallest value overall ("full") or the smallest
// value of the partition ("partition"); the upper bound is exclusive (the largest value seen
// for "full"/"partition"). Grid values already present in a partition are not generated again;
// documents off the grid pass through unchanged. Documents whose field is null or missing pass
// through first (they sort first). Generated documents hold only the partition fields and the
// densified field.
#include <cmath>
#include <map>

#include "bson/bson_compare.h"
#include "bson/decimal128.h"
#include "bson/field_check.h"
#include "pipeline/external_sorter.h"
#include "pipeline/stage.h"
#include "pipeline/window_bounds.h"
#include "query/path.h"

namespace hourglass::pipeline {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using OptDoc = std::optional<BsonObj>;

namespace {

// MongoDB's internalQueryMaxAllowedDensifyDocs default.
constexpr int64_t kMaxGeneratedDocs = 500'000;

Value NestedField(const BsonObj& doc, const std::vector<std::string>& path) {
  BsonObj cur = doc;
  for (size_t i = 0; i < path.size(); ++i) {
    BsonElement e = cur[path[i]];
    if (e.eoo()) return Value();
    if (i + 1 == path.size()) return Value::FromElement(e);
    if (e.type() != BsonType::kObject) return Value();
    cur = e.Obj();
  }
  return Value();
}

class DensifyStage : public Stage {
 public:
  enum class Mode { kFull, kPartition, kExplicit };
  std::vector<std::string> field;
  std::vector<std::vector<std::string>> partition_fields;
  Value step;
  std::optional<TimeUnit> unit;
  Mode mode = Mode::kFull;
  Value lower, upper;  // explicit bounds
  PipelineContext ctx;

  std::string_view name() const override { return "$densify"; }

  Value Next(const Value& v) const {
    if (unit) return Value::Date(AddTimeUnits(v.DateMillis(), *unit, step.NumberLong()));
    const bool integral = [](const Value& x) {
      return x.type() == BsonType::kInt32 || x.type() == BsonType::kInt64;
    }(v) && (step.type() == BsonType::kInt32 || step.type() == BsonType::kInt64);
    int64_t r;
    if (integral && !__builtin_add_overflow(v.NumberLong(), step.NumberLong(), &r)) {
      const bool is_long = v.type() == BsonType::kInt64 || step.type() == BsonType::kInt64;
      return is_long ? Value::Long(r) : Value::IntOrLong(r);
    }
    if (v.type() == BsonType::kDecimal128 || step.type() == BsonType::kDecimal128) {
      // $add's rule: a decimal operand makes the step in decimal.
      return Value::Decimal(bson::decimal::Add(bson::decimal::FromNumber(v.element()),
                                               bson::decimal::FromNumber(step.element())));
    }
    return Value::Double(v.NumberDouble() + step.NumberDouble());
  }

  // The input goes through an ExternalSorter keyed by {p: partition, v: value} (v alone for
  // "full"), which may spill with allowDiskUse; the sorted rows are then read back one at a
  // time, each emitting the grid values below it and itself. The bounds a partition needs (its
  // largest value, or the overall one) are gathered while the input is read.
  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const DensifyStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)),
            in_(std::move(in)),
            sorter_(MakeSorter(*s_)),
            next_(ValueLess{s_->ctx.collator.get()}),
            part_max_(ValueLess{s_->ctx.collator.get()}) {}

      StatusWith<OptDoc> Next() override {
        if (!loaded_) {
          loaded_ = true;
          HG_RETURN_IF_ERROR(Load());
        }
        while (pos_ >= out_.size()) {
          if (done_) return OptDoc();
          out_.clear();
          pos_ = 0;
          HG_RETURN_IF_ERROR(Step());
        }
        return OptDoc(std::move(out_[pos_++]));
      }

     private:
      static ExternalSorter MakeSorter(const DensifyStage& s) {
        auto o = ExternalSorterOptions::ForStage(
            s.ctx, s.ctx.limits.densify,
            "Exceeded memory limit in $densify, but did not opt in to disk use. Pass "
            "allowDiskUse:true to opt in.");
        const bool full = s.mode == Mode::kFull;
        return ExternalSorter(
            [full, strings = s.ctx.collator.get()](const BsonObj& a, const BsonObj& b) {
              if (!full) {
                // Partitions the aggregate's collation deems equal are one.
                int c = bson::CompareElementValues(a["p"], b["p"], strings);
                if (c != 0) return c;
              }
              return bson::CompareElementValues(a["v"], b["v"]);
            },
            std::move(o));
      }

      Status Load() {
        while (true) {
          HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
          if (!d) break;
          BsonObj part;
          for (const auto& path : s_->partition_fields) {
            Value pv = NestedField(*d, path);
            if (!pv.missing()) part = SetPathValue(part, path, pv);
          }
          Value value = NestedField(*d, s_->field);
          if (value.nullish()) {
            value = Value::Null();
          } else if (!value.numeric() && !value.IsDate()) {
            return PipelineError(5733201, "Densify field type must be numeric or a date");
          } else if (value.numeric() == s_->unit.has_value()) {
            return PipelineError(6053600, s_->unit ? "Encountered non-date value in collection "
                                                     "when step has a date unit."
                                                   : "Encountered date value in collection "
                                                     "when step does not have a date unit.");
          } else {
            // The largest value: of the partition, or overall for "full".
            Value& max = s_->mode == Mode::kFull ? max_ : part_max_[Value::Object(part)];
            if (max.missing() || Compare(value, max) > 0) max = value;
          }
          bson::BsonBuilder key;
          key.AppendObject("p", part);
          value.AppendTo(key, "v");
          HG_RETURN_IF_ERROR(sorter_.Add(key.Obj(), std::move(*d)));
        }
        return sorter_.Finish();
      }

      // Handles the next sorted row (or the end of the input), appending to out_.
      Status Step() {
        HG_ASSIGN_OR_RETURN(std::optional<SortRow> row, sorter_.Next());
        const bool full = s_->mode == Mode::kFull;
        if (!row) {
          done_ = true;
          if (full) {
            for (auto& [part, g] : next_) HG_RETURN_IF_ERROR(FillUpTo(part, &g, max_, max_));
          } else if (have_grid_) {
            HG_RETURN_IF_ERROR(FillUpTo(part_, &g_, limit_, limit_));
          }
          return Status::OK();
        }
        const Value part = Value::FromElement(row->key["p"]);
        const Value value = Value::FromElement(row->key["v"]);
        if (full) {
          if (!value.nullish()) {
            if (anchor_.missing()) anchor_ = value;
            auto it = next_.try_emplace(part, anchor_).first;
            HG_RETURN_IF_ERROR(FillUpTo(it->first, &it->second, value, max_));
          }
          out_.push_back(std::move(row->doc));
          return Status::OK();
        }
        if (!started_ || Compare(part, part_, s_->ctx.collator.get()) != 0) {
          if (have_grid_) HG_RETURN_IF_ERROR(FillUpTo(part_, &g_, limit_, limit_));
          started_ = true;
          part_ = part;
          have_grid_ = false;
        }
        if (!value.nullish()) {
          if (!have_grid_) {
            const bool expl = s_->mode == Mode::kExplicit;
            have_grid_ = true;
            g_ = expl ? s_->lower : value;
            limit_ = expl ? s_->upper : part_max_[part];
          }
          HG_RETURN_IF_ERROR(FillUpTo(part_, &g_, value, limit_));
        }
        out_.push_back(std::move(row->doc));
        return Status::OK();
      }

      Status Generate(const Value& partition, const Value& v) {
        if (++generated_ > kMaxGeneratedDocs) {
          return PipelineError(5897900, "Generated " + std::to_string(generated_) +
                                            " documents in $densify, which is over the limit of " +
                                            std::to_string(kMaxGeneratedDocs) +
                                            ". Increase the 'internalQueryMaxAllowedDensifyDocs' "
                                            "parameter to allow more generated documents");
        }
        out_.push_back(SetPathValue(partition.Obj().Owned(), s_->field, v));
        return Status::OK();
      }

      // Emits the grid values from *g below both `v` and `limit`, then steps past `v` when it
      // is on the grid.
      Status FillUpTo(const Value& partition, Value* g, const Value& v, const Value& limit) {
        while (Compare(*g, v) < 0 && Compare(*g, limit) < 0) {
          HG_RETURN_IF_ERROR(Generate(partition, *g));
          *g = s_->Next(*g);
        }
        if (Compare(*g, v) == 0) *g = s_->Next(*g);
        return Status::OK();
      }

      std::shared_ptr<const DensifyStage> s_;
      std::unique_ptr<DocumentStream> in_;
      ExternalSorter sorter_;
      bool loaded_ = false, done_ = false;
      int64_t generated_ = 0;
      std::vector<BsonObj> out_;  // what the last Step() produced
      size_t pos_ = 0;
      // "full": the overall largest value, the grid's anchor (the smallest value), and each
      // partition's next grid value.
      Value max_, anchor_;
      std::map<Value, Value, ValueLess> next_;
      // "partition"/explicit bounds: each partition's largest value, and the current partition
      // with its next grid value and upper limit.
      std::map<Value, Value, ValueLess> part_max_;
      bool started_ = false, have_grid_ = false;
      Value part_, g_, limit_;
    };
    return std::make_unique<Stream>(Self(this), std::move(input));
  }
};

Status CheckFieldPath(std::string_view path) {
  if (path.empty())
    return PipelineError(40352, "FieldPath cannot be constructed with empty string");
  if (path[0] == '$') {
    return PipelineError(16410, "FieldPath field names may not start with '$'.");
  }
  for (const auto& part : query::SplitPath(path)) {
    if (part.empty())
      return PipelineError(15998, "FieldPath field names may not be empty strings.");
  }
  return Status::OK();
}

Status ParseRange(const BsonElement& range, DensifyStage* s) {
  BsonElement step, unit, bounds;
  for (const auto& f : range.Obj()) {
    std::string_view n = f.FieldName();
    if (n == "step") {
      step = f;
    } else if (n == "unit") {
      if (f.type() != BsonType::kString) return bson::WrongType("$densify.range", f, "string");
      unit = f;
    } else if (n == "bounds") {
      bounds = f;
    } else {
      return bson::UnknownField("$densify.range", n);
    }
  }
  for (auto [e, name] : {std::pair{step, "step"}, std::pair{bounds, "bounds"}}) {
    if (e.eoo()) {
      return bson::MissingField("$densify.range", name);
    }
  }
  s->step = Value::FromElement(step);
  if (!s->step.numeric() || !(s->step.NumberDouble() > 0)) {
    return PipelineError(5733401,
                         "the step parameter in a range statement must be a strictly positive "
                         "numeric value");
  }
  if (!unit.eoo()) {
    const double d = s->step.NumberDouble();
    if (d != std::floor(d)) {
      return PipelineError(6586400,
                           "The step parameter in a range statement must be a whole number when "
                           "densifying a date range");
    }
    HG_ASSIGN_OR_RETURN(TimeUnit u, ParseTimeUnit(unit.Str()));
    s->unit = u;
  }
  if (bounds.type() == BsonType::kString) {
    if (bounds.Str() == "full") {
      s->mode = DensifyStage::Mode::kFull;
    } else if (bounds.Str() == "partition") {
      s->mode = DensifyStage::Mode::kPartition;
    } else {
      return PipelineError(5946802, "Bounds string must either be 'full' or 'partition'");
    }
    return Status::OK();
  }
  if (bounds.type() != BsonType::kArray) {
    return PipelineError(5733404,
                         "The bounds in a range statement must be the string 'full', "
                         "'partition', or an ascending array of two numbers or two dates");
  }
  std::vector<Value> arr = Value::FromElement(bounds).ArrayValues();
  if (arr.size() != 2) {
    return PipelineError(5733403,
                         "A bounding array in a range statement must have exactly two elements");
  }
  if (Compare(arr[0], arr[1]) > 0) {
    return PipelineError(5733402,
                         "A bounding array must be an ascending array of either two dates or two "
                         "numbers");
  }
  if (arr[0].numeric()) {
    if (s->unit) return PipelineError(5733409, "Numeric bounds may not have unit parameter");
    if (!arr[1].numeric()) {
      return PipelineError(5733406,
                           "A bounding array must contain either both dates or both numeric "
                           "types");
    }
    if (arr[0].type() != arr[1].type() || arr[0].type() != s->step.type()) {
      return PipelineError(5876900,
                           "Upper bound, lower bound, and step must all have the same type");
    }
  } else if (arr[0].IsDate()) {
    if (!arr[1].IsDate()) {
      return PipelineError(5733405,
                           "A bounding array must contain either both dates or both numeric "
                           "types");
    }
    if (!s->unit) return PipelineError(5733410, "A bounding array of dates must specify a unit");
  } else {
    return PipelineError(5946800, "Explicit bounds must be numeric or dates");
  }
  s->mode = DensifyStage::Mode::kExplicit;
  s->lower = arr[0];
  s->upper = arr[1];
  return Status::OK();
}

}  // namespace

Status ParseDensifyStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  if (spec.type() != BsonType::kObject) {
    return Status(ErrorCode::kFailedToParse,
                  "The $densify stage specification must be an object, found " +
                      std::string(bson::TypeName(spec.type())));
  }
  auto s = std::make_shared<DensifyStage>();
  s->ctx = ctx;
  BsonElement field, range;
  for (const auto& f : spec.Obj()) {
    std::string_view n = f.FieldName();
    if (n == "field") {
      if (f.type() != BsonType::kString) return bson::WrongType("$densify", f, "string");
      field = f;
    } else if (n == "partitionByFields") {
      if (f.type() != BsonType::kArray) return bson::WrongType("$densify", f, "array");
      for (const auto& m : f.Obj()) {
        if (m.type() != BsonType::kString) {
          return bson::WrongType("$densify.partitionByFields", m, "string");
        }
        HG_RETURN_IF_ERROR(CheckFieldPath(m.Str()));
        s->partition_fields.push_back(query::SplitPath(m.Str()));
      }
    } else if (n == "range") {
      if (f.type() != BsonType::kObject) return bson::WrongType("$densify", f, "object");
      range = f;
    } else {
      return bson::UnknownField("$densify", n);
    }
  }
  if (field.eoo()) {
    return bson::MissingField("$densify", "field");
  }
  if (range.eoo()) {
    return bson::MissingField("$densify", "range");
  }
  HG_RETURN_IF_ERROR(CheckFieldPath(field.Str()));
  s->field = query::SplitPath(field.Str());
  HG_RETURN_IF_ERROR(ParseRange(range, s.get()));
  if (s->mode == DensifyStage::Mode::kPartition && s->partition_fields.empty()) {
    return PipelineError(5733408,
                         "One cannot specify the bounds as 'partition' without specifying a "
                         "non-empty array of partitionByFields. You may have meant to specify "
                         "'full' bounds.");
  }
  out->push_back(std::move(s));
  return Status::OK();
}

}  // namespace hourglass::pipeline
