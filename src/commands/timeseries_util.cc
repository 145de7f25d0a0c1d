#include "commands/timeseries_util.h"

#include "timeseries/index_conversion.h"

namespace hourglass::commands {

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
