#include "commands/timeseries_scan.h"

#include "storage/kv_engine.h"
#include "storage/record_id.h"

namespace hourglass::commands {

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
    timeseries::TimeseriesCollection coll, storage::KvEngine* engine, const BsonObj& filter) {
  timeseries::BucketFilterSpec spec;
  spec.time_field = coll.options.time_field;
  spec.meta_field = coll.options.meta_field;
  spec.bucket_max_span_seconds = coll.options.bucket_max_span_seconds;
  HG_ASSIGN_OR_RETURN(auto bucket_filter, timeseries::BucketFilter::Make(filter, spec));
  std::optional<query::Matcher> matcher;
  if (!bucket_filter.meta_only()) {
    HG_ASSIGN_OR_RETURN(auto m, query::Matcher::Parse(filter));
    if (!m.MatchesEverything()) matcher = std::move(m);
  }
  return std::unique_ptr<TimeseriesScan>(
      new TimeseriesScan(std::move(coll), engine, std::move(bucket_filter), std::move(matcher)));
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

Status TimeseriesScan::ReadChunk() {
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
  auto& counters = GlobalTimeseriesReadCounters();
  int read = 0;
  while (true) {
    if (!more.ok()) return more.status();
    if (!more.value() || (!hi_key_.empty() && cursor->key() > hi_key_)) {
      done_ = true;
      break;
    }
    ++counters.buckets_read;
    BsonObj bucket(cursor->value().data());
    if (bucket_filter_.MayMatch(bucket)) {
      ++counters.buckets_unpacked;
      int64_t rows = 0;
      HG_RETURN_IF_ERROR(unpacker_.Unpack(bucket, [&](BsonObj m) {
        ++rows;
        if (!filter_ || filter_->Matches(m)) buffer_.push_back(BsonObj::CopyOf(m.bytes()));
        return true;
      }));
      counters.measurements_unpacked += rows;
    }
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

}  // namespace hourglass::commands
