// Resolving a namespace for the query engine: a regular collection, or a time-series collection
// (its user-facing entry, parsed options and bucket collection), looked up once per command.
//
// Thread-safety: the catalog and the bucket catalog are thread-safe; the returned handles are
// immutable snapshots (DDL installs new ones).
#pragma once

#include <optional>

#include "base/status.h"
#include "catalog/catalog.h"
#include "exec/read_context.h"
#include "timeseries/bucket_catalog.h"

namespace hourglass::exec {

// "db.X" → "db.system.buckets.X".
catalog::NamespaceString BucketsNamespace(const catalog::NamespaceString& nss);

// The time-series collection `nss` names (the entry of type "timeseries" and its bucket
// collection); nullopt if `nss` is not a time-series collection. NamespaceNotFound (26) if the
// bucket collection is missing (dropped directly).
StatusWith<std::optional<timeseries::TimeseriesCollection>> LookupTimeseries(
    const ReadContext& rctx, const catalog::NamespaceString& nss);

}  // namespace hourglass::exec
