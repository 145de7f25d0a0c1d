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

StatusWith<std::optional<ResolvedView>> ResolveView(const catalog::Catalog& catalog,
                                                    const catalog::NamespaceString& nss) {
  std::shared_ptr<catalog::Collection> entry = catalog.Lookup(nss);
  if (!entry || entry->entry().type != "view") return std::optional<ResolvedView>();
  ResolvedView v;
  if (bson::BsonElement c = entry->entry().options["collation"];
      c.type() == bson::BsonType::kObject) {
    v.collation = c.Obj().Owned();
  }
  // The views walked, outermost first; their handles keep their options alive until the stages
  // are copied out, innermost first.
  std::vector<std::shared_ptr<catalog::Collection>> chain;
  for (; entry && entry->entry().type == "view"; entry = catalog.Lookup(v.base)) {
    if (chain.size() == static_cast<size_t>(kMaxViewDepth)) {
      return Status(ErrorCode::kViewDepthLimitExceeded,
                    "View depth too deep or view cycle detected. Maximum depth is " +
                        std::to_string(kMaxViewDepth));
    }
    v.base = {nss.db, std::string(entry->entry().options["viewOn"].Str())};
    chain.push_back(std::move(entry));
  }
  for (auto view = chain.rbegin(); view != chain.rend(); ++view) {
    for (bson::BsonElement stage : (*view)->entry().options["pipeline"].Obj()) {
      v.pipeline.push_back(stage.Obj().Owned());
    }
  }
  return std::optional<ResolvedView>(std::move(v));
}

Status RequireBuckets(const ResolvedNamespace& r) {
  if (!r.buckets_missing) return Status::OK();
  return Status(ErrorCode::kNamespaceNotFound,
                "Time-series buckets collection " + BucketsNamespace(r.nss).ns() + " is missing");
}

}  // namespace hourglass::exec
