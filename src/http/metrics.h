// GET /metrics: the server's statistics in Prometheus's text exposition format (version 0.0.4),
// for Prometheus, Grafana Agent or anything that scrapes it. The figures are those of
// serverStatus and collStats, read through the commands as `client` (so with --auth the client
// needs their privileges: clusterMonitor's), and named `hourglass_*`:
//
//   hourglass_up, hourglass_uptime_seconds
//   hourglass_opcounters_total{type}               serverStatus.opcounters
//   hourglass_connections{state}, hourglass_connections_created_total, ..._rejected_total
//   hourglass_network_bytes_total{direction}, hourglass_network_requests_total
//   hourglass_memory_resident_bytes, hourglass_memory_virtual_bytes
//   hourglass_bucket_catalog_*                     serverStatus.bucketCatalog
//   hourglass_timeseries_*{db,collection}          collStats(...).timeseries of each collection
//   hourglass_wiredtiger_cache_max_bytes
//   hourglass_op_latency_seconds{type} histogram   serverStatus.opLatencies, MongoDB's buckets
//
// Counters end in _total; a statistic serverStatus gives in camelCase is named in snake_case.
#pragma once

#include <string>

#include "base/status.h"
#include "commands/service_context.h"

namespace hourglass::http {

// The exposition; the error of the first command that failed (Unauthorized without the
// privilege) instead.
StatusWith<std::string> RenderMetrics(commands::ServiceContext& service,
                                      commands::ClientState& client);

}  // namespace hourglass::http
