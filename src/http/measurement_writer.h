// Writing measurements that arrived over HTTP (line protocol, Prometheus remote write) into
// time-series collections, as the commands a MongoDB client would run: `create` with the
// time-series options when the collection is missing, then unordered `insert`s in batches under
// the command size limit, through the dispatcher as the request's internal client (so
// authorization, validation and statistics are the wire port's).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/server_parameters.h"
#include "base/status.h"
#include "bson/bson.h"
#include "commands/service_context.h"

namespace hourglass::http {

// hourglassHttpWriteGranularity: the granularity of the collections HTTP writes create
// (seconds, the default; minutes; hours).
ServerParameter* HttpWriteGranularity();

// What writing one request's measurements did.
struct WriteOutcome {
  int64_t written = 0;
  int64_t dropped = 0;
  std::vector<std::string> errors;  // distinct reasons (up to 10), in order
  // Stops the whole request: Unauthorized (403), or a failure of the server's own, for the client
  // to retry (5xx).
  Status fatal = Status::OK();
  void Drop(int64_t n, const std::string& why);
};

// Writes `docs` into the time-series collection `db`.`coll` ({timeField: "time", metaField:
// `meta_field`}), creating it if it does not exist. A collection that cannot be created for its
// name, or documents the insert refuses (writeErrors), are dropped with their reasons; anything
// else stops the request (`fatal`).
void WriteMeasurements(commands::ServiceContext& service, commands::ClientState& client,
                       const std::string& db, const std::string& coll, std::string_view meta_field,
                       const std::vector<bson::BsonObj>& docs, WriteOutcome* out);

}  // namespace hourglass::http
