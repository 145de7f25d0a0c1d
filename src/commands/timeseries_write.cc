#include "commands/timeseries_write.h"

#include <algorithm>
#include <bit>

#include "base/interrupt.h"
#include "base/logger.h"
#include "commands/command_util.h"
#include "commands/crud_util.h"
#include "commands/timeseries_index_checks.h"
#include "storage/kv_engine.h"

namespace hourglass::commands {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// The distinct write batches of one insert, each held once, found by address (open addressing,
// linear probing) without taking a second reference per measurement, which the connections
// writing the same buckets would contend on.
class DistinctBatches {
 public:
  explicit DistinctBatches(size_t slots) : slots_(slots) {}

  // The place of `batch` in batches(), added if new.
  uint32_t PlaceOf(std::shared_ptr<timeseries::WriteBatch> batch) {
    if (auto& slot = Slot(batch.get()); slot.first != nullptr) return slot.second;
    if (2 * (batches_.size() + 1) > slots_.size()) {
      std::vector<std::pair<const timeseries::WriteBatch*, uint32_t>> old(2 * slots_.size());
      old.swap(slots_);
      for (const auto& e : old) {
        if (e.first != nullptr) Slot(e.first) = e;
      }
    }
    const auto at = static_cast<uint32_t>(batches_.size());
    Slot(batch.get()) = {batch.get(), at};
    batches_.push_back(std::move(batch));
    return at;
  }
  const std::vector<std::shared_ptr<timeseries::WriteBatch>>& batches() const { return batches_; }

 private:
  // The slot holding `b`, else the empty one where it belongs.
  std::pair<const timeseries::WriteBatch*, uint32_t>& Slot(const timeseries::WriteBatch* b) {
    const size_t mask = slots_.size() - 1;
    for (size_t i = (reinterpret_cast<uintptr_t>(b) >> 4) * 0x9E3779B97F4A7C15ull;; ++i) {
      auto& slot = slots_[i & mask];
      if (slot.first == b || slot.first == nullptr) return slot;
    }
  }

  std::vector<std::pair<const timeseries::WriteBatch*, uint32_t>> slots_;  // a power of two
  std::vector<std::shared_ptr<timeseries::WriteBatch>> batches_;
};

}  // namespace

StatusWith<InsertOutcome> InsertMeasurements(CommandContext& ctx,
                                             const timeseries::TimeseriesCollection& coll,
                                             const DocumentArray& documents, bool ordered,
                                             const MeasurementStatements* statements) {
  // Checked before any measurement is staged (a staged batch is committed whatever happens).
  HG_RETURN_IF_ERROR(CheckForInterrupt());
  timeseries::BucketCatalog& catalog = *ctx.service.bucket_catalog;
  auto session = ctx.service.engine->NewSession();
  InsertOutcome out;
  const std::string& time_field = coll.options.time_field;
  // Each staged measurement's document index and the place of its batch in `distinct` (each
  // batch is committed once), in document order.
  std::vector<std::pair<int, uint32_t>> staged;
  std::vector<BsonObj> keep_alive;
  // The series of recent raw meta elements (views into keep_alive's documents, whose buffers
  // never move), by the meta's hash, in twice as many slots as documents (a power of two): a
  // request of a few series looks each up once in the catalog's shared cache; one of thousands
  // costs a slot compare more. Each also remembers the batch its last measurement went to, since
  // the next one of its series usually goes to the same.
  struct Recent {
    std::string_view meta;
    std::shared_ptr<const timeseries::SeriesId> series;
    const timeseries::WriteBatch* batch = nullptr;
    uint32_t batch_at = 0;
    Status meta_status = Status::OK();  // what the indexes on the meta say of it
  };
  const size_t slots = std::bit_ceil(
      std::clamp<size_t>(2 * static_cast<size_t>(documents.size()), size_t{16}, size_t{4096}));
  std::vector<Recent> recent(slots);
  DistinctBatches distinct(slots);
  keep_alive.reserve(static_cast<size_t>(documents.size()));
  staged.reserve(static_cast<size_t>(documents.size()));
  const BucketIndexChecks checks(*coll.buckets, time_field);
  int index = 0;
  std::optional<catalog::StatementRecord> statement;
  for (DocumentArray::Entry e : documents) {
    HG_ASSIGN_OR_RETURN(BsonObj doc, e.Document("insert"));
    if (statements != nullptr) {
      if (statements->ran_before(index)) {
        ++out.n;  // inserted by an earlier attempt of this write
        ++index;
        continue;
      }
      statement = statements->record(index);
    }
    Status st = Status::OK();
    auto prepared = PrepareInsertDocument(doc, /*id_first=*/false);
    if (!prepared.ok()) {
      st = prepared.status();
    } else if (prepared.value()[time_field].type() != BsonType::kDate) {
      st = Status(
          ErrorCode::kBadValue,
          "'" + time_field + "' must be present and contain a valid BSON UTC datetime value");
    } else if (Status ok = checks.CheckMeasurement(prepared.value()); !ok.ok()) {
      st = std::move(ok);
    } else {
      keep_alive.push_back(std::move(prepared).value());
      const BsonObj& m = keep_alive.back();
      BsonElement meta = coll.options.meta_field ? m[*coll.options.meta_field] : BsonElement();
      std::string_view raw =
          meta.eoo() ? std::string_view() : std::string_view(meta.raw(), meta.size());
      const size_t h = timeseries::BucketCatalog::MetaHash(meta);
      Recent& r = recent[h & (recent.size() - 1)];
      if (!r.series || r.meta != raw) {
        r.series = catalog.CachedSeriesKey(coll, meta, h);
        r.meta = raw;
        r.meta_status = checks.CheckMeta(meta);
      }
      auto batch =
          r.meta_status.ok()
              ? catalog.Insert(coll, *session, m, r.series.get(), statement ? &*statement : nullptr)
              : StatusWith<std::shared_ptr<timeseries::WriteBatch>>(r.meta_status);
      if (batch.ok()) {
        if (batch.value().get() != r.batch) {
          r.batch = batch.value().get();
          r.batch_at = distinct.PlaceOf(std::move(batch).value());
        }
        staged.emplace_back(index, r.batch_at);
      } else {
        st = batch.status();
      }
    }
    if (!st.ok()) {
      out.errors.emplace_back(index, st);
      if (ordered) break;
    }
    ++index;
  }
  // Commit every batch, even after an error: other writers may have measurements in them.
  std::vector<Status> statuses;
  catalog.CommitAll(coll, *session, distinct.batches(), &statuses);
  for (const auto& [i, at] : staged) {
    const Status& st = statuses[at];
    if (st.ok()) {
      ++out.n;
    } else {
      out.errors.emplace_back(i, st);
    }
  }
  // The measurements are stored (or journaled): a flush or a compression that fails leaves them
  // where they are, whole, so a failure here is logged, not reported to the client.
  if (Status st = catalog.AfterCommits(coll, *session); !st.ok()) {
    LOGW("STORAGE", 8800103, "Time-series buckets stay as they are for now",
         "{\"ns\":" + JsonQuote(coll.buckets->ns()) + ",\"error\":" + JsonQuote(st.ToString()) +
             "}");
  }
  std::sort(out.errors.begin(), out.errors.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  if (ordered && out.errors.size() > 1) out.errors.erase(out.errors.begin() + 1, out.errors.end());
  return out;
}

}  // namespace hourglass::commands
