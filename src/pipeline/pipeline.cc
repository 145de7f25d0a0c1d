#include "pipeline/pipeline.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "pipeline/stage.h"

namespace hourglass::pipeline {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

using StageParser = Status (*)(const BsonElement&, const PipelineContext&, StageList*);

const std::unordered_map<std::string_view, StageParser>& StageTable() {
  static const auto* table = new std::unordered_map<std::string_view, StageParser>{
      {"$match", &ParseMatchStage},
      {"$project", &ParseProjectStage},
      {"$addFields", &ParseAddFieldsStage},
      {"$set", &ParseAddFieldsStage},
      {"$unset", &ParseUnsetStage},
      {"$group", &ParseGroupStage},
      {"$sort", &ParseSortStage},
      {"$limit", &ParseLimitStage},
      {"$skip", &ParseSkipStage},
      {"$count", &ParseCountStage},
      {"$unwind", &ParseUnwindStage},
      {"$replaceRoot", &ParseReplaceRootStage},
      {"$replaceWith", &ParseReplaceRootStage},
      {"$sortByCount", &ParseSortByCountStage},
      {"$bucket", &ParseBucketStage},
      {"$facet", &ParseFacetStage},
      {"$sample", &ParseSampleStage},
      {"$documents", &ParseDocumentsStage},
      {"$setWindowFields", &ParseSetWindowFieldsStage},
      {"$densify", &ParseDensifyStage},
      {"$fill", &ParseFillStage},
      {"$lookup", &ParseLookupStage},
      {"$graphLookup", &ParseGraphLookupStage},
      {"$unionWith", &ParseUnionWithStage},
      {"$out", &ParseOutStage},
      {"$merge", &ParseMergeStage},
      {"$bucketAuto", &ParseBucketAutoStage},
      {"$redact", &ParseRedactStage},
      {"$geoNear", &ParseGeoNearStage},
  };
  return *table;
}

// Real MongoDB stages that Hourglass recognises but cannot run yet.
bool IsKnownUnsupportedStage(std::string_view name) {
  static const std::string_view kNames[] = {"$lookup",
                                            "$graphLookup",
                                            "$unionWith",
                                            "$out",
                                            "$merge",
                                            "$collStats",
                                            "$indexStats",
                                            "$search",
                                            "$searchMeta",
                                            "$redact",
                                            "$changeStream",
                                            "$listSessions",
                                            "$listLocalSessions",
                                            "$planCacheStats",
                                            "$bucketAuto",
                                            "$listSearchIndexes",
                                            "$vectorSearch",
                                            "$changeStreamSplitLargeEvent",
                                            "$shardedDataDistribution"};
  for (auto n : kNames) {
    if (n == name) return true;
  }
  return false;
}

}  // namespace

StatusWith<std::unique_ptr<Pipeline>> Pipeline::Parse(const BsonObj& stages_array,
                                                      const PipelineContext& ctx) {
  std::unique_ptr<Pipeline> p(new Pipeline());
  p->ctx_ = ctx;
  // One owned copy of the stage documents, which SourceStages() views.
  auto buffer = std::make_shared<const std::string>(stages_array.bytes());
  const BsonObj owned(buffer);
  const int count = owned.NumFields();
  int index = 0;
  for (const auto& stage_elem : owned) {
    HG_RETURN_IF_ERROR(p->ParseStage(stage_elem, index++, count));
    p->sources_.emplace_back(buffer, stage_elem.value());
  }
  CoalesceSortLimit(&p->stages_);
  return p;
}

Status Pipeline::ParseStage(const BsonElement& stage_elem, int index, int count) {
  if (stage_elem.type() != BsonType::kObject) {
    return Status(ErrorCode::kTypeMismatch,
                  "Each element of the 'pipeline' array must be an object");
  }
  BsonObj stage = stage_elem.Obj();
  if (stage.NumFields() != 1) {
    return PipelineError(40323,
                         "A pipeline stage specification object must contain exactly one field.");
  }
  BsonElement spec = stage.FirstElement();
  std::string_view name = spec.FieldName();
  const auto& table = StageTable();
  auto it = table.find(name);
  if (it == table.end()) {
    // The aggregate command turns a first $currentOp into the operations it lists.
    if (name == "$currentOp") {
      return PipelineError(40602, "$currentOp is only valid as the first stage in a pipeline");
    }
    if (IsKnownUnsupportedStage(name)) {
      return Status(ErrorCode::kCommandNotSupported, std::string(name) + " is not supported yet");
    }
    return PipelineError(40324, "Unrecognized pipeline stage name: '" + std::string(name) + "'");
  }
  if (name == "$geoNear" && index > 0) return GeoNearNotFirst();
  if (name == "$documents" && index > 0) {
    return PipelineError(40602, "$documents is only valid as the first stage in a pipeline");
  }
  HG_RETURN_IF_ERROR(it->second(spec, ctx_, &stages_));
  origins_.resize(stages_.size(), sources_.size());
  if ((name == "$out" || name == "$merge") && index + 1 < count) {
    return PipelineError(40601, std::string(name) + " can only be the final stage in the pipeline");
  }
  return Status::OK();
}

std::unique_ptr<Pipeline> Pipeline::ForFind(std::optional<query::SortPattern> sort, int64_t skip,
                                            int64_t limit, const PipelineContext& ctx) {
  std::unique_ptr<Pipeline> p(new Pipeline());
  p->ctx_ = ctx;
  if (sort) p->stages_.push_back(MakeSortStage(std::move(*sort), ctx));
  if (skip > 0) p->stages_.push_back(MakeLimitSkipStage(false, skip));
  if (limit > 0) p->stages_.push_back(MakeLimitSkipStage(true, limit));
  CoalesceSortLimit(&p->stages_);
  return p;
}

std::optional<Pipeline::LeadingMatch> Pipeline::PopLeadingMatch() {
  if (stages_.empty()) return std::nullopt;
  std::optional<LeadingMatch> out = PushableMatch(*stages_.front());
  if (!out) return std::nullopt;
  if (sources_.empty()) {
    stages_.erase(stages_.begin());
  } else {
    DropLeadingSources(1);  // a $match is one stage of its own
  }
  return out;
}

bool Pipeline::FirstStageTakesOrderedInput() {
  if (stages_.empty()) return false;
  StagePtr variant = stages_[0]->OrderedInputVariant();
  if (!variant) return false;
  stages_[0] = std::move(variant);
  return true;
}

void Pipeline::DropLeadingSources(size_t n) {
  n = std::min(n, sources_.size());
  size_t dropped = 0;
  while (dropped < origins_.size() && origins_[dropped] < n) ++dropped;
  stages_.erase(stages_.begin(), stages_.begin() + dropped);
  origins_.erase(origins_.begin(), origins_.begin() + dropped);
  for (size_t& o : origins_) o -= n;
  sources_.erase(sources_.begin(), sources_.begin() + n);
}

Status Pipeline::Prepend(const std::vector<BsonObj>& stages) {
  Pipeline front;
  front.ctx_ = ctx_;
  const int count = static_cast<int>(stages.size() + sources_.size());
  for (size_t i = 0; i < stages.size(); ++i) {
    bson::BsonBuilder holder;  // the stage document as an element, as Parse reads it
    holder.AppendObject("0", stages[i]);
    BsonObj h = holder.Obj();
    HG_RETURN_IF_ERROR(front.ParseStage(h.FirstElement(), static_cast<int>(i), count));
    front.sources_.push_back(stages[i].Owned());
  }
  for (size_t& o : origins_) o += stages.size();
  stages_.insert(stages_.begin(), front.stages_.begin(), front.stages_.end());
  origins_.insert(origins_.begin(), front.origins_.begin(), front.origins_.end());
  sources_.insert(sources_.begin(), front.sources_.begin(), front.sources_.end());
  CoalesceSortLimit(&stages_);
  return Status::OK();
}

std::unique_ptr<DocumentStream> Pipeline::Bind(std::unique_ptr<DocumentStream> source) const {
  std::unique_ptr<DocumentStream> s = std::move(source);
  for (const auto& stage : stages_) s = stage->Bind(std::move(s));
  return s;
}

StatusWith<std::vector<BsonObj>> Pipeline::RunOver(std::vector<BsonObj> docs) const {
  auto stream = Bind(std::make_unique<VectorDocumentStream>(std::move(docs)));
  return DrainStream(*stream);
}

StatusWith<std::vector<BsonObj>> DrainStream(DocumentStream& stream) {
  std::vector<BsonObj> out;
  while (true) {
    HG_ASSIGN_OR_RETURN(auto next, stream.Next());
    if (!next) break;
    out.push_back(std::move(*next));
  }
  return out;
}

}  // namespace hourglass::pipeline
