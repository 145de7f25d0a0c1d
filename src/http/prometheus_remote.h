// Prometheus's remote write (protocol 1.0) and remote read. The body of POST /api/v1/write is a
// snappy-compressed (block format) protobuf WriteRequest. Each series' metric name (its `__name__`
// label) is a time-series collection, its other labels the metaField "labels" (sorted by name; left
// out when there are none), and each sample a measurement {time: Date(timestamp ms), labels,
// value}.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "commands/service_context.h"

namespace hourglass::http {

inline constexpr std::string_view kPrometheusMetaField = "labels";
inline constexpr std::string_view kPrometheusDefaultDb = "prometheus";

struct MetricSamples {
  std::string metric;
  std::vector<bson::BsonObj> docs;
};

// Each metric's measurements, metrics in first-seen order. BadValue saying what is wrong: not
// snappy, not a WriteRequest, a series without a metric name, a series with exemplars or native
// histograms (not stored yet, so refused rather than dropped).
StatusWith<std::vector<MetricSamples>> DecodeRemoteWrite(std::string_view body);

// Prometheus's remote read: the answer (a snappy-compressed protobuf ReadResponse, one result per
// query) to the snappy-compressed ReadRequest `body`, read from the time-series collections of
// `db` as `client`. A query's `__name__` matchers choose the collections (every time-series
// collection of `db` when it has none), its other matchers filter their labels with Prometheus's
// meaning (a missing label equals ""; regexes are anchored), its range bounds the time.
StatusWith<std::string> AnswerRemoteRead(commands::ServiceContext& service,
                                         commands::ClientState& client, const std::string& db,
                                         std::string_view body);

}  // namespace hourglass::http
