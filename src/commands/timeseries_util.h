// What the commands share about time-series collections: the user view of their indexes and
// their TTL (finding the bucket collection is exec/namespace_resolver.h).
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "base/status.h"
#include "catalog/catalog.h"
#include "commands/command.h"
#include "exec/namespace_resolver.h"
#include "timeseries/bucket_catalog.h"

namespace hourglass::commands {

// The indexes of a time-series collection's buckets as the user sees them (spec §7.2, listIndexes
// on X): {user spec, bucket index} in creation order; indexes whose key has no user meaning are
// left out. The pointers borrow ts.buckets.
std::vector<std::pair<bson::BsonObj, const catalog::IndexEntry*>> UserViewOfIndexes(
    const timeseries::TimeseriesCollection& ts);

// The collection-level TTL of a time-series entry's options, if any.
std::optional<int64_t> TimeseriesExpireAfterSeconds(const bson::BsonObj& options);

}  // namespace hourglass::commands
