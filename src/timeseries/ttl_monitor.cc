#include "timeseries/ttl_monitor.h"

#include "base/clock.h"
#include "base/logger.h"
#include "base/server_parameters.h"
#include "storage/record_id.h"
#include "timeseries/bucket_scan.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::timeseries {

using bson::BsonObj;

namespace {
ServerParameter* SleepSecs() {
  auto& reg = ServerParameterRegistry::Get();
  if (ServerParameter* p = reg.Find("ttlMonitorSleepSecs")) return p;
  return reg.Register("ttlMonitorSleepSecs", int32_t{60}, true, true, [](const ParameterValue& v) {
    if (std::get<int32_t>(v) < 1) {
      return Status(ErrorCode::kBadValue, "ttlMonitorSleepSecs must be at least 1");
    }
    return Status::OK();
  });
}

ServerParameter* Enabled() {
  auto& reg = ServerParameterRegistry::Get();
  if (ServerParameter* p = reg.Find("ttlMonitorEnabled")) return p;
  return reg.Register("ttlMonitorEnabled", true, true, true);
}

int64_t FloorSeconds(int64_t millis) {
  return millis >= 0 ? millis / 1000 : -((-millis + 999) / 1000);
}

// Deletes the buckets of `buckets` in the key range [lo, hi] whose control.max.<time> is at most
// `expired_before` (inclusive). Returns how many were deleted.
StatusWith<int64_t> DeleteExpired(storage::KvEngine* engine, catalog::Collection& buckets,
                                  const std::string& time_field, const std::string& lo,
                                  const std::string& hi, int64_t expired_before) {
  int64_t deleted = 0;
  auto expired = [&](const BsonObj& doc) {
    bson::BsonElement max_t = doc["control"].Obj()["max"].Obj()[time_field];
    return max_t.type() == bson::BsonType::kDate && max_t.DateMillis() <= expired_before;
  };
  HG_RETURN_IF_ERROR(ForEachBucketChunk(
      engine, buckets, lo, hi, expired,
      [&](const std::vector<catalog::Record>& chunk, bool*) -> Status {
        std::vector<const catalog::Record*> removed;
        for (const auto& rec : chunk) removed.push_back(&rec);
        HG_RETURN_IF_ERROR(RemoveAndRewriteBuckets(engine, buckets, removed, {}));
        deleted += static_cast<int64_t>(chunk.size());
        return Status::OK();
      }));
  return deleted;
}
}  // namespace

TtlStats& TtlMonitor::Stats() {
  static TtlStats stats;
  return stats;
}

void TtlMonitor::RegisterParameters() {
  (void)SleepSecs();
  (void)Enabled();
}

TtlMonitor::TtlMonitor(storage::KvEngine* engine, catalog::Catalog* catalog)
    : engine_(engine), catalog_(catalog) {
  RegisterParameters();
}

TtlMonitor::~TtlMonitor() { Stop(); }

void TtlMonitor::Start() {
  thread_ = std::thread([this] {
    SetThreadLogContext("TTLMonitor");
    std::unique_lock lk(mu_);
    while (!stop_) {
      cv_.wait_for(lk, std::chrono::seconds(SleepSecs()->GetInt()));
      if (stop_) break;
      if (!Enabled()->GetBool()) continue;
      lk.unlock();
      auto n = RunOnce(NowMillis());
      if (!n.ok()) {
        LOGW("INDEX", 22537, "TTL pass failed",
             "{\"error\":" + JsonQuote(n.status().ToString()) + "}");
      }
      lk.lock();
    }
  });
}

void TtlMonitor::Stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

StatusWith<int64_t> TtlMonitor::RunOnce(int64_t now_millis) {
  int64_t total = 0;
  for (const std::string& db : catalog_->ListDatabases()) {
    for (const auto& view : catalog_->ListCollections(db)) {
      const auto& e = view->entry();
      if (e.type != "timeseries") continue;
      bson::BsonElement expire = e.options["expireAfterSeconds"];
      if (!expire.IsNumber()) continue;
      auto buckets = catalog_->Lookup({e.nss.db, "system.buckets." + e.nss.coll});
      if (!buckets || buckets->IsView()) continue;
      auto options = TimeseriesOptions::FromBson(e.options["timeseries"].Obj());
      if (!options.ok()) continue;
      const int64_t expired_before = now_millis - expire.NumberLong() * 1000;
      // Buckets that started by this second hold nothing newer than expired_before.
      const int64_t bound_s =
          FloorSeconds(expired_before) - options.value().bucket_max_span_seconds;
      const std::string& tf = options.value().time_field;
      if (bound_s >= 0) {
        uint32_t hi = static_cast<uint32_t>(std::min<int64_t>(bound_s, 0x7fffffff));
        HG_ASSIGN_OR_RETURN(
            int64_t n, DeleteExpired(engine_, *buckets, tf,
                                     storage::EncodeRecordId(catalog::ClusteredRecordIdLow(0)),
                                     storage::EncodeRecordId(catalog::ClusteredRecordIdHigh(hi)),
                                     expired_before));
        total += n;
      }
      // Start times before 1970 (and after 2038) wrap into the upper half of the 32-bit
      // timestamp: check their control.max one by one.
      HG_ASSIGN_OR_RETURN(
          int64_t n,
          DeleteExpired(engine_, *buckets, tf,
                        storage::EncodeRecordId(catalog::ClusteredRecordIdLow(0x80000000u)),
                        storage::EncodeRecordId(catalog::ClusteredRecordIdHigh(0xffffffffu)),
                        expired_before));
      total += n;
    }
  }
  Stats().passes++;
  Stats().deleted_documents += total;
  return total;
}

}  // namespace hourglass::timeseries
