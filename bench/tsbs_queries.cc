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
//   double-groupby-1-project, -set, -arith
//                          double-groupby-1 with the host and hour computed by a $project, the
//                          hour by a $set, or the averaged value by an $addFields before $group
//   high-cpu-1             every reading of 1 host over 12 hours with usage_user > 90
//   lastpoint              the newest reading of every host (grouped by the metaField `tags`,
//                          which holds one hostname per host)
//   lastpoint-hostname     the same grouped by the subfield `tags.hostname`
//   lastpoint-top          the newest usage_user per host, by $top {sortBy: {time: -1}}
//   lastpoint-time         the same by $sort {time: -1} then $first
//   lastpoint-top5         the newest 5 usage_user readings per host, by $topN {n: 5, ...}
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
#include "tsbs_query_set.h"

namespace {

using hourglass::bench::Median;
using hourglass::bench::OpenUri;
using hourglass::bench::ParseFlags;
using hourglass::bench::QueryTypes;
using hourglass::bench::RunCommand;
using hourglass::bench::SplitList;

using Clock = std::chrono::steady_clock;

struct Options : hourglass::bench::QuerySetOptions {
  std::string uri = "mongodb://127.0.0.1:27017/?directConnection=true";
  std::string db = "tsbench";
  std::string coll = "cpu";
  int runs = 10;
  int warmup = 3;
  uint64_t seed = 7;
  std::vector<std::string> types;
  std::string toggle_param;
};

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
    if (o.plan_only && (name.starts_with("lastpoint") || name == "groupby-orderby-limit")) continue;
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
