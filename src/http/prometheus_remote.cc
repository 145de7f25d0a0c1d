#include "http/prometheus_remote.h"

#include <snappy.h>

#include <algorithm>
#include <map>

#include "prometheus_remote.pb.h"

namespace hourglass::http {

namespace {

// What a remote-write body may inflate to (Prometheus sends a few megabytes at most).
constexpr size_t kMaxUncompressedBytes = size_t{256} << 20;

Status Bad(std::string what) { return Status(ErrorCode::kBadValue, std::move(what)); }

}  // namespace

StatusWith<std::vector<MetricSamples>> DecodeRemoteWrite(std::string_view body) {
  size_t length = 0;
  if (!snappy::GetUncompressedLength(body.data(), body.size(), &length)) {
    return Bad("snappy: corrupt input");
  }
  if (length > kMaxUncompressedBytes) return Bad("snappy: decoded body too large");
  std::string raw;
  if (!snappy::Uncompress(body.data(), body.size(), &raw)) return Bad("snappy: corrupt input");
  prompb::WriteRequest request;
  if (!request.ParseFromString(raw)) return Bad("not a valid protobuf WriteRequest");
  std::vector<MetricSamples> out;
  std::map<std::string, size_t, std::less<>> index;
  for (const prompb::TimeSeries& series : request.timeseries()) {
    if (!series.GetReflection()->GetUnknownFields(series).empty()) {
      return Bad("exemplars and native histograms are not supported: send samples only");
    }
    std::string metric;
    std::vector<std::pair<std::string_view, std::string_view>> labels;
    for (const prompb::Label& l : series.labels()) {
      if (l.name() == "__name__") {
        metric = l.value();
      } else {
        labels.emplace_back(l.name(), l.value());
      }
    }
    if (metric.empty()) return Bad("a series has no metric name (label __name__)");
    std::sort(labels.begin(), labels.end());
    // The series' labels, built once for its samples.
    bson::BsonBuilder meta;
    for (const auto& [name, value] : labels) meta.AppendString(name, value);
    const bson::BsonObj meta_obj = meta.Obj();
    auto [it, added] = index.try_emplace(metric, out.size());
    if (added) out.push_back(MetricSamples{metric, {}});
    std::vector<bson::BsonObj>& docs = out[it->second].docs;
    for (const prompb::Sample& sample : series.samples()) {
      bson::BsonBuilder doc;
      doc.AppendDate("time", sample.timestamp());
      if (!labels.empty()) doc.AppendObject(kPrometheusMetaField, meta_obj);
      doc.AppendDouble("value", sample.value());
      docs.push_back(doc.Obj());
    }
  }
  return out;
}

}  // namespace hourglass::http
