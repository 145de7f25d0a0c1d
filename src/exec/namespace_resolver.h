// Resolving a namespace for the query engine: a regular collection, or a time-series collection
// (its user-facing entry, parsed options and bucket collection), looked up once per command.
//
// Thread-safety: the catalog and the bucket catalog are thread-safe; the returned handles are
// immutable snapshots (DDL installs new ones).
#pragma once

#include <optional>
#include <vector>

#include "base/status.h"
#include "catalog/catalog.h"
#include "exec/read_context.h"
#include "timeseries/bucket_catalog.h"

namespace hourglass::exec {

// What a namespace names, looked up once per command: the catalog entry's handle (a collection,
// a view or a time-series view) and, for a time-series view, its parsed options and bucket
// collection.
struct ResolvedNamespace {
  catalog::NamespaceString nss;
  std::shared_ptr<catalog::Collection> collection;  // nullptr: nothing by that name
  // A time-series view whose bucket collection exists.
  std::optional<timeseries::TimeseriesCollection> timeseries;
  // A time-series view whose bucket collection is gone (dropped directly): it reads as empty.
  bool buckets_missing = false;
};

// Resolves `nss`. A missing namespace is not an error (collection stays null), nor is a
// time-series view without its bucket collection (buckets_missing; RequireBuckets makes it one
// where a command needs the buckets); BadValue if a time-series view's stored options do not
// parse.
StatusWith<ResolvedNamespace> Resolve(const ReadContext& rctx, const catalog::NamespaceString& nss);

// A view (type "view") resolved to what it reads: the first namespace down its chain that is not
// a view (a collection, a time-series collection, or nothing by that name, which reads as empty)
// and the pipelines of the views on the way, innermost first, joined into one.
struct ResolvedView {
  catalog::NamespaceString base;
  std::vector<bson::BsonObj> pipeline;  // each a stage
  bson::BsonObj collation;              // the view's collation (normalized spec), or empty: simple
};

// MongoDB's limit on the chain of views under a read (views on views).
inline constexpr int kMaxViewDepth = 20;

// nullopt if `nss` is not a view. ViewDepthLimitExceeded (149) past kMaxViewDepth views (a cycle
// left in the catalog ends there too).
StatusWith<std::optional<ResolvedView>> ResolveView(const catalog::Catalog& catalog,
                                                    const catalog::NamespaceString& nss);

// "db.X" → "db.system.buckets.X".
catalog::NamespaceString BucketsNamespace(const catalog::NamespaceString& nss);

// NamespaceNotFound (26) if `r` is a time-series view whose bucket collection is missing (dropped
// directly), for the commands that cannot treat such a view as empty; OK otherwise.
Status RequireBuckets(const ResolvedNamespace& r);

}  // namespace hourglass::exec
