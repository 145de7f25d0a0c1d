#include "http/metrics.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "bson/bson.h"
#include "catalog/catalog.h"
#include "catalog/collection.h"
#include "commands/dispatcher.h"
#include "commands/op_latencies.h"
#include "http/measurement_writer.h"

namespace hourglass::http {

namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

// numBucketsClosedDueToSize -> buckets_closed_due_to_size (a leading "num" says nothing here).
std::string Snake(std::string_view camel) {
  if (camel.size() > 3 && camel.starts_with("num") && std::isupper(camel[3])) {
    camel.remove_prefix(3);
  }
  std::string out;
  for (char c : camel) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (!out.empty()) out.push_back('_');
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);  // the shortest exact form
  (void)ec;
  return std::string(buf, end);
}

std::string LabelValue(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// The text being built: each family's HELP and TYPE once, before its samples.
class Exposition {
 public:
  void Family(const std::string& name, std::string_view type, std::string_view help) {
    if (!declared_.insert(name).second) return;
    out_ += "# HELP " + name + " " + std::string(help) + "\n";
    out_ += "# TYPE " + name + " " + std::string(type) + "\n";
  }
  void Sample(const std::string& name, const Labels& labels, double value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += "{";
      for (size_t i = 0; i < labels.size(); ++i) {
        if (i > 0) out_ += ",";
        out_ += labels[i].first + "=\"" + LabelValue(labels[i].second) + "\"";
      }
      out_ += "}";
    }
    out_ += " " + Number(value) + "\n";
  }
  void One(const std::string& name, std::string_view type, std::string_view help, double value,
           const Labels& labels = {}) {
    Family(name, type, help);
    Sample(name, labels, value);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
  std::set<std::string> declared_;
};

bson::BsonObj Command(std::string_view name, std::string_view arg) {
  bson::BsonBuilder b;
  b.AppendString(name, arg);
  return b.Obj();
}

// Every numeric field of `section`, a counter unless `gauges` names it.
void Statistics(Exposition& e, const std::string& prefix, std::string_view what,
                const std::vector<std::pair<Labels, bson::BsonObj>>& sections,
                const std::set<std::string_view>& gauges) {
  std::vector<std::string> fields;  // the union, in first-seen order
  for (const auto& [labels, section] : sections) {
    for (const bson::BsonElement& f : section) {
      if (!f.IsNumber()) continue;
      std::string name(f.FieldName());
      if (std::find(fields.begin(), fields.end(), name) == fields.end()) fields.push_back(name);
    }
  }
  for (const std::string& field : fields) {
    const bool gauge = gauges.contains(field);
    const std::string name = prefix + Snake(field) + (gauge ? "" : "_total");
    e.Family(name, gauge ? "gauge" : "counter", std::string(what) + " " + field);
    for (const auto& [labels, section] : sections) {
      bson::BsonElement f = section[field];
      if (f.IsNumber()) e.Sample(name, labels, f.NumberDouble());
    }
  }
}

}  // namespace

StatusWith<std::string> RenderMetrics(commands::ServiceContext& service,
                                      commands::ClientState& client) {
  HG_ASSIGN_OR_RETURN(
      bson::BsonObj status,
      commands::RunCommandForReply(service, client,
                                   bson::FromJson(R"({"serverStatus": 1})").value(), "admin"));
  Exposition e;
  e.One("hourglass_up", "gauge", "1 while the server answers", 1);
  e.One("hourglass_uptime_seconds", "gauge", "Seconds since the server started",
        status["uptime"].NumberDouble());

  const bson::BsonObj ops = status["opcounters"].Obj();
  e.Family("hourglass_opcounters_total", "counter",
           "Operations by type since startup (serverStatus.opcounters)");
  for (const bson::BsonElement& f : ops) {
    e.Sample("hourglass_opcounters_total", {{"type", std::string(f.FieldName())}},
             f.NumberDouble());
  }
  const bson::BsonObj conns = status["connections"].Obj();
  e.Family("hourglass_connections", "gauge", "Wire-protocol connections open, and still available");
  e.Sample("hourglass_connections", {{"state", "current"}}, conns["current"].NumberDouble());
  e.Sample("hourglass_connections", {{"state", "available"}}, conns["available"].NumberDouble());
  e.One("hourglass_connections_created_total", "counter", "Connections accepted since startup",
        conns["totalCreated"].NumberDouble());
  e.One("hourglass_connections_rejected_total", "counter",
        "Connections refused over maxIncomingConnections", conns["rejected"].NumberDouble());
  const bson::BsonObj net = status["network"].Obj();
  e.Family("hourglass_network_bytes_total", "counter", "Wire-protocol bytes (after decompression)");
  e.Sample("hourglass_network_bytes_total", {{"direction", "in"}}, net["bytesIn"].NumberDouble());
  e.Sample("hourglass_network_bytes_total", {{"direction", "out"}}, net["bytesOut"].NumberDouble());
  e.One("hourglass_network_requests_total", "counter", "Wire-protocol requests",
        net["numRequests"].NumberDouble());
  const bson::BsonObj mem = status["mem"].Obj();
  e.One("hourglass_memory_resident_bytes", "gauge", "Resident memory of the process",
        mem["resident"].NumberDouble() * 1024 * 1024);
  e.One("hourglass_memory_virtual_bytes", "gauge", "Virtual memory of the process",
        mem["virtual"].NumberDouble() * 1024 * 1024);
  if (status["bucketCatalog"].type() == bson::BsonType::kObject) {
    Statistics(e, "hourglass_bucket_catalog_", "serverStatus.bucketCatalog",
               {{Labels{}, status["bucketCatalog"].Obj()}},
               {"numBuckets", "numOpenBuckets", "numIdleBuckets", "numArchivedBuckets",
                "memoryUsage", "numActiveBuckets", "avgNumMeasurementsPerCommit"});
  }
  const bson::BsonObj cache = status["wiredTiger"].Obj()["cache"].Obj();
  e.One("hourglass_wiredtiger_cache_max_bytes", "gauge", "WiredTiger's cache size",
        cache["maximum bytes configured"].NumberDouble());

  // Each time-series collection's collStats.timeseries.
  std::vector<std::pair<Labels, bson::BsonObj>> collections;
  // (Found in the catalog: the client needs collStats on them, not listCollections.)
  for (const std::string& db : service.catalog->ListDatabases()) {
    for (const auto& c : service.catalog->ListCollections(db)) {
      if (c->entry().type != "timeseries") continue;
      const std::string& coll = c->nss().coll;
      auto stats = commands::RunCommandForReply(service, client, Command("collStats", coll), db);
      if (!stats.ok()) {
        if (stats.status().code() == ErrorCode::kNamespaceNotFound) continue;  // dropped since
        return stats.status();
      }
      if (stats.value()["timeseries"].type() != bson::BsonType::kObject) continue;
      collections.emplace_back(Labels{{"db", db}, {"collection", coll}},
                               bson::BsonObj::CopyOf(stats.value()["timeseries"].Obj().bytes()));
    }
  }
  Statistics(e, "hourglass_timeseries_", "collStats.timeseries", collections,
             {"bucketCount", "avgBucketSize", "avgNumMeasurementsPerCommit"});

  // Latencies: MongoDB's buckets as a Prometheus histogram. Latencies are whole microseconds, so
  // a bucket [lower, next) holds exactly those <= next - 1.
  const std::string latency = "hourglass_op_latency_seconds";
  e.Family(latency, "histogram", "Operation latencies by kind (serverStatus.opLatencies)");
  const auto& bounds = commands::LatencyBucketBounds();
  for (const auto& [kind, name] :
       {std::pair{commands::LatencyKind::kReads, "reads"},
        std::pair{commands::LatencyKind::kWrites, "writes"},
        std::pair{commands::LatencyKind::kCommands, "commands"},
        std::pair{commands::LatencyKind::kTransactions, "transactions"}}) {
    const commands::OpLatencies::Totals t = commands::OpLatencies::Get().Read(kind);
    uint64_t cumulative = 0;
    for (size_t i = 0; i + 1 < bounds.size(); ++i) {
      cumulative += t.buckets[i];
      e.Sample(latency + "_bucket",
               {{"type", name}, {"le", Number(static_cast<double>(bounds[i + 1] - 1) / 1e6)}},
               static_cast<double>(cumulative));
    }
    // The buckets are read one by one while operations go on: the total is their sum, so that
    // +Inf is never below the last finite bucket.
    cumulative += t.buckets[bounds.size() - 1];
    e.Sample(latency + "_bucket", {{"type", name}, {"le", "+Inf"}},
             static_cast<double>(cumulative));
    e.Sample(latency + "_sum", {{"type", name}}, static_cast<double>(t.latency) / 1e6);
    e.Sample(latency + "_count", {{"type", name}}, static_cast<double>(cumulative));
  }
  return e.Take();
}

}  // namespace hourglass::http
