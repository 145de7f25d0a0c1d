#include "timeseries/bucket_builder.h"

#include <algorithm>
#include <string>

#include "timeseries/bucket_catalog.h"
#include "timeseries/bucket_compression.h"
#include "timeseries/bucket_document.h"
#include "timeseries/bucket_field_tree.h"
#include "timeseries/meta_normalize.h"

namespace hourglass::timeseries {

using bson::BsonElement;
using bson::BsonObj;

StatusWith<BsonObj> MakeBucket(const bson::ObjectId& id, const BsonElement& meta,
                               std::span<const BsonObj> rows, const TimeseriesOptions& o,
                               int64_t min_time, int version,
                               std::shared_ptr<const bson::StringComparator> strings) {
  if (rows.empty()) return Status(ErrorCode::kBadValue, "a time-series bucket needs a measurement");
  const std::string_view meta_field =
      o.meta_field ? std::string_view(*o.meta_field) : std::string_view();
  BucketFieldTree fields;
  fields.SetCollator(std::move(strings));
  for (const BsonObj& m : rows) fields.UpdateMinMax(m, meta_field);
  BucketDocument doc(id, meta);
  doc.StageRows(rows, meta_field);
  std::string full;
  std::vector<storage::Session::Modification> unused;
  doc.Prepare(BuildBucketControl(fields, o.time_field, min_time), &full, &unused);
  BsonObj bucket = BsonObj::CopyOf(full);
  if (version == 1) return bucket;
  return CompressBucket(bucket, o.time_field, version);
}

StatusWith<std::vector<BsonObj>> MakeNewBuckets(
    std::vector<BsonObj> rows, const TimeseriesOptions& o,
    const std::shared_ptr<const bson::StringComparator>& strings) {
  const NewBucketRules rules = CurrentNewBucketRules();
  // Each row's series and time, ordered by series, then time (ties in their given order).
  struct Entry {
    std::string series;
    int64_t time;
    size_t row;
  };
  std::vector<Entry> order;
  order.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    BsonElement t = rows[i][o.time_field];
    if (t.type() != bson::BsonType::kDate) {
      return Status(ErrorCode::kBadValue, "'" + o.time_field +
                                              "' must be present and contain a valid BSON UTC "
                                              "datetime value");
    }
    BsonElement meta = o.meta_field ? rows[i][*o.meta_field] : BsonElement();
    order.push_back({NormalizedMetaKey(meta), t.DateMillis(), i});
  }
  std::stable_sort(order.begin(), order.end(), [](const Entry& a, const Entry& b) {
    return a.series != b.series ? a.series < b.series : a.time < b.time;
  });
  const int64_t span_ms = o.bucket_max_span_seconds * 1000;
  std::vector<BsonObj> buckets;
  std::vector<BsonObj> members;
  int64_t start = 0, bytes = 0;
  auto emit = [&]() -> Status {
    if (members.empty()) return Status::OK();
    bson::BsonBuilder mb;
    if (o.meta_field) AppendNormalizedMeta(mb, "meta", members.front()[*o.meta_field]);
    const BsonObj meta = mb.Obj();
    HG_ASSIGN_OR_RETURN(BsonObj bucket, MakeBucket(NewBucketId(start), meta.FirstElement(), members,
                                                   o, start, rules.version, strings));
    buckets.push_back(std::move(bucket));
    members.clear();
    return Status::OK();
  };
  for (size_t k = 0; k < order.size(); ++k) {
    const Entry& e = order[k];
    const BsonObj& row = rows[e.row];
    const int64_t size = row.size();
    const auto count = static_cast<int64_t>(members.size());
    const bool fits = count > 0 && order[k - 1].series == e.series && e.time - start < span_ms &&
                      count < rules.max_count &&
                      (bytes + size <= rules.max_size ||
                       (count < rules.min_count && bytes + size <= rules.absolute_max_size));
    if (!fits) {
      HG_RETURN_IF_ERROR(emit());
      start = RoundTimeDownMillis(e.time, o.RoundingSeconds());
      bytes = 0;
    }
    members.push_back(row);
    bytes += size;
  }
  HG_RETURN_IF_ERROR(emit());
  return buckets;
}

}  // namespace hourglass::timeseries
