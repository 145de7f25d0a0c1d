// Deletes and updates of the measurements of a time-series collection (timeseries_write.h).
#include <cstring>
#include <unordered_set>

#include "base/server_parameters.h"
#include "commands/crud_util.h"
#include "commands/timeseries_index_checks.h"
#include "commands/timeseries_write.h"
#include "exec/explain_timeseries.h"
#include "exec/timeseries_read.h"
#include "exec/timeseries_scan.h"
#include "query/matcher.h"
#include "query/path.h"
#include "query/update.h"
#include "storage/kv_engine.h"
#include "timeseries/bucket_builder.h"
#include "timeseries/bucket_compression.h"
#include "timeseries/bucket_filter.h"
#include "timeseries/bucket_scan.h"
#include "timeseries/bucket_unpacker.h"
#include "timeseries/meta_normalize.h"

namespace hourglass::commands {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using timeseries::BucketChanges;
using timeseries::ChunkOutcome;

namespace {

ServerParameter* ArbitraryUpdatesParameter() {
  auto& reg = ServerParameterRegistry::Get();
  const char* name = "hourglassTimeseriesArbitraryUpdates";
  if (ServerParameter* p = reg.Find(name)) return p;
  return reg.Register(name, true, true, true);
}

// The buckets of `chunk` as stored now, those gone or no longer kept by `bucket_filter` left
// out: a chunk whose write found a bucket changed since it was read.
StatusWith<std::vector<catalog::Record>> ReadAgain(CommandContext& ctx,
                                                   const timeseries::TimeseriesCollection& coll,
                                                   const std::vector<catalog::Record>& chunk,
                                                   const timeseries::BucketFilter& bucket_filter) {
  auto session = ctx.service.engine->NewSession();
  std::vector<catalog::Record> now;
  for (const catalog::Record& rec : chunk) {
    HG_ASSIGN_OR_RETURN(auto found, coll.buckets->FindRecord(*session, rec.id));
    if (found && bucket_filter.MayMatch(found->doc)) now.push_back({rec.id, found->doc.Owned()});
  }
  return now;
}

// Walks the buckets of `coll` that `filter` (parsed as `bucket_filter`) may match, found as a
// read of that filter finds them (exec::TimeseriesScan: the time range of the bucket table, the
// series index, a user index, the hint in `options`), handing them to `fn` up to 100 at a time. A
// chunk `fn` wants read again is read anew by RecordId. Fills options.stats.
Status ForEachMatchingBucketChunk(
    CommandContext& ctx, const timeseries::TimeseriesCollection& coll, const BsonObj& filter,
    const timeseries::BucketFilter& bucket_filter, const query::ExpressionContext& expr_ctx,
    const ModifyOptions& options,
    const std::function<StatusWith<ChunkOutcome>(const std::vector<catalog::Record>&)>& fn) {
  exec::TimeseriesScanOptions so;
  so.latest_cache = false;
  so.expr_ctx = expr_ctx;
  so.bucket_filter = bucket_filter;
  so.hint = options.hint;
  HG_ASSIGN_OR_RETURN(auto scan,
                      exec::TimeseriesScan::Make(coll, ctx.service.engine, filter, std::move(so)));
  int64_t kept = 0;
  Status walked = [&]() -> Status {
    while (true) {
      std::vector<catalog::Record> chunk;
      bool end = false;
      while (chunk.size() < 100) {
        bool whole = false;
        HG_ASSIGN_OR_RETURN(std::optional<BsonObj> bucket, scan->NextBucket(&whole));
        if (!bucket) {
          end = true;
          break;
        }
        const int64_t id = catalog::ClusteredRecordId((*bucket)["_id"].Oid());
        chunk.push_back({id, std::move(*bucket)});
      }
      kept += static_cast<int64_t>(chunk.size());
      ChunkOutcome outcome = ChunkOutcome::kNext;
      for (int again = 0; !chunk.empty(); ++again) {
        HG_ASSIGN_OR_RETURN(outcome, fn(chunk));
        if (outcome != ChunkOutcome::kReadAgain) break;
        if (again >= 100) {
          return Status(ErrorCode::kWriteConflict,
                        "time-series buckets kept changing while they were being rewritten");
        }
        HG_ASSIGN_OR_RETURN(chunk, ReadAgain(ctx, coll, chunk, bucket_filter));
      }
      if (end || outcome == ChunkOutcome::kStop) return Status::OK();
    }
  }();
  if (options.stats != nullptr) {
    options.stats->buckets_examined = scan->stats().buckets_read;
    options.stats->buckets_matched = kept;
    options.stats->input_plan = exec::BucketScanPlan(*scan, false);
    options.stats->input_plan_run = exec::BucketScanPlan(*scan, true);
  }
  return walked;
}

// Writes a chunk's changes; after the commit the bucket catalog forgets the collection's buckets
// (some among them may be open). Nullopt when a bucket changed since it was read.
StatusWith<std::optional<std::vector<int64_t>>> WriteChanges(
    CommandContext& ctx, const timeseries::TimeseriesCollection& coll,
    const BucketChanges& changes) {
  return timeseries::ApplyBucketChanges(ctx.service.engine, *coll.buckets, changes, [&] {
    ctx.service.bucket_catalog->ClearCollection(coll.uuid);
  });
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
                                     timeseries::BucketFilterSpec::Of(
                                         coll.options, expr_ctx, coll.buckets->DefaultCollator())));
  if (options.stats != nullptr) {
    options.stats->bucket_filter = bucket_filter.ToBson();
    options.stats->meta_only = bucket_filter.meta_only();
  }
  return bucket_filter;
}

// Whether measurements `a` and `b` have the same fields with the same values (the same bytes),
// in any order.
bool SameMeasurement(const BsonObj& a, const BsonObj& b) {
  if (a.NumFields() != b.NumFields()) return false;
  for (BsonElement e : b) {
    BsonElement x = a[e.FieldName()];
    if (x.eoo() || x.type() != e.type() || x.ValueSize() != e.ValueSize() ||
        std::memcmp(x.value(), e.value(), e.ValueSize()) != 0) {
      return false;
    }
  }
  return true;
}

// An unpacker of whole measurements, every field.
timeseries::BucketUnpacker WholeMeasurements(const timeseries::TimeseriesOptions& o) {
  return timeseries::BucketUnpacker(
      timeseries::UnpackSpec{.time_field = o.time_field,
                             .meta_field = o.meta_field,
                             .mode = timeseries::UnpackSpec::Mode::kAll,
                             .fields = {}});
}

// `rec`'s bucket holding only `keep`, a subset of its measurements in their order, under its _id
// and start, in its version.
StatusWith<BsonObj> RewrittenBucket(const catalog::Record& rec, const std::vector<BsonObj>& keep,
                                    const timeseries::TimeseriesCollection& coll) {
  const timeseries::TimeseriesOptions& o = coll.options;
  BsonObj control = rec.doc["control"].Obj();
  const int64_t min_time = control["min"].Obj()[o.time_field].DateMillis();
  const int version = timeseries::IsCompressedBucket(rec.doc)
                          ? static_cast<int>(control["version"].NumberLong())
                          : 1;
  return timeseries::MakeBucket(rec.doc["_id"].Oid(), rec.doc["meta"], keep, o, min_time, version,
                                coll.buckets->DefaultCollator());
}

// MongoDB 7.0's rule for `update` on the metaField `m`: operator-style, every path under `m`
// ($rename's targets too).
bool UpdatesOnlyMeta(const BsonElement& update, const std::string& m) {
  if (update.type() != BsonType::kObject || update.Obj().IsEmpty() ||
      update.Obj().FirstElement().FieldName().substr(0, 1) != "$") {
    return false;
  }
  for (BsonElement op : update.Obj()) {
    if (op.type() != BsonType::kObject) return false;
    for (BsonElement f : op.Obj()) {
      if (!query::PathStartsWith(f.FieldName(), m)) return false;
      if (op.FieldName() == "$rename" &&
          (f.type() != BsonType::kString || !query::PathStartsWith(f.Str(), m))) {
        return false;
      }
    }
  }
  return true;
}

// An update of the metaField of whole buckets (spec §8.3): each matched bucket keeps its
// measurements and gets the new (normalized) meta; n and nModified count their measurements.
StatusWith<UpdateOutcome> UpdateMetaOfBuckets(
    CommandContext& ctx, const timeseries::TimeseriesCollection& coll, const BsonObj& filter,
    const query::ExpressionContext& expr_ctx, const timeseries::BucketFilter& bucket_filter,
    const query::Matcher& matcher, const BsonElement& update, const BsonObj& array_filters,
    ModifyOptions options) {
  const std::string& m = *coll.options.meta_field;
  HG_ASSIGN_OR_RETURN(auto driver, query::UpdateDriver::Parse(update.Obj(), array_filters));
  UpdateOutcome out;
  HG_RETURN_IF_ERROR(ForEachMatchingBucketChunk(
      ctx, coll, filter, bucket_filter, expr_ctx, options,
      [&](const std::vector<catalog::Record>& chunk) -> StatusWith<ChunkOutcome> {
        BucketChanges changes;
        int64_t matched = 0, modified = 0;
        for (const auto& rec : chunk) {
          HG_ASSIGN_OR_RETURN(int64_t rows, timeseries::BucketUnpacker::CountRows(
                                                rec.doc, coll.options.time_field));
          matched += rows;
          // The update runs on the measurement-level view of the meta: {<metaField>: meta}.
          bson::BsonBuilder before;
          if (!rec.doc["meta"].eoo()) before.AppendElementAs(rec.doc["meta"], m);
          bool changed = false;
          HG_ASSIGN_OR_RETURN(BsonObj after, driver.Apply(before.Obj(), false, &changed, &matcher));
          if (!changed) continue;
          modified += rows;
          bson::BsonBuilder nb;
          for (BsonElement e : rec.doc) {
            if (e.FieldName() == "meta") continue;
            if (e.FieldName() == "data" && !after[m].eoo()) {
              timeseries::AppendNormalizedMeta(nb, "meta", after[m]);
            }
            nb.AppendElement(e);
          }
          changes.rewritten.emplace_back(&rec, nb.Obj());
        }
        if (!options.dry_run) {
          HG_ASSIGN_OR_RETURN(auto written, WriteChanges(ctx, coll, changes));
          if (!written) return ChunkOutcome::kReadAgain;
        }
        out.matched += matched;
        out.modified += modified;
        return ChunkOutcome::kNext;
      }));
  return out;
}

// What an updated measurement must be to be written again: a valid document whose time field
// holds a Date and whose fields the bucket collection's indexes can take.
Status CheckUpdatedMeasurement(const BsonObj& m, const timeseries::TimeseriesOptions& o,
                               const BucketIndexChecks& checks) {
  HG_RETURN_IF_ERROR(PrepareInsertDocument(m, /*id_first=*/false).status());
  if (m[o.time_field].type() != BsonType::kDate) {
    return Status(
        ErrorCode::kBadValue,
        "'" + o.time_field + "' must be present and contain a valid BSON UTC datetime value");
  }
  HG_RETURN_IF_ERROR(checks.CheckMeasurement(m));
  return checks.CheckMeta(o.meta_field ? m[*o.meta_field] : BsonElement());
}

// The measurement an upsert inserts when nothing matched `filter`: the filter's equalities, then
// the update (a replacement keeps only the filter's _id), with an _id first when it has none.
StatusWith<BsonObj> UpsertedMeasurement(const BsonObj& filter, const query::UpdateDriver& driver) {
  HG_ASSIGN_OR_RETURN(BsonObj seed, query::ExtractEqualityDocument(filter));
  bool modified = false;
  HG_ASSIGN_OR_RETURN(BsonObj doc,
                      driver.Apply(driver.IsReplacement() ? BsonObj() : seed, true, &modified));
  if (!doc["_id"].eoo()) return doc;
  bson::BsonBuilder b;
  if (driver.IsReplacement() && !seed["_id"].eoo()) {
    b.AppendElement(seed["_id"]);
  } else {
    b.AppendObjectId("_id", bson::ObjectId::Generate());
  }
  b.AppendElementsOf(doc);
  return b.Obj();
}

// MongoDB 8.0's update of any measurement field: per bucket, the matched measurements the update
// changes leave it (it is rewritten with the others, or removed) and go, changed, into new
// buckets written in the same transaction; buckets this update made are not visited again.
StatusWith<UpdateOutcome> UpdateAnyField(
    CommandContext& ctx, const timeseries::TimeseriesCollection& coll, const BsonObj& filter,
    const query::Matcher& matcher, const timeseries::BucketFilter& bucket_filter,
    const BsonElement& update, const BsonObj& array_filters, bool multi, bool upsert,
    const query::ExpressionContext& expr_ctx, ModifyOptions options) {
  HG_ASSIGN_OR_RETURN(auto driver, ParseUpdate(update, array_filters, expr_ctx, multi));
  const auto& o = coll.options;
  timeseries::BucketUnpacker unpacker = WholeMeasurements(o);
  const BucketIndexChecks checks(*coll.buckets, o.time_field);
  std::unordered_set<int64_t> made;  // RecordIds of the buckets this update wrote
  UpdateOutcome out;
  HG_RETURN_IF_ERROR(ForEachMatchingBucketChunk(
      ctx, coll, filter, bucket_filter, expr_ctx, options,
      [&](const std::vector<catalog::Record>& chunk) -> StatusWith<ChunkOutcome> {
        BucketChanges changes;
        std::vector<BsonObj> moved;
        UpdateOutcome here;
        for (const auto& rec : chunk) {
          if (made.contains(rec.id)) continue;
          if (!multi && out.matched + here.matched > 0) break;
          if (options.stats != nullptr) ++options.stats->buckets_unpacked;
          std::vector<BsonObj> keep;
          bool changed = false;
          Status error = Status::OK();  // the filter's or the update's
          HG_RETURN_IF_ERROR(unpacker.Unpack(rec.doc, [&](BsonObj m) {
            bool hit = false;
            if (multi || out.matched + here.matched == 0) {
              StatusWith<bool> r = matcher.Evaluate(m);
              if (!r.ok()) {
                error = r.status();
                return false;
              }
              hit = r.value() && (options.only == nullptr || SameMeasurement(m, *options.only));
            }
            bool modified = false;
            StatusWith<BsonObj> after =
                hit ? driver.Apply(m, false, &modified, &matcher) : StatusWith<BsonObj>(BsonObj());
            if (!after.ok()) {
              error = after.status();
              return false;
            }
            here.matched += hit ? 1 : 0;
            if (hit && !here.before) here.before = m.Owned();
            if (!modified) {
              keep.push_back(m.Owned());
              return true;
            }
            if (error = CheckUpdatedMeasurement(after.value(), o, checks); !error.ok())
              return false;
            if (!here.after) here.after = after.value().Owned();
            moved.push_back(after.value().Owned());
            ++here.modified;
            changed = true;
            return true;
          }));
          HG_RETURN_IF_ERROR(error);
          if (!changed) continue;
          if (keep.empty()) {
            changes.removed.push_back(&rec);
          } else {
            HG_ASSIGN_OR_RETURN(BsonObj rewritten, RewrittenBucket(rec, keep, coll));
            changes.rewritten.emplace_back(&rec, std::move(rewritten));
          }
        }
        if (!options.dry_run && !moved.empty()) {
          HG_ASSIGN_OR_RETURN(
              changes.inserted,
              timeseries::MakeNewBuckets(std::move(moved), o, coll.buckets->DefaultCollator()));
          if (options.before_commit) {
            changes.before_commit = [&](storage::Session& s) {
              return options.before_commit(s, here.matched, here.modified);
            };
          }
          HG_ASSIGN_OR_RETURN(auto written, WriteChanges(ctx, coll, changes));
          if (!written) return ChunkOutcome::kReadAgain;
          made.insert(written->begin(), written->end());
        }
        out.matched += here.matched;
        out.modified += here.modified;
        if (!out.before) out.before = std::move(here.before);
        if (!out.after) out.after = std::move(here.after);
        return !multi && out.matched > 0 ? ChunkOutcome::kStop : ChunkOutcome::kNext;
      }));
  if (out.matched > 0 || !upsert) return out;
  HG_ASSIGN_OR_RETURN(BsonObj doc, UpsertedMeasurement(filter, driver));
  bson::BsonBuilder id;
  id.AppendElementAs(doc["_id"], "");
  out.upserted_id = id.Obj();
  if (!options.dry_run) {
    bson::BsonArrayBuilder one;
    one.AppendObject(doc);
    MeasurementStatements statement{
        [](int) { return false; }, [&](int) { return options.upsert_statement(*out.upserted_id); }};
    HG_ASSIGN_OR_RETURN(InsertOutcome inserted,
                        InsertMeasurements(ctx, coll, DocumentArray(one.Obj()), true,
                                           options.upsert_statement ? &statement : nullptr));
    if (!inserted.errors.empty()) return inserted.errors.front().second;
  }
  out.after = doc;
  return out;
}

}  // namespace

void RegisterTimeseriesWriteParameters() { (void)ArbitraryUpdatesParameter(); }

StatusWith<UpdateOutcome> UpdateMeasurements(CommandContext& ctx,
                                             const timeseries::TimeseriesCollection& coll,
                                             const BsonObj& filter, const BsonElement& update,
                                             const BsonObj& array_filters, bool multi, bool upsert,
                                             const query::ExpressionContext& expr_ctx,
                                             ModifyOptions options) {
  const bool any_field = ArbitraryUpdatesParameter()->GetBool();
  auto invalid = [](std::string msg) { return Status(ErrorCode::kInvalidOptions, std::move(msg)); };
  if (!any_field) {
    if (!multi) return invalid("Cannot perform a non-multi update on a time-series collection");
    if (upsert) return invalid("Cannot perform an upsert on a time-series collection");
    if (!coll.options.meta_field) {
      return invalid(
          "Cannot perform an update on a time-series collection that does not have a metaField");
    }
  }
  HG_ASSIGN_OR_RETURN(auto matcher, query::Matcher::Parse(filter, expr_ctx));
  HG_ASSIGN_OR_RETURN(auto bucket_filter,
                      ModifyBucketFilter(coll, filter, matcher, expr_ctx, options));
  if (multi && !upsert && coll.options.meta_field) {
    const std::string& m = *coll.options.meta_field;
    const bool meta_update = UpdatesOnlyMeta(update, m);
    if (bucket_filter.meta_only() && meta_update) {
      return UpdateMetaOfBuckets(ctx, coll, filter, expr_ctx, bucket_filter, matcher, update,
                                 array_filters, options);
    }
    if (!any_field && !bucket_filter.meta_only()) {
      return invalid(
          "Cannot perform an update or delete on a time-series collection when querying on a "
          "field that is not the metaField '" +
          m + "'");
    }
    if (!any_field) {
      return invalid(
          "Cannot perform an update on a time-series collection which updates a field that is "
          "not the metaField '" +
          m + "'");
    }
  }
  return UpdateAnyField(ctx, coll, filter, matcher, bucket_filter, update, array_filters, multi,
                        upsert, expr_ctx, options);
}

StatusWith<BsonObj> FirstMeasurementInOrder(CommandContext& ctx,
                                            const timeseries::TimeseriesCollection& coll,
                                            const BsonObj& filter, const BsonObj& sort,
                                            const BsonObj& hint,
                                            const query::ExpressionContext& expr_ctx) {
  exec::TimeseriesReadRequest request;
  request.filter = filter;
  request.hint = hint;
  pipeline::PipelineContext pctx;
  pctx.now_millis = expr_ctx.now_millis;
  pctx.let = expr_ctx.let;
  pctx.collator = expr_ctx.collator;
  HG_ASSIGN_OR_RETURN(auto stream,
                      exec::BuildTimeseriesRead(coll, ctx.service.engine, std::move(request),
                                                exec::TimeseriesFindStages(sort, 0, 1), pctx));
  HG_ASSIGN_OR_RETURN(std::optional<BsonObj> first, stream->Next());
  return first ? first->Owned() : BsonObj();
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
  timeseries::BucketUnpacker unpacker = WholeMeasurements(o);
  int64_t deleted = 0;
  HG_RETURN_IF_ERROR(ForEachMatchingBucketChunk(
      ctx, coll, filter, bucket_filter, expr_ctx, options,
      [&](const std::vector<catalog::Record>& chunk) -> StatusWith<ChunkOutcome> {
        // Per bucket: remove it (every measurement matches), rewrite it with the measurements
        // that remain (some match), or leave it (none does; a meta-only filter never needs to
        // look inside).
        BucketChanges changes;
        int64_t n = 0;
        // A chunk read again may find another first measurement.
        if (deleted == 0 && options.first_deleted != nullptr) options.first_deleted->reset();
        for (const auto& rec : chunk) {
          if (!multi && deleted + n > 0) break;
          if (bucket_filter.meta_only() && multi) {
            HG_ASSIGN_OR_RETURN(int64_t rows,
                                timeseries::BucketUnpacker::CountRows(rec.doc, o.time_field));
            n += rows;
            changes.removed.push_back(&rec);
            continue;
          }
          if (options.stats != nullptr) ++options.stats->buckets_unpacked;
          std::vector<BsonObj> keep;
          int64_t hits = 0;
          Status filter_error = Status::OK();  // $expr evaluation errors fail the delete
          HG_RETURN_IF_ERROR(unpacker.Unpack(rec.doc, [&](BsonObj m) {
            bool hit = false;
            if (multi || hits == 0) {
              StatusWith<bool> r = matcher.Evaluate(m);
              if (!r.ok()) {
                filter_error = r.status();
                return false;
              }
              hit = r.value() && (options.only == nullptr || SameMeasurement(m, *options.only));
            }
            if (hit) {
              ++hits;
              if (options.first_deleted != nullptr && !*options.first_deleted) {
                *options.first_deleted = m.Owned();
              }
            } else {
              keep.push_back(m.Owned());
            }
            return true;
          }));
          HG_RETURN_IF_ERROR(filter_error);
          if (hits == 0) continue;
          n += hits;
          if (keep.empty()) {
            changes.removed.push_back(&rec);
            continue;
          }
          // The bucket keeps its _id, start and version; a compressed one stays compressed (the
          // remaining rows keep their order, so a sorted version-2 bucket is still sorted).
          HG_ASSIGN_OR_RETURN(BsonObj remaining, RewrittenBucket(rec, keep, coll));
          changes.rewritten.emplace_back(&rec, std::move(remaining));
        }
        if (!options.dry_run) {
          if (options.before_commit && n > 0) {
            changes.before_commit = [&](storage::Session& s) {
              return options.before_commit(s, n, n);
            };
          }
          HG_ASSIGN_OR_RETURN(auto written, WriteChanges(ctx, coll, changes));
          if (!written) return ChunkOutcome::kReadAgain;
        }
        deleted += n;
        return !multi && deleted > 0 ? ChunkOutcome::kStop : ChunkOutcome::kNext;
      }));
  return deleted;
}

}  // namespace hourglass::commands
