#include "commands/rollups.h"

#include <algorithm>
#include <chrono>

#include "base/clock.h"
#include "base/logger.h"
#include "base/server_parameters.h"
#include "catalog/catalog.h"
#include "catalog/collection.h"
#include "catalog/op_observer.h"
#include "catalog/record_store.h"
#include "commands/dispatcher.h"
#include "commands/rollup_pipelines.h"
#include "exec/namespace_resolver.h"
#include "storage/write_conflict.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using timeseries::DirtyRange;
using timeseries::RollupSpec;
using timeseries::RollupStat;
using timeseries::TimeseriesOptions;

namespace {

ServerParameter* IntervalMs() {
  auto& reg = ServerParameterRegistry::Get();
  const char* name = "hourglassRollupMaintenanceIntervalMS";
  if (ServerParameter* p = reg.Find(name)) return p;
  return reg.Register(name, int32_t{1000}, true, true, [](const ParameterValue& v) {
    if (std::get<int32_t>(v) < 10) {
      return Status(ErrorCode::kBadValue, "hourglassRollupMaintenanceIntervalMS must be >= 10");
    }
    return Status::OK();
  });
}

ServerParameter* AnswersEnabled() {
  auto& reg = ServerParameterRegistry::Get();
  const char* name = "hourglassAnswerAggregatesFromRollups";
  if (ServerParameter* p = reg.Find(name)) return p;
  return reg.Register(name, true, true, true);
}

// Bins recomputed by one aggregate, and the time one pass gives the rollups before the rest
// waits for the next pass.
constexpr int64_t kChunkBins = 744;
constexpr int64_t kPassBudgetMs = 2000;
constexpr size_t kInsertBatch = 1000;

void AppendJournaledWriteConcern(BsonBuilder& cmd) {
  size_t wc = cmd.OpenObject("writeConcern");
  cmd.AppendBool("j", true);
  cmd.Close(wc);
}

// A mark's range widened to whole bins.
DirtyRange Binned(const RollupSpec& spec, const DirtyRange& m) {
  return DirtyRange{spec.BinStart(m.from), spec.BinStart(m.to - 1) + spec.every_ms, m.seq};
}

// An aggregate answered from a rollup reads at most this many ranges of pending bins from the
// source (each is a clause of its filters).
constexpr size_t kMaxPendingRangesForAnswers = 64;

}  // namespace

Status RefuseRollupWrite(const catalog::Catalog& catalog, const catalog::NamespaceString& nss) {
  catalog::NamespaceString view = nss;
  if (nss.IsTimeseriesBuckets()) {
    view.coll = nss.coll.substr(std::string_view("system.buckets.").size());
  }
  auto coll = catalog.Lookup(view);
  if (!coll || coll->entry().type != "timeseries" ||
      coll->entry().options["rollupOf"].type() != BsonType::kObject) {
    return Status::OK();
  }
  BsonElement source = coll->entry().options["rollupOf"].Obj()["source"];
  return Status(ErrorCode::kIllegalOperation,
                "Cannot write to " + nss.ns() + ": " + view.coll + " is a rollup of " +
                    std::string(source.type() == BsonType::kString ? source.Str() : "?") +
                    ", kept by the server");
}

struct Rollups::Info {
  catalog::NamespaceString nss;     // the rollup (its view)
  catalog::NamespaceString source;  // the source (its view)
  std::string uuid;                 // the rollup's bucket collection's
  RollupSpec spec;
  TimeseriesOptions options;  // the rollup's
  TimeseriesOptions source_options;
  std::shared_ptr<catalog::Collection> source_buckets;  // null when the source is gone

  RollupTarget Target() const { return {source.coll, nss.coll, spec, source_options, options}; }
};

void Rollups::RegisterParameters() {
  (void)IntervalMs();
  (void)AnswersEnabled();
}

Rollups::Rollups(ServiceContext* service, std::unique_ptr<timeseries::RollupMarks> marks)
    : service_(service), marks_(std::move(marks)) {
  RegisterParameters();
}

Rollups::~Rollups() { Stop(); }

StatusWith<std::vector<Rollups::Info>> Rollups::Discover() const {
  catalog::Catalog& catalog = *service_->catalog;
  std::vector<Info> out;
  for (const std::string& db : catalog.ListDatabases()) {
    for (const auto& view : catalog.ListCollections(db)) {
      const auto& e = view->entry();
      if (e.type != "timeseries" || e.options["rollupOf"].type() != BsonType::kObject) continue;
      Info info;
      info.nss = e.nss;
      auto spec = RollupSpec::FromBson(e.options["rollupOf"].Obj());
      auto options = timeseries::TimeseriesOptionsOf(*view);
      auto buckets = catalog.Lookup(exec::BucketsNamespace(e.nss));
      if (!spec.ok() || !options.ok() || !buckets) continue;
      info.spec = std::move(spec).value();
      info.options = *options.value();
      info.uuid = buckets->entry().uuid;
      info.source = {db, info.spec.source};
      if (auto source = catalog.Lookup(info.source);
          source && source->entry().type == "timeseries") {
        auto source_options = timeseries::TimeseriesOptionsOf(*source);
        if (source_options.ok()) {
          info.source_options = *source_options.value();
          info.source_buckets = catalog.Lookup(exec::BucketsNamespace(info.source));
        }
      }
      out.push_back(std::move(info));
    }
  }
  return out;
}

Status Rollups::Refresh() {
  std::lock_guard lk(refresh_mu_);
  HG_ASSIGN_OR_RETURN(std::vector<Info> infos, Discover());
  std::map<std::string, std::vector<const Info*>> by_source;  // by bucket namespace
  std::set<std::string> sources;
  for (const Info& i : infos) {
    if (i.source_buckets) by_source[i.source_buckets->ns()].push_back(&i);
    sources.insert(i.source.ns());
  }
  {
    std::lock_guard lk(sources_mu_);
    sources_ = std::move(sources);
  }
  for (const std::string& ns : observed_) {
    if (by_source.contains(ns)) continue;
    auto parsed = catalog::ParseNamespace(ns);
    if (!parsed.ok()) continue;
    if (auto gone = service_->catalog->Lookup(parsed.value())) gone->SetWriteObserver(nullptr);
  }
  observed_.clear();
  for (const auto& [ns, rollups] : by_source) {
    std::vector<std::string> uuids;
    for (const Info* i : rollups) uuids.push_back(i->uuid);
    const Info& first = *rollups.front();
    first.source_buckets->SetWriteObserver(std::make_shared<timeseries::RollupSourceObserver>(
        marks_.get(), first.source_options.time_field, first.source_options.bucket_max_span_seconds,
        std::move(uuids)));
    observed_.insert(ns);
  }
  return Status::OK();
}

Status Rollups::MarkSourceExtent(const Info& info) {
  // From the source's earliest bucket start to its latest one's end. Buckets are keyed by their
  // start second as an unsigned 32-bit number, so those from 1970 to 2038 come first, in time
  // order (their first and last suffice), and the rest, before 1970 or after 2038, after them
  // in no time order (read one by one; rare).
  auto session = service_->engine->NewSession();
  std::optional<int64_t> from, to;
  auto consider = [&](catalog::RecordRange range, bool all) -> Status {
    HG_ASSIGN_OR_RETURN(auto cursor,
                        catalog::RecordCursor::Open(*session, *info.source_buckets, range));
    for (;;) {
      HG_ASSIGN_OR_RETURN(bool found, cursor.Next());
      if (!found) return Status::OK();
      BsonElement min = cursor.doc().GetPath("control.min." + info.source_options.time_field);
      if (min.type() == BsonType::kDate) {
        const int64_t t = min.DateMillis();
        from = from ? std::min(*from, t) : t;
        to = to ? std::max(*to, t) : t;
      }
      if (!all) return Status::OK();
    }
  };
  for (bool forward : {true, false}) {
    HG_RETURN_IF_ERROR(consider(catalog::ClusteredTimeRange(0, 0x7fffffffu, forward), false));
  }
  HG_RETURN_IF_ERROR(consider(catalog::ClusteredTimeRange(0x80000000u, 0xffffffffu), true));
  if (!from) return Status::OK();  // an empty source
  return marks_->Mark(*session, info.uuid, *from,
                      *to + info.source_options.bucket_max_span_seconds * 1000);
}

Status Rollups::Created(const catalog::NamespaceString& rollup) {
  // Observed first, then marked: a write in between is marked by both, none by neither.
  HG_RETURN_IF_ERROR(Refresh());
  HG_ASSIGN_OR_RETURN(std::vector<Info> infos, Discover());
  for (const Info& info : infos) {
    if (info.nss.db == rollup.db && info.nss.coll == rollup.coll && info.source_buckets) {
      return MarkSourceExtent(info);
    }
  }
  return Status::OK();
}

Status Rollups::Recover() {
  HG_ASSIGN_OR_RETURN(std::vector<Info> infos, Discover());
  auto session = service_->engine->NewSession();
  HG_ASSIGN_OR_RETURN(std::vector<std::string> marked, marks_->MarkedRollups(*session));
  std::set<std::string> live;
  for (const Info& info : infos) {
    live.insert(info.uuid);
    // A rollup created just before a crash may have missed its first marks: an empty rollup
    // without marks over a source with measurements is computed again.
    if (!info.source_buckets || info.source_buckets->NumRecords() == 0 ||
        std::find(marked.begin(), marked.end(), info.uuid) != marked.end()) {
      continue;
    }
    auto buckets = service_->catalog->Lookup(exec::BucketsNamespace(info.nss));
    if (buckets && buckets->NumRecords() == 0) HG_RETURN_IF_ERROR(MarkSourceExtent(info));
  }
  // The marks of rollups dropped before they were forgotten.
  std::vector<std::string> orphans;
  for (const std::string& uuid : marked) {
    if (!live.contains(uuid)) orphans.push_back(uuid);
  }
  return Forget(orphans);
}

StatusWith<std::vector<std::string>> Rollups::AffectedBy(const std::string& db,
                                                         const std::optional<std::string>& coll) {
  HG_ASSIGN_OR_RETURN(std::vector<Info> infos, Discover());
  std::vector<std::string> out;
  for (const Info& info : infos) {
    if (info.nss.db != db) continue;
    if (!coll || info.nss.coll == *coll || info.source.coll == *coll) out.push_back(info.uuid);
  }
  return out;
}

Status Rollups::Forget(const std::vector<std::string>& uuids) {
  for (const std::string& uuid : uuids) {
    HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&]() -> Status {
      auto s = service_->engine->NewSession();
      storage::WriteUnit wu(*s);
      HG_RETURN_IF_ERROR(wu.begin_status());
      HG_RETURN_IF_ERROR(marks_->DropAll(*s, uuid));
      return wu.Commit();
    }));
    std::lock_guard lk(state_mu_);
    state_.erase(uuid);
  }
  return Status::OK();
}

void Rollups::Start() {
  thread_ = std::thread([this] {
    SetThreadLogContext("RollupMaintenance");
    std::unique_lock lk(mu_);
    while (!stop_) {
      // In short steps, reading the interval at each: a new value takes effect at once.
      const auto since = std::chrono::steady_clock::now();
      while (!stop_ && std::chrono::steady_clock::now() - since <
                           std::chrono::milliseconds(IntervalMs()->GetInt())) {
        cv_.wait_for(lk, std::chrono::milliseconds(std::min<int64_t>(IntervalMs()->GetInt(), 100)));
      }
      if (stop_) break;
      // A replica set's secondaries apply what the primary's maintenance writes.
      if (!catalog::ThisServerAcceptsWrites()) continue;
      lk.unlock();
      auto n = RunOnce();
      if (!n.ok()) {
        LOGW("STORAGE", 8800201, "Rollup maintenance pass failed",
             "{\"error\":" + JsonQuote(n.status().ToString()) + "}");
      }
      lk.lock();
    }
  });
}

void Rollups::Stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

StatusWith<int64_t> Rollups::RunOnce() {
  std::lock_guard run(run_mu_);
  HG_ASSIGN_OR_RETURN(std::vector<Info> infos, Discover());
  ClientState client;
  client.internal = true;
  client.remote = "internal";
  int64_t bins = 0;
  // Each rollup gets its own time, and the first one changes from pass to pass: a rollup with a
  // long backlog (a year to compute) does not hold the others back.
  for (size_t k = 0; k < infos.size(); ++k) {
    const Info& info = infos[(first_ + k) % infos.size()];
    Status st = MaintainOne(info, client, NowMillis() + kPassBudgetMs, &bins);
    std::lock_guard lk(state_mu_);
    State& s = state_[info.uuid];
    s.passes++;
    if (!st.ok()) s.last_error = st.ToString();
  }
  if (!infos.empty()) first_ = (first_ + 1) % infos.size();
  return bins;
}

StatusWith<int64_t> Rollups::RecomputableFrom(const Info& info) {
  // The bins through the last time the source's TTL removed keep the rows computed while they
  // were whole.
  auto session = service_->engine->NewSession();
  HG_ASSIGN_OR_RETURN(std::optional<int64_t> thinned, marks_->ThinnedThrough(*session, info.uuid));
  if (!thinned) return INT64_MIN;
  return info.spec.BinStart(*thinned) + info.spec.every_ms;
}

Status Rollups::MaintainOne(const Info& info, ClientState& client, int64_t deadline_ms,
                            int64_t* bins) {
  const uint64_t seq = marks_->NextSeq();
  uint64_t prev;
  {
    std::lock_guard lk(state_mu_);
    prev = std::exchange(state_[info.uuid].prev_seq, seq);
  }
  if (!info.source_buckets) return Status::OK();  // the source is gone: nothing changes
  {
    // Every acknowledged write of the source stored, and so marked.
    catalog::ReadBarrier::OperationScope operation;
    HG_RETURN_IF_ERROR(info.source_buckets->read_barrier().Run());
  }
  auto session = service_->engine->NewSession();
  // What is recomputed below, and so what may be forgotten after.
  HG_ASSIGN_OR_RETURN(std::vector<DirtyRange> listed, marks_->List(*session, info.uuid));
  const RollupSpec& spec = info.spec;
  std::vector<DirtyRange> all, touched;
  for (const DirtyRange& m : listed) {
    all.push_back(Binned(spec, m));
    if (m.seq >= prev) touched.push_back(Binned(spec, m));
  }
  const std::vector<DirtyRange> work = timeseries::SubtractRanges(
      timeseries::MergeRanges(std::move(all)), timeseries::MergeRanges(std::move(touched)));
  HG_ASSIGN_OR_RETURN(const int64_t recomputable_from, RecomputableFrom(info));
  Status first_error = Status::OK();
  for (const DirtyRange& r : work) {
    for (int64_t from = r.from; from < r.to;) {
      if (NowMillis() >= deadline_ms) return first_error;
      int64_t to = std::min(r.to, from + kChunkBins * spec.every_ms);
      if (from < recomputable_from && to > recomputable_from) to = recomputable_from;
      int64_t rows = 0;
      if (from >= recomputable_from) {
        Status st = Recompute(info, client, from, to, &rows);
        if (!st.ok()) {
          // The chunk stays marked and is tried again next pass; the later ones go on.
          if (first_error.ok()) first_error = st;
          from = to;
          continue;
        }
      }
      HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&]() -> Status {
        auto s = service_->engine->NewSession();
        storage::WriteUnit wu(*s);
        HG_RETURN_IF_ERROR(wu.begin_status());
        std::vector<DirtyRange> left = listed;
        HG_RETURN_IF_ERROR(marks_->Clear(*s, info.uuid, from, to, &left));
        HG_RETURN_IF_ERROR(wu.Commit());
        listed = std::move(left);
        return Status::OK();
      }));
      *bins += (to - from) / spec.every_ms;
      std::lock_guard lk(state_mu_);
      State& s = state_[info.uuid];
      s.bins += (to - from) / spec.every_ms;
      s.rows += rows;
      if (first_error.ok()) s.last_error.clear();
      from = to;
    }
  }
  return first_error;
}

Status Rollups::Recompute(const Info& info, ClientState& client, int64_t from, int64_t to,
                          int64_t* rows) {
  const std::string& st = info.source_options.time_field;
  const std::string& rt = info.options.time_field;
  const std::string db = info.nss.db;

  // The source's measurements in [from, to), grouped by series and bin.
  BsonBuilder range;
  AppendTimeRange(range, st, from, to);
  BsonBuilder agg;
  agg.AppendString("aggregate", info.source.coll);
  agg.AppendArray("pipeline", RollupRowsPipeline(info.Target(), range.Obj()));
  size_t cursor = agg.OpenObject("cursor");
  agg.AppendInt32("batchSize", 10000);
  agg.Close(cursor);
  HG_ASSIGN_OR_RETURN(BsonObj reply, RunCommandForReply(*service_, client, agg.Obj(), db));

  // The rollup's measurements of [from, to) replaced by the new ones.
  BsonBuilder del;
  del.AppendString("delete", info.nss.coll);
  size_t deletes = del.OpenArray("deletes");
  size_t d0 = del.OpenObject("0");
  size_t q = del.OpenObject("q");
  AppendTimeRange(del, rt, from, to);
  del.Close(q);
  del.AppendInt32("limit", 0);
  del.Close(d0);
  del.Close(deletes);
  // Journaled before the marks are forgotten: a crash in between recomputes the bins again.
  AppendJournaledWriteConcern(del);
  HG_RETURN_IF_ERROR(RunCommandForReply(*service_, client, del.Obj(), db).status());

  std::vector<BsonObj> batch;
  auto flush = [&]() -> Status {
    if (batch.empty()) return Status::OK();
    BsonBuilder ins;
    ins.AppendString("insert", info.nss.coll);
    size_t docs = ins.OpenArray("documents");
    for (size_t i = 0; i < batch.size(); ++i) ins.AppendObject(std::to_string(i), batch[i]);
    ins.Close(docs);
    AppendJournaledWriteConcern(ins);
    HG_ASSIGN_OR_RETURN(BsonObj r, RunCommandForReply(*service_, client, ins.Obj(), db));
    if (r["writeErrors"].type() == BsonType::kArray) {
      return Status(ErrorCode::kInternalError,
                    "rollup " + info.nss.ns() +
                        " refused its measurements: " + r["writeErrors"].Obj().ToJson());
    }
    *rows += static_cast<int64_t>(batch.size());
    batch.clear();
    return Status::OK();
  };
  for (;;) {
    BsonObj c = reply["cursor"].Obj();
    const char* batch_name = c.HasField("firstBatch") ? "firstBatch" : "nextBatch";
    for (bson::BsonElement e : c[batch_name].Obj()) {
      batch.push_back(e.Obj().Owned());
      if (batch.size() >= kInsertBatch) HG_RETURN_IF_ERROR(flush());
    }
    const int64_t id = c["id"].NumberLong();
    if (id == 0) break;
    BsonBuilder more;
    more.AppendInt64("getMore", id);
    more.AppendString("collection", info.source.coll);
    more.AppendInt32("batchSize", 10000);
    HG_ASSIGN_OR_RETURN(reply, RunCommandForReply(*service_, client, more.Obj(), db));
  }
  return flush();
}

StatusWith<std::vector<DirtyRange>> Rollups::PendingBins(const Info& info) {
  if (info.source_buckets) {
    // The source's acknowledged writes stored, and so marked.
    catalog::ReadBarrier::OperationScope operation;
    HG_RETURN_IF_ERROR(info.source_buckets->read_barrier().Run());
  }
  auto session = service_->engine->NewSession();
  HG_ASSIGN_OR_RETURN(auto marks, marks_->List(*session, info.uuid));
  // Bins the source's TTL thinned keep their rows: not pending.
  HG_ASSIGN_OR_RETURN(const int64_t recomputable_from, RecomputableFrom(info));
  std::vector<DirtyRange> binned;
  for (const DirtyRange& m : marks) {
    DirtyRange b = Binned(info.spec, m);
    b.from = std::max(b.from, recomputable_from);
    if (b.from < b.to) binned.push_back(b);
  }
  return timeseries::MergeRanges(std::move(binned));
}

StatusWith<std::optional<Rollups::Answer>> Rollups::AnswerFrom(
    const catalog::NamespaceString& source, const BsonObj& stages) {
  if (!AnswersEnabled()->GetBool()) return std::optional<Answer>();
  {
    // Most aggregates are of collections nothing rolls up: no catalog walk for them.
    std::lock_guard lk(sources_mu_);
    if (!sources_.contains(source.ns())) return std::optional<Answer>();
  }
  HG_ASSIGN_OR_RETURN(std::vector<Info> infos, Discover());
  std::vector<const Info*> candidates;
  for (const Info& info : infos) {
    if (info.source.db == source.db && info.source.coll == source.coll && info.source_buckets) {
      candidates.push_back(&info);
    }
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const Info* a, const Info* b) { return a->spec.every_ms > b->spec.every_ms; });
  for (const Info* info : candidates) {
    // Whether the rollup can answer at all, before reading its marks.
    if (!AnswerFromRollup(info->Target(), stages, {})) continue;
    HG_ASSIGN_OR_RETURN(std::vector<DirtyRange> pending, PendingBins(*info));
    pending = timeseries::CoalesceRanges(std::move(pending), kMaxPendingRangesForAnswers);
    auto pipeline = AnswerFromRollup(info->Target(), stages, pending);
    if (!pipeline) continue;
    return std::optional<Answer>(
        Answer{info->nss.coll, std::move(*pipeline), static_cast<int64_t>(pending.size())});
  }
  return std::optional<Answer>();
}

Status Rollups::AppendStats(const catalog::NamespaceString& nss, BsonBuilder& b) {
  HG_ASSIGN_OR_RETURN(std::vector<Info> infos, Discover());
  for (const Info& info : infos) {
    if (info.nss.db != nss.db || info.nss.coll != nss.coll) continue;
    HG_ASSIGN_OR_RETURN(std::vector<DirtyRange> binned, PendingBins(info));
    size_t r = b.OpenObject("rollup");
    b.AppendString("source", info.spec.source);
    b.AppendString("every", info.spec.every);
    b.AppendInt64("pendingRanges", static_cast<int64_t>(binned.size()));
    if (!binned.empty()) {
      b.AppendDate("pendingFrom", binned.front().from);
      b.AppendDate("pendingTo", binned.back().to);
    }
    std::lock_guard lk(state_mu_);
    const State& s = state_[info.uuid];
    b.AppendInt64("passes", s.passes);
    b.AppendInt64("binsComputed", s.bins);
    b.AppendInt64("rowsWritten", s.rows);
    if (!s.last_error.empty()) b.AppendString("lastError", s.last_error);
    b.Close(r);
    return Status::OK();
  }
  return Status::OK();
}

}  // namespace hourglass::commands
