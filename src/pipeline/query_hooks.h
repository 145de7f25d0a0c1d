// Installs this module's expression language into the query layer (query/expression_hooks.h):
// `$expr` in filters, pipeline-style updates and expressions in find projections. Runs at static
// initialization of any program that links the $match stage; calling it again is harmless.
#pragma once

namespace hourglass::pipeline {

// Returns true (so it can initialize a static).
bool InstallQueryHooks();

}  // namespace hourglass::pipeline
