// Parse-and-plan time of the TSBS time-series aggregates, in process (issue 14's measure): no
// driver and no socket, so the figure is the server's own work per aggregate.
//
//   plan_bench [--hosts 100] [--hours 2] [--runs 3000] [--warmup 300] [--types a,b,...]
//
// Opens a storage engine in a temporary directory, creates tsbench.cpu as `ts_bench ingest` does
// (timeField `time`, metaField `tags`, granularity seconds), inserts `hours` hours of rows for
// `hosts` hosts at 10 s through the insert command, then runs each query type's plan-only
// instances (tsbs_query_set.h: windows 10 years past the data) through the command dispatcher
// as a connection would. Each aggregate parses, resolves the namespace, plans, opens its read,
// finds no bucket and replies with an empty batch. Prints, per query type, the median and p90
// microseconds per aggregate:
//   RESULT plan double-groupby-1 median_us=12.3 p90_us=14.0
// Built against the command layer's test-facing entry point (RunCommandRequest), so the same
// file builds against older trees for A/B runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/logger.h"
#include "bench_args.h"
#include "bson/bson.h"
#include "catalog/catalog.h"
#include "commands/dispatcher.h"
#include "storage/kv_engine.h"
#include "timeseries/bucket_catalog.h"
#include "tsbs_query_set.h"
#if __has_include("exec/cursor_manager.h")
#include "exec/cursor_manager.h"
using CursorManagerType = hourglass::exec::CursorManager;
#else
#include "commands/cursor_manager.h"
using CursorManagerType = hourglass::commands::CursorManager;
#endif

namespace {

using hourglass::bench::kFields;
using hourglass::bench::kHourMs;
using hourglass::bench::kIntervalMs;
using hourglass::bench::kStartMs;
using hourglass::bench::Percentile;
using hourglass::bson::BsonBuilder;
using hourglass::bson::BsonObj;
using Clock = std::chrono::steady_clock;

struct Options : hourglass::bench::QuerySetOptions {
  int runs = 3000;
  int warmup = 300;
  std::vector<std::string> types;
};

// The server's state in one process, wired as hourglassd wires it.
struct InProcessServer {
  std::unique_ptr<hourglass::storage::KvEngine> engine;
  std::unique_ptr<hourglass::catalog::Catalog> catalog;
  std::unique_ptr<hourglass::timeseries::BucketCatalog> buckets;
  CursorManagerType cursors;
  hourglass::commands::ServiceContext service;
  hourglass::commands::ClientState client;

  bool Open(const std::string& dbpath) {
    hourglass::storage::EngineOptions opts;
    opts.dbpath = dbpath;
    opts.cache_size_mb = 256;
    auto e = hourglass::storage::KvEngine::Open(opts);
    if (!e.ok()) return Fail(e.status().ToString());
    engine = std::move(e).value();
    auto c = hourglass::catalog::Catalog::Open(engine.get());
    if (!c.ok()) return Fail(c.status().ToString());
    catalog = std::move(c).value();
    buckets = std::make_unique<hourglass::timeseries::BucketCatalog>(int64_t{256} << 20);
    service.engine = engine.get();
    service.catalog = catalog.get();
    service.cursors = &cursors;
    service.bucket_catalog = buckets.get();
    service.options.dbpath = dbpath;
    return true;
  }
  BsonObj Run(const BsonObj& cmd) {
    return hourglass::commands::RunCommandRequest(service, client, cmd, "tsbench").reply;
  }
  bool RunOk(const BsonObj& cmd) {
    BsonObj reply = Run(cmd);
    if (reply["ok"].NumberDouble() == 1.0) return true;
    return Fail(reply.ToJson());
  }
  static bool Fail(const std::string& what) {
    std::fprintf(stderr, "plan_bench: %s\n", what.c_str());
    return false;
  }
};

bool Load(InProcessServer& s, const Options& o) {
  auto create = hourglass::bson::FromJson(
      R"({"create": "cpu", "timeseries": {"timeField": "time", "metaField": "tags",
          "granularity": "seconds"}})");
  if (!s.RunOk(create.value())) return false;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> value(0, 100);
  const int64_t rows_per_host = o.hours * kHourMs / kIntervalMs;
  std::vector<BsonObj> batch;
  auto flush = [&] {
    BsonBuilder cmd;
    cmd.AppendString("insert", "cpu");
    size_t docs = cmd.OpenArray("documents");
    for (size_t i = 0; i < batch.size(); ++i) cmd.AppendObject(std::to_string(i), batch[i]);
    cmd.Close(docs);
    batch.clear();
    return s.RunOk(cmd.Obj());
  };
  for (int64_t r = 0; r < rows_per_host; ++r) {
    for (int h = 0; h < o.hosts; ++h) {
      BsonBuilder d;
      d.AppendDate("time", kStartMs + r * kIntervalMs);
      size_t tags = d.OpenObject("tags");
      d.AppendString("hostname", "host_" + std::to_string(h));
      d.Close(tags);
      for (const char* f : kFields) d.AppendDouble(f, value(rng));
      batch.push_back(d.Obj());
      if (batch.size() == 1000 && !flush()) return false;
    }
  }
  return batch.empty() || flush();
}

bool ParseArgs(int argc, char** argv, Options* o) {
  bool ok = hourglass::bench::ParseFlags(argc, argv, 1, [&](std::string_view a, const char* v) {
    if (a == "--hosts") {
      o->hosts = std::atoi(v);
    } else if (a == "--hours") {
      o->hours = std::atoi(v);
    } else if (a == "--runs") {
      o->runs = std::atoi(v);
    } else if (a == "--warmup") {
      o->warmup = std::atoi(v);
    } else if (a == "--types") {
      o->types = hourglass::bench::SplitList(v);
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
  o.hours = 2;
  o.plan_only = true;
  if (!ParseArgs(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: %s [--hosts 100] [--hours 2] [--runs 3000] [--warmup 300] [--types a,b]\n",
                 argv[0]);
    return 2;
  }
  // The load's inserts are slow enough to be logged; the figures are all this program prints.
  hourglass::Logger::Get().SetQuiet(true);
  char tmpl[] = "/tmp/plan_bench.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  const std::string dbpath = tmpl;
  int rc = 0;
  {
    InProcessServer s;
    if (!s.Open(dbpath) || !Load(s, o)) rc = 1;
    for (const auto& [name, gen] : hourglass::bench::QueryTypes()) {
      if (rc != 0) break;
      if (!o.types.empty() && std::find(o.types.begin(), o.types.end(), name) == o.types.end()) {
        continue;
      }
      if (name.starts_with("lastpoint") || name == "groupby-orderby-limit")
        continue;  // no time window
      std::mt19937_64 rng(7);
      std::vector<BsonObj> commands;
      for (int i = 0; i < o.warmup + o.runs; ++i) {
        auto pipeline = hourglass::bson::FromJson("{\"p\": " + gen(rng, o) + "}");
        if (!pipeline.ok()) return InProcessServer::Fail("bad pipeline: " + gen(rng, o)), 1;
        BsonBuilder cmd;
        cmd.AppendString("aggregate", "cpu");
        cmd.AppendArray("pipeline", pipeline.value()["p"].Obj());
        size_t cursor = cmd.OpenObject("cursor");
        cmd.Close(cursor);
        commands.push_back(cmd.Obj());
      }
      std::vector<double> micros;
      for (size_t i = 0; i < commands.size(); ++i) {
        auto t0 = Clock::now();
        BsonObj reply = s.Run(commands[i]);
        double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        if (reply["ok"].NumberDouble() != 1.0 ||
            !reply.GetPath("cursor.firstBatch").Obj().IsEmpty()) {
          InProcessServer::Fail("unexpected reply: " + reply.ToJson());
          rc = 1;
          break;
        }
        if (static_cast<int>(i) >= o.warmup) micros.push_back(us);
      }
      if (rc == 0) {
        std::printf("RESULT plan %s median_us=%.2f p90_us=%.2f\n", name.c_str(),
                    Percentile(micros, 0.5), Percentile(micros, 0.9));
        std::fflush(stdout);
      }
    }
  }
  std::filesystem::remove_all(dbpath);
  return rc;
}
