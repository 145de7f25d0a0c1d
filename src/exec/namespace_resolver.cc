#include "exec/namespace_resolver.h"

namespace hourglass::exec {

catalog::NamespaceString BucketsNamespace(const catalog::NamespaceString& nss) {
  return {nss.db, "system.buckets." + nss.coll};
}

StatusWith<ResolvedNamespace> Resolve(const ReadContext& rctx,
                                      const catalog::NamespaceString& nss) {
  ResolvedNamespace r;
  r.nss = nss;
  r.collection = rctx.catalog->Lookup(nss);
  if (!r.collection || r.collection->entry().type != "timeseries") return r;
  auto buckets = rctx.catalog->Lookup(BucketsNamespace(nss));
  if (!buckets || buckets->IsView()) {
    r.buckets_missing = true;
    return r;
  }
  HG_ASSIGN_OR_RETURN(auto options, timeseries::TimeseriesOptionsOf(*r.collection));
  std::string uuid = buckets->entry().uuid;
  auto latest = rctx.bucket_catalog ? rctx.bucket_catalog->Latest(uuid) : nullptr;
  r.timeseries = timeseries::TimeseriesCollection{std::move(uuid), *options, std::move(buckets),
                                                  std::move(latest)};
  return r;
}

Status RequireBuckets(const ResolvedNamespace& r) {
  if (!r.buckets_missing) return Status::OK();
  return Status(ErrorCode::kNamespaceNotFound,
                "Time-series buckets collection " + BucketsNamespace(r.nss).ns() + " is missing");
}

}  // namespace hourglass::exec
