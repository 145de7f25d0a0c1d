// What the commands share about time-series collections: finding the bucket collection behind a
// time-series namespace and reading its options from the catalog.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "base/status.h"
#include "catalog/catalog.h"
#include "commands/command.h"
#include "timeseries/bucket_catalog.h"

namespace hourglass::commands {

// "db.X" → "db.system.buckets.X".
catalog::NamespaceString BucketsNamespace(const catalog::NamespaceString& nss);

// The time-series collection `nss` names (the entry of type "timeseries" and its bucket
// collection); nullopt if `nss` is not a time-series collection. NamespaceNotFound (26) if the
// bucket collection is missing (dropped directly).
StatusWith<std::optional<timeseries::TimeseriesCollection>> LookupTimeseries(
    const ServiceContext& service, const catalog::NamespaceString& nss);

// The indexes of a time-series collection's buckets as the user sees them (spec §7.2, listIndexes
// on X): {user spec, bucket index} in creation order; indexes whose key has no user meaning are
// left out. The pointers borrow ts.buckets.
std::vector<std::pair<bson::BsonObj, const catalog::IndexEntry*>> UserViewOfIndexes(
    const timeseries::TimeseriesCollection& ts);

// The collection-level TTL of a time-series entry's options, if any.
std::optional<int64_t> TimeseriesExpireAfterSeconds(const bson::BsonObj& options);

}  // namespace hourglass::commands
