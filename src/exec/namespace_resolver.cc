#include "exec/namespace_resolver.h"

namespace hourglass::exec {

catalog::NamespaceString BucketsNamespace(const catalog::NamespaceString& nss) {
  return {nss.db, "system.buckets." + nss.coll};
}

StatusWith<std::optional<timeseries::TimeseriesCollection>> LookupTimeseries(
    const ReadContext& rctx, const catalog::NamespaceString& nss) {
  using Result = std::optional<timeseries::TimeseriesCollection>;
  auto view = rctx.catalog->Lookup(nss);
  if (!view || view->entry().type != "timeseries") return Result();
  auto buckets = rctx.catalog->Lookup(BucketsNamespace(nss));
  if (!buckets || buckets->IsView()) {
    return Status(ErrorCode::kNamespaceNotFound,
                  "Time-series buckets collection " + BucketsNamespace(nss).ns() + " is missing");
  }
  HG_ASSIGN_OR_RETURN(auto options, timeseries::TimeseriesOptionsOf(*view));
  std::string uuid = buckets->entry().uuid;
  auto latest = rctx.bucket_catalog ? rctx.bucket_catalog->Latest(uuid) : nullptr;
  return Result(timeseries::TimeseriesCollection{std::move(uuid), *options, std::move(buckets),
                                                 std::move(latest)});
}

}  // namespace hourglass::exec
