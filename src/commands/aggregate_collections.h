// The command layer's side of pipeline::CollectionAccess: how $lookup, $graphLookup and
// $unionWith read other collections (the same read path as find: collection scans, and the
// unpacking scan for time-series collections) and how $out and $merge write them (the catalog
// and the insert paths of the insert command and of time-series inserts).
//
// An instance belongs to one aggregate command and the cursor that continues it; it keeps only
// the process-wide ServiceContext, so it may outlive the command. Not thread-safe (a cursor is
// used by one thread at a time). Every call blocks on storage.
#pragma once

#include <memory>

#include "commands/command.h"
#include "pipeline/pipeline.h"

namespace hourglass::commands {

// Access to the collections of `service`'s catalog.
std::shared_ptr<pipeline::CollectionAccess> MakeCollectionAccess(ServiceContext& service);

// True if the aggregate `stages` end with $out or $merge: such a pipeline writes while its first
// batch is pulled, so the command runs it at once whatever the batch size (as MongoDB does).
bool PipelineWritesOutput(const bson::BsonObj& stages);

}  // namespace hourglass::commands
