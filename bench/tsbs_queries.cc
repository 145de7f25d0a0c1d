// The TSBS query set for the "cpu-only" devops data (issue 4's benchmark), expressed as MongoDB
// aggregations and timed through libmongoc against a server that already holds the data
// `ts_bench ingest` loads (100 hosts x 1 day at 10 s, collection tsbench.cpu, metaField `tags`).
//
//   tsbs_queries [--uri URI] [--db tsbench] [--coll cpu] [--hosts 100] [--hours 24]
//                [--runs 10] [--warmup 3] [--seed 7] [--types a,b,...]
//                [--toggle-param NAME] [--plan-only]
//
// For every query type: `--warmup` random instances untimed, then `--runs` random instances timed
// (each drained to the end); the figure is the median latency. With --toggle-param NAME the same
// instances run a second time with the server parameter NAME set to false (setParameter), so
// the time-series rewrites it controls are off; the results of every instance must be equal in
// both modes (compared as sorted extended-JSON documents), otherwise the program fails. The
// parameter is set back to true at the end.
//
// Queries (TSBS's definitions; random choices from a fixed seed):
//   single-groupby-1-1-1   max(usage_user) per minute, 1 host, 1 hour
//   single-groupby-5-1-12  max of 5 fields per minute, 1 host, 12 hours
//   cpu-max-all-1          max of all 10 fields per hour, 1 host, 8 hours
//   cpu-max-all-8          the same for 8 hosts
//   double-groupby-1       mean(usage_user) per host per hour, all hosts, 12 hours
//   double-groupby-all     mean of all 10 fields per host per hour, all hosts, 12 hours
//   high-cpu-1             every reading of 1 host over 12 hours with usage_user > 90
//   lastpoint              the newest reading of every host (grouped by the metaField `tags`,
//                          which holds one hostname per host)
//   groupby-orderby-limit  max(usage_user) per minute for the 5 minutes before a random time
#include <mongoc/mongoc.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bench_util.h"

namespace {

using hourglass::bench::Median;
using hourglass::bench::OpenUri;
using hourglass::bench::ParseFlags;
using hourglass::bench::RunCommand;
using hourglass::bench::SplitList;

using Clock = std::chrono::steady_clock;

constexpr int64_t kStartMs = 1451606400000LL;  // 2016-01-01T00:00:00Z, as ts_bench
constexpr int64_t kIntervalMs = 10 * 1000;
constexpr int64_t kHourMs = 3600 * 1000;
const char* const kFields[10] = {"usage_user",   "usage_system",    "usage_idle",    "usage_nice",
                                 "usage_iowait", "usage_irq",       "usage_softirq", "usage_steal",
                                 "usage_guest",  "usage_guest_nice"};

struct Options {
  std::string uri = "mongodb://127.0.0.1:27017/?directConnection=true";
  std::string db = "tsbench";
  std::string coll = "cpu";
  int hosts = 100;
  int hours = 24;
  int runs = 10;
  int warmup = 3;
  uint64_t seed = 7;
  std::vector<std::string> types;
  std::string toggle_param;
  // Every window moved 10 years past the data (still before 2038, so the time bounds narrow
  // the bucket scan): the aggregate parses, resolves, plans and opens its read, finds no bucket,
  // and its latency is parse-and-plan plus one round trip (ping's median is printed beside).
  // Query types without a time window (lastpoint, groupby-orderby-limit) are left out.
  bool plan_only = false;
};

constexpr int64_t kPlanOnlyShiftMs = 10LL * 365 * 24 * 3600 * 1000;

std::string Date(int64_t ms) {
  return "{\"$date\": {\"$numberLong\": \"" + std::to_string(ms) + "\"}}";
}

std::string Host(int h) { return "\"host_" + std::to_string(h) + "\""; }

// A random window [from, from + len) on a 10 s boundary inside the data.
int64_t WindowStart(std::mt19937_64& rng, const Options& o, int64_t len_ms) {
  // A window longer than the data (8 or 12 hours over TSBS's 3-hour, 4,000-host set) starts at
  // the data's start and covers all of it.
  const int64_t span = std::max<int64_t>(0, static_cast<int64_t>(o.hours) * kHourMs - len_ms);
  const int64_t steps = span / kIntervalMs + 1;
  return kStartMs + (o.plan_only ? kPlanOnlyShiftMs : 0) +
         static_cast<int64_t>(rng() % static_cast<uint64_t>(steps)) * kIntervalMs;
}

std::vector<int> DistinctHosts(std::mt19937_64& rng, const Options& o, int n) {
  std::set<int> s;
  while (static_cast<int>(s.size()) < n) s.insert(static_cast<int>(rng() % o.hosts));
  return {s.begin(), s.end()};
}

std::string TimeRange(int64_t from, int64_t len) {
  return "\"time\": {\"$gte\": " + Date(from) + ", \"$lt\": " + Date(from + len) + "}";
}

std::string Trunc(const char* unit) {
  return std::string("{\"$dateTrunc\": {\"date\": \"$time\", \"unit\": \"") + unit + "\"}}";
}

// `op` ($max / $avg) of the first n fields, as $group output fields.
std::string Aggs(const char* op, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += std::string(", \"") + (op + 1) + "_" + kFields[i] + "\": {\"" + op + "\": \"$" +
         kFields[i] + "\"}";
  }
  return s;
}

std::string HostsIn(const std::vector<int>& hosts) {
  std::string s = "\"tags.hostname\": {\"$in\": [";
  for (size_t i = 0; i < hosts.size(); ++i) s += (i ? ", " : "") + Host(hosts[i]);
  return s + "]}";
}

// Builds one random instance (a pipeline as JSON) of a query type.
using QueryGen = std::function<std::string(std::mt19937_64&, const Options&)>;

std::string SingleGroupby(std::mt19937_64& rng, const Options& o, int fields, int hours) {
  int64_t from = WindowStart(rng, o, hours * kHourMs);
  auto host = DistinctHosts(rng, o, 1);
  return "[{\"$match\": {" + HostsIn(host) + ", " + TimeRange(from, hours * kHourMs) +
         "}}, {\"$group\": {\"_id\": " + Trunc("minute") + Aggs("$max", fields) +
         "}}, {\"$sort\": {\"_id\": 1}}]";
}

std::string CpuMaxAll(std::mt19937_64& rng, const Options& o, int nhosts) {
  int64_t from = WindowStart(rng, o, 8 * kHourMs);
  auto hosts = DistinctHosts(rng, o, nhosts);
  return "[{\"$match\": {" + HostsIn(hosts) + ", " + TimeRange(from, 8 * kHourMs) +
         "}}, {\"$group\": {\"_id\": " + Trunc("hour") + Aggs("$max", 10) +
         "}}, {\"$sort\": {\"_id\": 1}}]";
}

std::string DoubleGroupby(std::mt19937_64& rng, const Options& o, int fields) {
  int64_t from = WindowStart(rng, o, 12 * kHourMs);
  return "[{\"$match\": {" + TimeRange(from, 12 * kHourMs) +
         "}}, {\"$group\": {\"_id\": {\"host\": \"$tags.hostname\", \"hour\": " + Trunc("hour") +
         "}" + Aggs("$avg", fields) + "}}, {\"$sort\": {\"_id.host\": 1, \"_id.hour\": 1}}]";
}

std::vector<std::pair<std::string, QueryGen>> QueryTypes() {
  return {
      {"single-groupby-1-1-1", [](auto& r, auto& o) { return SingleGroupby(r, o, 1, 1); }},
      {"single-groupby-5-1-12", [](auto& r, auto& o) { return SingleGroupby(r, o, 5, 12); }},
      {"cpu-max-all-1", [](auto& r, auto& o) { return CpuMaxAll(r, o, 1); }},
      {"cpu-max-all-8", [](auto& r, auto& o) { return CpuMaxAll(r, o, 8); }},
      {"double-groupby-1", [](auto& r, auto& o) { return DoubleGroupby(r, o, 1); }},
      {"double-groupby-all", [](auto& r, auto& o) { return DoubleGroupby(r, o, 10); }},
      {"high-cpu-1",
       [](auto& r, auto& o) {
         int64_t from = WindowStart(r, o, 12 * kHourMs);
         auto host = DistinctHosts(r, o, 1);
         return "[{\"$match\": {" + HostsIn(host) + ", " + TimeRange(from, 12 * kHourMs) +
                ", \"usage_user\": {\"$gt\": 90}}}, {\"$sort\": {\"time\": 1}}]";
       }},
      {"lastpoint",
       [](auto&, auto&) {
         // Per series: the metaField `tags` holds one hostname per host, so grouping by it is
         // grouping by host (the shape MongoDB's last-point optimization recognises).
         return std::string(
             "[{\"$sort\": {\"tags\": 1, \"time\": -1}}, {\"$group\": {\"_id\": "
             "\"$tags\", \"last\": {\"$first\": \"$$ROOT\"}}}, {\"$sort\": {\"_id\": 1}}]");
       }},
      {"groupby-orderby-limit",
       [](auto& r, auto& o) {
         int64_t end = WindowStart(r, o, 0);
         return "[{\"$match\": {\"time\": {\"$lt\": " + Date(end) +
                "}}}, {\"$group\": {\"_id\": " + Trunc("minute") +
                ", \"max_usage_user\": {\"$max\": \"$usage_user\"}}}, {\"$sort\": {\"_id\": -1}}, "
                "{\"$limit\": 5}]";
       }},
  };
}

bool SetParam(mongoc_client_t* client, const std::string& name, bool value) {
  bson_t* cmd = BCON_NEW("setParameter", BCON_INT32(1), name.c_str(), BCON_BOOL(value));
  bool ok = RunCommand(client, "admin", cmd);
  bson_destroy(cmd);
  return ok;
}

// Runs the pipeline, draining the cursor; the result documents as sorted extended JSON (so that
// two runs can be compared whatever order ties come out in). False on error.
bool RunPipeline(mongoc_collection_t* coll, const std::string& json, std::vector<std::string>* out,
                 double* ms) {
  bson_error_t err;
  bson_t* pipeline = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()),
                                        static_cast<ssize_t>(json.size()), &err);
  if (pipeline == nullptr) {
    std::fprintf(stderr, "bad pipeline JSON (%s): %s\n", err.message, json.c_str());
    return false;
  }
  out->clear();
  auto t0 = Clock::now();
  // Blocking stages may need more than 100 MB without the rewrites (lastpoint sorts every row).
  bson_t* opts = BCON_NEW("allowDiskUse", BCON_BOOL(true));
  mongoc_cursor_t* cursor =
      mongoc_collection_aggregate(coll, MONGOC_QUERY_NONE, pipeline, opts, nullptr);
  const bson_t* doc;
  struct Copy {  // a wrapper: bson_t's alignment attribute is lost as a template argument
    bson_t* doc;
  };
  std::vector<Copy> copies;
  while (mongoc_cursor_next(cursor, &doc)) copies.push_back({bson_copy(doc)});
  *ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  bool ok = !mongoc_cursor_error(cursor, &err);
  if (!ok)
    std::fprintf(stderr, "aggregate failed: %s\n  pipeline: %s\n", err.message, json.c_str());
  mongoc_cursor_destroy(cursor);
  bson_destroy(opts);
  bson_destroy(pipeline);
  for (Copy c : copies) {
    char* s = bson_as_canonical_extended_json(c.doc, nullptr);
    out->push_back(s);
    bson_free(s);
    bson_destroy(c.doc);
  }
  std::sort(out->begin(), out->end());
  return ok;
}

bool ParseArgs(int argc, char** argv, Options* o) {
  bool ok = ParseFlags(argc, argv, 1, [&](std::string_view a, const char* v) {
    if (a == "--uri") {
      o->uri = v;
    } else if (a == "--db") {
      o->db = v;
    } else if (a == "--coll") {
      o->coll = v;
    } else if (a == "--hosts") {
      o->hosts = std::atoi(v);
    } else if (a == "--hours") {
      o->hours = std::atoi(v);
    } else if (a == "--runs") {
      o->runs = std::atoi(v);
    } else if (a == "--warmup") {
      o->warmup = std::atoi(v);
    } else if (a == "--seed") {
      o->seed = std::strtoull(v, nullptr, 10);
    } else if (a == "--toggle-param") {
      o->toggle_param = v;
    } else if (a == "--types") {
      o->types = SplitList(v);
    } else if (a == "--plan-only") {
      if (std::string_view(v) != "0" && std::string_view(v) != "1") return false;
      o->plan_only = std::string_view(v) == "1";
    } else {
      return false;
    }
    return true;
  });
  return ok && o->hosts >= 8 && o->hours >= 1 && o->runs > 0 && o->warmup >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: %s [--uri URI] [--db D] [--coll C] [--hosts 100] [--hours 24] [--runs 10] "
                 "[--warmup 3] [--seed 7] [--types a,b] [--toggle-param NAME] [--plan-only 1]\n",
                 argv[0]);
    return 2;
  }
  mongoc_uri_t* uri = OpenUri(o.uri);
  if (uri == nullptr) return 2;
  mongoc_client_t* client = mongoc_client_new_from_uri(uri);
  mongoc_collection_t* coll = mongoc_client_get_collection(client, o.db.c_str(), o.coll.c_str());
  int rc = 0;
  if (o.plan_only) {
    // The round trip that every plan-only latency includes.
    std::vector<double> times;
    for (int i = 0; i < o.warmup + o.runs * 10; ++i) {
      bson_t* ping = BCON_NEW("ping", BCON_INT32(1));
      auto t0 = Clock::now();
      if (!RunCommand(client, "admin", ping)) rc = 1;
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      bson_destroy(ping);
      if (i >= o.warmup) times.push_back(ms);
    }
    std::printf("RESULT ping median_ms=%.3f\n", Median(times));
  }
  for (const auto& [name, gen] : QueryTypes()) {
    if (!o.types.empty() && std::find(o.types.begin(), o.types.end(), name) == o.types.end()) {
      continue;
    }
    if (o.plan_only && (name == "lastpoint" || name == "groupby-orderby-limit")) continue;
    std::mt19937_64 rng(o.seed);
    std::vector<std::string> instances;
    for (int i = 0; i < o.warmup + o.runs; ++i) instances.push_back(gen(rng, o));
    // modes[0]: as the server is (rewrites on); modes[1]: --toggle-param set to false.
    const int modes = o.toggle_param.empty() ? 1 : 2;
    std::vector<std::vector<std::string>> results(instances.size());
    double med[2] = {0, 0};
    size_t rows = 0;
    for (int m = 0; m < modes && rc == 0; ++m) {
      if (m == 1 && !SetParam(client, o.toggle_param, false)) rc = 1;
      std::vector<double> times;
      for (size_t i = 0; i < instances.size() && rc == 0; ++i) {
        std::vector<std::string> docs;
        double ms = 0;
        if (!RunPipeline(coll, instances[i], &docs, &ms)) {
          rc = 1;
          break;
        }
        if (m == 0) {
          results[i] = docs;
          rows += docs.size();
        } else if (docs != results[i]) {
          std::fprintf(stderr, "%s: results differ with %s=false (%zu vs %zu documents)\n  %s\n",
                       name.c_str(), o.toggle_param.c_str(), docs.size(), results[i].size(),
                       instances[i].c_str());
          rc = 1;
        }
        if (i >= static_cast<size_t>(o.warmup)) times.push_back(ms);
      }
      med[m] = Median(times);
      if (m == 1) SetParam(client, o.toggle_param, true);
    }
    if (rc != 0) break;
    if (modes == 2) {
      std::printf(
          "RESULT %s median_ms=%.3f param_off_ms=%.3f speedup=%.1f rows_all_instances=%zu\n",
          name.c_str(), med[0], med[1], med[1] / med[0], rows);
    } else {
      std::printf("RESULT %s median_ms=%.3f rows_all_instances=%zu\n", name.c_str(), med[0], rows);
    }
    std::fflush(stdout);
  }
  mongoc_collection_destroy(coll);
  mongoc_client_destroy(client);
  mongoc_uri_destroy(uri);
  mongoc_cleanup();
  return rc;
}
