#include "commands/timeseries_util.h"

#include "timeseries/index_conversion.h"

namespace hourglass::commands {

catalog::NamespaceString BucketsNamespace(const catalog::NamespaceString& nss) {
  return {nss.db, "system.buckets." + nss.coll};
}

StatusWith<std::optional<timeseries::TimeseriesCollection>> LookupTimeseries(
    const ServiceContext& service, const catalog::NamespaceString& nss) {
  using Result = std::optional<timeseries::TimeseriesCollection>;
  auto view = service.catalog->Lookup(nss);
  if (!view || view->entry().type != "timeseries") return Result();
  auto buckets = service.catalog->Lookup(BucketsNamespace(nss));
  if (!buckets || buckets->IsView()) {
    return Status(ErrorCode::kNamespaceNotFound,
                  "Time-series buckets collection " + BucketsNamespace(nss).ns() + " is missing");
  }
  HG_ASSIGN_OR_RETURN(auto options, timeseries::TimeseriesOptions::FromBson(
                                        view->entry().options["timeseries"].Obj()));
  std::string uuid = buckets->entry().uuid;
  auto latest = service.bucket_catalog ? service.bucket_catalog->Latest(uuid) : nullptr;
  return Result(timeseries::TimeseriesCollection{std::move(uuid), std::move(options),
                                                 std::move(buckets), std::move(latest)});
}

std::optional<int64_t> TimeseriesExpireAfterSeconds(const bson::BsonObj& options) {
  bson::BsonElement e = options["expireAfterSeconds"];
  if (e.eoo() || !e.IsNumber()) return std::nullopt;
  return e.NumberLong();
}

}  // namespace hourglass::commands

namespace hourglass::commands {

std::vector<std::pair<bson::BsonObj, const catalog::IndexEntry*>> UserViewOfIndexes(
    const timeseries::TimeseriesCollection& ts) {
  std::vector<std::pair<bson::BsonObj, const catalog::IndexEntry*>> out;
  for (const auto& idx : ts.buckets->entry().indexes) {
    if (!idx.ready) continue;
    if (auto user = timeseries::UserIndexSpecFromBucketSpec(idx.spec, ts.options)) {
      out.emplace_back(std::move(*user), &idx);
    }
  }
  return out;
}

}  // namespace hourglass::commands
