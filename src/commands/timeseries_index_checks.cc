#include "commands/timeseries_index_checks.h"

#include <algorithm>

#include "catalog/index_keys.h"
#include "geo/sphere_index.h"
#include "timeseries/meta_normalize.h"

namespace hourglass::commands {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {
// Whether an array lies along the dotted `path` of `doc` (at its end or on the way).
bool ArrayAlongPath(const BsonObj& doc, std::string_view path) {
  BsonObj at = doc;
  while (true) {
    const size_t dot = path.find('.');
    BsonElement e = at.GetField(path.substr(0, dot));
    if (e.type() == BsonType::kArray) return true;
    if (dot == std::string_view::npos || e.type() != BsonType::kObject) return false;
    at = e.Obj();
    path.remove_prefix(dot + 1);
  }
}
}  // namespace

BucketIndexChecks::BucketIndexChecks(const catalog::Collection& buckets,
                                     std::string_view time_field) {
  for (const catalog::SecondaryIndex& idx : buckets.Indexes()) {
    bool on_meta = false;
    for (BsonElement f : idx.desc.key) {
      std::string_view p = f.FieldName();
      if (p == "meta" || p.starts_with("meta.")) on_meta = idx.kind == catalog::IndexKind::kUser;
      if (catalog::IsSphereBucketKey(f) && p.starts_with("data.")) {
        geo_paths_.emplace_back(p.substr(std::string_view("data.").size()));
        continue;
      }
      if (!p.starts_with("control.min.") && !p.starts_with("control.max.")) continue;
      p.remove_prefix(std::string_view("control.min.").size());
      if (p != time_field && std::find(paths_.begin(), paths_.end(), p) == paths_.end()) {
        paths_.emplace_back(p);
      }
    }
    if (on_meta) meta_indexes_.push_back(&idx.desc);
  }
}

Status BucketIndexChecks::CheckMeasurement(const BsonObj& m) const {
  for (const std::string& p : paths_) {
    if (ArrayAlongPath(m, p)) {
      return Status(ErrorCode::kLocation5930501,
                    "Indexed measurement field contains an array value");
    }
  }
  for (const std::string& p : geo_paths_) {
    for (const BsonElement& v : geo::GeoValuesAtPath(m, p)) {
      if (Status st = geo::CheckBucketPoint(v); !st.ok()) {
        return Status(ErrorCode::kLocation16755,
                      "Can't extract geo keys: " + m.ToJson() + "  " + st.reason());
      }
    }
  }
  return Status::OK();
}

Status BucketIndexChecks::CheckMeta(const BsonElement& meta) const {
  if (meta_indexes_.empty() || meta.eoo()) return Status::OK();
  bson::BsonBuilder b;
  timeseries::AppendNormalizedMeta(b, "meta", meta);
  const BsonObj probe = b.Obj();
  for (const catalog::IndexDescriptor* d : meta_indexes_) {
    HG_RETURN_IF_ERROR(catalog::GenerateIndexKeys(*d, probe).status());
  }
  return Status::OK();
}

}  // namespace hourglass::commands
