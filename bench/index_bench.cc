// Equality lookup by an indexed field on a regular collection (issue 5's benchmark), through
// libmongoc. One invocation does one step (bench/index_run.sh drives them):
//
//   index_bench load  --docs N    drop `indexbench.lookup`, createIndexes {k: 1}, then insert N
//                                 documents {_id: i, k: <a permutation of 0..N-1>,
//                                 host: "host_<i % 100>", v: <double>} with insertMany(1000)
//   index_bench query --queries Q find({k: <random existing value>}) drained, Q times after
//                                 --warmup W untimed; median/p90 latency. Each must return
//                                 exactly one document. --hint-natural 1 forces a collection
//                                 scan (the figure without the index).
//
// Common options: --uri URI --docs N --seed 1
#include <mongoc/mongoc.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"

namespace {

using hourglass::bench::OpenUri;
using hourglass::bench::ParseFlags;
using hourglass::bench::Percentile;
using hourglass::bench::RunCommand;

using Clock = std::chrono::steady_clock;
constexpr int kBatch = 1000;

struct Options {
  std::string mode;
  std::string uri = "mongodb://127.0.0.1:27017/?directConnection=true";
  int64_t docs = 1000000;
  int queries = 200;
  int warmup = 50;
  bool hint_natural = false;
  uint64_t seed = 1;
};

// k values: a random permutation of 0..docs-1, so every k exists exactly once.
std::vector<int64_t> Keys(const Options& o) {
  std::vector<int64_t> k(static_cast<size_t>(o.docs));
  std::iota(k.begin(), k.end(), 0);
  std::mt19937_64 rng(o.seed);
  std::shuffle(k.begin(), k.end(), rng);
  return k;
}

int Load(const Options& o, mongoc_client_t* client) {
  bson_t* drop = BCON_NEW("drop", BCON_UTF8("lookup"));
  RunCommand(client, "indexbench", drop, nullptr, /*quiet=*/true);
  bson_destroy(drop);
  // The index exists before the inserts, which maintain it (building it afterwards over 10M
  // documents would be one command longer than the driver's socket timeout).
  auto t0 = Clock::now();
  bson_t* create = BCON_NEW("createIndexes", BCON_UTF8("lookup"), "indexes", "[", "{", "key", "{",
                            "k", BCON_INT32(1), "}", "name", BCON_UTF8("k_1"), "}", "]");
  bool ok = RunCommand(client, "indexbench", create);
  bson_destroy(create);
  if (!ok) return 1;
  double index_s = std::chrono::duration<double>(Clock::now() - t0).count();
  mongoc_collection_t* coll = mongoc_client_get_collection(client, "indexbench", "lookup");
  std::vector<int64_t> keys = Keys(o);
  std::mt19937_64 rng(o.seed + 1);
  std::uniform_real_distribution<double> uni(0.0, 100.0);
  bson_t* insert_opts = BCON_NEW("validate", BCON_BOOL(false));
  auto start = Clock::now();
  int rc = 0;
  for (int64_t first = 0; first < o.docs && rc == 0; first += kBatch) {
    const int64_t n = std::min<int64_t>(kBatch, o.docs - first);
    bson_t** docs = new bson_t*[n];  // (not a vector: bson_t's alignment attribute)
    for (int64_t i = first; i < first + n; ++i) {
      bson_t* d = bson_new();
      BSON_APPEND_INT64(d, "_id", i);
      BSON_APPEND_INT64(d, "k", keys[static_cast<size_t>(i)]);
      std::string host = "host_" + std::to_string(i % 100);
      BSON_APPEND_UTF8(d, "host", host.c_str());
      BSON_APPEND_DOUBLE(d, "v", uni(rng));
      docs[i - first] = d;
    }
    bson_error_t err;
    if (!mongoc_collection_insert_many(coll, const_cast<const bson_t**>(docs),
                                       static_cast<size_t>(n), insert_opts, nullptr, &err)) {
      std::fprintf(stderr, "insertMany failed: %s\n", err.message);
      rc = 1;
    }
    for (int64_t i = 0; i < n; ++i) bson_destroy(docs[i]);
    delete[] docs;
  }
  double insert_s = std::chrono::duration<double>(Clock::now() - start).count();
  bson_destroy(insert_opts);
  mongoc_collection_destroy(coll);
  if (rc != 0) return rc;
  std::printf("RESULT load docs=%lld insert_seconds=%.1f index_create_seconds=%.1f\n",
              static_cast<long long>(o.docs), insert_s, index_s);
  return 0;
}

int Query(const Options& o, mongoc_client_t* client) {
  mongoc_collection_t* coll = mongoc_client_get_collection(client, "indexbench", "lookup");
  bson_t* opts =
      o.hint_natural ? BCON_NEW("hint", "{", "$natural", BCON_INT32(1), "}") : bson_new();
  std::mt19937_64 rng(o.seed + 2);
  std::vector<double> lat_us;
  int rc = 0;
  for (int i = 0; i < o.warmup + o.queries; ++i) {
    const int64_t k = static_cast<int64_t>(rng() % static_cast<uint64_t>(o.docs));
    bson_t* filter = BCON_NEW("k", BCON_INT64(k));
    auto t0 = Clock::now();
    mongoc_cursor_t* cursor = mongoc_collection_find_with_opts(coll, filter, opts, nullptr);
    const bson_t* doc;
    int n = 0;
    while (mongoc_cursor_next(cursor, &doc)) ++n;
    double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    bson_error_t err;
    if (mongoc_cursor_error(cursor, &err) || n != 1) {
      std::fprintf(stderr, "find {k: %lld} returned %d documents (%s)\n", static_cast<long long>(k),
                   n, err.message);
      rc = 1;
    }
    mongoc_cursor_destroy(cursor);
    bson_destroy(filter);
    if (rc != 0) break;
    if (i >= o.warmup) lat_us.push_back(us);
  }
  bson_destroy(opts);
  mongoc_collection_destroy(coll);
  if (rc != 0) return rc;
  std::printf("RESULT query docs=%lld runs=%d hint_natural=%d median_ms=%.3f p90_ms=%.3f\n",
              static_cast<long long>(o.docs), o.queries, o.hint_natural ? 1 : 0,
              Percentile(lat_us, 0.5) / 1000, Percentile(lat_us, 0.9) / 1000);
  return 0;
}

bool ParseArgs(int argc, char** argv, Options* o) {
  if (argc < 2) return false;
  o->mode = argv[1];
  bool ok = ParseFlags(argc, argv, 2, [&](std::string_view a, const char* v) {
    if (a == "--uri") {
      o->uri = v;
    } else if (a == "--docs") {
      o->docs = std::atoll(v);
    } else if (a == "--queries") {
      o->queries = std::atoi(v);
    } else if (a == "--warmup") {
      o->warmup = std::atoi(v);
    } else if (a == "--hint-natural") {
      o->hint_natural = std::atoi(v) != 0;
    } else if (a == "--seed") {
      o->seed = std::strtoull(v, nullptr, 10);
    } else {
      return false;
    }
    return true;
  });
  return ok && (o->mode == "load" || o->mode == "query") && o->docs > 0 && o->queries > 0 &&
         o->warmup >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: %s load|query [--uri URI] [--docs N] [--queries Q] [--warmup W] "
                 "[--hint-natural 0|1] [--seed S]\n",
                 argv[0]);
    return 2;
  }
  mongoc_uri_t* uri = OpenUri(o.uri);
  if (uri == nullptr) return 2;
  mongoc_client_t* client = mongoc_client_new_from_uri(uri);
  int rc = o.mode == "load" ? Load(o, client) : Query(o, client);
  std::fflush(stdout);
  mongoc_client_destroy(client);
  mongoc_uri_destroy(uri);
  mongoc_cleanup();
  return rc;
}
