// libFuzzer entry point for the aggregation pipeline's parser: the target pipeline_fuzz of
// fuzz/CMakeLists.txt (-DHG_BUILD_FUZZ=ON; `make fuzz` builds and runs it). Seeds:
// fuzz/corpus/pipeline.
//
// An input is one BSON document whose "s" field holds the stages (an array, or a document whose
// values are stages); anything else is refused before the parser. Every pipeline must parse or
// give an error Status (stages that read other collections refuse without collection access);
// sanitizers flag anything else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "bson/bson.h"
#include "pipeline/pipeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hourglass;
  const std::string bytes(reinterpret_cast<const char*>(data), size);  // aligned, owned copy
  if (!bson::ValidateBson(bytes).ok()) return 0;
  const bson::BsonObj doc(bytes.data());
  bson::BsonElement stages = doc["s"];
  if (stages.type() != bson::BsonType::kArray && stages.type() != bson::BsonType::kObject) {
    return 0;
  }
  pipeline::PipelineContext ctx;
  ctx.db = "fuzz";
  (void)pipeline::Pipeline::Parse(stages.Obj(), ctx);
  return 0;
}
