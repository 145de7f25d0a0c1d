#include "commands/timeseries_scan.h"

#include "bson/key_string.h"
#include "commands/timeseries_index_plan.h"
#include "storage/kv_engine.h"
#include "storage/record_id.h"

namespace hourglass::commands {

using bson::BsonElement;
using bson::BsonObj;

namespace {
// Buckets read per storage session (each holds up to 1,000 measurements).
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

StatusWith<std::unique_ptr<TimeseriesScan>> TimeseriesScan::Make(
    timeseries::TimeseriesCollection coll, storage::KvEngine* engine, const BsonObj& filter,
    const BsonElement& hint) {
  timeseries::BucketFilterSpec spec;
  spec.time_field = coll.options.time_field;
  spec.meta_field = coll.options.meta_field;
  spec.bucket_max_span_seconds = coll.options.bucket_max_span_seconds;
  HG_ASSIGN_OR_RETURN(auto bucket_filter, timeseries::BucketFilter::Make(filter, spec));
  std::optional<query::Matcher> matcher;
  std::optional<std::vector<std::string>> filter_fields;  // what `matcher` reads, if known
  if (!bucket_filter.meta_only()) {
    // Top-level conjuncts on the meta field are decided exactly per bucket (MayMatch tests them
    // on `meta`), so the per-measurement filter is only the rest.
    BsonObj residual = filter;
    if (coll.options.meta_field && !bucket_filter.meta_filter().IsEmpty()) {
      const std::string& m = *coll.options.meta_field;
      bson::BsonBuilder b;
      for (BsonElement e : filter) {
        std::string_view f = e.FieldName();
        if (f == m || (f.size() > m.size() && f.substr(0, m.size()) == m && f[m.size()] == '.')) {
          continue;
        }
        b.AppendElement(e);
      }
      residual = b.Obj();
    }
    HG_ASSIGN_OR_RETURN(auto m, query::Matcher::Parse(residual));
    if (!m.MatchesEverything()) {
      matcher = std::move(m);
      filter_fields = query::TopLevelFieldsOf(residual);
    }
  }
  std::optional<query::Matcher> meta_matcher;
  const catalog::IndexEntry* series = coll.buckets->BucketIndex();
  if (series != nullptr && !series->spec["hidden"].Truthy() &&
      !bucket_filter.meta_filter().IsEmpty()) {
    HG_ASSIGN_OR_RETURN(auto mm, query::Matcher::Parse(bucket_filter.meta_filter()));
    meta_matcher = std::move(mm);
  }
  auto scan = std::unique_ptr<TimeseriesScan>(
      new TimeseriesScan(std::move(coll), engine, std::move(bucket_filter), std::move(matcher)));
  scan->meta_matcher_ = std::move(meta_matcher);
  if (filter_fields) {
    // Block mode tests the filter on measurements holding only the fields it reads.
    scan->filter_unpacker_.emplace(
        timeseries::UnpackSpec{.time_field = scan->coll_.options.time_field,
                               .meta_field = scan->coll_.options.meta_field,
                               .mode = timeseries::UnpackSpec::Mode::kInclude,
                               .fields = std::move(*filter_fields)});
  }
  HG_ASSIGN_OR_RETURN(auto indexed,
                      TimeseriesIndexedBuckets(scan->coll_, engine, scan->bucket_filter_, hint));
  if (indexed) {
    scan->rids_ = std::move(*indexed);
    scan->collected_ = scan->user_index_ = true;
  }
  return scan;
}

TimeseriesScan::TimeseriesScan(timeseries::TimeseriesCollection coll, storage::KvEngine* engine,
                               timeseries::BucketFilter bucket_filter,
                               std::optional<query::Matcher> filter)
    : coll_(std::move(coll)),
      engine_(engine),
      bucket_filter_(std::move(bucket_filter)),
      filter_(std::move(filter)),
      unpacker_(timeseries::UnpackSpec{.time_field = coll_.options.time_field,
                                       .meta_field = coll_.options.meta_field,
                                       .mode = timeseries::UnpackSpec::Mode::kAll,
                                       .fields = {}}) {
  // A bucket holds measurements in [start, start + maxSpan): buckets that can hold times in
  // [lo, hi] started in [lo - maxSpan, hi].
  auto lo = bucket_filter_.min_time_millis(), hi = bucket_filter_.max_time_millis();
  if (lo && hi) {
    int64_t lo_s = FloorSeconds(*lo - coll_.options.bucket_max_span_seconds * 1000);
    int64_t hi_s = FloorSeconds(*hi);
    if (lo_s >= 0 && hi_s <= kMaxOrderedSeconds && lo_s <= hi_s) {
      lo_key_ = storage::EncodeRecordId(catalog::ClusteredRecordIdLow(static_cast<uint32_t>(lo_s)));
      hi_key_ =
          storage::EncodeRecordId(catalog::ClusteredRecordIdHigh(static_cast<uint32_t>(hi_s)));
    }
  }
}

void TimeseriesScan::AddBucket(const BsonObj& bucket, Status* st) {
  auto& counters = GlobalTimeseriesReadCounters();
  ++counters.buckets_read;
  if (!bucket_filter_.MayMatch(bucket)) return;
  ++counters.buckets_unpacked;
  if (block_mode_) {
    buckets_.push_back(bucket.Owned());
    return;
  }
  int64_t rows = 0;
  // The matching measurements of one bucket share one buffer: one allocation, not one each.
  auto arena = std::make_shared<std::string>();
  std::vector<size_t> offsets;
  Status filter_error = Status::OK();
  *st = unpacker_.Unpack(bucket, [&](BsonObj m) {
    ++rows;
    bool keep = true;
    if (filter_) {
      StatusWith<bool> r = filter_->Evaluate(m);  // $expr errors fail the scan
      if (!r.ok()) {
        filter_error = r.status();
        return false;
      }
      keep = r.value();
    }
    if (keep) {
      offsets.push_back(arena->size());
      arena->append(m.bytes());
    }
    return true;
  });
  if (st->ok() && !filter_error.ok()) *st = filter_error;
  for (size_t off : offsets) buffer_.emplace_back(arena, arena->data() + off);
  counters.measurements_unpacked += rows;
}

Status TimeseriesScan::CollectFromIndex() {
  collected_ = true;
  auto session = engine_->NewSession();
  auto cursor_or = session->OpenCursorOrError(coll_.buckets->BucketIndex()->ident);
  if (!cursor_or.ok()) return Status::OK();  // dropped under us: nothing to read
  auto& cursor = cursor_or.value();
  // Bucket starts that can hold times in [lo, hi]: (lo - maxSpan, hi].
  const int64_t span_ms = coll_.options.bucket_max_span_seconds * 1000;
  std::optional<int64_t> lo = bucket_filter_.min_time_millis(),
                         hi = bucket_filter_.max_time_millis();
  auto date_key = [](int64_t millis) {
    bson::BsonBuilder b;
    b.AppendDate("", millis);
    bson::KeyStringBuilder k;
    k.AppendElement(b.Obj().FirstElement());
    return k.Release();
  };
  // A bucket holds times in [start, start + maxSpan): one starting at lo - maxSpan cannot reach lo.
  std::string lo_part =
      lo && *lo > INT64_MIN + span_ms ? date_key(*lo - span_ms + 1) : std::string();
  std::string hi_part = hi ? date_key(*hi) : std::string();
  // Start times are dates (the bucket validator requires it), all encoded in this many bytes
  // after the same rank byte.
  const std::string date_encoding = date_key(0);
  StatusWith<bool> more = cursor->SeekFirst();
  while (more.ok() && more.value()) {
    std::string_view value = cursor->value();
    bson::BsonBuilder mb;
    BsonElement meta;
    if (!value.empty() && value[0] != '\0') {
      meta = BsonElement(value.data());
      mb.AppendElement(meta);
    }
    // Every entry of this series starts with the same prefix: the key minus the start time (a
    // date: rank byte and 8 bytes) and the RecordId; other start types are re-encoded.
    std::string_view key = cursor->key();
    const size_t tail = date_encoding.size() + 8;
    std::string prefix = key.size() > tail && key[key.size() - tail] == date_encoding[0]
                             ? std::string(key.substr(0, key.size() - tail))
                             : catalog::BucketIndexSeriesPrefix(meta);
    if (meta_matcher_->Matches(mb.Obj())) {
      more = cursor->Seek(prefix + lo_part);
      std::string end = prefix + hi_part + "\xff";
      while (more.ok() && more.value() && cursor->key().substr(0, prefix.size()) == prefix &&
             (hi_part.empty() || cursor->key() < end)) {
        rids_.push_back(storage::DecodeRecordId(cursor->key().substr(cursor->key().size() - 8)));
        more = cursor->Next();
      }
      HG_RETURN_IF_ERROR(more.status());
    }
    // On to the next series.
    more = cursor->Seek(prefix + "\xff");
  }
  return more.status();
}

Status TimeseriesScan::ReadIndexedChunk() {
  auto session = engine_->NewSession();
  Status st = Status::OK();
  for (int read = 0; read < kChunkBuckets && next_rid_ < rids_.size() && st.ok(); ++read) {
    HG_ASSIGN_OR_RETURN(auto rec, coll_.buckets->FindRecord(*session, rids_[next_rid_++]));
    if (rec) AddBucket(rec->doc, &st);  // deleted since the index was read: skip
  }
  if (next_rid_ >= rids_.size()) done_ = true;
  return st;
}

Status TimeseriesScan::ReadChunk() {
  if (meta_matcher_ || user_index_) {
    if (!collected_) HG_RETURN_IF_ERROR(CollectFromIndex());
    return ReadIndexedChunk();
  }
  auto session = engine_->NewSession();
  auto cursor_or = session->OpenCursorOrError(coll_.buckets->ident());
  if (!cursor_or.ok()) {
    done_ = true;  // dropped under us
    return Status::OK();
  }
  auto& cursor = cursor_or.value();
  StatusWith<bool> more = started_          ? cursor->SeekAfter(last_key_)
                          : lo_key_.empty() ? cursor->SeekFirst()
                                            : cursor->Seek(lo_key_);
  started_ = true;
  int read = 0;
  while (true) {
    if (!more.ok()) return more.status();
    if (!more.value() || (!hi_key_.empty() && cursor->key() > hi_key_)) {
      done_ = true;
      break;
    }
    Status st = Status::OK();
    AddBucket(BsonObj(cursor->value().data()), &st);
    HG_RETURN_IF_ERROR(st);
    if (++read >= kChunkBuckets) {
      last_key_ = std::string(cursor->key());
      break;
    }
    more = cursor->Next();
  }
  return Status::OK();
}

StatusWith<std::optional<BsonObj>> TimeseriesScan::Next() {
  while (buffer_.empty() && !done_) HG_RETURN_IF_ERROR(ReadChunk());
  if (buffer_.empty()) return std::optional<BsonObj>();
  BsonObj out = std::move(buffer_.front());
  buffer_.pop_front();
  return std::optional<BsonObj>(std::move(out));
}

void TimeseriesScan::RequireFields(const std::vector<std::string>& names) {
  block_mode_ = true;
  block_fields_ = names;
}

StatusWith<const pipeline::ColumnBlock*> TimeseriesScan::NextBlock() {
  while (buckets_.empty() && !done_) HG_RETURN_IF_ERROR(ReadChunk());
  if (buckets_.empty()) return static_cast<const pipeline::ColumnBlock*>(nullptr);
  block_bucket_ = std::move(buckets_.front());
  buckets_.pop_front();
  block_ = pipeline::ColumnBlock();
  const auto& o = coll_.options;
  std::vector<std::string> data_fields;
  for (const std::string& f : block_fields_) {
    if (o.meta_field && f == *o.meta_field) {
      BsonElement meta = block_bucket_["meta"];
      if (!meta.eoo()) {
        block_.fields.push_back(
            pipeline::ColumnBlock::Field{.name = f, .constant = true, .value = meta, .cells = {}});
      }
    } else {
      data_fields.push_back(f);
    }
  }
  std::vector<timeseries::BucketUnpacker::Column> columns;
  HG_ASSIGN_OR_RETURN(block_.num_rows, timeseries::BucketUnpacker::Columns(
                                           block_bucket_, o.time_field, data_fields, &columns));
  for (auto& c : columns) {
    block_.fields.push_back(pipeline::ColumnBlock::Field{
        .name = std::move(c.name), .constant = false, .value = {}, .cells = std::move(c.cells)});
  }
  GlobalTimeseriesReadCounters().measurements_unpacked += block_.num_rows;
  ++GlobalTimeseriesReadCounters().buckets_as_blocks;
  if (filter_) {
    // The rows that pass the per-measurement filter, tested on the unpacked measurement.
    block_.all_rows = false;
    uint32_t row = 0;
    Status filter_error = Status::OK();
    const timeseries::BucketUnpacker& unpacker = filter_unpacker_ ? *filter_unpacker_ : unpacker_;
    HG_RETURN_IF_ERROR(unpacker.Unpack(block_bucket_, [&](BsonObj m) {
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
  }
  return static_cast<const pipeline::ColumnBlock*>(&block_);
}

}  // namespace hourglass::commands
