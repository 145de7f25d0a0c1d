#include "exec/timeseries_scan.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "base/interrupt.h"
#include "catalog/record_store.h"
#include "exec/lastpoint_pattern.h"
#include "exec/plan_summary.h"
#include "exec/timeseries_index_plan.h"
#include "query/path.h"
#include "storage/kv_engine.h"
#include "storage/record_id.h"
#include "timeseries/bucket_compression.h"

namespace hourglass::exec {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {
// Buckets read per storage session (each holds up to 1,000 measurements): the first chunk reads
// one and each next one twice as many up to this, so a read that stops early ($limit, a bounded
// sort's first results) reads few buckets.
constexpr int kChunkBuckets = 16;
// Bucket _ids hold the start time in 32 bits; only times in [1970, 2038) keep their order in the
// key, so only those bounds may narrow the scan.
constexpr int64_t kMaxOrderedSeconds = (int64_t{1} << 31) - 1;

int64_t FloorSeconds(int64_t millis) {
  return millis >= 0 ? millis / 1000 : -((-millis + 999) / 1000);
}
}  // namespace

TimeseriesReadCounters& GlobalTimeseriesReadCounters() {
  static TimeseriesReadCounters counters;
  return counters;
}

namespace {

// The scan's plan over the buckets, as explain_timeseries.cc describes it in full.
std::string BucketPlanSummary(const TimeseriesScan& scan) {
  if (!scan.user_index_plan().IsEmpty()) {
    BsonElement input = scan.user_index_plan()["inputStage"];
    return PlanSummary(
        "IXSCAN", input.type() == BsonType::kObject ? input.Obj()["keyPattern"].Obj() : BsonObj());
  }
  if (scan.uses_series_index()) {
    const catalog::SecondaryIndex* index = scan.collection().buckets->SeriesIndex();
    return PlanSummary(scan.walks_newest_per_series() ? "DISTINCT_SCAN" : "IXSCAN",
                       index != nullptr ? index->desc.key : BsonObj());
  }
  return scan.has_time_range() ? "CLUSTERED_IXSCAN" : "COLLSCAN";
}

}  // namespace

StatusWith<std::unique_ptr<TimeseriesScan>> TimeseriesScan::Make(
    timeseries::TimeseriesCollection coll, storage::KvEngine* engine, const BsonObj& filter,
    TimeseriesScanOptions options) {
  std::optional<timeseries::BucketFilter> planned = std::move(options.bucket_filter);
  std::optional<query::Matcher> parsed = std::move(options.parsed_filter);
  options.bucket_filter.reset();
  options.parsed_filter.reset();
  const auto spec = timeseries::BucketFilterSpec::Of(coll.options, options.expr_ctx,
                                                     coll.buckets->DefaultCollator());
  if ((!options.bucket_level_filter || !planned) && !parsed) {
    HG_ASSIGN_OR_RETURN(parsed, query::Matcher::Parse(filter, options.expr_ctx));
  }
  if (!options.bucket_level_filter) {
    HG_ASSIGN_OR_RETURN(planned, timeseries::BucketFilter::Make(BsonObj(), spec));
  } else if (!planned) {
    HG_ASSIGN_OR_RETURN(planned, timeseries::BucketFilter::Make(filter, *parsed, spec));
  }
  timeseries::BucketFilter bucket_filter = std::move(*planned);
  std::optional<query::Matcher> matcher;
  BsonObj event_filter;
  if (!options.bucket_level_filter) {
    if (!parsed->MatchesEverything()) {
      matcher = std::move(parsed);
      event_filter = filter.Owned();
    }
  } else if (!bucket_filter.meta_only() && !bucket_filter.residual().MatchesEverything()) {
    // Top-level conjuncts on the meta field are decided exactly per bucket (MayMatch tests them
    // on `meta`), so the per-measurement filter is only the rest.
    matcher = bucket_filter.residual();
    event_filter = bucket_filter.residual_filter();
  }
  std::optional<query::Matcher> meta_matcher;
  // A hidden series index serves no read.
  const catalog::SecondaryIndex* series = coll.buckets->SeriesIndex();
  const bool series_usable = series != nullptr && !series->desc.hidden;
  // A {$natural: ...} hint asks for a scan of the buckets in their clustered order.
  const bool natural = !options.hint.IsEmpty() &&
                       options.hint.FirstElement().type() == bson::BsonType::kObject &&
                       options.hint.FirstElement().Obj().FirstElement().FieldName() == "$natural";
  if (series_usable && !natural && bucket_filter.meta_matcher() != nullptr) {
    meta_matcher = *bucket_filter.meta_matcher();
  }
  auto scan = std::unique_ptr<TimeseriesScan>(new TimeseriesScan(
      std::move(coll), engine, std::move(bucket_filter), std::move(matcher), std::move(options)));
  scan->meta_matcher_ = std::move(meta_matcher);
  scan->lastpoint_index_ =
      scan->options_.lastpoint && series_usable && scan->options_.bucket_level_filter;
  scan->series_order_ = !scan->options_.series_partition.IsEmpty() &&
                        scan->options_.sort_direction > 0 && series_usable &&
                        scan->options_.hint.IsEmpty() && scan->options_.bucket_level_filter;
  if (scan->series_order_) {
    auto partition_by =
        pipeline::Expression::ParseExpression(scan->options_.series_partition.FirstElement(),
                                              pipeline::ParseContext(scan->options_.expr_ctx.let));
    if (partition_by.ok()) {
      scan->partition_by_ = std::move(partition_by).value();
    } else {
      scan->series_order_ = false;  // the stage reports the error
    }
  }
  scan->event_filter_ = std::move(event_filter);
  if (!scan->lastpoint_index_ && !scan->series_order_ && scan->options_.bucket_level_filter) {
    const BsonElement hint =
        scan->options_.hint.IsEmpty() ? BsonElement() : scan->options_.hint.FirstElement();
    HG_ASSIGN_OR_RETURN(auto indexed,
                        TimeseriesIndexedBuckets(scan->coll_, engine, scan->bucket_filter_, hint));
    if (indexed) {
      scan->rids_ = std::move(indexed->rids);
      scan->user_index_plan_ = std::move(indexed->plan);
      scan->user_index_keys_examined_ = indexed->keys_examined;
      scan->collected_ = scan->user_index_ = true;
      scan->OrderRids();
    }
  }
  RecordPlanSummary(BucketPlanSummary(*scan));
  return scan;
}

TimeseriesScan::TimeseriesScan(timeseries::TimeseriesCollection coll, storage::KvEngine* engine,
                               timeseries::BucketFilter bucket_filter,
                               std::optional<query::Matcher> filter, TimeseriesScanOptions options)
    : coll_(std::move(coll)),
      engine_(engine),
      bucket_filter_(std::move(bucket_filter)),
      filter_(std::move(filter)),
      unpacker_(timeseries::UnpackSpec{.time_field = coll_.options.time_field,
                                       .meta_field = coll_.options.meta_field,
                                       .mode = options.mode,
                                       .fields = options.fields}),
      options_(std::move(options)) {
  // An event filter made of tests of single top-level fields runs on the bucket's columns
  // (block processing of $match): on the fields it reads, decoded as columns.
  if (filter_ && options_.filter_on_columns) block_filter_ = filter_->FieldConjuncts();
  if (block_filter_) {
    for (const query::FieldPredicate& p : *block_filter_) {
      if (coll_.options.meta_field && p.field() == *coll_.options.meta_field) {
        filter_meta_ = true;
      } else if (std::find(filter_columns_.begin(), filter_columns_.end(), p.field()) ==
                 filter_columns_.end()) {
        filter_columns_.push_back(p.field());
      }
    }
  }
  // A bucket holds measurements in [start, start + maxSpan): buckets that can hold times in
  // [lo, hi] started in [lo - maxSpan, hi].
  auto lo = bucket_filter_.min_time_millis(), hi = bucket_filter_.max_time_millis();
  if (lo && hi) {
    int64_t lo_s = FloorSeconds(*lo - coll_.options.bucket_max_span_seconds * 1000);
    int64_t hi_s = FloorSeconds(*hi);
    if (lo_s >= 0 && hi_s <= kMaxOrderedSeconds && lo_s <= hi_s) {
      lo_seconds_ = lo_s;
      hi_seconds_ = hi_s;
      range_ =
          catalog::ClusteredTimeRange(static_cast<uint32_t>(lo_s), static_cast<uint32_t>(hi_s));
    }
  }
}

int TimeseriesScan::NextChunkSize() {
  int chunk = chunk_;
  chunk_ = std::min(kChunkBuckets, chunk_ * 2);
  return chunk;
}

void TimeseriesScan::AddBucket(const BsonObj& bucket) {
  ++GlobalTimeseriesReadCounters().buckets_read;
  ++stats_.buckets_read;
  if (!bucket_filter_.MayMatch(bucket)) return;
  if (options_.measurement_limit > 0 && !filter_) {
    // Every measurement of a kept bucket is returned: stop once there are enough.
    auto rows = timeseries::BucketUnpacker::CountRows(bucket, coll_.options.time_field);
    rows_kept_ += rows.ok() ? rows.value() : 0;
    limit_reached_ = rows_kept_ >= options_.measurement_limit;
  }
  // Borrowed buckets point into the reader's cursor, which ReadChunk leaves on them.
  buckets_.push_back(borrow_ ? bucket : bucket.Owned());
  if (series_order_) buckets_series_.push_back(adding_series_);
}

StatusWith<std::optional<BsonObj>> TimeseriesScan::NextBucket(bool* whole) {
  HG_RETURN_IF_ERROR(CheckForInterrupt());  // killOp, maxTimeMS
  while (buckets_.empty() && !done_) {
    HG_RETURN_IF_ERROR(ReadChunk());
    HG_RETURN_IF_ERROR(CheckForInterrupt());
  }
  if (buckets_.empty()) return std::optional<BsonObj>();
  BsonObj bucket = std::move(buckets_.front());
  buckets_.pop_front();
  if (series_order_) {
    next_bucket_series_ = buckets_series_.front();
    buckets_series_.pop_front();
  }
  ++stats_.buckets_kept;
  *whole =
      !filter_ || (options_.use_whole_bucket_filter && bucket_filter_.MatchesWholeBucket(bucket));
  return std::optional<BsonObj>(std::move(bucket));
}

Status TimeseriesScan::UnpackBucket(const BsonObj& bucket, bool whole,
                                    const std::function<void(const BsonObj&)>& fn,
                                    const std::function<bool(const BsonElement&)>& keep_row) {
  // A compressed bucket is read in place: FillBlock and the unpacker decode the columns each
  // needs.
  auto& counters = GlobalTimeseriesReadCounters();
  ++counters.buckets_unpacked;
  ++stats_.buckets_unpacked;
  if (whole && filter_) ++stats_.buckets_matched_whole;
  int64_t rows = 0;
  Status filter_error = Status::OK();
  // With a filter that runs on columns, only the rows it selects are built (and need no test).
  const bool by_columns = filter_ && !whole && block_filter_;
  size_t next_selected = 0;
  if (by_columns) {
    HG_RETURN_IF_ERROR(
        FillBlock(bucket, filter_columns_, filter_meta_, &filter_block_, &filter_owners_));
    SelectRows(&filter_block_);
  }
  auto keep = [&](int64_t ordinal, const BsonElement& time) {
    if (by_columns) {
      const auto& sel = filter_block_.selection;
      if (next_selected >= sel.size() || sel[next_selected] != ordinal) return false;
      ++next_selected;
    }
    return !keep_row || keep_row(time);
  };
  using KeepRow = std::function<bool(int64_t, const BsonElement&)>;
  Status st =
      unpacker_.Unpack(bucket, by_columns || keep_row ? KeepRow(keep) : nullptr, [&](BsonObj m) {
        ++rows;
        if (filter_ && !whole && !by_columns) {
          StatusWith<bool> r = filter_->Evaluate(m);  // $expr errors fail the scan
          if (!r.ok()) {
            filter_error = r.status();
            return false;
          }
          if (!r.value()) return true;
        }
        ++stats_.measurements_matched;
        fn(m);
        return true;
      });
  counters.measurements_unpacked += rows;
  stats_.measurements_unpacked += rows;
  HG_RETURN_IF_ERROR(st);
  return filter_error;
}

namespace {

// A conjunct of a meta filter (fields renamed to meta...) that is an equality to scalars: `path`
// {$eq: v}, `path`: v or `path` {$in: [v...]}, with no null (missing equals it too) and no
// regular expression among the values.
struct MetaEquality {
  std::string path;
  std::vector<BsonElement> values;
};
std::optional<MetaEquality> MetaEqualityOf(const BsonObj& meta_filter) {
  for (const BsonElement& e : meta_filter) {
    if (e.FieldName().starts_with('$')) continue;  // $and, $or, $expr...
    MetaEquality eq{std::string(e.FieldName()), {}};
    if (query::IsEqualityScalar(e)) {
      eq.values.push_back(e);
      return eq;
    }
    if (e.type() != BsonType::kObject || e.Obj().NumFields() != 1) continue;
    BsonElement op = e.Obj().FirstElement();
    if (op.FieldName() == "$eq" && query::IsEqualityScalar(op)) {
      eq.values.push_back(op);
      return eq;
    }
    if (op.FieldName() != "$in" || op.type() != BsonType::kArray) continue;
    bool scalars = true;
    for (const BsonElement& v : op.Obj()) scalars = scalars && query::IsEqualityScalar(v);
    if (!scalars) continue;
    for (const BsonElement& v : op.Obj()) eq.values.push_back(v);
    return eq;
  }
  return std::nullopt;
}

}  // namespace

Status TimeseriesScan::CollectFromIndex() {
  collected_ = true;
  const catalog::SecondaryIndex& series = *coll_.buckets->SeriesIndex();
  series.entry->usage->ops.fetch_add(1);  // $indexStats
  auto session = engine_->NewSession();
  auto cursor_or = catalog::IndexCursor::Open(*session, series);
  if (!cursor_or.ok()) return Status::OK();  // dropped under us: nothing to read
  auto& cursor = cursor_or.value();
  // Bucket starts that can hold times in [lo, hi]: (lo - maxSpan, hi].
  const int64_t span_ms = coll_.options.bucket_max_span_seconds * 1000;
  std::optional<int64_t> lo = bucket_filter_.min_time_millis(),
                         hi = bucket_filter_.max_time_millis();
  // A bucket holds times in [start, start + maxSpan): one starting at lo - maxSpan cannot reach lo.
  std::string lo_part = lo && *lo > INT64_MIN + span_ms
                            ? catalog::BucketIndexStartKey(*lo - span_ms + 1)
                            : std::string();
  std::string hi_part = hi ? catalog::BucketIndexStartKey(*hi) : std::string();
  std::optional<catalog::RecordCursor> records;  // last-point's reads of buckets
  if (lastpoint_index_) {
    auto records_or = catalog::RecordCursor::Open(*session, *coll_.buckets);
    if (!records_or.ok()) {
      if (records_or.status().code() == ErrorCode::kNamespaceNotFound) return Status::OK();
      return records_or.status();
    }
    records.emplace(std::move(records_or).value());
  }
  // What one series contributes: its newest buckets (lastpoint), or those in the time range
  // when its meta matches. Returns whether the cursor was moved off the series' entries.
  auto collect = [&](const std::string& prefix, const BsonObj& meta) -> StatusWith<bool> {
    if (meta_matcher_ && !meta_matcher_->Matches(meta)) return false;
    if (lastpoint_index_) {
      HG_RETURN_IF_ERROR(CollectNewestSeeking(*records, cursor, prefix));
      return true;
    }
    if (!meta_matcher_ && !series_order_) return false;
    cursor.SetBounds({prefix + lo_part, prefix + hi_part + "\xff"});
    StatusWith<bool> more = cursor.Next();
    const size_t before = rids_.size();
    while (more.ok() && more.value()) {
      rids_.push_back(cursor.record_id());
      more = cursor.Next();
    }
    if (series_order_ && rids_.size() > before) {
      series_rids_.push_back({PartitionOf(meta), before, rids_.size()});
    }
    HG_RETURN_IF_ERROR(more.status());
    return true;
  };
  catalog::SeriesDirectory& directory = *series.entry->series_directory;
  // Taken after the cursor's opening ran the read barrier, and read in autocommit: every series
  // of a write acknowledged before this read is listed (its writer listed it before committing).
  if (auto known = directory.Snapshot()) {
    // An equality on a meta path narrows the series to test to those that may have the value.
    std::optional<MetaEquality> eq;
    // (The directory finds values by their bytes: under a collation every series is tested.)
    if (meta_matcher_ && !lastpoint_index_ && bucket_filter_.collator() == nullptr) {
      eq = MetaEqualityOf(bucket_filter_.meta_filter());
    }
    if (eq) {
      for (size_t i : directory.Candidates(known, eq->path, eq->values)) {
        HG_RETURN_IF_ERROR(collect((*known)[i].prefix, (*known)[i].meta).status());
      }
      return Status::OK();
    }
    if (lastpoint_index_) return CollectNewestWalking(*records, cursor, *known);
    for (const catalog::SeriesDirectory::Series& one : *known) {
      HG_RETURN_IF_ERROR(CheckForInterrupt());
      HG_RETURN_IF_ERROR(collect(one.prefix, one.meta).status());
    }
    return Status::OK();
  }
  // The first read walks the index, one series after another, and fills the directory.
  StatusWith<bool> more = cursor.Next();
  while (more.ok() && more.value()) {
    BsonElement meta = cursor.meta();
    bson::BsonBuilder mb;
    if (!meta.eoo()) mb.AppendElement(meta);
    // Every entry of this series starts with the same prefix.
    std::string prefix = cursor.SeriesPrefix();
    directory.Add(prefix, meta);
    HG_ASSIGN_OR_RETURN(bool moved, collect(prefix, mb.Obj()));
    more = NextSeries(cursor, prefix, /*stepping=*/!moved);
  }
  HG_RETURN_IF_ERROR(more.status());
  // An index still being built is written by the build without the directory.
  if (series.entry->ready) directory.MarkComplete();
  return Status::OK();
}

BsonObj TimeseriesScan::PartitionOf(const BsonObj& meta) const {
  // What the partition expression gives the series' measurements: they carry its meta value
  // under the metaField (none when the buckets have none), and the expression reads nothing else.
  bson::BsonBuilder doc;
  if (BsonElement m = meta.FirstElement(); !m.eoo() && coll_.options.meta_field) {
    doc.AppendElementAs(m, *coll_.options.meta_field);
  }
  pipeline::Variables vars(options_.expr_ctx.now_millis);
  StatusWith<pipeline::Value> v = partition_by_->Evaluate(doc.Obj(), vars);
  bson::BsonBuilder out;
  if (v.ok() && !v.value().missing()) {
    v.value().AppendTo(out, "");
  } else {
    out.AppendNull("");  // missing is null; an error is the stage's to report
  }
  return out.Obj();
}

StatusWith<bool> TimeseriesScan::NextSeries(catalog::IndexCursor& cursor, const std::string& prefix,
                                            bool stepping) {
  // A series of a few buckets is left faster by stepping over its entries than by seeking past
  // them: a seek among entries written since the last restart searches WiredTiger's insert lists
  // (at 4,000 series, a one-host query's seeks were half its time on data just written).
  constexpr int kStepsBeforeSeek = 8;
  for (int i = 0; stepping && i < kStepsBeforeSeek; ++i) {
    StatusWith<bool> more = cursor.Next();
    if (!more.ok() || !more.value() || !cursor.position().starts_with(prefix)) return more;
  }
  cursor.SetBounds({prefix + "\xff", std::nullopt});
  return cursor.Next();
}

void TimeseriesScan::ProduceWholeMeasurements() {
  timeseries::UnpackSpec spec = unpacker_.spec();
  spec.mode = timeseries::UnpackSpec::Mode::kAll;
  spec.fields.clear();
  unpacker_ = timeseries::BucketUnpacker(std::move(spec));
}

BsonObj TimeseriesScan::CopyForUnpack(const BsonObj& bucket) const {
  if (unpacker_.spec().mode == timeseries::UnpackSpec::Mode::kAll) return bucket.Owned();
  bson::BsonBuilder b;
  for (BsonElement e : bucket) {
    if (e.FieldName() != "data" || e.type() != BsonType::kObject) {
      b.AppendElement(e);
      continue;
    }
    size_t data = b.OpenObject("data");
    for (BsonElement column : e.Obj()) {
      const std::string_view name = column.FieldName();
      if (name == coll_.options.time_field || Produces(name) ||
          std::find(filter_columns_.begin(), filter_columns_.end(), name) !=
              filter_columns_.end()) {
        b.AppendElement(column);
      }
    }
    b.Close(data);
  }
  return b.Obj();
}

Status TimeseriesScan::CollectNewestSeeking(catalog::RecordCursor& records,
                                            catalog::IndexCursor& cursor,
                                            const std::string& prefix) {
  cursor.SetBounds({prefix, prefix + "\xff", /*forward=*/false});
  return CollectNewest(records, prefix, [&](std::string_view* position, int64_t* rid) {
    StatusWith<bool> more = cursor.Next();
    if (more.ok() && more.value()) {
      *position = cursor.position();
      *rid = cursor.record_id();
    }
    return more;
  });
}

Status TimeseriesScan::CollectNewestWalking(
    catalog::RecordCursor& records, catalog::IndexCursor& cursor,
    const std::vector<catalog::SeriesDirectory::Series>& series) {
  // A series of more entries than this is read back from a seek past its end instead.
  constexpr size_t kMaxHeld = 8;
  std::vector<std::pair<std::string, int64_t>> held;  // the series' entries (position, RecordId)
  enum class At { kNowhere, kEntry, kEnd } at = At::kNowhere;
  // Once a series had more, the rest are read from seeks: series of one read tend to be alike,
  // and walking past eight entries of each before seeking costs more than seeking at once.
  bool seeking = false;
  for (const catalog::SeriesDirectory::Series& one : series) {
    if (meta_matcher_ && !meta_matcher_->Matches(one.meta)) continue;
    if (seeking) {
      HG_RETURN_IF_ERROR(CollectNewestSeeking(records, cursor, one.prefix));
      continue;
    }
    // The cursor may be on this series' first entry already, or past it (the series has no
    // entry left); only when it is before it, or nowhere, does it seek.
    if (at == At::kNowhere ||
        (at == At::kEntry && cursor.position() < std::string_view(one.prefix))) {
      cursor.SetBounds({one.prefix, std::nullopt});
      HG_ASSIGN_OR_RETURN(bool more, cursor.Next());
      at = more ? At::kEntry : At::kEnd;
    }
    held.clear();
    while (at == At::kEntry && cursor.position().starts_with(one.prefix) &&
           held.size() < kMaxHeld) {
      held.emplace_back(cursor.position(), cursor.record_id());
      HG_ASSIGN_OR_RETURN(bool more, cursor.Next());
      at = more ? At::kEntry : At::kEnd;
    }
    if (at == At::kEntry && cursor.position().starts_with(one.prefix)) {
      HG_RETURN_IF_ERROR(CollectNewestSeeking(records, cursor, one.prefix));
      seeking = true;
      continue;
    }
    size_t next = held.size();
    HG_RETURN_IF_ERROR(
        CollectNewest(records, one.prefix, [&](std::string_view* position, int64_t* rid) {
          if (next == 0) return false;
          --next;
          *position = held[next].first;
          *rid = held[next].second;
          return true;
        }));
  }
  return Status::OK();
}

Status TimeseriesScan::CollectNewest(
    catalog::RecordCursor& records, const std::string& prefix,
    const std::function<StatusWith<bool>(std::string_view*, int64_t*)>& newer_first) {
  // Entries run in start-time order; walking back from the newest start, a bucket starting at s
  // holds times below s + maxSpan, so once that cannot reach the bound on the series' n-th
  // latest time, neither can any older bucket of the series.
  const int64_t span_ms = coll_.options.bucket_max_span_seconds * 1000;
  const std::string min_path = "control.min." + coll_.options.time_field;
  LatestTimeBound bound(options_.lastpoint_n, coll_.options.time_field);
  // Index entries below this start too early to reach the bound (decided on the key, unread).
  std::string too_early;
  std::string_view position;
  int64_t rid = 0;
  StatusWith<bool> more = newer_first(&position, &rid);
  while (more.ok() && more.value()) {
    if (!too_early.empty() && position < std::string_view(too_early)) break;
    HG_ASSIGN_OR_RETURN(bool found, records.SeekExact(rid));
    if (found) {
      const BsonObj doc = records.doc();  // borrowed until the next move
      BsonElement min_t = doc.GetPath(min_path);
      std::optional<int64_t> b = bound.Bound();
      if (b && min_t.type() == BsonType::kDate && min_t.DateMillis() + span_ms - 1 < *b) {
        ++GlobalTimeseriesReadCounters().buckets_read;
        ++stats_.buckets_read;
        break;
      }
      bound.Add(doc);
      b = bound.Bound();
      if (b && *b > std::numeric_limits<int64_t>::min() + span_ms) {
        too_early = prefix + catalog::BucketIndexStartKey(*b - span_ms + 1);
      }
      AddBucket(CopyForUnpack(doc));
    }
    more = newer_first(&position, &rid);
  }
  return more.status();
}

Status TimeseriesScan::OpenReader(bool* dropped) {
  reader_.reset();
  *dropped = false;
  auto session = engine_->NewSession();
  catalog::RecordRange range = range_;
  range.forward = options_.sort_direction >= 0;
  auto cursor_or = catalog::RecordCursor::Open(*session, *coll_.buckets, range);
  if (!cursor_or.ok()) {
    // Only a missing table means the collection was dropped meanwhile; any other error (the read
    // barrier's flush failing) is the read's, never an empty result.
    if (cursor_or.status().code() != ErrorCode::kNamespaceNotFound) return cursor_or.status();
    *dropped = true;
    return Status::OK();
  }
  reader_.emplace(Reader{std::move(session), std::move(cursor_or).value(), 0, NextChunkSize()});
  return Status::OK();
}

Status TimeseriesScan::ReadIndexedChunk() {
  if (!borrow_) {
    auto session = engine_->NewSession();
    const int chunk = NextChunkSize();
    for (int read = 0; read < chunk && next_rid_ < rids_.size() && !limit_reached_; ++read) {
      if (series_order_) adding_series_ = rid_series_[next_rid_];
      HG_ASSIGN_OR_RETURN(auto rec, coll_.buckets->FindRecord(*session, rids_[next_rid_++]));
      if (rec) AddBucket(rec->doc);  // deleted since the index was read: skip
    }
  } else {
    // One bucket at a time, read in place: the cursor stays on it until the next call.
    while (buckets_.empty() && next_rid_ < rids_.size()) {
      if (!reader_ || reader_->read >= reader_->chunk) {
        bool dropped = false;
        HG_RETURN_IF_ERROR(OpenReader(&dropped));
        if (dropped) break;
      }
      ++reader_->read;
      if (series_order_) adding_series_ = rid_series_[next_rid_];
      HG_ASSIGN_OR_RETURN(bool found, reader_->cursor.SeekExact(rids_[next_rid_++]));
      // Not found: deleted since the index was read; skip it.
      if (found) AddBucket(reader_->cursor.doc());
    }
  }
  if (next_rid_ >= rids_.size() || limit_reached_) done_ = true;
  return Status::OK();
}

void TimeseriesScan::OrderRids() {
  // Partition by partition (the series of equal partition values together), each in start-time
  // order.
  if (series_order_) {
    std::stable_sort(series_rids_.begin(), series_rids_.end(),
                     [](const SeriesRids& a, const SeriesRids& b) {
                       return bson::CompareElementValues(a.partition.FirstElement(),
                                                         b.partition.FirstElement()) < 0;
                     });
    std::vector<int64_t> rids;
    rids.reserve(rids_.size());
    rid_series_.clear();
    for (size_t k = 0; k < series_rids_.size(); ++k) {
      const bool same =
          k > 0 && bson::CompareElementValues(series_rids_[k].partition.FirstElement(),
                                              series_rids_[k - 1].partition.FirstElement()) == 0;
      const uint32_t group = k == 0 ? 0 : rid_series_.back() + !same;
      for (size_t i = series_rids_[k].begin; i < series_rids_[k].end; ++i) {
        rids.push_back(rids_[i]);
        rid_series_.push_back(group);
      }
    }
    rids_ = std::move(rids);
    series_rids_.clear();
    for (size_t i = 0; i < rids_.size();) {
      size_t j = i;
      while (j < rids_.size() && rid_series_[j] == rid_series_[i]) ++j;
      std::sort(rids_.begin() + static_cast<std::ptrdiff_t>(i),
                rids_.begin() + static_cast<std::ptrdiff_t>(j));
      i = j;
    }
    return;
  }
  // A bounded sort needs buckets in start-time order, which is RecordId order.
  if (options_.sort_direction > 0) std::sort(rids_.begin(), rids_.end());
  if (options_.sort_direction < 0) std::sort(rids_.rbegin(), rids_.rend());
}

Status TimeseriesScan::ReadChunk() {
  if (uses_series_index() || user_index_) {
    if (!collected_) {
      HG_RETURN_IF_ERROR(CollectFromIndex());
      OrderRids();
    }
    return ReadIndexedChunk();
  }
  // Chunks of buckets, each read in its own session (a new reader). Buckets are copied out, or,
  // when borrowed (block mode), handed over one at a time with the reader left on each until
  // the next call.
  if (!reader_ || reader_->read >= reader_->chunk) {
    bool dropped = false;
    HG_RETURN_IF_ERROR(OpenReader(&dropped));
    if (dropped) {
      done_ = true;
      return Status::OK();
    }
    if (last_id_) reader_->cursor.ResumeAfter(*last_id_);
  }
  catalog::RecordCursor& cursor = reader_->cursor;
  while (true) {
    HG_RETURN_IF_ERROR(CheckForInterrupt());
    HG_ASSIGN_OR_RETURN(bool more, cursor.Next());
    if (!more) {
      done_ = true;
      break;
    }
    AddBucket(cursor.doc());
    if (limit_reached_) {
      done_ = true;
      break;
    }
    if (++reader_->read >= reader_->chunk) {
      last_id_ = cursor.id();
      break;
    }
    if (borrow_ && !buckets_.empty()) return Status::OK();
  }
  if (!borrow_) reader_.reset();
  return Status::OK();
}

Status TimeseriesScan::CheckTimeOrderedKeys() {
  checked_order_ = true;
  // The table key is the bucket _id, whose first 4 bytes are the start time in seconds, unsigned.
  // Starts from 1901 to 1970 wrap to 2^31 and above, past every start before 2038, so when the
  // largest key is that high the key order may not be start-time order: then nothing is released
  // before the end (a plain sort). (Starts before 1901 or after 2106 wrap lower; a bucket that
  // breaks the order then fails the sort with 6369910 rather than mis-sorting.)
  auto session = engine_->NewSession();
  auto cursor_or =
      catalog::RecordCursor::Open(*session, *coll_.buckets, catalog::RecordRange::All(false));
  if (!cursor_or.ok()) {
    return cursor_or.status().code() == ErrorCode::kNamespaceNotFound ? Status::OK()
                                                                      : cursor_or.status();
  }
  auto& cursor = cursor_or.value();
  HG_ASSIGN_OR_RETURN(bool any, cursor.Next());
  if (any && storage::ClusteredRecordIdSeconds(cursor.id()) >= 0x80000000u) {
    time_ordered_keys_ = false;
  }
  return Status::OK();
}

Status TimeseriesScan::FillSorted() {
  if (!checked_order_) HG_RETURN_IF_ERROR(CheckTimeOrderedKeys());
  const int dir = options_.sort_direction;
  // Heap order: the entry to release first on top.
  auto later = [dir](const SortEntry& a, const SortEntry& b) {
    if (a.time != b.time) return dir > 0 ? a.time > b.time : a.time < b.time;
    return a.seq > b.seq;
  };
  // With sort_limit: the time the first sort_limit measurements are at or before (in sort
  // order), once that many were pushed.
  auto cutoff = [&]() -> std::optional<int64_t> {
    if (options_.sort_limit <= 0 || series_order_ ||
        static_cast<int64_t>(top_times_.size()) < options_.sort_limit) {
      return std::nullopt;
    }
    return top_times_.front();
  };
  auto wanted = [&](int64_t time) {
    std::optional<int64_t> c = cutoff();
    return !c || (dir > 0 ? time <= *c : time >= *c);
  };
  // Pops the heap's rows into buffer_ while they sort before `bound` (nullopt: all of them).
  auto release = [&](std::optional<int64_t> bound) {
    while (!heap_.empty() &&
           (!bound || (dir > 0 ? heap_.front().time < *bound : heap_.front().time >= *bound))) {
      std::pop_heap(heap_.begin(), heap_.end(), later);
      released_bound_ = heap_.back().time;
      heap_bytes_ -= heap_.back().doc.size() + 64;
      buffer_.push_back(std::move(heap_.back().doc));
      heap_.pop_back();
    }
  };
  bool whole = false;
  HG_ASSIGN_OR_RETURN(auto bucket, NextBucket(&whole));
  if (bucket && series_order_ && next_bucket_series_ != sorting_series_) {
    // A new series: the last one's rows all go out first, and time starts over.
    release(std::nullopt);
    released_bound_.reset();
    sorting_series_ = next_bucket_series_;
  }
  std::optional<int64_t> bound;  // release what sorts before it; nullopt: everything (the end)
  if (bucket && time_ordered_keys_ && cutoff()) {
    // A bucket holds times in [start, start + maxSpan), and the ones still to come start no
    // later (backward) or no earlier (forward): once they cannot reach the cutoff, the read ends.
    BsonElement id = (*bucket)["_id"];
    if (id.type() == BsonType::kObjectId) {
      const int64_t start_ms = int64_t{id.Oid().Timestamp()} * 1000;
      const int64_t c = *cutoff();
      if (dir > 0 ? start_ms > c : start_ms + coll_.options.bucket_max_span_seconds * 1000 <= c) {
        bucket.reset();
      }
    }
  }
  if (bucket && cutoff()) {
    // Nor is a bucket whose bounds lie wholly past the cutoff unpacked.
    BsonElement t =
        bucket->GetPath((dir > 0 ? "control.min." : "control.max.") + coll_.options.time_field);
    if (t.type() == BsonType::kDate && !wanted(t.DateMillis())) {
      return Status::OK();  // nothing released: the next call reads the next bucket
    }
  }
  if (bucket) {
    // The bucket _id starts with its rounded start time in seconds (the clustered key order):
    // later buckets (forward) hold nothing before this start, earlier ones (backward) nothing at
    // or after start + bucketMaxSpanSeconds.
    BsonElement id = (*bucket)["_id"];
    if (id.type() != BsonType::kObjectId) {
      return Status(ErrorCode::kDataCorruptionDetected,
                    "time-series bucket _id is not an ObjectId");
    }
    int64_t start_ms = int64_t{id.Oid().Timestamp()} * 1000;
    bound = dir > 0 ? start_ms : start_ms + coll_.options.bucket_max_span_seconds * 1000;
    if (!time_ordered_keys_) bound = dir > 0 ? INT64_MIN : INT64_MAX;  // release nothing yet
    // Ties keep forward read order: buckets read backward count down.
    const int64_t bucket_ord = dir > 0 ? next_seq_++ : -(next_seq_++);
    int64_t row = 0;
    Status violated = Status::OK();
    // The first sort_limit times in sort order, the last of them on top of top_times_.
    auto before = [dir](int64_t a, int64_t b) { return dir > 0 ? a < b : a > b; };
    std::function<bool(const BsonElement&)> keep_row;
    if (options_.sort_limit > 0) {
      keep_row = [&](const BsonElement& t) {
        return t.type() != BsonType::kDate || wanted(t.DateMillis());
      };
    }
    HG_RETURN_IF_ERROR(UnpackBucket(
        *bucket, whole,
        [&](const BsonObj& m) {
          BsonElement t = m[coll_.options.time_field];
          int64_t time = t.type() == BsonType::kDate ? t.DateMillis() : INT64_MIN;
          if (options_.sort_limit > 0 && wanted(time)) {
            top_times_.push_back(time);
            std::push_heap(top_times_.begin(), top_times_.end(), before);
            if (static_cast<int64_t>(top_times_.size()) > options_.sort_limit) {
              std::pop_heap(top_times_.begin(), top_times_.end(), before);
              top_times_.pop_back();
            }
          }
          if (released_bound_ && (dir > 0 ? time < *released_bound_ : time > *released_bound_)) {
            violated = Status(ErrorCode::kLocation6369910,
                              "bounded sort: a bucket holds a measurement outside its time bound");
          }
          heap_.push_back(SortEntry{time, bucket_ord * (int64_t{1} << 24) + row++, m.Owned()});
          std::push_heap(heap_.begin(), heap_.end(), later);
          heap_bytes_ += m.size() + 64;
        },
        keep_row));
    HG_RETURN_IF_ERROR(violated);
    if (heap_bytes_ > options_.sort_memory_limit_bytes && !options_.allow_disk_use) {
      return Status(ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed,
                    "Sort exceeded memory limit of " +
                        std::to_string(options_.sort_memory_limit_bytes) +
                        " bytes, but did not opt in to external sorting.");
    }
  }
  release(bound);
  if (!bucket) sort_done_ = true;
  return Status::OK();
}

void TimeseriesScan::RequireFields(const std::vector<std::string>& names) {
  const auto& meta = coll_.options.meta_field;
  auto require = [&](const std::string& f) {
    if (meta && f == *meta) {
      block_meta_ = true;  // the bucket's `meta`, a block constant
    } else if (std::find(block_columns_.begin(), block_columns_.end(), f) == block_columns_.end()) {
      block_columns_.push_back(f);
    }
  };
  // The consumer sees the fields the unpack spec produces (a projection may have been folded
  // into it) ...
  for (const std::string& f : names) {
    if (!unpacker_.Produces(f)) continue;
    block_visible_.push_back(f);
    require(f);
  }
  visible_columns_ = block_columns_;
  borrow_ = true;  // a block lives until the next NextBlock, as long as the bucket it reads
  // ... and a filter that runs on columns reads its fields as columns too, which the consumer
  // does not see unless it asked for them.
  for (const std::string& f : filter_columns_) require(f);
  if (filter_meta_) require(*meta);
}

void TimeseriesScan::AcceptBounds(const std::vector<std::string>& names) {
  const std::string& time = coll_.options.time_field;
  bound_time_ =
      std::find(names.begin(), names.end(), time) != names.end() &&
      std::find(visible_columns_.begin(), visible_columns_.end(), time) != visible_columns_.end();
  visible_columns_but_time_ = visible_columns_;
  std::erase(visible_columns_but_time_, time);
}

pipeline::BlockSource* TimeseriesScan::AsBlockSource() {
  const bool shaped =
      options_.sort_direction != 0 || options_.lastpoint || options_.measurement_limit > 0;
  return options_.allow_blocks && !shaped ? this : nullptr;
}

namespace {

// A column the unpacker decoded as numbers, as a block's NumberColumn (or none).
pipeline::NumberColumn NumbersOf(const timeseries::BucketUnpacker::Column& c) {
  if (c.values == nullptr) return {};
  return {.type = c.values->type,
          .values = c.values->values.data(),
          .present = c.values->missing == 0 ? nullptr : c.values->present.data()};
}

// Adds the columns of `columns` that `decoded` (BucketUnpacker::Columns' output for them) found
// to `block`, and what keeps their cells alive to *owners.
void AddColumns(std::span<const std::string> columns,
                std::vector<timeseries::BucketUnpacker::Column>* decoded,
                pipeline::ColumnBlock* block, std::vector<std::shared_ptr<const void>>* owners) {
  for (size_t i = 0; i < columns.size(); ++i) {
    timeseries::BucketUnpacker::Column& c = (*decoded)[i];
    if (!c.present) continue;
    block->fields.push_back(pipeline::ColumnBlock::Field{.name = columns[i],
                                                         .constant = false,
                                                         .value = {},
                                                         .cells = std::move(c.cells),
                                                         .numbers = NumbersOf(c)});
    // The cells of a compressed bucket's column live in a buffer of their own, which must
    // outlast the decoder's next use (DecodeBounded).
    if (c.owner) owners->push_back(std::move(c.owner));
  }
}

}  // namespace

void TimeseriesScan::DropFields(
    pipeline::ColumnBlock* block,
    const std::function<bool(const pipeline::ColumnBlock::Field&)>& drop) {
  std::erase_if(block->fields, [&](pipeline::ColumnBlock::Field& f) {
    if (!drop(f)) return false;
    if (f.cells.capacity() != 0) spare_cells_.push_back(std::move(f.cells));
    return true;
  });
}

Status TimeseriesScan::FillBlock(const BsonObj& bucket, std::span<const std::string> columns,
                                 bool meta, pipeline::ColumnBlock* block,
                                 std::vector<std::shared_ptr<const void>>* owners) {
  DropFields(block, [](const pipeline::ColumnBlock::Field&) { return true; });
  owners->clear();
  block->all_rows = true;
  block->selection.clear();
  if (meta) {
    BsonElement value = bucket["meta"];
    if (!value.eoo()) {
      block->fields.push_back(pipeline::ColumnBlock::Field{
          .name = *coll_.options.meta_field, .constant = true, .value = value});
    }
  }
  decoded_.resize(columns.size());
  for (auto& d : decoded_) {
    if (d.cells.capacity() == 0 && !spare_cells_.empty()) {
      d.cells = std::move(spare_cells_.back());
      spare_cells_.pop_back();
    }
  }
  HG_ASSIGN_OR_RETURN(block->num_rows,
                      timeseries::BucketUnpacker::Columns(bucket, coll_.options.time_field, columns,
                                                          &decoded_, /*numbers=*/true));
  AddColumns(columns, &decoded_, block, owners);
  return Status::OK();
}

void TimeseriesScan::SelectRows(pipeline::ColumnBlock* block) const {
  // Conjunct by conjunct on the columns: the selection shrinks with each.
  block->all_rows = false;
  block->selection.resize(static_cast<size_t>(block->num_rows));
  for (size_t i = 0; i < block->selection.size(); ++i) {
    block->selection[i] = static_cast<uint32_t>(i);
  }
  for (const query::FieldPredicate& p : *block_filter_) {
    const pipeline::ColumnBlock::Field* f = block->Find(p.field());
    if (f == nullptr || f->constant) {
      // Missing in every row, or the meta field: one value for the whole bucket.
      if (!p.Matches(f == nullptr ? BsonElement() : f->value)) block->selection.clear();
      continue;
    }
    size_t kept = 0;
    pipeline::CellScratch scratch;
    for (uint32_t r : block->selection) {
      if (p.Matches(f->Cell(r, scratch))) block->selection[kept++] = r;
    }
    block->selection.resize(kept);
  }
  ++GlobalTimeseriesReadCounters().buckets_filtered_as_blocks;
}

StatusWith<const pipeline::ColumnBlock*> TimeseriesScan::NextBlock() {
  bool whole = false;
  HG_ASSIGN_OR_RETURN(auto bucket, NextBucket(&whole));
  if (!bucket) return static_cast<const pipeline::ColumnBlock*>(nullptr);
  // The block's cells point into block_bucket_, or for a compressed bucket into the buffers of
  // its decoded columns (block_owners_).
  block_bucket_ = std::move(*bucket);
  // A detached block of a version-1 bucket keeps the bucket its cells point into.
  if (detached_ && !timeseries::IsCompressedBucket(block_bucket_)) {
    block_bucket_ = block_bucket_.Owned();
  }
  // Rows tested on columns need the filter's columns too; otherwise only the consumer's, with
  // the time field by its bounds when every row counts and the consumer takes those.
  const bool by_columns = !whole && block_filter_;
  BsonElement lo, hi;
  if (whole && bound_time_) {
    lo = block_bucket_.GetPath("control.min." + coll_.options.time_field);
    hi = block_bucket_.GetPath("control.max." + coll_.options.time_field);
  }
  const bool bounded = lo.type() == BsonType::kDate && hi.type() == BsonType::kDate;
  const std::vector<std::string>& columns = by_columns ? block_columns_
                                            : bounded  ? visible_columns_but_time_
                                                       : visible_columns_;
  left_columns_.clear();
  if (leave_ > 0 && columns.size() > 1 && !by_columns &&
      timeseries::IsCompressedBucket(block_bucket_)) {
    // The last columns are left to the consumer (NextDetachedBlock), never all of them: the
    // helper's share stays at least a column, so that the shares move by fractions of a block.
    const size_t keep = columns.size() - std::min(columns.size() - 1, static_cast<size_t>(leave_));
    left_columns_.assign(columns.begin() + static_cast<std::ptrdiff_t>(keep), columns.end());
    HG_RETURN_IF_ERROR(FillBlock(block_bucket_, std::span(columns).first(keep), block_meta_,
                                 &block_, &block_owners_));
  } else {
    HG_RETURN_IF_ERROR(FillBlock(block_bucket_, columns, block_meta_, &block_, &block_owners_));
  }
  if (bounded) {
    block_.fields.push_back(pipeline::ColumnBlock::Field{
        .name = coll_.options.time_field, .bounded = true, .lo = lo, .hi = hi});
  }
  auto& counters = GlobalTimeseriesReadCounters();
  ++counters.buckets_as_blocks;
  ++stats_.buckets_unpacked;
  if (whole && filter_) ++stats_.buckets_matched_whole;
  counters.measurements_unpacked += block_.num_rows;
  stats_.measurements_unpacked += block_.num_rows;
  if (by_columns) {
    SelectRows(&block_);
    stats_.measurements_matched += static_cast<int64_t>(block_.selection.size());
  } else if (!whole) {
    // The rows that pass the event filter, tested on the measurement (which the unpack spec
    // gives every field the filter reads).
    block_.all_rows = false;
    uint32_t row = 0;
    Status filter_error = Status::OK();
    HG_RETURN_IF_ERROR(unpacker_.Unpack(block_bucket_, [&](BsonObj m) {
      StatusWith<bool> r = filter_->Evaluate(m);
      if (!r.ok()) {
        filter_error = r.status();
        return false;
      }
      if (r.value()) block_.selection.push_back(row);
      ++row;
      return true;
    }));
    HG_RETURN_IF_ERROR(filter_error);
    stats_.measurements_matched += static_cast<int64_t>(block_.selection.size());
  } else {
    stats_.measurements_matched += block_.num_rows;
  }
  if (block_filter_) {
    // Fields read only for the filter are not the consumer's, whether or not rows were tested.
    DropFields(&block_, [&](const pipeline::ColumnBlock::Field& f) {
      return std::find(block_visible_.begin(), block_visible_.end(), f.name) ==
             block_visible_.end();
    });
  }
  return static_cast<const pipeline::ColumnBlock*>(&block_);
}

namespace {

// Decodes the bounded field `name` of `block`, read from `bucket`, in place (DecodeBounded);
// *owners keeps its cells alive and *decoded is the decoder's scratch.
StatusWith<const pipeline::ColumnBlock::Field*> DecodeBoundedField(
    const BsonObj& bucket, const std::string& time_field, std::string_view name,
    pipeline::ColumnBlock* block, std::vector<timeseries::BucketUnpacker::Column>* decoded,
    std::vector<std::shared_ptr<const void>>* owners) {
  auto it = std::find_if(block->fields.begin(), block->fields.end(),
                         [&](const pipeline::ColumnBlock::Field& f) { return f.name == name; });
  if (it == block->fields.end() || !it->bounded) {
    return Status(ErrorCode::kInternalError,
                  "the current block has no bounded field " + std::string(name));
  }
  const std::vector<std::string> columns = {it->name};
  HG_ASSIGN_OR_RETURN(int64_t rows, timeseries::BucketUnpacker::Columns(bucket, time_field, columns,
                                                                        decoded, /*numbers=*/true));
  if (rows != block->num_rows || !(*decoded)[0].present) {
    return Status(ErrorCode::kInternalError, "the time column changed under a block");
  }
  it->bounded = false;
  it->cells = std::move((*decoded)[0].cells);
  it->numbers = NumbersOf((*decoded)[0]);
  if ((*decoded)[0].owner) owners->push_back(std::move((*decoded)[0].owner));
  return &*it;
}

// A block of the scan that owns its bucket and decoded columns, and decodes the columns left to
// it (`left`) when completed.
class ScanBlock : public pipeline::DetachedBlock {
 public:
  ScanBlock(pipeline::ColumnBlock block, BsonObj bucket,
            std::vector<std::shared_ptr<const void>> owners, std::string time_field,
            std::vector<std::string> left)
      : bucket_(std::move(bucket)),
        owners_(std::move(owners)),
        time_field_(std::move(time_field)),
        left_(std::move(left)) {
    block_ = std::move(block);
  }
  StatusWith<const pipeline::ColumnBlock::Field*> DecodeBounded(std::string_view name) override {
    return DecodeBoundedField(bucket_, time_field_, name, &block_, &decoded_, &owners_);
  }
  Status Complete() override {
    if (left_.empty()) return Status::OK();
    HG_ASSIGN_OR_RETURN(int64_t rows,
                        timeseries::BucketUnpacker::Columns(bucket_, time_field_, left_, &decoded_,
                                                            /*numbers=*/true));
    if (rows != block_.num_rows) {
      return Status(ErrorCode::kInternalError, "a bucket's row count changed under a block");
    }
    AddColumns(left_, &decoded_, &block_, &owners_);
    left_.clear();
    return Status::OK();
  }

 private:
  BsonObj bucket_;  // owned: the block's constants and version-1 cells point into it
  std::vector<std::shared_ptr<const void>> owners_;
  std::string time_field_;
  std::vector<std::string> left_;
  std::vector<timeseries::BucketUnpacker::Column> decoded_;
};

}  // namespace

StatusWith<const pipeline::ColumnBlock::Field*> TimeseriesScan::DecodeBounded(
    std::string_view name) {
  return DecodeBoundedField(block_bucket_, coll_.options.time_field, name, &block_, &decoded_,
                            &block_owners_);
}

bool TimeseriesScan::DetachBlocks() {
  detached_ = true;
  return true;
}

pipeline::BlockSource::ThreadContext TimeseriesScan::HandOff() {
  // The other thread's reads are part of this operation: the read barriers it ran are not run
  // again there.
  return [this, barriers = catalog::ReadBarrier::RunInThisOperation()](
             const std::function<void()>& reads) {
    catalog::ReadBarrier::OperationScope scope(barriers);
    reading_ahead_ = true;
    reads();
    reading_ahead_ = false;
  };
}

StatusWith<std::unique_ptr<pipeline::DetachedBlock>> TimeseriesScan::NextDetachedBlock(int leave) {
  leave_ = leave;
  StatusWith<const pipeline::ColumnBlock*> next = NextBlock();
  leave_ = 0;
  HG_ASSIGN_OR_RETURN(const pipeline::ColumnBlock* block, std::move(next));
  if (block == nullptr) return std::unique_ptr<pipeline::DetachedBlock>();
  if (reading_ahead_) ++GlobalTimeseriesReadCounters().buckets_read_ahead;
  // A compressed bucket's cells live in their own buffers (block_owners_). Of the borrowed
  // bucket the block still needs its meta, its time bounds and, for DecodeBounded and
  // Complete, its control, time column and the columns left undecoded: only those are copied
  // (a copy of the whole bucket took a quarter of double-groupby-1's time) and the block is
  // pointed at the copies. A version-1 bucket's cells point into it, and NextBlock made it
  // owned whole.
  if (!block_bucket_.IsOwned()) {
    const std::string& time = coll_.options.time_field;
    bson::BsonBuilder b;
    if (BsonElement meta = block_bucket_["meta"]; !meta.eoo()) b.AppendElement(meta);
    b.AppendElement(block_bucket_["control"]);
    bson::BsonBuilder data;
    if (left_columns_.empty()) {
      // Only the time column: looked up, not walked to (each column's header is another
      // cache line).
      if (BsonElement t = block_bucket_.GetPath("data." + time); !t.eoo()) data.AppendElement(t);
    } else {
      const BsonElement columns = block_bucket_["data"];
      for (BsonElement column : columns.type() == BsonType::kObject ? columns.Obj() : BsonObj()) {
        const std::string_view name = column.FieldName();
        if (name == time ||
            std::find(left_columns_.begin(), left_columns_.end(), name) != left_columns_.end()) {
          data.AppendElement(column);
        }
      }
    }
    b.AppendObject("data", data.Obj());
    BsonObj kept = b.Obj();
    for (pipeline::ColumnBlock::Field& f : block_.fields) {
      if (f.constant) f.value = kept["meta"];
      if (f.bounded) {
        f.lo = kept.GetPath("control.min." + time);
        f.hi = kept.GetPath("control.max." + time);
      }
    }
    block_bucket_ = std::move(kept);
  }
  auto detached = std::make_unique<ScanBlock>(
      std::move(block_), std::move(block_bucket_), std::move(block_owners_),
      coll_.options.time_field, std::exchange(left_columns_, std::vector<std::string>()));
  block_ = pipeline::ColumnBlock();
  block_owners_.clear();
  return std::unique_ptr<pipeline::DetachedBlock>(std::move(detached));
}

StatusWith<std::optional<BsonObj>> TimeseriesScan::Next() {
  // A bucket's measurements may each take long downstream ($unwind of a large array...).
  HG_RETURN_IF_ERROR(CheckForInterrupt());
  while (buffer_.empty()) {
    if (options_.sort_direction != 0) {
      if (sort_done_) break;
      HG_RETURN_IF_ERROR(FillSorted());
      continue;
    }
    bool whole = false;
    HG_ASSIGN_OR_RETURN(auto bucket, NextBucket(&whole));
    if (!bucket) break;
    // The matching measurements of one bucket share one buffer: one allocation, not one each.
    auto arena = std::make_shared<std::string>();
    std::vector<size_t> offsets;
    HG_RETURN_IF_ERROR(UnpackBucket(*bucket, whole, [&](const BsonObj& m) {
      offsets.push_back(arena->size());
      arena->append(m.bytes());
    }));
    for (size_t off : offsets) buffer_.emplace_back(arena, arena->data() + off);
  }
  if (buffer_.empty()) return std::optional<BsonObj>();
  BsonObj out = std::move(buffer_.front());
  buffer_.pop_front();
  return std::optional<BsonObj>(std::move(out));
}

}  // namespace hourglass::exec
