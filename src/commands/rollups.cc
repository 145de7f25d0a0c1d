#include "commands/rollups.h"

#include <algorithm>
#include <chrono>

#include "base/clock.h"
#include "base/logger.h"
#include "base/server_parameters.h"
#include "catalog/catalog.h"
#include "catalog/collection.h"
#include "catalog/record_store.h"
#include "commands/dispatcher.h"
#include "exec/namespace_resolver.h"
#include "storage/write_conflict.h"

namespace hourglass::commands {

using bson::BsonBuilder;
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

// Bins recomputed by one aggregate, and the time one pass gives the rollups before the rest
// waits for the next pass.
constexpr int64_t kChunkBins = 744;
constexpr int64_t kPassBudgetMs = 2000;
constexpr size_t kInsertBatch = 1000;

// `ranges` minus `cut`, both sorted and disjoint.
std::vector<DirtyRange> Subtract(const std::vector<DirtyRange>& ranges,
                                 const std::vector<DirtyRange>& cut) {
  std::vector<DirtyRange> out;
  for (DirtyRange r : ranges) {
    for (const DirtyRange& c : cut) {
      if (c.to <= r.from || c.from >= r.to) continue;
      if (c.from > r.from) out.push_back({r.from, c.from, r.seq});
      r.from = c.to;
      if (r.from >= r.to) break;
    }
    if (r.from < r.to) out.push_back(r);
  }
  return out;
}

// {<field>: {$gte: Date(from), $lt: Date(to)}}, appended to a filter.
void AppendTimeRange(BsonBuilder& b, const std::string& field, int64_t from, int64_t to) {
  size_t range = b.OpenObject(field);
  b.AppendDate("$gte", from);
  b.AppendDate("$lt", to);
  b.Close(range);
}

// $dateTrunc's unit and binSize for bins of `every_ms` (a whole number of the unit).
std::pair<const char*, int64_t> TruncUnit(int64_t every_ms) {
  static constexpr std::pair<const char*, int64_t> kUnits[] = {
      {"day", 86'400'000}, {"hour", 3'600'000}, {"minute", 60'000}, {"second", 1'000}};
  for (auto [unit, ms] : kUnits) {
    if (every_ms % ms == 0) return {unit, every_ms / ms};
  }
  return {"millisecond", every_ms};
}

}  // namespace

struct Rollups::Info {
  catalog::NamespaceString nss;     // the rollup (its view)
  catalog::NamespaceString source;  // the source (its view)
  std::string uuid;                 // the rollup's bucket collection's
  RollupSpec spec;
  TimeseriesOptions options;  // the rollup's
  TimeseriesOptions source_options;
  std::shared_ptr<catalog::Collection> source_buckets;  // null when the source is gone
};

void Rollups::RegisterParameters() { (void)IntervalMs(); }

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
  for (const Info& i : infos) {
    if (i.source_buckets) by_source[i.source_buckets->ns()].push_back(&i);
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

Status Rollups::Created(const catalog::NamespaceString& rollup) {
  // Observed first, then marked: a write in between is marked by both, none by neither.
  HG_RETURN_IF_ERROR(Refresh());
  HG_ASSIGN_OR_RETURN(std::vector<Info> infos, Discover());
  for (const Info& info : infos) {
    if (info.nss.db != rollup.db || info.nss.coll != rollup.coll || !info.source_buckets) continue;
    // What the source holds: from its earliest bucket start to its latest one's end. Buckets
    // are keyed by their start second as an unsigned 32-bit number, so those before 1970 (and
    // after 2038) sort after the others: each half is looked at separately.
    auto session = service_->engine->NewSession();
    std::optional<int64_t> from, to;
    auto consider = [&](catalog::RecordRange range) -> Status {
      HG_ASSIGN_OR_RETURN(auto cursor,
                          catalog::RecordCursor::Open(*session, *info.source_buckets, range));
      HG_ASSIGN_OR_RETURN(bool found, cursor.Next());
      if (!found) return Status::OK();
      BsonObj doc = cursor.doc();
      bson::BsonElement min =
          doc["control"].type() == BsonType::kObject &&
                  doc["control"].Obj()["min"].type() == BsonType::kObject
              ? doc["control"].Obj()["min"].Obj()[info.source_options.time_field]
              : bson::BsonElement();
      if (min.type() != BsonType::kDate) return Status::OK();
      const int64_t t = min.DateMillis();
      from = from ? std::min(*from, t) : t;
      to = to ? std::max(*to, t) : t;
      return Status::OK();
    };
    for (bool forward : {true, false}) {
      HG_RETURN_IF_ERROR(consider(catalog::ClusteredTimeRange(0, 0x7fffffffu, forward)));
      HG_RETURN_IF_ERROR(consider(catalog::ClusteredTimeRange(0x80000000u, 0xffffffffu, forward)));
    }
    if (!from) return Status::OK();  // an empty source
    const int64_t end = *to + info.source_options.bucket_max_span_seconds * 1000;
    return marks_->Mark(*session, info.uuid, *from, end);
  }
  return Status::OK();
}

void Rollups::Start() {
  thread_ = std::thread([this] {
    SetThreadLogContext("RollupMaintenance");
    std::unique_lock lk(mu_);
    while (!stop_) {
      cv_.wait_for(lk, std::chrono::milliseconds(IntervalMs()->GetInt()));
      if (stop_) break;
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
  const int64_t deadline = NowMillis() + kPassBudgetMs;
  for (const Info& info : infos) {
    Status st = MaintainOne(info, client, deadline, &bins);
    std::lock_guard lk(state_mu_);
    State& s = state_[info.uuid];
    s.passes++;
    if (!st.ok()) s.last_error = st.ToString();
  }
  return bins;
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
  HG_ASSIGN_OR_RETURN(std::vector<DirtyRange> marks, marks_->List(*session, info.uuid));
  const RollupSpec& spec = info.spec;
  auto binned = [&](const DirtyRange& m) {
    return DirtyRange{spec.BinStart(m.from), spec.BinStart(m.to - 1) + spec.every_ms, m.seq};
  };
  std::vector<DirtyRange> all, touched;
  for (const DirtyRange& m : marks) {
    all.push_back(binned(m));
    if (m.seq >= prev) touched.push_back(binned(m));
  }
  const std::vector<DirtyRange> work = Subtract(timeseries::MergeRanges(std::move(all)),
                                                timeseries::MergeRanges(std::move(touched)));
  for (const DirtyRange& r : work) {
    for (int64_t from = r.from; from < r.to;) {
      if (NowMillis() >= deadline_ms) return Status::OK();
      const int64_t to = std::min(r.to, from + kChunkBins * spec.every_ms);
      int64_t rows = 0;
      HG_RETURN_IF_ERROR(Recompute(info, client, from, to, &rows));
      HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&]() -> Status {
        auto s = service_->engine->NewSession();
        storage::WriteUnit wu(*s);
        HG_RETURN_IF_ERROR(wu.begin_status());
        HG_RETURN_IF_ERROR(marks_->Clear(*s, info.uuid, from, to, seq));
        return wu.Commit();
      }));
      *bins += (to - from) / spec.every_ms;
      std::lock_guard lk(state_mu_);
      State& s = state_[info.uuid];
      s.bins += (to - from) / spec.every_ms;
      s.rows += rows;
      s.last_error.clear();
      from = to;
    }
  }
  return Status::OK();
}

Status Rollups::Recompute(const Info& info, ClientState& client, int64_t from, int64_t to,
                          int64_t* rows) {
  const RollupSpec& spec = info.spec;
  const std::string& st = info.source_options.time_field;
  const std::string& rt = info.options.time_field;
  const std::string db = info.nss.db;

  // The source's measurements in [from, to), grouped by series and bin.
  BsonBuilder agg;
  agg.AppendString("aggregate", info.source.coll);
  size_t pipeline = agg.OpenArray("pipeline");
  {
    size_t stage = agg.OpenObject("0");
    size_t match = agg.OpenObject("$match");
    AppendTimeRange(agg, st, from, to);
    agg.Close(match);
    agg.Close(stage);
  }
  {
    size_t stage = agg.OpenObject("1");
    size_t group = agg.OpenObject("$group");
    size_t id = agg.OpenObject("_id");
    size_t trunc = agg.OpenObject("t");
    size_t op = agg.OpenObject("$dateTrunc");
    agg.AppendString("date", "$" + st);
    auto [unit, bin_size] = TruncUnit(spec.every_ms);
    agg.AppendString("unit", unit);
    agg.AppendInt64("binSize", bin_size);
    agg.Close(op);
    agg.Close(trunc);
    if (info.source_options.meta_field)
      agg.AppendString("m", "$" + *info.source_options.meta_field);
    agg.Close(id);
    for (size_t i = 0; i < spec.fields.size(); ++i) {
      const std::string path = "$" + spec.fields[i].first;
      for (RollupStat s : RollupSpec::Stored(spec.fields[i].second)) {
        size_t acc = agg.OpenObject("f" + std::to_string(i) + "_" + std::string(RollupStatName(s)));
        switch (s) {
          case RollupStat::kAvg:
            agg.AppendString("$avg", path);
            break;
          case RollupStat::kSum:
            agg.AppendString("$sum", path);
            break;
          case RollupStat::kMin:
            agg.AppendString("$min", path);
            break;
          case RollupStat::kMax:
            agg.AppendString("$max", path);
            break;
          case RollupStat::kCount: {
            // The field's numeric values: what $avg divides by.
            size_t sum = agg.OpenObject("$sum");
            size_t cond = agg.OpenArray("$cond");
            size_t is_number = agg.OpenObject("0");
            agg.AppendString("$isNumber", path);
            agg.Close(is_number);
            agg.AppendInt32("1", 1);
            agg.AppendInt32("2", 0);
            agg.Close(cond);
            agg.Close(sum);
            break;
          }
        }
        agg.Close(acc);
      }
    }
    agg.Close(group);
    agg.Close(stage);
  }
  {
    // In time order, so that each series' rows go into its rollup buckets in order.
    size_t stage = agg.OpenObject("2");
    size_t sort = agg.OpenObject("$sort");
    agg.AppendInt32("_id.t", 1);
    agg.Close(sort);
    agg.Close(stage);
  }
  {
    size_t stage = agg.OpenObject("3");
    size_t replace = agg.OpenObject("$replaceWith");
    agg.AppendString(rt, "$_id.t");
    if (info.options.meta_field) agg.AppendString(*info.options.meta_field, "$_id.m");
    for (size_t i = 0; i < spec.fields.size(); ++i) {
      size_t field = agg.OpenObject(spec.fields[i].first);
      for (RollupStat s : RollupSpec::Stored(spec.fields[i].second)) {
        const std::string name(RollupStatName(s));
        agg.AppendString(name, "$f" + std::to_string(i) + "_" + name);
      }
      agg.Close(field);
    }
    agg.Close(replace);
    agg.Close(stage);
  }
  agg.Close(pipeline);
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
  HG_RETURN_IF_ERROR(RunCommandForReply(*service_, client, del.Obj(), db).status());

  std::vector<BsonObj> batch;
  auto flush = [&]() -> Status {
    if (batch.empty()) return Status::OK();
    BsonBuilder ins;
    ins.AppendString("insert", info.nss.coll);
    size_t docs = ins.OpenArray("documents");
    for (size_t i = 0; i < batch.size(); ++i) ins.AppendObject(std::to_string(i), batch[i]);
    ins.Close(docs);
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

Status Rollups::AppendStats(const catalog::NamespaceString& nss, BsonBuilder& b) {
  HG_ASSIGN_OR_RETURN(std::vector<Info> infos, Discover());
  for (const Info& info : infos) {
    if (info.nss.db != nss.db || info.nss.coll != nss.coll) continue;
    if (info.source_buckets) {
      // The source's acknowledged writes stored, and so marked: pending counts them.
      catalog::ReadBarrier::OperationScope operation;
      HG_RETURN_IF_ERROR(info.source_buckets->read_barrier().Run());
    }
    auto session = service_->engine->NewSession();
    HG_ASSIGN_OR_RETURN(auto marks, marks_->List(*session, info.uuid));
    std::vector<DirtyRange> binned;
    for (const DirtyRange& m : marks) {
      binned.push_back(
          {info.spec.BinStart(m.from), info.spec.BinStart(m.to - 1) + info.spec.every_ms, m.seq});
    }
    binned = timeseries::MergeRanges(std::move(binned));
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
