// $setWindowFields, and $fill, which MongoDB defines as a $setWindowFields ($locf/$linearFill
// outputs) followed by an $addFields ($ifNull for `value` outputs).
//
// The stage drains its input on the first Next() into an ExternalSorter ordering it by partition
// then sortBy (stable: ties keep input order; spilling with allowDiskUse), then reads it back a
// partition at a time, computing every output field with the functions of window_functions.h.
// A source that delivers its documents in that order already (a time-series read by series and
// time) takes the stage's ordered-input variant, which reads its input a partition at a time.
#include <cstring>

#include "bson/bson_compare.h"
#include "bson/field_check.h"
#include "pipeline/external_sorter.h"
#include "pipeline/stage.h"
#include "pipeline/window_functions.h"
#include "query/path.h"
#include "query/sort.h"

namespace hourglass::pipeline {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using OptDoc = std::optional<BsonObj>;

namespace {

struct WindowOutput {
  std::vector<std::string> path;
  std::unique_ptr<WindowFunction> fn;
};

class SetWindowFieldsStage : public Stage {
 public:
  ExpressionPtr partition_by;  // null: one partition
  std::optional<query::SortPattern> sort;
  WindowSortInfo sort_info;
  std::vector<WindowOutput> outputs;
  bool independent_outputs = true;  // no output path equals or prefixes another
  PipelineContext ctx;
  BsonObj spec;                // as parsed (owned): the ordered-input variant is parsed again
  bool ordered_input = false;  // the input comes ordered by partition, then sortBy

  std::string_view name() const override { return "$setWindowFields"; }

  StagePtr OrderedInputVariant() const override;

  // The input goes through an ExternalSorter keyed by {p: partition, s: sortBy key} (stable),
  // which may spill with allowDiskUse; the sorted rows are then read back one partition at a
  // time, and a partition over the limit keeps its documents in a spill file too.
  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const SetWindowFieldsStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)), in_(std::move(in)), sorter_(MakeSorter(*s_)) {}

      StatusWith<OptDoc> Next() override {
        if (!loaded_) {
          loaded_ = true;
          HG_RETURN_IF_ERROR(Load());
        }
        while (pos_ >= part_.docs.size()) {
          if (!peek_) return OptDoc();
          HG_RETURN_IF_ERROR(NextPartition());
        }
        HG_ASSIGN_OR_RETURN(BsonObj doc, part_.docs.Get(pos_));
        if (s_->independent_outputs) {
          // Every output field in one rewrite of the document.
          writes_.clear();
          for (size_t k = 0; k < s_->outputs.size(); ++k) {
            writes_.push_back({&s_->outputs[k].path, &results_[k][pos_]});
          }
          doc = SetPathValues(doc, writes_);
        } else {
          // Outputs on overlapping paths ("a" and "a.b") apply one after another.
          for (size_t k = 0; k < s_->outputs.size(); ++k) {
            doc = SetPathValue(doc, s_->outputs[k].path, results_[k][pos_]);
          }
        }
        for (auto& values : results_) values[pos_] = Value();
        ++pos_;
        return OptDoc(std::move(doc));
      }

     private:
      static ExternalSorter MakeSorter(const SetWindowFieldsStage& s) {
        auto o = ExternalSorterOptions::ForStage(
            s.ctx, s.ctx.limits.window,
            "Exceeded memory limit in $setWindowFields (" + std::to_string(s.ctx.limits.window) +
                " bytes), but did not opt in to disk use. Pass allowDiskUse:true to opt in.");
        const query::SortPattern* sort = s.sort ? &*s.sort : nullptr;
        return ExternalSorter(
            [sort, strings = s.ctx.collator.get()](const BsonObj& a, const BsonObj& b) {
              // Partitions whose keys the aggregate's collation deems equal are one.
              int c = bson::CompareElementValues(a.FirstElement(), b.FirstElement(), strings);
              if (c != 0 || sort == nullptr) return c;
              return sort->CompareKeys(a["s"].Obj(), b["s"].Obj());
            },
            std::move(o));
      }

      // The next input document with its sort key {p: partition, s: sortBy key}, or nullopt.
      StatusWith<std::optional<SortRow>> NextInput() {
        HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
        if (!d) return std::optional<SortRow>();
        Variables vars(s_->ctx.now_millis);
        Value partition = Value::Null();
        if (s_->partition_by) {
          HG_ASSIGN_OR_RETURN(Value p, s_->partition_by->Evaluate(*d, vars));
          if (p.IsArray()) {
            return PipelineError(5722400,
                                 "$setWindowFields partitionBy must not evaluate to an array");
          }
          if (!p.missing()) partition = std::move(p);
        }
        BsonBuilder key;
        partition.AppendTo(key, "p");
        if (s_->sort) key.AppendObject("s", s_->sort->ExtractKey(*d));
        return std::optional<SortRow>(SortRow{key.Obj(), std::move(*d)});
      }

      // The next row in (partition, sortBy) order.
      StatusWith<std::optional<SortRow>> NextRow() {
        if (s_->ordered_input) return NextInput();
        return sorter_.Next();
      }

      Status Load() {
        if (!s_->ordered_input) {
          while (true) {
            HG_ASSIGN_OR_RETURN(std::optional<SortRow> row, NextInput());
            if (!row) break;
            HG_RETURN_IF_ERROR(sorter_.Add(std::move(row->key), std::move(row->doc)));
          }
          HG_RETURN_IF_ERROR(sorter_.Finish());
        }
        HG_ASSIGN_OR_RETURN(peek_, NextRow());
        return Status::OK();
      }

      // Reads the rows of the next partition and computes its output values. A partition over
      // the memory limit moves its documents to a spill file (with allowDiskUse); the per-document
      // values the window functions keep (inputs, sortBy values, results) stay in memory.
      Status NextPartition() {
        Variables vars(s_->ctx.now_millis);
        const BsonObj first_key = peek_->key;
        part_ = WindowPartition();
        pos_ = 0;
        int64_t bytes = 0;
        // Rows of one partition mostly carry the same bytes (the metaField of one series): those
        // need no comparison by value.
        auto same_partition = [&first_key, strings = s_->ctx.collator.get()](const BsonObj& key) {
          const BsonElement a = key.FirstElement(), b = first_key.FirstElement();
          return (a.size() == b.size() && std::memcmp(a.raw(), b.raw(), a.size()) == 0) ||
                 bson::CompareElementValues(a, b, strings) == 0;
        };
        while (peek_ && same_partition(peek_->key)) {
          Value sort_value = s_->sort_info.present
                                 ? EvaluateFieldPath(peek_->doc, s_->sort_info.first_path)
                                 : Value();
          if (!part_.docs.spilled()) {
            bytes += static_cast<int64_t>(peek_->doc.size()) + peek_->key.size() + 64;
            if (bytes > s_->ctx.limits.window) {
              if (!s_->ctx.allow_disk_use || s_->ctx.tmp_dir.empty()) {
                return Status(ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed,
                              "Exceeded memory limit in $setWindowFields (" +
                                  std::to_string(s_->ctx.limits.window) +
                                  " bytes), but did not opt in to disk use. Pass "
                                  "allowDiskUse:true to opt in.");
              }
              HG_RETURN_IF_ERROR(part_.docs.Spill(s_->ctx.tmp_dir));
            }
          }
          HG_RETURN_IF_ERROR(part_.docs.Add(std::move(peek_->doc)));
          part_.sort_values.push_back(std::move(sort_value));
          HG_ASSIGN_OR_RETURN(peek_, NextRow());
        }
        HG_RETURN_IF_ERROR(part_.docs.Seal());
        results_.assign(s_->outputs.size(), {});
        for (size_t k = 0; k < s_->outputs.size(); ++k) {
          HG_RETURN_IF_ERROR(s_->outputs[k].fn->Compute(part_, vars, &results_[k]));
        }
        return Status::OK();
      }

      std::shared_ptr<const SetWindowFieldsStage> s_;
      std::unique_ptr<DocumentStream> in_;
      ExternalSorter sorter_;
      bool loaded_ = false;
      std::optional<SortRow> peek_;
      // The partition being output, its output values, and the next position to output.
      WindowPartition part_;
      std::vector<std::vector<Value>> results_;
      size_t pos_ = 0;
      std::vector<PathWrite> writes_;  // reused for each document
    };
    return std::make_unique<Stream>(Self(this), std::move(input));
  }
};

Status CheckOutputFieldName(std::string_view name) {
  if (name.empty())
    return PipelineError(40352, "FieldPath cannot be constructed with empty string");
  if (name[0] == '$') {
    return PipelineError(16410,
                         "FieldPath field names may not start with '$'. Consider using "
                         "$getField or $setField.");
  }
  for (const auto& part : query::SplitPath(name)) {
    if (part.empty())
      return PipelineError(15998, "FieldPath field names may not be empty strings.");
  }
  return Status::OK();
}

}  // namespace

Status ParseSetWindowFieldsStage(const BsonElement& spec, const PipelineContext& ctx,
                                 StageList* out) {
  if (spec.type() != BsonType::kObject) {
    return Status(ErrorCode::kFailedToParse,
                  "the $setWindowFields stage specification must be an object, found " +
                      std::string(bson::TypeName(spec.type())));
  }
  auto s = std::make_shared<SetWindowFieldsStage>();
  s->ctx = ctx;
  BsonElement output;
  for (const auto& f : spec.Obj()) {
    std::string_view n = f.FieldName();
    if (n == "partitionBy") {
      HG_ASSIGN_OR_RETURN(s->partition_by, Expression::ParseExpression(f, ctx.Expressions()));
    } else if (n == "sortBy") {
      if (f.type() != BsonType::kObject) {
        return bson::WrongType("$setWindowFields", f, "object");
      }
      HG_ASSIGN_OR_RETURN(auto pattern, query::SortPattern::Parse(f.Obj().Owned()));
      pattern.SetCollator(ctx.collator);
      if (!pattern.IsEmpty()) {
        s->sort_info.present = true;
        s->sort_info.num_keys = pattern.NumKeys();
        BsonElement first = f.Obj().FirstElement();
        s->sort_info.first_path = query::SplitPath(first.FieldName());
        s->sort_info.ascending = first.NumberDouble() > 0;
        s->sort = std::move(pattern);
      }
    } else if (n == "output") {
      if (f.type() != BsonType::kObject) {
        return bson::WrongType("$setWindowFields", f, "object");
      }
      output = f;
    } else {
      return bson::UnknownField("$setWindowFields", n);
    }
  }
  if (output.eoo()) {
    return bson::MissingField("$setWindowFields", "output");
  }
  for (const auto& f : output.Obj()) {
    HG_RETURN_IF_ERROR(CheckOutputFieldName(f.FieldName()));
    if (f.type() != BsonType::kObject) {
      return Status(ErrorCode::kFailedToParse,
                    "The field '" + std::string(f.FieldName()) + "' must be an object");
    }
    HG_ASSIGN_OR_RETURN(auto fn, ParseWindowFunction(f.Obj(), s->sort_info, ctx.Expressions()));
    s->outputs.push_back({query::SplitPath(f.FieldName()), std::move(fn)});
  }
  std::vector<const std::vector<std::string>*> paths;
  for (const WindowOutput& o : s->outputs) paths.push_back(&o.path);
  s->independent_outputs = PathsAreIndependent(paths);
  s->spec = spec.Obj().Owned();
  out->push_back(std::move(s));
  return Status::OK();
}

namespace {
StagePtr SetWindowFieldsStage::OrderedInputVariant() const {
  BsonBuilder b;
  b.AppendObject("$setWindowFields", spec);
  BsonObj doc = b.Obj();
  StageList parsed;
  if (!ParseSetWindowFieldsStage(doc.FirstElement(), ctx, &parsed).ok() || parsed.size() != 1) {
    return nullptr;  // it parsed once: not reached
  }
  auto variant = std::const_pointer_cast<Stage>(parsed[0]);
  static_cast<SetWindowFieldsStage&>(*variant).ordered_input = true;
  return variant;
}
}  // namespace

Status ParseFillStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  if (spec.type() != BsonType::kObject) {
    return Status(ErrorCode::kFailedToParse,
                  "The $fill stage specification must be an object, found " +
                      std::string(bson::TypeName(spec.type())));
  }
  BsonElement sort_by, partition_by, partition_by_fields, output;
  for (const auto& f : spec.Obj()) {
    std::string_view n = f.FieldName();
    auto wrong_type = [&](std::string_view expected) {
      return bson::WrongType("$fill", f, expected);
    };
    if (n == "sortBy") {
      if (f.type() != BsonType::kObject) return wrong_type("object");
      sort_by = f;
    } else if (n == "partitionBy") {
      if (f.type() != BsonType::kObject && f.type() != BsonType::kString) {
        return wrong_type("string, object");
      }
      partition_by = f;
    } else if (n == "partitionByFields") {
      if (f.type() != BsonType::kArray) return wrong_type("array");
      for (const auto& m : f.Obj()) {
        if (m.type() != BsonType::kString) {
          return Status(ErrorCode::kTypeMismatch,
                        "BSON field '$fill.partitionByFields' must be an array of strings");
        }
      }
      partition_by_fields = f;
    } else if (n == "output") {
      if (f.type() != BsonType::kObject) return wrong_type("object");
      output = f;
    } else {
      return bson::UnknownField("$fill", n);
    }
  }
  if (output.eoo()) {
    return bson::MissingField("$fill", "output");
  }
  if (output.Obj().IsEmpty()) {
    return PipelineError(6050203,
                         "The output field in '$fill' must contain an object with at least one "
                         "element");
  }
  BsonBuilder window_output, add_fields;
  bool need_window = false;
  for (const auto& f : output.Obj()) {
    std::string field(f.FieldName());
    if (f.type() != BsonType::kObject) {
      return PipelineError(6050200,
                           "Each fill output specification must be an object with exactly one "
                           "field");
    }
    BsonElement method, value;
    for (const auto& o : f.Obj()) {
      if (o.FieldName() == "method") {
        if (o.type() != BsonType::kString) {
          return Status(ErrorCode::kTypeMismatch,
                        "BSON field '$fill.method' is the wrong type, expected type 'string'");
        }
        method = o;
      } else if (o.FieldName() == "value") {
        value = o;
      } else {
        return bson::UnknownField("$fill", o.FieldName());
      }
    }
    if (!method.eoo()) {
      if (!value.eoo()) {
        return PipelineError(6050201,
                             "Each fill output specification must have exactly one of 'method' "
                             "or 'value' fields, not both");
      }
      if (method.Str() != "locf" && method.Str() != "linear") {
        return PipelineError(6050202, "Method must be either locf or linear");
      }
      size_t t = window_output.OpenObject(field);
      window_output.AppendString(method.Str() == "locf" ? "$locf" : "$linearFill", "$" + field);
      window_output.Close(t);
      need_window = true;
    }
    if (!value.eoo()) {
      size_t t = add_fields.OpenObject(field);
      size_t a = add_fields.OpenArray("$ifNull");
      add_fields.AppendString("0", "$" + field);
      add_fields.AppendElementAs(value, "1");
      add_fields.Close(a);
      add_fields.Close(t);
    }
  }
  if (!partition_by.eoo() && !partition_by_fields.eoo()) {
    return PipelineError(6050204,
                         "Maximum one of 'partitionBy' and 'partitionByFields can be specified "
                         "in '$fill'");
  }
  if (need_window) {
    BsonBuilder b;
    size_t top = b.OpenObject("$setWindowFields");
    if (!sort_by.eoo()) b.AppendElement(sort_by);
    if (!partition_by.eoo()) b.AppendElement(partition_by);
    if (!partition_by_fields.eoo()) {
      size_t t = b.OpenObject("partitionBy");
      for (const auto& m : partition_by_fields.Obj()) {
        b.AppendString(m.Str(), "$" + std::string(m.Str()));
      }
      b.Close(t);
    }
    b.AppendObject("output", window_output.Obj());
    b.Close(top);
    BsonObj swf = b.Obj();
    HG_RETURN_IF_ERROR(ParseSetWindowFieldsStage(swf.FirstElement(), ctx, out));
  }
  BsonObj add = add_fields.Obj();
  if (!add.IsEmpty()) {
    BsonBuilder b;
    b.AppendObject("$addFields", add);
    BsonObj stage = b.Obj();
    HG_RETURN_IF_ERROR(ParseAddFieldsStage(stage.FirstElement(), ctx, out));
  }
  return Status::OK();
}

}  // namespace hourglass::pipeline
