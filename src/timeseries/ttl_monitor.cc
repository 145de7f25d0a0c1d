#include "timeseries/ttl_monitor.h"

#include <limits>
#include <optional>

#include "base/clock.h"
#include "base/logger.h"
#include "base/server_parameters.h"
#include "base/write_gate.h"
#include "bson/key_string.h"
#include "catalog/op_observer.h"
#include "catalog/record_store.h"
#include "storage/write_conflict.h"
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

// Deletes the buckets of `buckets` in `range` whose control.max.<time> is at most
// `expired_before` (inclusive). Returns how many were deleted.
StatusWith<int64_t> DeleteExpired(storage::KvEngine* engine, catalog::Collection& buckets,
                                  const std::string& time_field, const catalog::RecordRange& range,
                                  int64_t expired_before) {
  int64_t deleted = 0;
  auto expired = [&](const BsonObj& doc) {
    bson::BsonElement max_t = doc["control"].Obj()["max"].Obj()[time_field];
    return max_t.type() == bson::BsonType::kDate && max_t.DateMillis() <= expired_before;
  };
  HG_RETURN_IF_ERROR(ForEachBucketChunk(
      engine, buckets, range, expired,
      [&](const std::vector<catalog::Record>& chunk) -> StatusWith<ChunkOutcome> {
        BucketChanges changes;
        changes.origin = catalog::Collection::WriteOrigin::kTtl;
        for (const auto& rec : chunk) changes.removed.push_back(&rec);
        HG_ASSIGN_OR_RETURN(auto applied, ApplyBucketChanges(engine, buckets, changes, nullptr));
        if (!applied) return ChunkOutcome::kReadAgain;  // a bucket took rows since it was read
        deleted += static_cast<int64_t>(chunk.size());
        return ChunkOutcome::kNext;
      }));
  return deleted;
}
std::string EncodeDate(int64_t millis, bool descending) {
  bson::KeyStringBuilder k;
  k.AppendDate(millis, descending);
  return k.Release();
}

// Deletes the documents of a regular collection whose TTL index `idx` holds a date in
// [`expired_from`, `expired_before`] (for arrays: any date, i.e. the earliest, as MongoDB does).
// The index is read as a key range, in transactions of a few hundred documents. Returns how
// many were deleted.
StatusWith<int64_t> DeleteExpiredByIndex(
    storage::KvEngine* engine, catalog::Collection& coll, const catalog::SecondaryIndex& idx,
    int64_t expired_before, int64_t expired_from = std::numeric_limits<int64_t>::min()) {
  const bool desc =
      idx.desc.key.FirstElement().IsNumber() && idx.desc.key.FirstElement().NumberDouble() < 0;
  if (expired_before < expired_from) return int64_t{0};
  std::string start = desc ? EncodeDate(expired_before, true) : EncodeDate(expired_from, false);
  std::optional<std::string> end = catalog::PrefixSuccessor(
      desc ? EncodeDate(expired_from, true) : EncodeDate(expired_before, false));
  int64_t deleted = 0;
  std::string last_key;
  bool started = false, more = true;
  while (more) {
    int64_t n = 0, bytes = 0;
    std::string chunk_last;
    bool chunk_more = false;
    HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&]() -> Status {
      n = bytes = 0;
      auto guard = coll.WriteGuard();
      auto session = engine->NewSession();
      storage::WriteUnit wu(*session);
      HG_RETURN_IF_ERROR(wu.begin_status());
      HG_ASSIGN_OR_RETURN(auto cursor, catalog::IndexCursor::Open(*session, idx));
      cursor.SetBounds({start, end});
      if (started) cursor.ResumeAfter(last_key);
      HG_ASSIGN_OR_RETURN(bool m, cursor.Next());
      int seen = 0;
      while (m && seen < 500) {
        ++seen;
        chunk_last = std::string(cursor.position());
        int64_t rid = cursor.record_id();
        HG_ASSIGN_OR_RETURN(auto rec, coll.FindRecord(*session, rid));
        if (rec) {  // else a multikey document already deleted in this chunk
          HG_RETURN_IF_ERROR(
              coll.Remove(*session, rid, rec->doc, catalog::Collection::WriteOrigin::kTtl));
          ++n;
          bytes += rec->doc.size();
        }
        // Removing keys moved the cursor's table under it: re-seek after the last key read.
        cursor.ResumeAfter(chunk_last);
        HG_ASSIGN_OR_RETURN(m, cursor.Next());
      }
      chunk_more = m;
      return wu.Commit();
    }));
    coll.AdjustCounts(-n, -bytes);
    deleted += n;
    if (!chunk_last.empty()) last_key = std::move(chunk_last);
    started = true;
    more = chunk_more;
  }
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
      if (!Enabled()->GetBool() || !catalog::ThisServerAcceptsWrites()) continue;
      // Under the fsync lock nothing may be deleted: this pass is skipped.
      auto writing = WriteGate::Get().TryEnter();
      if (!writing) continue;
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
      if (e.type == "collection" && !view->ident().empty()) {
        // TTL indexes of regular collections, and the converted TTL indexes of bucket
        // collections: keyed on the bucket start, so a bucket expires once start + maxSpan is.
        int64_t span_ms = 0;
        if (e.nss.IsTimeseriesBuckets() &&
            e.options["timeseries"].type() == bson::BsonType::kObject) {
          auto options = TimeseriesOptionsOf(*view);
          if (!options.ok()) continue;
          span_ms = options.value()->bucket_max_span_seconds * 1000;
        }
        // A collection clustered by _id expires the documents whose _id is a date from 1970
        // to now - expireAfterSeconds, as MongoDB's clustered TTL does.
        const catalog::SecondaryIndex* id_index = view->IdIndex();
        if (bson::BsonElement expire = e.options["expireAfterSeconds"];
            view->ClusteredIndexSpec() && expire.IsNumber() && id_index != nullptr) {
          auto n = DeleteExpiredByIndex(engine_, *view, *id_index,
                                        now_millis - expire.NumberLong() * 1000, 0);
          if (n.status().code() == ErrorCode::kNamespaceNotFound) continue;
          HG_RETURN_IF_ERROR(n.status());
          total += n.value();
        }
        for (const auto& idx : view->Indexes()) {
          if (!idx.desc.expire_after_seconds || !idx.entry->ready) continue;
          auto n = DeleteExpiredByIndex(
              engine_, *view, idx, now_millis - *idx.desc.expire_after_seconds * 1000 - span_ms);
          // An index or collection dropped meanwhile has nothing left to expire.
          if (n.status().code() == ErrorCode::kNamespaceNotFound) continue;
          HG_RETURN_IF_ERROR(n.status());
          total += n.value();
        }
        continue;
      }
      if (e.type != "timeseries") continue;
      bson::BsonElement expire = e.options["expireAfterSeconds"];
      if (!expire.IsNumber()) continue;
      auto buckets = catalog_->Lookup({e.nss.db, "system.buckets." + e.nss.coll});
      if (!buckets || buckets->IsView()) continue;
      auto options = TimeseriesOptionsOf(*view);
      if (!options.ok()) continue;
      const int64_t expired_before = now_millis - expire.NumberLong() * 1000;
      // Buckets that started by this second hold nothing newer than expired_before.
      const int64_t bound_s =
          FloorSeconds(expired_before) - options.value()->bucket_max_span_seconds;
      const std::string& tf = options.value()->time_field;
      if (bound_s >= 0) {
        uint32_t hi = static_cast<uint32_t>(std::min<int64_t>(bound_s, 0x7fffffff));
        HG_ASSIGN_OR_RETURN(int64_t n,
                            DeleteExpired(engine_, *buckets, tf, catalog::ClusteredTimeRange(0, hi),
                                          expired_before));
        total += n;
      }
      // Start times before 1970 (and after 2038) wrap into the upper half of the 32-bit
      // timestamp: check their control.max one by one.
      HG_ASSIGN_OR_RETURN(
          int64_t n,
          DeleteExpired(engine_, *buckets, tf,
                        catalog::ClusteredTimeRange(0x80000000u, 0xffffffffu), expired_before));
      total += n;
    }
  }
  Stats().passes++;
  Stats().deleted_documents += total;
  return total;
}

}  // namespace hourglass::timeseries
