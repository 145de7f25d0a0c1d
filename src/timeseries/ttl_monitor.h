// The TTL monitor (spec §9): a background thread that, every `ttlMonitorSleepSecs` seconds
// (default 60; startup and runtime parameter; `ttlMonitorEnabled` pauses it), deletes the whole
// buckets of time-series collections with `expireAfterSeconds` once every measurement they can
// hold has expired: buckets whose start time is at most now - expireAfterSeconds -
// bucketMaxSpanSeconds. Buckets whose start time does not fit the 32-bit _id timestamp in order
// (before 1970 or after 2038) are found by a second scan that checks control.max instead.
// TTL indexes of regular collections delete the documents their index dates expire; a
// time-series TTL index (on control.min.<time>, with a partial filter on the meta field) deletes
// the buckets of matching series by the same rule as the collection-level setting.
//
// Thread-safety: Start/Stop from one thread; RunOnce may be called from any thread (tests), but
// not concurrently with itself.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "base/status.h"
#include "catalog/catalog.h"
#include "storage/kv_engine.h"

namespace hourglass::timeseries {

struct TtlStats {
  std::atomic<int64_t> passes{0};
  std::atomic<int64_t> deleted_documents{0};
};

class TtlMonitor {
 public:
  TtlMonitor(storage::KvEngine* engine, catalog::Catalog* catalog);
  ~TtlMonitor();

  // Registers ttlMonitorSleepSecs and ttlMonitorEnabled (idempotent).
  static void RegisterParameters();

  void Start();
  void Stop();
  // One pass over every time-series collection at time `now_millis`; returns buckets deleted.
  StatusWith<int64_t> RunOnce(int64_t now_millis);

  static TtlStats& Stats();

 private:
  storage::KvEngine* engine_;
  catalog::Catalog* catalog_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

}  // namespace hourglass::timeseries
