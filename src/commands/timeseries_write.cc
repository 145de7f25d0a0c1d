#include "commands/timeseries_write.h"

#include <algorithm>
#include <bit>
#include <functional>

#include "base/logger.h"
#include "catalog/index_keys.h"
#include "commands/command_util.h"
#include "commands/crud_util.h"
#include "query/matcher.h"
#include "query/path.h"
#include "query/update.h"
#include "storage/kv_engine.h"
#include "timeseries/bucket_compression.h"
#include "timeseries/bucket_document.h"
#include "timeseries/bucket_filter.h"
#include "timeseries/bucket_scan.h"
#include "timeseries/bucket_unpacker.h"
#include "timeseries/meta_normalize.h"

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

// What the bucket collection's indexes ask of a measurement, checked before its write is
// acknowledged: a journaled measurement reaches its bucket only at a later flush, where an index
// key that cannot be made would fail the flush, and every read after it, for good.
class BucketIndexChecks {
 public:
  BucketIndexChecks(const catalog::Collection& buckets, std::string_view time_field) {
    for (const catalog::SecondaryIndex& idx : buckets.Indexes()) {
      bool on_meta = false;
      for (BsonElement f : idx.desc.key) {
        std::string_view p = f.FieldName();
        if (p == "meta" || p.starts_with("meta.")) on_meta = idx.kind == catalog::IndexKind::kUser;
        if (!p.starts_with("control.min.") && !p.starts_with("control.max.")) continue;
        p.remove_prefix(std::string_view("control.min.").size());
        if (p != time_field && std::find(paths_.begin(), paths_.end(), p) == paths_.end()) {
          paths_.emplace_back(p);
        }
      }
      if (on_meta) meta_indexes_.push_back(&idx.desc);
    }
  }

  // A bucket whose bounds of an indexed measurement field hold an array cannot be indexed:
  // Location5930501 for a measurement with an array along one of them, as MongoDB answers.
  Status CheckMeasurement(const BsonObj& m) const {
    for (const std::string& p : paths_) {
      if (ArrayAlongPath(m, p)) {
        return Status(ErrorCode::kLocation5930501,
                      "Indexed measurement field contains an array value");
      }
    }
    return Status::OK();
  }

  // The keys the indexes on the meta make of a bucket of this meta (16766 for an array under a
  // hashed component, 171 for parallel arrays...).
  Status CheckMeta(const BsonElement& meta) const {
    if (meta_indexes_.empty() || meta.eoo()) return Status::OK();
    bson::BsonBuilder b;
    timeseries::AppendNormalizedMeta(b, "meta", meta);
    const BsonObj probe = b.Obj();
    for (const catalog::IndexDescriptor* d : meta_indexes_) {
      HG_RETURN_IF_ERROR(catalog::GenerateIndexKeys(*d, probe).status());
    }
    return Status::OK();
  }

 private:
  // Whether an array lies along the dotted `path` of `doc` (at its end or on the way).
  static bool ArrayAlongPath(const BsonObj& doc, std::string_view path) {
    BsonObj at = doc;
    while (true) {
      const size_t dot = path.find('.');
      BsonElement e = at.GetField(path.substr(0, dot));
      if (e.type() == BsonType::kArray) return true;
      if (dot == std::string_view::npos || e.type() != BsonType::kObject) return false;
      at = e.Obj();
      path.remove_prefix(dot + 1);
    }
  }

  std::vector<std::string> paths_;  // measurement fields whose bounds are indexed
  std::vector<const catalog::IndexDescriptor*> meta_indexes_;
};

}  // namespace

StatusWith<InsertOutcome> InsertMeasurements(CommandContext& ctx,
                                             const timeseries::TimeseriesCollection& coll,
                                             const DocumentArray& documents, bool ordered) {
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
  for (DocumentArray::Entry e : documents) {
    HG_ASSIGN_OR_RETURN(BsonObj doc, e.Document("insert"));
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
      auto batch = r.meta_status.ok()
                       ? catalog.Insert(coll, *session, m, r.series.get())
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

namespace {

// Walks the buckets of `coll` that `filter` may match, in chunks (timeseries/bucket_scan.h).
Status ForEachMatchingBucketChunk(
    CommandContext& ctx, const timeseries::TimeseriesCollection& coll,
    const timeseries::BucketFilter& filter, ModifyStats* stats,
    const std::function<Status(const std::vector<catalog::Record>&, bool* stop)>& fn) {
  return timeseries::ForEachBucketChunk(
      ctx.service.engine, *coll.buckets, catalog::RecordRange{},
      [&](const BsonObj& bucket) {
        const bool keep = filter.MayMatch(bucket);
        if (stats != nullptr) {
          ++stats->buckets_examined;
          stats->buckets_matched += keep ? 1 : 0;
        }
        return keep;
      },
      fn);
}

// The bucket-level filter of a time-series update or delete (`parsed` is `filter` parsed with
// `expr_ctx`), recorded in the explain stats.
StatusWith<timeseries::BucketFilter> ModifyBucketFilter(
    const timeseries::TimeseriesCollection& coll, const BsonObj& filter,
    const query::Matcher& parsed, const query::ExpressionContext& expr_ctx,
    const ModifyOptions& options) {
  HG_ASSIGN_OR_RETURN(
      auto bucket_filter,
      timeseries::BucketFilter::Make(filter, parsed,
                                     timeseries::BucketFilterSpec::Of(coll.options, expr_ctx)));
  if (options.stats != nullptr) {
    options.stats->bucket_filter = bucket_filter.ToBson();
    options.stats->meta_only = bucket_filter.meta_only();
  }
  return bucket_filter;
}
}  // namespace

StatusWith<UpdateOutcome> UpdateMeasurements(CommandContext& ctx,
                                             const timeseries::TimeseriesCollection& coll,
                                             const BsonObj& filter, const BsonElement& update,
                                             const BsonObj& array_filters, bool multi, bool upsert,
                                             const query::ExpressionContext& expr_ctx,
                                             ModifyOptions options) {
  auto invalid = [](std::string msg) { return Status(ErrorCode::kInvalidOptions, std::move(msg)); };
  if (!multi) return invalid("Cannot perform a non-multi update on a time-series collection");
  if (upsert) return invalid("Cannot perform an upsert on a time-series collection");
  if (!coll.options.meta_field) {
    return invalid(
        "Cannot perform an update on a time-series collection that does not have a metaField");
  }
  const std::string& m = *coll.options.meta_field;
  HG_ASSIGN_OR_RETURN(auto matcher, query::Matcher::Parse(filter, expr_ctx));
  HG_ASSIGN_OR_RETURN(auto bucket_filter,
                      ModifyBucketFilter(coll, filter, matcher, expr_ctx, options));
  if (!bucket_filter.meta_only()) {
    return invalid(
        "Cannot perform an update or delete on a time-series collection when querying on a field "
        "that is not the metaField '" +
        m + "'");
  }
  const std::string not_meta =
      "Cannot perform an update on a time-series collection which updates a field that is not "
      "the metaField '" +
      m + "'";
  if (update.type() != BsonType::kObject || update.Obj().IsEmpty() ||
      update.Obj().FirstElement().FieldName().substr(0, 1) != "$") {
    return invalid(not_meta);
  }
  for (BsonElement op : update.Obj()) {
    if (op.type() != BsonType::kObject) return invalid(not_meta);
    for (BsonElement f : op.Obj()) {
      if (!query::PathStartsWith(f.FieldName(), m)) return invalid(not_meta);
      if (op.FieldName() == "$rename" &&
          (f.type() != BsonType::kString || !query::PathStartsWith(f.Str(), m))) {
        return invalid(not_meta);
      }
    }
  }
  HG_ASSIGN_OR_RETURN(auto driver, query::UpdateDriver::Parse(update.Obj(), array_filters));
  UpdateOutcome out;
  HG_RETURN_IF_ERROR(ForEachMatchingBucketChunk(
      ctx, coll, bucket_filter, options.stats,
      [&](const std::vector<catalog::Record>& chunk, bool*) -> Status {
        std::vector<std::pair<const catalog::Record*, BsonObj>> changed;
        for (const auto& rec : chunk) {
          HG_ASSIGN_OR_RETURN(int64_t rows, timeseries::BucketUnpacker::CountRows(
                                                rec.doc, coll.options.time_field));
          out.matched += rows;
          // The update runs on the measurement-level view of the meta: {<metaField>: meta}.
          bson::BsonBuilder before;
          if (!rec.doc["meta"].eoo()) before.AppendElementAs(rec.doc["meta"], m);
          bool modified = false;
          HG_ASSIGN_OR_RETURN(BsonObj after,
                              driver.Apply(before.Obj(), false, &modified, &matcher));
          if (!modified) continue;
          out.modified += rows;
          bson::BsonBuilder nb;
          for (BsonElement e : rec.doc) {
            if (e.FieldName() == "meta") continue;
            if (e.FieldName() == "data" && !after[m].eoo()) {
              timeseries::AppendNormalizedMeta(nb, "meta", after[m]);
            }
            nb.AppendElement(e);
          }
          changed.emplace_back(&rec, nb.Obj());
        }
        if (changed.empty() || options.dry_run) return Status::OK();
        HG_RETURN_IF_ERROR(
            timeseries::RemoveAndRewriteBuckets(ctx.service.engine, *coll.buckets, {}, changed));
        // The rewritten buckets may be open: the catalog forgets the collection's buckets.
        ctx.service.bucket_catalog->ClearCollection(coll.uuid);
        return Status::OK();
      }));
  return out;
}

StatusWith<int64_t> DeleteMeasurements(CommandContext& ctx,
                                       const timeseries::TimeseriesCollection& coll,
                                       const BsonObj& filter, bool multi,
                                       const query::ExpressionContext& expr_ctx,
                                       ModifyOptions options) {
  HG_ASSIGN_OR_RETURN(auto matcher, query::Matcher::Parse(filter, expr_ctx));
  HG_ASSIGN_OR_RETURN(auto bucket_filter,
                      ModifyBucketFilter(coll, filter, matcher, expr_ctx, options));
  const auto& o = coll.options;
  std::string_view meta_field = o.meta_field ? std::string_view(*o.meta_field) : std::string_view();
  timeseries::BucketUnpacker unpacker(
      timeseries::UnpackSpec{.time_field = o.time_field,
                             .meta_field = o.meta_field,
                             .mode = timeseries::UnpackSpec::Mode::kAll,
                             .fields = {}});
  int64_t deleted = 0;
  HG_RETURN_IF_ERROR(ForEachMatchingBucketChunk(
      ctx, coll, bucket_filter, options.stats,
      [&](const std::vector<catalog::Record>& chunk, bool* stop) -> Status {
        // Per bucket: remove it (every measurement matches), rewrite it with the measurements
        // that remain (some match), or leave it (none does; a meta-only filter never needs to
        // look inside).
        std::vector<const catalog::Record*> removed;
        std::vector<std::pair<const catalog::Record*, BsonObj>> rewritten;
        int64_t n = 0;
        for (const auto& rec : chunk) {
          if (!multi && deleted + n > 0) break;
          if (bucket_filter.meta_only() && multi) {
            HG_ASSIGN_OR_RETURN(int64_t rows,
                                timeseries::BucketUnpacker::CountRows(rec.doc, o.time_field));
            n += rows;
            removed.push_back(&rec);
            continue;
          }
          if (options.stats != nullptr) ++options.stats->buckets_unpacked;
          std::vector<BsonObj> keep;
          int64_t rows = 0, hits = 0;
          Status filter_error = Status::OK();  // $expr evaluation errors fail the delete
          HG_RETURN_IF_ERROR(unpacker.Unpack(rec.doc, [&](BsonObj m) {
            ++rows;
            bool hit = false;
            if (multi || hits == 0) {
              StatusWith<bool> r = matcher.Evaluate(m);
              if (!r.ok()) {
                filter_error = r.status();
                return false;
              }
              hit = r.value();
            }
            if (hit) {
              ++hits;
            } else {
              keep.push_back(m.Owned());
            }
            return true;
          }));
          HG_RETURN_IF_ERROR(filter_error);
          if (hits == 0) continue;
          n += hits;
          if (keep.empty()) {
            removed.push_back(&rec);
            continue;
          }
          // The bucket keeps its _id and start; its rows and control are rebuilt.
          timeseries::BucketFieldTree fields;
          for (const BsonObj& m : keep) fields.UpdateMinMax(m, meta_field);
          BsonElement min_t = rec.doc["control"].Obj()["min"].Obj()[o.time_field];
          timeseries::BucketDocument doc(rec.doc["_id"].Oid(), rec.doc["meta"]);
          doc.StageRows(keep, meta_field);
          std::string full;
          std::vector<storage::Session::Modification> unused;
          doc.Prepare(timeseries::BuildBucketControl(fields, o.time_field, min_t.DateMillis()),
                      &full, &unused);
          BsonObj remaining = BsonObj::CopyOf(full);
          if (timeseries::IsCompressedBucket(rec.doc)) {
            // A compressed bucket stays compressed, in its version: the remaining rows keep
            // their order, so a sorted (version 2) bucket is still sorted.
            const int version = static_cast<int>(rec.doc["control"].Obj()["version"].NumberLong());
            HG_ASSIGN_OR_RETURN(remaining,
                                timeseries::CompressBucket(remaining, o.time_field, version));
          }
          rewritten.emplace_back(&rec, std::move(remaining));
        }
        if (removed.empty() && rewritten.empty()) return Status::OK();
        if (options.dry_run) {
          deleted += n;
          if (!multi && deleted > 0) *stop = true;
          return Status::OK();
        }
        HG_RETURN_IF_ERROR(timeseries::RemoveAndRewriteBuckets(ctx.service.engine, *coll.buckets,
                                                               removed, rewritten));
        deleted += n;
        // Buckets among them may be open: the catalog forgets the collection's buckets.
        ctx.service.bucket_catalog->ClearCollection(coll.uuid);
        if (!multi && deleted > 0) *stop = true;
        return Status::OK();
      }));
  return deleted;
}

}  // namespace hourglass::commands
