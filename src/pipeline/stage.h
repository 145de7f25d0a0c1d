// Internal to src/pipeline: the stage interface and the per-stage parsers.
//
// A Stage is the parsed, immutable form of one pipeline stage. Bind() returns the stream that
// runs it over `input`; the stream keeps the Stage alive through shared_from_this(), so stages
// are always created with std::make_shared.
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "pipeline/errors.h"
#include "pipeline/expression.h"
#include "pipeline/pipeline.h"

namespace hourglass::pipeline {

class Stage : public std::enable_shared_from_this<Stage> {
 public:
  virtual ~Stage() = default;
  virtual std::string_view name() const = 0;
  virtual std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const = 0;
  // The same stage for an input that comes in the order the stage would sort it into itself
  // ($setWindowFields: by partition, then sortBy), which then need not sort; null when the stage
  // has no such variant.
  virtual std::shared_ptr<const Stage> OrderedInputVariant() const { return nullptr; }
};

using StagePtr = std::shared_ptr<const Stage>;

// The stage as its concrete type, shared: a stream holds it so the stage outlives the Pipeline.
template <typename StageT>
std::shared_ptr<const StageT> Self(const StageT* s) {
  return std::static_pointer_cast<const StageT>(s->shared_from_this());
}

// A stream applying a stage's per-document function `StatusWith<BsonObj> Apply(doc) const`.
template <typename StageT>
class MapStream : public DocumentStream {
 public:
  MapStream(std::shared_ptr<const StageT> s, std::unique_ptr<DocumentStream> in)
      : s_(std::move(s)), in_(std::move(in)) {}
  StatusWith<std::optional<bson::BsonObj>> Next() override {
    HG_ASSIGN_OR_RETURN(std::optional<bson::BsonObj> d, in_->Next());
    if (!d) return d;
    HG_ASSIGN_OR_RETURN(bson::BsonObj out, s_->Apply(*d));
    return std::optional<bson::BsonObj>(std::move(out));
  }

 protected:
  std::shared_ptr<const StageT> s_;
  std::unique_ptr<DocumentStream> in_;
};
using StageList = std::vector<StagePtr>;

// Each parser receives the stage's element ({"$name": spec}) and appends one or more stages
// (e.g. $sortByCount becomes $group + $sort).
Status ParseMatchStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseGeoNearStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseLimitStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseSkipStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseCountStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseSortStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseUnwindStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseReplaceRootStage(const bson::BsonElement& spec, const PipelineContext& ctx,
                             StageList* out);
Status ParseSampleStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseDocumentsStage(const bson::BsonElement& spec, const PipelineContext& ctx,
                           StageList* out);
Status ParseFacetStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseProjectStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseAddFieldsStage(const bson::BsonElement& spec, const PipelineContext& ctx,
                           StageList* out);
Status ParseUnsetStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseGroupStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseSortByCountStage(const bson::BsonElement& spec, const PipelineContext& ctx,
                             StageList* out);
Status ParseBucketStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseSetWindowFieldsStage(const bson::BsonElement& spec, const PipelineContext& ctx,
                                 StageList* out);
Status ParseFillStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseDensifyStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseBucketAutoStage(const bson::BsonElement& spec, const PipelineContext& ctx,
                            StageList* out);
Status ParseRedactStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
// Stages over other collections (lookup_stages.cc, output_stages.cc): they reach them through
// PipelineContext::collections.
Status ParseLookupStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseGraphLookupStage(const bson::BsonElement& spec, const PipelineContext& ctx,
                             StageList* out);
Status ParseUnionWithStage(const bson::BsonElement& spec, const PipelineContext& ctx,
                           StageList* out);
Status ParseOutStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);
Status ParseMergeStage(const bson::BsonElement& spec, const PipelineContext& ctx, StageList* out);

// Gives each $sort followed by $limit (possibly after $skip) the number of documents it must
// produce, so it keeps only those (top-k) instead of sorting and holding everything.
void CoalesceSortLimit(StageList* stages);

// The typed forms of $sort, $limit and $skip (what their parsers build), for pipelines built
// without BSON (Pipeline::ForFind).
StagePtr MakeSortStage(query::SortPattern pattern, const PipelineContext& ctx);
StagePtr MakeLimitSkipStage(bool is_limit, int64_t n);

// The `let` of $lookup and $merge: expressions evaluated over each input document (with the
// enclosing variables in scope) whose values the stage's sub-pipeline reads as "$$name". The
// sub-pipeline is parsed once with SubContext(); Bind() sets the values before each run, so one
// StageLet serves one run at a time (a stage's streams run their sub-pipeline to completion
// for each input document).
class StageLet {
 public:
  // Parses `let` (each name must be a user variable name: FailedToParse) in `outer`'s scope.
  static StatusWith<std::shared_ptr<const StageLet>> Parse(const bson::BsonObj& let,
                                                           const PipelineContext& outer);
  // `outer` with these variables added (shadowing outer ones of the same name).
  PipelineContext SubContext(const PipelineContext& outer) const;
  // Evaluates the expressions over `doc` and makes the results the variables' values.
  Status Bind(const bson::BsonObj& doc, int64_t now_millis) const;
  // The names in order, and the value Bind() last gave the i-th.
  std::vector<std::string> names() const;
  Value value(size_t i) const;

 private:
  std::shared_ptr<const query::LetVariables> outer_;
  std::vector<std::pair<std::string, ExpressionPtr>> exprs_;
  std::shared_ptr<query::LetVariables> vars_;  // outer_'s names, then these
};

// The filter of a $match stage and its parse, or nullopt if `stage` is not a pushable $match.
std::optional<Pipeline::LeadingMatch> PushableMatch(const Stage& stage);

// Writes `v` at dotted `path` inside `doc` (creating sub-documents, replacing non-objects),
// keeping the field's position when it exists; a missing `v` removes the field.
bson::BsonObj SetPathValue(const bson::BsonObj& doc, const std::vector<std::string>& path,
                           const Value& v);

// One write of SetPathValues: `value` at `path`.
struct PathWrite {
  const std::vector<std::string>* path;
  const Value* value;
};
// The same as SetPathValue for each write in order, in one pass over `doc` and each
// sub-document the writes reach. Needs independent paths (none equal to or a prefix of another:
// PathsAreIndependent); new fields come in the order of the writes that create them.
bson::BsonObj SetPathValues(const bson::BsonObj& doc, const std::vector<PathWrite>& writes);
// Whether no path equals or is a prefix of another (SetPathValues' precondition).
bool PathsAreIndependent(const std::vector<const std::vector<std::string>*>& paths);

}  // namespace hourglass::pipeline
