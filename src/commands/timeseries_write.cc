#include "commands/timeseries_write.h"

#include <unordered_map>

#include "commands/command_util.h"
#include "commands/crud_util.h"
#include "storage/kv_engine.h"
#include "storage/record_id.h"
#include "storage/write_conflict.h"
#include "timeseries/bucket_filter.h"
#include "timeseries/bucket_unpacker.h"

namespace hourglass::commands {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

StatusWith<InsertOutcome> InsertMeasurements(CommandContext& ctx,
                                             const timeseries::TimeseriesCollection& coll,
                                             const BsonObj& documents, bool ordered) {
  timeseries::BucketCatalog& catalog = *ctx.service.bucket_catalog;
  auto session = ctx.service.engine->NewSession();
  InsertOutcome out;
  const std::string& time_field = coll.options.time_field;
  // Each staged measurement's batch, in document order; a batch is committed once.
  std::vector<std::pair<int, std::shared_ptr<timeseries::WriteBatch>>> staged;
  std::vector<BsonObj> keep_alive;
  // Raw meta element (a view into keep_alive's documents, whose buffers never move) → series key.
  std::unordered_map<std::string_view, std::string> series_keys;
  keep_alive.reserve(static_cast<size_t>(documents.NumFields()));
  int index = 0;
  for (BsonElement e : documents) {
    if (e.type() != BsonType::kObject) return WrongType("insert", e, "object");
    Status st = Status::OK();
    auto prepared = PrepareInsertDocument(e.Obj());
    if (!prepared.ok()) {
      st = prepared.status();
    } else if (prepared.value()[time_field].type() != BsonType::kDate) {
      st = Status(
          ErrorCode::kBadValue,
          "'" + time_field + "' must be present and contain a valid BSON UTC datetime value");
    } else {
      keep_alive.push_back(std::move(prepared).value());
      const BsonObj& m = keep_alive.back();
      // Measurements of one request usually come from a few series: normalize each meta once.
      BsonElement meta = coll.options.meta_field ? m[*coll.options.meta_field] : BsonElement();
      std::string_view raw =
          meta.eoo() ? std::string_view() : std::string_view(meta.raw(), meta.size());
      auto key = series_keys.find(raw);
      if (key == series_keys.end()) {
        key = series_keys.emplace(raw, timeseries::BucketCatalog::SeriesKey(coll, meta)).first;
      }
      auto batch = catalog.Insert(coll, *session, m, &key->second);
      if (batch.ok()) {
        staged.emplace_back(index, std::move(batch).value());
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
  std::unordered_map<timeseries::WriteBatch*, Status> results;
  for (const auto& [i, batch] : staged) {
    if (results.count(batch.get())) continue;
    results.emplace(batch.get(), catalog.Commit(coll, *session, batch));
  }
  for (const auto& [i, batch] : staged) {
    const Status& st = results.at(batch.get());
    if (st.ok()) {
      ++out.n;
    } else {
      out.errors.emplace_back(i, st);
    }
  }
  std::sort(out.errors.begin(), out.errors.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  if (ordered && out.errors.size() > 1) out.errors.erase(out.errors.begin() + 1, out.errors.end());
  return out;
}

StatusWith<int64_t> DeleteMeasurements(CommandContext& ctx,
                                       const timeseries::TimeseriesCollection& coll,
                                       const BsonObj& filter, bool multi) {
  timeseries::BucketFilterSpec spec;
  spec.time_field = coll.options.time_field;
  spec.meta_field = coll.options.meta_field;
  spec.bucket_max_span_seconds = coll.options.bucket_max_span_seconds;
  HG_ASSIGN_OR_RETURN(auto bucket_filter, timeseries::BucketFilter::Make(filter, spec));
  if (!bucket_filter.meta_only()) {
    return Status(ErrorCode::kCommandNotSupported,
                  "deletes on time-series collections that filter on fields other than the "
                  "metaField are not supported yet");
  }
  if (!multi) {
    return Status(ErrorCode::kCommandNotSupported,
                  "single deletes (limit: 1) on time-series collections are not supported yet");
  }
  // A meta-only filter matches whole buckets: they go without being unpacked.
  int64_t deleted = 0;
  std::string resume;
  bool started = false;
  while (true) {
    std::vector<catalog::Record> victims;
    int64_t rows = 0;
    bool more_keys = false;
    {
      auto session = ctx.service.engine->NewSession();
      HG_ASSIGN_OR_RETURN(auto cursor, session->OpenCursorOrError(coll.buckets->ident()));
      auto more = started ? cursor->SeekAfter(resume) : cursor->SeekFirst();
      started = true;
      while (more.ok() && more.value()) {
        BsonObj bucket(cursor->value().data());
        if (bucket_filter.MayMatch(bucket)) {
          HG_ASSIGN_OR_RETURN(
              int64_t n, timeseries::BucketUnpacker::CountRows(bucket, coll.options.time_field));
          rows += n;
          victims.push_back({storage::DecodeRecordId(cursor->key()), bucket.Owned()});
          if (victims.size() >= 100) {
            resume = std::string(cursor->key());
            more_keys = true;
            break;
          }
        }
        more = cursor->Next();
      }
      HG_RETURN_IF_ERROR(more.status());
    }
    if (!victims.empty()) {
      HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
        auto session = ctx.service.engine->NewSession();
        storage::WriteUnit wu(*session);
        HG_RETURN_IF_ERROR(wu.begin_status());
        for (const auto& v : victims)
          HG_RETURN_IF_ERROR(coll.buckets->Remove(*session, v.id, v.doc));
        return wu.Commit();
      }));
      int64_t bytes = 0;
      for (const auto& v : victims) bytes += v.doc.size();
      coll.buckets->AdjustCounts(-static_cast<int64_t>(victims.size()), -bytes);
      deleted += rows;
      // Open buckets among them are gone: the catalog forgets the collection's buckets.
      ctx.service.bucket_catalog->ClearCollection(coll.uuid);
    }
    if (!more_keys) return deleted;
  }
}

}  // namespace hourglass::commands
