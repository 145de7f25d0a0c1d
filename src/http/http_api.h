// The HTTP port's endpoints (src/http/README.md): InfluxDB's write APIs, so that Telegraf, the
// InfluxDB client libraries and anything else that speaks the line protocol can write to
// Hourglass; Prometheus's remote write and read; its metrics for Prometheus; a health check.
//
//   POST /write?db=D[&precision=P][&u=U&p=PW]               InfluxDB 1.x
//   POST /api/v2/write?bucket=D[/RP][&org=O][&precision=P]  InfluxDB 2.x
//   POST /api/v1/write?db=D, POST /api/v1/read?db=D          Prometheus (prometheus_remote.h)
//   GET /metrics                                             Prometheus's text format (metrics.h)
//   GET|HEAD /ping, GET /health
//
// Each measurement (or Prometheus metric) name is a time-series collection of database D, created
// on its first write with timeField "time", metaField "tags" ("labels" for Prometheus's) and the
// granularity of the server parameter
// hourglassHttpWriteGranularity. The writes run as `create` and `insert` commands of an
// internal client, so every rule of the wire port holds: with --auth the request must carry a
// user's credentials (HTTP Basic, `u`/`p`, or `Authorization: Token user:password`), checked
// against the user's SCRAM credentials in admin, and that user's privileges.
#pragma once

#include "commands/service_context.h"
#include "http/http_server.h"

namespace hourglass::http {

// InfluxDB's limit on a request body (its max-body-size default).
inline constexpr size_t kMaxBodyBytes = 25'000'000;

// Registers hourglassHttpWriteGranularity (before --setParameter is applied).
void RegisterHttpParameters();

// The handler for HttpServer; `service` outlives it.
HttpServer::Handler MakeHttpApi(commands::ServiceContext& service);

}  // namespace hourglass::http
