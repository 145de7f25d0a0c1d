// Time-series ingest benchmark with the TSBS "cpu-only" devops shape, driven through libmongoc (a
// real MongoDB driver) against any server given by URI. One invocation does one step, so that
// bench/ts_run.sh can give every ingest a fresh server and checkpoint (restart) the server
// between ingest and the storage figure:
//
//   ts_bench ingest  --conns N   drop + create the time-series collection, build every insertMany
//                                batch in memory, then time inserting all of them with N
//                                connections (measurements/s)
//   ts_bench load                drop + create, then insert every measurement with one connection,
//                                generating batches as it goes (large datasets; untimed)
//   ts_bench storage             {fsync: 1} if the server has it, then collStats on the
//                                collection: bytes on disk per numeric field value
//   ts_bench query   --queries Q one-host-one-hour find latency (median, p90, p99 of Q runs);
//                                --hint-natural 1 hints {$natural: 1} (no index)
//
// Common options: --uri URI --db tsbench --coll cpu --hosts 100 --hours 24 --seed 1
// --minutes M (ingest, load): M minutes of data instead of whole hours (many hosts, little time)
// --block-compressor NAME (ingest, load): create the collection with
// storageEngine.wiredTiger.configString "block_compressor=NAME" (default: the server's choice)
//
// Data (as TSBS generates it for cpu-only): per host a `tags` object of 10 strings (hostname
// "host_<i>", region, datacenter, rack, os, arch, team, service, service_version,
// service_environment — drawn from TSBS's value lists with a fixed seed), 10 double fields
// usage_user ... usage_guest_nice (each a random walk with N(0,1) steps clamped to [0, 100],
// starting uniformly in [0, 100)), `time` from 2016-01-01T00:00:00Z every 10 s. Rows are emitted
// in time order, for each timestamp every host (TSBS order). Each document carries a client-made
// ObjectId `_id` (the driver would add one anyway; making it up front keeps that copy out of the
// timed region).
//
// Connections: with N > 1 the hosts are split round-robin (host i goes to connection i % N), each
// connection inserting its own hosts' rows in time order, so every series arrives in time order
// and no bucket is contended by two connections. A batch holds 1,000 consecutive rows of that
// stream (with 100 hosts and 1 connection: 10 timestamps x 100 hosts; with 4: 40 x 25).
#include <mongoc/mongoc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"

namespace {

using hourglass::bench::OpenUri;
using hourglass::bench::ParseFlags;
using hourglass::bench::Percentile;
using hourglass::bench::RunCommand;

using Clock = std::chrono::steady_clock;

constexpr int kBatch = 1000;
constexpr int kIntervalMs = 10 * 1000;
constexpr int64_t kStartMs = 1451606400000LL;  // 2016-01-01T00:00:00Z, TSBS's default start
constexpr int kFields = 10;
const char* const kFieldNames[kFields] = {
    "usage_user", "usage_system",  "usage_idle",  "usage_nice",  "usage_iowait",
    "usage_irq",  "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"};

struct Options {
  std::string mode;
  std::string uri = "mongodb://127.0.0.1:27017/?directConnection=true";
  std::string db = "tsbench";
  std::string coll = "cpu";
  int hosts = 100;
  int hours = 24;
  int minutes = 0;  // if set, the data's span instead of `hours`
  int conns = 1;
  int queries = 200;
  int warmup = 50;
  int batch_size = 0;         // find batchSize; 0 = the server's default first batch (101)
  bool hint_natural = false;  // query: hint {$natural: 1} (no index)
  uint64_t seed = 1;
  std::string block_compressor;  // empty: the server's default for time-series collections
};

int64_t SpanSeconds(const Options& o) {
  return o.minutes > 0 ? int64_t{o.minutes} * 60 : int64_t{o.hours} * 3600;
}

int64_t Measurements(const Options& o) {
  return static_cast<int64_t>(o.hosts) * SpanSeconds(o) / (kIntervalMs / 1000);
}

// ---- data generation (TSBS cpu-only) ----

struct Host {
  std::string tag_values[10];
  double fields[kFields];
};

const char* const kTagNames[10] = {
    "hostname", "region",          "datacenter",         "rack", "os", "arch", "team",
    "service",  "service_version", "service_environment"};

std::vector<Host> MakeHosts(const Options& o, std::mt19937_64& rng) {
  struct Region {
    const char* name;
    std::vector<const char*> dcs;
  };
  static const Region kRegions[] = {
      {"us-east-1", {"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"}},
      {"us-west-1", {"us-west-1a", "us-west-1b"}},
      {"us-west-2", {"us-west-2a", "us-west-2b", "us-west-2c"}},
      {"eu-west-1", {"eu-west-1a", "eu-west-1b", "eu-west-1c"}},
      {"eu-central-1", {"eu-central-1a", "eu-central-1b"}},
      {"ap-southeast-1", {"ap-southeast-1a", "ap-southeast-1b"}},
      {"ap-southeast-2", {"ap-southeast-2a", "ap-southeast-2b"}},
      {"ap-northeast-1", {"ap-northeast-1a", "ap-northeast-1c"}},
      {"sa-east-1", {"sa-east-1a", "sa-east-1b", "sa-east-1c"}},
  };
  static const char* const kOs[] = {"Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"};
  static const char* const kArch[] = {"x64", "x86"};
  static const char* const kTeam[] = {"SF", "NYC", "LON", "CHI"};
  static const char* const kEnv[] = {"production", "staging", "test"};
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  std::uniform_real_distribution<double> uni(0.0, 100.0);
  std::vector<Host> hosts(o.hosts);
  for (int i = 0; i < o.hosts; ++i) {
    Host& h = hosts[i];
    const Region& r = kRegions[pick(std::size(kRegions))];
    h.tag_values[0] = "host_" + std::to_string(i);
    h.tag_values[1] = r.name;
    h.tag_values[2] = r.dcs[pick(r.dcs.size())];
    h.tag_values[3] = std::to_string(pick(100));
    h.tag_values[4] = kOs[pick(std::size(kOs))];
    h.tag_values[5] = kArch[pick(std::size(kArch))];
    h.tag_values[6] = kTeam[pick(std::size(kTeam))];
    h.tag_values[7] = std::to_string(pick(20));
    h.tag_values[8] = std::to_string(pick(2));
    h.tag_values[9] = kEnv[pick(std::size(kEnv))];
    for (double& f : h.fields) f = uni(rng);
  }
  return hosts;
}

// One insertMany: `n` documents owned by this batch.
struct Batch {
  bson_t** docs = nullptr;
  int n = 0;
};

void AppendMeasurement(bson_t* doc, const Host& h, int64_t time_ms) {
  bson_oid_t oid;
  bson_oid_init(&oid, nullptr);
  BSON_APPEND_OID(doc, "_id", &oid);
  BSON_APPEND_DATE_TIME(doc, "time", time_ms);
  bson_t tags;
  BSON_APPEND_DOCUMENT_BEGIN(doc, "tags", &tags);
  for (int t = 0; t < 10; ++t) BSON_APPEND_UTF8(&tags, kTagNames[t], h.tag_values[t].c_str());
  bson_append_document_end(doc, &tags);
  for (int f = 0; f < kFields; ++f) BSON_APPEND_DOUBLE(doc, kFieldNames[f], h.fields[f]);
}

// The measurement stream in TSBS order (for each timestamp every host), split by connection: host
// i goes to connection i % conns. Next(c) returns connection c's next batch of up to 1,000
// documents (n == 0 at the end). Generating lazily lets `load` stream datasets that do not fit in
// memory; `ingest` builds every batch up front with BuildBatches.
class Generator {
 public:
  explicit Generator(const Options& o)
      : o_(o), rng_(o.seed), hosts_(MakeHosts(o, rng_)), open_(o.conns), ready_(o.conns) {}

  Batch Next(int c) {
    while (ready_[c].empty() && !done_) Step();
    if (ready_[c].empty()) {
      Batch last = open_[c];
      open_[c] = Batch{};
      return last;
    }
    Batch b = ready_[c].front();
    ready_[c].pop_front();
    return b;
  }

 private:
  // Emits one timestamp: a row for every host.
  void Step() {
    const int64_t ticks = SpanSeconds(o_) / (kIntervalMs / 1000);
    if (tick_ >= ticks) {
      done_ = true;
      return;
    }
    const int64_t time_ms = kStartMs + tick_ * kIntervalMs;
    for (int i = 0; i < o_.hosts; ++i) {
      Host& h = hosts_[i];
      if (tick_ > 0) {
        for (double& f : h.fields) f = std::clamp(f + step_(rng_), 0.0, 100.0);
      }
      const int c = i % o_.conns;
      Batch& b = open_[c];
      if (b.docs == nullptr) b.docs = new bson_t*[kBatch];
      b.docs[b.n] = bson_new();
      AppendMeasurement(b.docs[b.n], h, time_ms);
      if (++b.n == kBatch) {
        ready_[c].push_back(b);
        b = Batch{};
      }
    }
    ++tick_;
  }

  const Options& o_;
  std::mt19937_64 rng_;
  std::vector<Host> hosts_;
  std::normal_distribution<double> step_{0.0, 1.0};
  int64_t tick_ = 0;
  bool done_ = false;
  std::vector<Batch> open_;               // per connection: the batch being filled
  std::vector<std::deque<Batch>> ready_;  // per connection: full batches not yet taken
};

// Builds every batch of every connection: result[c] is connection c's batches in insert order.
std::vector<std::vector<Batch>> BuildBatches(const Options& o) {
  Generator gen(o);
  std::vector<std::vector<Batch>> out(o.conns);
  for (int c = 0; c < o.conns; ++c) {
    for (Batch b = gen.Next(c); b.n > 0; b = gen.Next(c)) out[c].push_back(b);
  }
  return out;
}

void FreeBatch(Batch& b) {
  for (int i = 0; i < b.n; ++i) bson_destroy(b.docs[i]);
  delete[] b.docs;
  b = Batch{};
}

void FreeBatches(std::vector<std::vector<Batch>>& all) {
  for (auto& conn : all) {
    for (Batch& b : conn) FreeBatch(b);
  }
  all.clear();
}

// ---- helpers ----

double DocNumber(const bson_t* doc, const char* path) {
  bson_iter_t it, found;
  if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &found) &&
      BSON_ITER_HOLDS_NUMBER(&found)) {
    return static_cast<double>(bson_iter_as_int64(&found));
  }
  return -1;
}

// ---- ingest ----

// Drops and re-creates the time-series collection.
bool CreateCollection(const Options& o, mongoc_client_pool_t* pool) {
  mongoc_client_t* admin = mongoc_client_pool_pop(pool);
  bson_t* drop = BCON_NEW("drop", BCON_UTF8(o.coll.c_str()));
  RunCommand(admin, o.db.c_str(), drop, nullptr, /*quiet=*/true);  // NamespaceNotFound is fine
  bson_destroy(drop);
  bson_t* create = BCON_NEW("create", BCON_UTF8(o.coll.c_str()), "timeseries", "{", "timeField",
                            BCON_UTF8("time"), "metaField", BCON_UTF8("tags"), "granularity",
                            BCON_UTF8("seconds"), "}");
  if (!o.block_compressor.empty()) {
    const std::string config = "block_compressor=" + o.block_compressor;
    BCON_APPEND(create, "storageEngine", "{", "wiredTiger", "{", "configString",
                BCON_UTF8(config.c_str()), "}", "}");
  }
  bool ok = RunCommand(admin, o.db.c_str(), create, nullptr);
  bson_destroy(create);
  mongoc_client_pool_push(pool, admin);
  return ok;
}

int Ingest(const Options& o, mongoc_client_pool_t* pool) {
  if (!CreateCollection(o, pool)) return 1;

  auto build_start = Clock::now();
  std::vector<std::vector<Batch>> batches = BuildBatches(o);
  double build_s = std::chrono::duration<double>(Clock::now() - build_start).count();
  int64_t total = 0;
  for (auto& conn : batches)
    for (auto& b : conn) total += b.n;

  // Client-side key validation is skipped: the documents are generated, and the figure is the
  // server's ingest rate.
  bson_t* insert_opts = BCON_NEW("validate", BCON_BOOL(false));
  std::atomic<int> ready{0};
  std::atomic<bool> go{false}, failed{false};
  std::vector<std::thread> workers;
  for (int c = 0; c < o.conns; ++c) {
    workers.emplace_back([&, c] {
      mongoc_client_t* client = mongoc_client_pool_pop(pool);
      bson_t* ping = BCON_NEW("ping", BCON_INT32(1));
      if (!RunCommand(client, "admin", ping, nullptr)) failed = true;  // handshake before timing
      bson_destroy(ping);
      mongoc_collection_t* coll =
          mongoc_client_get_collection(client, o.db.c_str(), o.coll.c_str());
      ++ready;
      while (!go) std::this_thread::yield();
      for (const Batch& b : batches[c]) {
        if (failed) break;
        bson_error_t err;
        if (!mongoc_collection_insert_many(coll, const_cast<const bson_t**>(b.docs),
                                           static_cast<size_t>(b.n), insert_opts, nullptr, &err)) {
          std::fprintf(stderr, "insertMany failed: %s\n", err.message);
          failed = true;
        }
      }
      mongoc_collection_destroy(coll);
      mongoc_client_pool_push(pool, client);
    });
  }
  while (ready < o.conns) std::this_thread::yield();
  auto start = Clock::now();
  go = true;
  for (auto& w : workers) w.join();
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  bson_destroy(insert_opts);
  FreeBatches(batches);
  if (failed) {
    std::printf("RESULT ingest conns=%d FAILED\n", o.conns);
    return 1;
  }
  std::printf(
      "RESULT ingest conns=%d measurements=%lld seconds=%.3f measurements_per_s=%.0f "
      "field_values_per_s=%.0f build_seconds=%.2f\n",
      o.conns, static_cast<long long>(total), secs, static_cast<double>(total) / secs,
      static_cast<double>(total) * kFields / secs, build_s);
  return 0;
}

// ---- load ----

// Untimed bulk load of a dataset too large to prebuild (e.g. 30 days): one connection, batches
// generated as they are inserted.
int Load(const Options& o, mongoc_client_pool_t* pool) {
  if (!CreateCollection(o, pool)) return 1;
  Options one = o;
  one.conns = 1;
  Generator gen(one);
  mongoc_client_t* client = mongoc_client_pool_pop(pool);
  mongoc_collection_t* coll = mongoc_client_get_collection(client, o.db.c_str(), o.coll.c_str());
  bson_t* insert_opts = BCON_NEW("validate", BCON_BOOL(false));
  auto start = Clock::now();
  int64_t total = 0;
  int rc = 0;
  for (Batch b = gen.Next(0); b.n > 0; b = gen.Next(0)) {
    bson_error_t err;
    bool ok = mongoc_collection_insert_many(coll, const_cast<const bson_t**>(b.docs),
                                            static_cast<size_t>(b.n), insert_opts, nullptr, &err);
    total += b.n;
    FreeBatch(b);
    if (!ok) {
      std::fprintf(stderr, "insertMany failed: %s\n", err.message);
      rc = 1;
      break;
    }
  }
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  bson_destroy(insert_opts);
  mongoc_collection_destroy(coll);
  mongoc_client_pool_push(pool, client);
  if (rc == 0) {
    std::printf("RESULT load measurements=%lld seconds=%.1f\n", static_cast<long long>(total),
                secs);
  }
  return rc;
}

// ---- storage ----

int Storage(const Options& o, mongoc_client_pool_t* pool) {
  mongoc_client_t* client = mongoc_client_pool_pop(pool);
  bson_t* fsync = BCON_NEW("fsync", BCON_INT32(1));
  bool fsynced = RunCommand(client, "admin", fsync, nullptr, /*quiet=*/true);
  bson_destroy(fsync);
  bson_t* cmd = BCON_NEW("collStats", BCON_UTF8(o.coll.c_str()));
  bson_t reply;
  bool ok = RunCommand(client, o.db.c_str(), cmd, &reply);
  bson_destroy(cmd);
  mongoc_client_pool_push(pool, client);
  if (!ok) return 1;
  double storage = DocNumber(&reply, "storageSize");
  double total = DocNumber(&reply, "totalSize");
  double size = DocNumber(&reply, "size");
  double buckets = DocNumber(&reply, "timeseries.bucketCount");
  bson_destroy(&reply);
  // The denominator is the numeric field values only: measurements x 10 usage_* fields. The time,
  // _id and tags columns/meta are overhead carried in the numerator.
  const double values = static_cast<double>(Measurements(o)) * kFields;
  std::printf(
      "RESULT storage fsync=%s field_values=%.0f storageSize=%.0f totalSize=%.0f size=%.0f "
      "buckets=%.0f storage_bytes_per_value=%.3f total_bytes_per_value=%.3f "
      "uncompressed_bytes_per_value=%.3f\n",
      fsynced ? "ok" : "unsupported", values, storage, total, size, buckets, storage / values,
      total / values, size / values);
  return 0;
}

// ---- query ----

// One find; returns the number of documents drained, or -1.
int64_t OneQuery(mongoc_collection_t* coll, const Options& o, int host, int64_t from_ms,
                 const bson_t* opts) {
  std::string hostname = "host_" + std::to_string(host);
  bson_t* filter =
      BCON_NEW("tags.hostname", BCON_UTF8(hostname.c_str()), "time", "{", "$gte",
               BCON_DATE_TIME(from_ms), "$lt", BCON_DATE_TIME(from_ms + 3600 * 1000), "}");
  mongoc_cursor_t* cursor = mongoc_collection_find_with_opts(coll, filter, opts, nullptr);
  const bson_t* doc;
  int64_t n = 0;
  while (mongoc_cursor_next(cursor, &doc)) ++n;
  bson_error_t err;
  if (mongoc_cursor_error(cursor, &err)) {
    std::fprintf(stderr, "find failed: %s\n", err.message);
    n = -1;
  }
  mongoc_cursor_destroy(cursor);
  bson_destroy(filter);
  (void)o;
  return n;
}

int Query(const Options& o, mongoc_client_pool_t* pool) {
  mongoc_client_t* client = mongoc_client_pool_pop(pool);
  mongoc_collection_t* coll = mongoc_client_get_collection(client, o.db.c_str(), o.coll.c_str());
  bson_t* opts = bson_new();
  if (o.batch_size > 0) BSON_APPEND_INT32(opts, "batchSize", o.batch_size);
  if (o.hint_natural) BCON_APPEND(opts, "hint", "{", "$natural", BCON_INT32(1), "}");
  // A random host and a random 1-hour window [t, t + 1h) starting on a 10 s boundary anywhere in
  // the data (as TSBS's single-groupby-*-1-1 windows are not hour-aligned), so a query usually
  // touches 2 buckets and always matches exactly 360 measurements.
  std::mt19937_64 rng(o.seed + 1000);
  const int64_t windows = static_cast<int64_t>(o.hours - 1) * 360 + 1;
  std::vector<double> lat_us;
  int rc = 0;
  int64_t expected = 3600 / (kIntervalMs / 1000);
  for (int i = 0; i < o.warmup + o.queries; ++i) {
    int host = static_cast<int>(rng() % static_cast<uint64_t>(o.hosts));
    int64_t from =
        kStartMs + static_cast<int64_t>(rng() % static_cast<uint64_t>(windows)) * kIntervalMs;
    auto t0 = Clock::now();
    int64_t n = OneQuery(coll, o, host, from, opts);
    double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (n != expected) {
      std::fprintf(stderr, "query host_%d from %lld returned %lld documents, expected %lld\n", host,
                   static_cast<long long>(from), static_cast<long long>(n),
                   static_cast<long long>(expected));
      rc = 1;
      break;
    }
    if (i >= o.warmup) lat_us.push_back(us);
  }
  bson_destroy(opts);
  mongoc_collection_destroy(coll);
  mongoc_client_pool_push(pool, client);
  if (rc != 0) {
    std::printf("RESULT query FAILED\n");
    return rc;
  }
  std::printf(
      "RESULT query runs=%d docs=%lld median_ms=%.3f p90_ms=%.3f p99_ms=%.3f min_ms=%.3f "
      "max_ms=%.3f\n",
      o.queries, static_cast<long long>(expected), Percentile(lat_us, 0.5) / 1000,
      Percentile(lat_us, 0.9) / 1000, Percentile(lat_us, 0.99) / 1000, Percentile(lat_us, 0) / 1000,
      Percentile(lat_us, 1) / 1000);
  return 0;
}

bool ParseArgs(int argc, char** argv, Options* o) {
  if (argc < 2) return false;
  o->mode = argv[1];
  bool ok = ParseFlags(argc, argv, 2, [&](std::string_view a, const char* v) {
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
    } else if (a == "--minutes") {
      o->minutes = std::atoi(v);
    } else if (a == "--block-compressor") {
      o->block_compressor = v;
    } else if (a == "--conns") {
      o->conns = std::atoi(v);
    } else if (a == "--queries") {
      o->queries = std::atoi(v);
    } else if (a == "--warmup") {
      o->warmup = std::atoi(v);
    } else if (a == "--batch-size") {
      o->batch_size = std::atoi(v);
    } else if (a == "--seed") {
      o->seed = std::strtoull(v, nullptr, 10);
    } else if (a == "--hint-natural") {
      o->hint_natural = std::atoi(v) != 0;
    } else {
      return false;
    }
    return true;
  });
  return ok &&
         (o->mode == "ingest" || o->mode == "load" || o->mode == "storage" || o->mode == "query") &&
         o->hosts > 0 && o->hours > 0 && o->minutes >= 0 &&
         (o->minutes == 0 || o->mode == "ingest" || o->mode == "load") && o->conns > 0 &&
         o->conns <= o->hosts && o->queries > 0 && o->warmup >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  if (!ParseArgs(argc, argv, &opts)) {
    std::fprintf(
        stderr,
        "usage: %s ingest|load|storage|query [--uri URI] [--db D] [--coll C] [--hosts 100] "
        "[--hours 24] [--minutes M] [--seed 1] [--conns N] [--queries 200] [--warmup 50] "
        "[--batch-size B] [--hint-natural 0|1] [--block-compressor snappy|zlib|zstd|none]\n",
        argv[0]);
    return 2;
  }
  mongoc_uri_t* uri = OpenUri(opts.uri);
  if (uri == nullptr) return 2;
  mongoc_client_pool_t* pool = mongoc_client_pool_new(uri);
  mongoc_client_pool_max_size(pool, static_cast<uint32_t>(opts.conns + 1));
  int rc = 0;
  if (opts.mode == "ingest") {
    rc = Ingest(opts, pool);
  } else if (opts.mode == "load") {
    rc = Load(opts, pool);
  } else if (opts.mode == "storage") {
    rc = Storage(opts, pool);
  } else {
    rc = Query(opts, pool);
  }
  std::fflush(stdout);
  mongoc_client_pool_destroy(pool);
  mongoc_uri_destroy(uri);
  mongoc_cleanup();
  return rc;
}
