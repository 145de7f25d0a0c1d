// Load generator for the foundation: `ping` round trips per second, `insertMany` documents per
// second (batches of 1,000) and new connections (handshake, authentication when the URI carries
// credentials, one ping) per second, each with 1, 4 and 16 concurrent connections, through
// libmongoc — a real MongoDB driver — against any server given by URI. Every figure is the median
// of --runs timed runs of --seconds each.
//
//   wire_bench --uri mongodb://127.0.0.1:27017 [--seconds 3] [--runs 5] [--threads 1,4,16]
#include <mongoc/mongoc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"

namespace {

using hourglass::bench::Median;
using hourglass::bench::OpenUri;
using hourglass::bench::ParseFlags;
using hourglass::bench::SplitList;

struct Options {
  std::string uri = "mongodb://127.0.0.1:27017/?directConnection=true";
  double seconds = 3.0;
  int runs = 5;
  std::vector<int> threads = {1, 4, 16};
};

constexpr int kBatch = 1000;

using Clock = std::chrono::steady_clock;

// One workload step on a connection; returns how many units (round trips or documents) it did,
// or -1 on error.
using Step = int (*)(mongoc_client_t*, int thread, bson_t* scratch);

int PingStep(mongoc_client_t* client, int, bson_t*) {
  bson_t cmd = BSON_INITIALIZER;
  BSON_APPEND_INT32(&cmd, "ping", 1);
  bson_error_t err;
  bool ok = mongoc_client_command_simple(client, "admin", &cmd, nullptr, nullptr, &err);
  bson_destroy(&cmd);
  if (!ok) std::fprintf(stderr, "ping failed: %s\n", err.message);
  return ok ? 1 : -1;
}

// The URI every new connection of ConnectStep opens (with credentials when --auth is measured).
const mongoc_uri_t* g_uri = nullptr;

// A new connection each time: handshake, authentication if the URI has credentials, one ping.
int ConnectStep(mongoc_client_t*, int thread, bson_t* scratch) {
  mongoc_client_t* fresh = mongoc_client_new_from_uri(g_uri);
  if (fresh == nullptr) return -1;
  int n = PingStep(fresh, thread, scratch);
  mongoc_client_destroy(fresh);
  return n;
}

int InsertManyStep(mongoc_client_t* client, int thread, bson_t*) {
  static std::atomic<int64_t> seq{0};
  mongoc_collection_t* coll = mongoc_client_get_collection(client, "bench", "insert_many");
  // A plain array: std::vector<bson_t*> would drop bson_t's alignment attribute.
  bson_t* docs[kBatch];
  int64_t base = seq.fetch_add(kBatch);
  for (int i = 0; i < kBatch; ++i) {
    docs[i] = bson_new();
    BSON_APPEND_INT64(docs[i], "seq", base + i);
    BSON_APPEND_INT32(docs[i], "thread", thread);
    BSON_APPEND_DATE_TIME(docs[i], "ts", 1600000000000LL + base + i);
    BSON_APPEND_UTF8(docs[i], "host", "host_17");
    BSON_APPEND_DOUBLE(docs[i], "usage_user", static_cast<double>((base + i) % 100) / 3.0);
    BSON_APPEND_DOUBLE(docs[i], "usage_system", static_cast<double>((base + i) % 37) / 7.0);
  }
  bson_error_t err;
  bool ok = mongoc_collection_insert_many(coll, const_cast<const bson_t**>(docs), kBatch, nullptr,
                                          nullptr, &err);
  if (!ok) std::fprintf(stderr, "insertMany failed: %s\n", err.message);
  for (bson_t* d : docs) bson_destroy(d);
  mongoc_collection_destroy(coll);
  return ok ? kBatch : -1;
}

// Runs `step` on `nthreads` connections for opts.seconds; returns units per second.
double TimedRun(const Options& opts, mongoc_client_pool_t* pool, Step step, int nthreads) {
  std::atomic<bool> go{false}, stop{false}, failed{false};
  std::atomic<int64_t> total{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < nthreads; ++t) {
    workers.emplace_back([&, t] {
      mongoc_client_t* client = mongoc_client_pool_pop(pool);
      PingStep(client, t, nullptr);  // connect and handshake before timing
      while (!go) std::this_thread::yield();
      int64_t mine = 0;
      while (!stop) {
        int n = step(client, t, nullptr);
        if (n < 0) {
          failed = true;
          break;
        }
        mine += n;
      }
      total += mine;
      mongoc_client_pool_push(pool, client);
    });
  }
  auto start = Clock::now();
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(opts.seconds));
  stop = true;
  for (auto& w : workers) w.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  if (failed) return -1;
  return static_cast<double>(total.load()) / elapsed;
}

bool ParseArgs(int argc, char** argv, Options* o) {
  bool ok = ParseFlags(argc, argv, 1, [&](std::string_view a, const char* v) {
    if (a == "--uri") {
      o->uri = v;
    } else if (a == "--seconds") {
      o->seconds = std::atof(v);
    } else if (a == "--runs") {
      o->runs = std::atoi(v);
    } else if (a == "--threads") {
      o->threads.clear();
      for (const std::string& n : SplitList(v)) o->threads.push_back(std::atoi(n.c_str()));
    } else {
      return false;
    }
    return true;
  });
  if (!ok) {
    std::fprintf(stderr, "usage: %s [--uri URI] [--seconds S] [--runs N] [--threads 1,4,16]\n",
                 argv[0]);
    return false;
  }
  return o->seconds > 0 && o->runs > 0 && !o->threads.empty();
}

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  if (!ParseArgs(argc, argv, &opts)) return 2;
  mongoc_uri_t* uri = OpenUri(opts.uri);
  if (uri == nullptr) return 2;
  g_uri = uri;
  mongoc_client_pool_t* pool = mongoc_client_pool_new(uri);
  int max_threads = *std::max_element(opts.threads.begin(), opts.threads.end());
  mongoc_client_pool_max_size(pool, static_cast<uint32_t>(max_threads));

  struct Workload {
    const char* name;
    const char* unit;
    Step step;
  } workloads[] = {{"ping", "round trips/s", PingStep},
                   {"insertMany(1000)", "documents/s", InsertManyStep},
                   {"connect+ping", "connections/s", ConnectStep}};
  std::printf("%-18s %8s %16s   %s\n", "workload", "conns", "median", "runs");
  int rc = 0;
  for (const auto& w : workloads) {
    for (int n : opts.threads) {
      std::vector<double> rates;
      for (int r = 0; r < opts.runs; ++r) rates.push_back(TimedRun(opts, pool, w.step, n));
      if (*std::min_element(rates.begin(), rates.end()) < 0) {
        std::printf("%-18s %8d %16s\n", w.name, n, "FAILED");
        rc = 1;
        continue;
      }
      std::printf("%-18s %8d %12.0f %s  [", w.name, n, Median(rates), w.unit);
      for (double r : rates) std::printf(" %.0f", r);
      std::printf(" ]\n");
      std::fflush(stdout);
    }
  }
  mongoc_client_pool_destroy(pool);
  mongoc_uri_destroy(uri);
  mongoc_cleanup();
  return rc;
}
