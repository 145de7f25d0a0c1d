#include "pipeline/pipeline.h"

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
                                            "$geoNear",
                                            "$search",
                                            "$searchMeta",
                                            "$redact",
                                            "$changeStream",
                                            "$currentOp",
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
  bool first = true;
  int stage_index = 0;
  for (const auto& stage_elem : stages_array) {
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
      if (IsKnownUnsupportedStage(name)) {
        return Status(ErrorCode::kCommandNotSupported, std::string(name) + " is not supported yet");
      }
      return PipelineError(40324, "Unrecognized pipeline stage name: '" + std::string(name) + "'");
    }
    if (name == "$documents" && !first) {
      return PipelineError(40602, "$documents is only valid as the first stage in a pipeline");
    }
    HG_RETURN_IF_ERROR(it->second(spec, ctx, &p->stages_));
    first = false;
    ++stage_index;
    if ((name == "$out" || name == "$merge") && stage_index < stages_array.NumFields()) {
      return PipelineError(40601,
                           std::string(name) + " can only be the final stage in the pipeline");
    }
  }
  CoalesceSortLimit(&p->stages_);
  return p;
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

std::optional<BsonObj> Pipeline::PopLeadingMatch() {
  if (stages_.empty()) return std::nullopt;
  const BsonObj* filter = PushableMatchFilter(*stages_.front());
  if (filter == nullptr) return std::nullopt;
  BsonObj out = *filter;
  stages_.erase(stages_.begin());
  return out;
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
