// Rollups kept by the server (timeseries/rollup_spec.h): which time-series collections are
// rollups of which, the observers that mark every change of a source (timeseries/rollup_marks.h),
// and the background maintenance that recomputes each rollup's changed bins from its source.
//
// Maintenance runs every hourglassRollupMaintenanceIntervalMS (default 1000; startup and runtime
// parameter). For each rollup it takes a seq, runs the source's read barrier (so every
// acknowledged write is stored, and marked), and recomputes the bins of the marks that are
// settled — no write touched them since the previous pass began, so the bins a stream of
// inserts is filling are computed once it moves on — a chunk of bins at a time: a $group of the
// source over the chunk (through the dispatcher, as the internal client), the rollup's
// measurements in the chunk deleted, the new ones inserted, then the chunk's marks below the seq
// forgotten. A crash anywhere leaves the marks, and the next pass recomputes the chunk again.
//
// Thread-safety: every method is thread-safe; RunOnce is not run twice at once (a mutex).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/namespace.h"
#include "commands/service_context.h"
#include "timeseries/rollup_marks.h"
#include "timeseries/rollup_spec.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::commands {

// IllegalOperation (20) when `nss` is a rollup or its bucket collection: only the server's
// maintenance writes those.
Status RefuseRollupWrite(const catalog::Catalog& catalog, const catalog::NamespaceString& nss);

class Rollups {
 public:
  Rollups(ServiceContext* service, std::unique_ptr<timeseries::RollupMarks> marks);
  ~Rollups();

  // Registers hourglassRollupMaintenanceIntervalMS and hourglassAnswerAggregatesFromRollups
  // (default true: AnswerFrom answers nothing when false) (idempotent).
  static void RegisterParameters();

  // Reads from the catalog which collections are rollups of which and installs the observers on
  // the sources' bucket collections (removing those of collections that are no longer sources).
  // At startup before the measurement journal is replayed, and after every create and drop.
  Status Refresh();
  // `rollup` was just created: Refresh, then mark every measurement its source already holds.
  Status Created(const catalog::NamespaceString& rollup);
  // At startup, after Refresh: marks the sources of rollups that a crash left empty and
  // unmarked, and forgets the marks of rollups that no longer exist.
  Status Recover();
  // The rollups (their UUIDs) of database `db` that are `coll` or roll it up (all of the
  // database's without `coll`): a drop calls it before dropping, then Forget after.
  StatusWith<std::vector<std::string>> AffectedBy(const std::string& db,
                                                  const std::optional<std::string>& coll);
  // Forgets the marks and statistics of the rollups `uuids`: dropped, or whose source was
  // dropped (changes of measurements that are gone cannot be rolled up).
  Status Forget(const std::vector<std::string>& uuids);

  void Start();
  void Stop();
  // One maintenance pass over every rollup; returns the bins recomputed.
  StatusWith<int64_t> RunOnce();

  // An aggregate over the time-series collection `source` that one of its rollups answers
  // (rollup_pipelines.h): the rollup with the largest bins that can, the pipeline over it, and
  // how many ranges of bins it reads from the source because they are pending (at most 64: the
  // ranges closest together are read as one). Nullopt when no rollup can, or when
  // hourglassAnswerAggregatesFromRollups is false.
  struct Answer {
    std::string rollup;
    bson::BsonObj pipeline;
    int64_t pending_ranges = 0;
  };
  StatusWith<std::optional<Answer>> AnswerFrom(const catalog::NamespaceString& source,
                                               const bson::BsonObj& stages);

  // collStats' `rollup` section of the rollup `nss` (a time-series collection with rollupOf):
  // {source, every, pendingRanges, [pendingFrom, pendingTo], passes, binsComputed, rowsWritten,
  // [lastError]}.
  Status AppendStats(const catalog::NamespaceString& nss, bson::BsonBuilder& b);

  timeseries::RollupMarks& marks() { return *marks_; }

 private:
  struct Info;
  struct State {
    uint64_t prev_seq = 0;  // the seq the previous pass took
    int64_t passes = 0, bins = 0, rows = 0;
    std::string last_error;
  };
  StatusWith<std::vector<Info>> Discover() const;
  Status MarkSourceExtent(const Info& info);
  // The first bin after every time the source's TTL removed (INT64_MIN while it removed none):
  // earlier bins are not recomputed.
  StatusWith<int64_t> RecomputableFrom(const Info& info);
  // The bins of `info`'s marks, merged, once the source's acknowledged writes are marked.
  StatusWith<std::vector<timeseries::DirtyRange>> PendingBins(const Info& info);
  Status MaintainOne(const Info& info, ClientState& client, int64_t deadline_ms, int64_t* bins);
  Status Recompute(const Info& info, ClientState& client, int64_t from, int64_t to, int64_t* rows);

  ServiceContext* service_;
  std::unique_ptr<timeseries::RollupMarks> marks_;
  std::mutex refresh_mu_;
  std::set<std::string> observed_;  // namespaces of the bucket collections observed
  std::mutex sources_mu_;
  std::set<std::string> sources_;  // namespaces rolled up, as of the last Refresh
  std::mutex run_mu_;              // one RunOnce at a time
  size_t first_ = 0;               // guarded by run_mu_: which rollup a pass starts with
  std::mutex state_mu_;
  std::map<std::string, State> state_;  // by rollup UUID; guarded by state_mu_
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

}  // namespace hourglass::commands
