#include "pipeline/memory_parameters.h"

#include "base/server_parameters.h"

namespace hourglass::pipeline {

namespace {

struct Params {
  ServerParameter* allow_disk_use_by_default;
  ServerParameter* sort;
  ServerParameter* group;
  ServerParameter* window;
  ServerParameter* bucket_auto;
  ServerParameter* densify;
};

ServerParameter* RegisterLimit(const char* name) {
  auto& reg = ServerParameterRegistry::Get();
  if (ServerParameter* p = reg.Find(name)) return p;
  return reg.Register(
      name, int64_t{MemoryLimits::kDefault}, true, true, [name](const ParameterValue& v) {
        int64_t n =
            std::holds_alternative<int32_t>(v) ? std::get<int32_t>(v) : std::get<int64_t>(v);
        if (n <= 0) {
          return Status(ErrorCode::kBadValue, std::string("Invalid value for parameter ") + name +
                                                  ": must be greater than 0");
        }
        return Status::OK();
      });
}

const Params& GetParams() {
  static const Params p = [] {
    auto& reg = ServerParameterRegistry::Get();
    Params q;
    q.allow_disk_use_by_default = reg.Find("allowDiskUseByDefault");
    if (q.allow_disk_use_by_default == nullptr) {
      q.allow_disk_use_by_default = reg.Register("allowDiskUseByDefault", true, true, true);
    }
    q.sort = RegisterLimit("internalQueryMaxBlockingSortMemoryUsageBytes");
    q.group = RegisterLimit("internalDocumentSourceGroupMaxMemoryBytes");
    q.window = RegisterLimit("internalDocumentSourceSetWindowFieldsMaxMemoryBytes");
    q.bucket_auto = RegisterLimit("internalDocumentSourceBucketAutoMaxMemoryBytes");
    q.densify = RegisterLimit("internalDocumentSourceDensifyMaxMemoryBytes");
    return q;
  }();
  return p;
}

}  // namespace

void RegisterMemoryParameters() { (void)GetParams(); }

void ApplyMemoryParameters(std::optional<bool> allow_disk_use, std::string tmp_dir,
                           PipelineContext* ctx) {
  const Params& p = GetParams();
  ctx->allow_disk_use = allow_disk_use.value_or(p.allow_disk_use_by_default->GetBool());
  ctx->tmp_dir = std::move(tmp_dir);
  ctx->limits.sort = p.sort->GetInt();
  ctx->limits.group = p.group->GetInt();
  ctx->limits.window = p.window->GetInt();
  ctx->limits.bucket_auto = p.bucket_auto->GetInt();
  ctx->limits.densify = p.densify->GetInt();
}

}  // namespace hourglass::pipeline
