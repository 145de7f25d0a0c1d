// The server parameters that govern blocking stages' memory: allowDiskUseByDefault (whether a
// command that omits allowDiskUse may spill; true, as in MongoDB 6.0+) and the per-stage limits
// internalQueryMaxBlockingSortMemoryUsageBytes, internalDocumentSourceGroupMaxMemoryBytes,
// internalDocumentSourceSetWindowFieldsMaxMemoryBytes,
// internalDocumentSourceBucketAutoMaxMemoryBytes and internalDocumentSourceDensifyMaxMemoryBytes
// (100 MB each). All are settable at startup and at runtime and must be positive. Reads are
// thread-safe; each command takes a snapshot when it builds its PipelineContext.
#pragma once

#include <optional>
#include <string>

#include "pipeline/pipeline.h"

namespace hourglass::pipeline {

// Registers the parameters (idempotent); the server calls it before applying --setParameter.
void RegisterMemoryParameters();

// Fills ctx->limits from the parameters, ctx->allow_disk_use from `allow_disk_use` (the
// command's option; when absent, allowDiskUseByDefault) and ctx->tmp_dir.
void ApplyMemoryParameters(std::optional<bool> allow_disk_use, std::string tmp_dir,
                           PipelineContext* ctx);

}  // namespace hourglass::pipeline
