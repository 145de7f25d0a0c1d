// What the commands share about time-series collections: finding the bucket collection behind a
// time-series namespace and reading its options from the catalog.
#pragma once

#include <optional>

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

// The collection-level TTL of a time-series entry's options, if any.
std::optional<int64_t> TimeseriesExpireAfterSeconds(const bson::BsonObj& options);

}  // namespace hourglass::commands
