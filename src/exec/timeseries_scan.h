// The read side of a time-series collection (spec §6.1-6.2): a DocumentStream over its
// measurements. It walks the bucket collection in start-time order — only the key range the
// filter's time bounds allow — drops buckets the filter's bucket-level predicate rules out (meta
// equality, control.min/max bounds), unpacks the rest into measurements (time field first, then
// the meta field, then the data columns) and applies the full filter to each measurement.
//
// When the filter constrains the metaField and the bucket collection has its series index
// ({meta: 1, control.min.<time>: 1}), the scan walks the index instead: it visits each distinct
// meta once (skipping over the series' other entries), tests the filter's meta conjuncts on it,
// and for matching series reads only the buckets whose start lies in the time bounds. So a query
// for one sensor and one hour reads that sensor's buckets of that hour and nothing else.
//
// Options (TimeseriesScanOptions) let the rewrites of timeseries_read.h shape the scan: which
// columns to decode (include/exclude), whether to emit measurements sorted on the time field
// (a bounded sort over buckets read in start-time order, forward or backward), and whether to
// skip the per-event filter for buckets that match whole (wholeBucketFilter). Bucket-level
// consumers (the control-based $group) pull buckets with NextBucket and unpack only some.
//
// Like CollectionScan it reads in chunks, each in its own short storage session, so a client
// cursor can span getMores without pinning a snapshot.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "catalog/record_store.h"
#include "catalog/series_directory.h"
#include "pipeline/column_block.h"
#include "pipeline/expression.h"
#include "pipeline/pipeline.h"
#include "query/matcher.h"
#include "storage/kv_engine.h"
#include "timeseries/bucket_catalog.h"
#include "timeseries/bucket_filter.h"
#include "timeseries/bucket_unpacker.h"

namespace hourglass::exec {

// Work done by time-series reads, reported by serverStatus (hourglass.timeseries).
struct TimeseriesReadCounters {
  std::atomic<int64_t> buckets_read{0};      // bucket documents read from storage
  std::atomic<int64_t> buckets_unpacked{0};  // ... that passed the bucket-level filter
  std::atomic<int64_t> measurements_unpacked{0};
  std::atomic<int64_t> buckets_as_blocks{0};           // kept buckets handed over as column blocks
  std::atomic<int64_t> buckets_filtered_as_blocks{0};  // ... whose event filter ran on columns
  std::atomic<int64_t> buckets_read_ahead{0};          // ... read and decoded on a helper thread
  std::atomic<int64_t> latest_cache_hits{0};  // last-point reads LatestMeasurements answered
  std::atomic<int64_t> newest_bins_windows{
      0};  // newest-bins reads a window settled (newest_bins.h)
};
TimeseriesReadCounters& GlobalTimeseriesReadCounters();

struct TimeseriesScanOptions {
  // Which columns to produce (UnpackSpec::Mode and fields); the filter's fields are the
  // caller's business (they must be produced when there is an event filter).
  timeseries::UnpackSpec::Mode mode = timeseries::UnpackSpec::Mode::kAll;
  std::vector<std::string> fields;
  // +1 / -1: emit measurements sorted on the time field (ties in bucket then row order), reading
  // buckets in start-time order and releasing what no later bucket can precede. 0: bucket order.
  int sort_direction = 0;
  // Skip the per-event filter for buckets BucketFilter::MatchesWholeBucket accepts.
  bool use_whole_bucket_filter = false;
  // Last-point: with the series index, read per series (of those the meta filter keeps) only
  // the newest buckets that may hold its latest time, walking the index backward.
  bool lastpoint = false;
  // ... or, above 1, that may hold one of its lastpoint_n latest measurements.
  int64_t lastpoint_n = 1;
  // {"": <expression>}, an expression of the metaField alone (a $setWindowFields' partitionBy),
  // with sort_direction 1 and the series index: the measurements partition by partition, in the
  // order of the expression's values over the series' metas (missing as null), each partition's
  // in time order (honoured when TimeseriesScan::in_series_order() says so). Empty: no such order.
  bson::BsonObj series_partition;
  // > 0 with sort_direction: only the first sort_limit measurements in that order are wanted
  // (a $limit, after any $skip, follows the $sort): buckets and measurements that cannot be
  // among them are skipped, and the read stops once no bucket left can hold one.
  int64_t sort_limit = 0;
  // > 0: at most this many measurements are wanted and there is no event filter: stop reading
  // buckets once the kept ones hold that many (a bucket-level $limit).
  int64_t measurement_limit = 0;
  // The bounded sort's memory: above the limit without allow_disk_use it fails with
  // QueryExceededMemoryLimitNoDiskUseAllowed (292), as $sort does; with it, it keeps going.
  int64_t sort_memory_limit_bytes = 100 * 1024 * 1024;
  bool allow_disk_use = false;
  // {hint: <the user's hint>} as HintOf (crud_util.h) gives it, or empty for none. A user index it
  // names, or one that serves the filter better than the default path, supplies the buckets to read
  // (timeseries_index_plan.h); Make fails with BadValue (2) for a hint naming no index.
  bson::BsonObj hint;
  // Whether a consumer may take the kept buckets as column blocks (AsBlockSource).
  bool allow_blocks = false;
  // Whether an event filter made of tests of single fields runs on the bucket's columns (only
  // the rows it selects are built).
  bool filter_on_columns = false;
  // false: no bucket-level filtering (no time range, index or control.min/max test): every
  // bucket is read and unpacked and the whole filter tested on each measurement.
  bool bucket_level_filter = true;
  // Last-point: answer from the collection's LatestMeasurements where it is current (and fill it
  // where it is not). Only for scans that walk the newest buckets of each series, without hint.
  bool latest_cache = true;
  // What the filter's $expr may read ($$NOW, the command's `let` variables).
  query::ExpressionContext expr_ctx = query::ExpressionContext::Now();
  // The bucket filter of the scan's filter, when the read's planner already made it (with the
  // collection's options and expr_ctx): the scan takes it instead of parsing the filter again.
  std::optional<timeseries::BucketFilter> bucket_filter;
  // The scan's filter parsed with expr_ctx, when the caller already has it (a $match stage, a
  // find's filter): without bucket-level filters the scan tests it as it is.
  std::optional<query::Matcher> parsed_filter;
};

// What one scan did, for explain's executionStats.
struct TimeseriesScanStats {
  int64_t buckets_read = 0;
  int64_t buckets_kept = 0;      // passed the bucket-level filter
  int64_t buckets_unpacked = 0;  // ... and were unpacked
  int64_t buckets_matched_whole = 0;
  int64_t measurements_unpacked = 0;
  int64_t measurements_matched = 0;  // passed the event filter
};

class TimeseriesScan : public pipeline::DocumentStream, public pipeline::BlockSource {
 public:
  // `filter` is the filter document on measurements ({} for all).
  static StatusWith<std::unique_ptr<TimeseriesScan>> Make(timeseries::TimeseriesCollection coll,
                                                          storage::KvEngine* engine,
                                                          const bson::BsonObj& filter,
                                                          TimeseriesScanOptions options = {});
  StatusWith<std::optional<bson::BsonObj>> Next() override;

  // Column blocks (block processing of $group and $count): each kept bucket's cells column by
  // column, the meta field as a block constant, and the rows that pass the event filter as the
  // selection (all rows of a bucket that matches whole). Offered only when allow_blocks is set
  // and the scan does not shape its output itself (bounded sort, last-point, bucket-level limit).
  pipeline::BlockSource* AsBlockSource() override;
  void RequireFields(const std::vector<std::string>& names) override;
  StatusWith<const pipeline::ColumnBlock*> NextBlock() override;
  // The time field can be bounded: in a bucket whose rows all count, by control.min/max.<time>
  // (every measurement's time lies between them).
  void AcceptBounds(const std::vector<std::string>& names) override;
  StatusWith<const pipeline::ColumnBlock::Field*> DecodeBounded(std::string_view name) override;
  // Detached blocks keep what they need of their bucket and their decoded columns. Handed off,
  // the scan's reads on the other thread are part of the operation that handed it off: the read
  // barriers that operation ran are not run again.
  bool DetachBlocks() override;
  ThreadContext HandOff() override;
  // A compressed bucket's block may leave up to `leave` of the consumer's columns (the last ones
  // it asked for) undecoded; those are decoded by Complete.
  StatusWith<std::unique_ptr<pipeline::DetachedBlock>> NextDetachedBlock(int leave) override;

  // Bucket-level access (do not mix with Next): the next bucket the bucket-level filter keeps,
  // owned, with *whole set when every measurement of it matches the filter; nullopt at the end.
  StatusWith<std::optional<bson::BsonObj>> NextBucket(bool* whole);
  // Calls fn on each measurement of `bucket` that matches the filter (all of them when `whole`),
  // in row order. The measurement borrows a buffer valid during the call. Errors: the
  // unpacker's, and the filter's ($expr evaluation).
  // `keep_row`, when given, picks the rows to build by their time cell (the others are neither
  // built nor counted as unpacked).
  Status UnpackBucket(const bson::BsonObj& bucket, bool whole,
                      const std::function<void(const bson::BsonObj&)>& fn,
                      const std::function<bool(const bson::BsonElement& time)>& keep_row = nullptr);

  const TimeseriesScanStats& stats() const { return stats_; }
  const timeseries::BucketFilter& bucket_filter() const { return bucket_filter_; }
  // Whether the scan walks the series index, and the clustered key range it scans otherwise.
  bool uses_series_index() const {
    return meta_matcher_.has_value() || lastpoint_index_ || series_order_;
  }
  bool walks_newest_per_series() const { return lastpoint_index_; }
  // Whether the measurements come series by series (options' series_order, honoured).
  bool in_series_order() const { return series_order_; }
  // When a user index supplies the buckets: its plan in explain's shape (FETCH over IXSCAN, in
  // bucket terms) and the keys it examined; an empty plan otherwise.
  const bson::BsonObj& user_index_plan() const { return user_index_plan_; }
  int64_t user_index_keys_examined() const { return user_index_keys_examined_; }
  // The bucket-level limit in effect (0: none).
  int64_t measurement_limit() const { return filter_ ? 0 : options_.measurement_limit; }
  bool has_time_range() const { return range_.lo.has_value(); }
  // The scanned range of bucket start times in seconds (when has_time_range()).
  int64_t min_start_seconds() const { return lo_seconds_; }
  int64_t max_start_seconds() const { return hi_seconds_; }
  // The per-measurement filter ({} when a kept bucket's measurements all match).
  const bson::BsonObj& event_filter() const { return event_filter_; }
  const timeseries::TimeseriesCollection& collection() const { return coll_; }
  const timeseries::UnpackSpec& unpack_spec() const { return unpacker_.spec(); }
  // Whether the unpack spec produces the top-level field `name`.
  bool Produces(std::string_view name) const { return unpacker_.Produces(name); }
  // From here on keeps and unpacks whole buckets, every field (a last-point read filling the
  // collection's LatestMeasurements, which keeps whole measurements); the caller projects what it
  // passes on. Before the first NextBucket.
  void ProduceWholeMeasurements();
  // Whether a series of bucket meta {meta: <value>} ({} for none) passes the meta conjuncts of the
  // filter (walks_newest_per_series() scans: their filter is meta-only).
  bool MetaMatches(const bson::BsonObj& meta) const {
    return !meta_matcher_ || meta_matcher_->Matches(meta);
  }
  bool has_meta_filter() const { return meta_matcher_.has_value(); }
  // The collection's LatestMeasurements when this last-point scan may use it (see
  // TimeseriesScanOptions::latest_cache), else nullptr.
  timeseries::LatestMeasurements* latest_cache() const {
    return lastpoint_index_ && options_.latest_cache && options_.hint.IsEmpty() ? coll_.latest.get()
                                                                                : nullptr;
  }
  int sort_direction() const { return options_.sort_direction; }

 private:
  TimeseriesScan(timeseries::TimeseriesCollection coll, storage::KvEngine* engine,
                 timeseries::BucketFilter bucket_filter, std::optional<query::Matcher> filter,
                 TimeseriesScanOptions options);
  Status ReadChunk();
  // Orders rids_ by start time in the direction of a bounded sort (none: index order).
  void OrderRids();
  // Index mode: the RecordIds of the buckets of matching series within the time bounds.
  Status CollectFromIndex();
  // Moves `cursor` from an entry of the series `prefix` (BucketIndexSeriesPrefix) to the first
  // entry of the next series; `stepping`: the cursor is on that series' entries under open
  // forward bounds, so a few steps may get there without a seek.
  StatusWith<bool> NextSeries(catalog::IndexCursor& cursor, const std::string& prefix,
                              bool stepping);
  Status ReadIndexedChunk();
  // Opens reader_ on the bucket table for the next chunk (*dropped: the table is gone).
  Status OpenReader(bool* dropped);
  // Sets *block to the rows of `bucket`: the meta field (when `meta`) as a constant and the
  // named data columns, every row selected. The cell vectors of the block's previous fields are
  // reused. *owners is set to what keeps the cells of a compressed bucket alive.
  Status FillBlock(const bson::BsonObj& bucket, std::span<const std::string> columns, bool meta,
                   pipeline::ColumnBlock* block, std::vector<std::shared_ptr<const void>>* owners);
  // Removes the fields `drop` names from *block, keeping their cell vectors for reuse.
  void DropFields(pipeline::ColumnBlock* block,
                  const std::function<bool(const pipeline::ColumnBlock::Field&)>& drop);
  // Narrows block's selection to the rows that pass block_filter_ (which must be set).
  void SelectRows(pipeline::ColumnBlock* block) const;
  // Last-point: the newest buckets of the series whose index entries start with `prefix`, read
  // through `records`; `newer_first` yields the series' entries (position and RecordId), newest
  // first, and false after the oldest.
  Status CollectNewest(
      catalog::RecordCursor& records, const std::string& prefix,
      const std::function<StatusWith<bool>(std::string_view*, int64_t*)>& newer_first);
  // CollectNewest of one series, its entries read back from a seek past its last.
  Status CollectNewestSeeking(catalog::RecordCursor& records, catalog::IndexCursor& cursor,
                              const std::string& prefix);
  // CollectNewest of each of `series` (the directory's, in index order) that the meta filter
  // passes, in one forward walk of the index: a series' few entries are held and read newest
  // first, and the walk goes on from the next series' first entry; after a series of more than a
  // few entries, the rest are read from seeks. Just written, the index is in
  // WiredTiger's insert lists, where a step forward follows a link but a seek, or a step back,
  // searches the list; a seek and a step back per series were half of what a latest-5 read at
  // 4,000 series spent beyond its time after a restart.
  Status CollectNewestWalking(catalog::RecordCursor& records, catalog::IndexCursor& cursor,
                              const std::vector<catalog::SeriesDirectory::Series>& series);
  // An owned copy of `bucket` with only what the unpacker reads: every field but `data`, and of
  // `data` the time column, the columns it produces and those the filter reads. (Last-point keeps
  // its candidates until every series is read; copying whole buckets of which it decodes two
  // columns was a fifth of a latest-5 query at 4,000 series.)
  bson::BsonObj CopyForUnpack(const bson::BsonObj& bucket) const;
  void AddBucket(const bson::BsonObj& bucket);
  int NextChunkSize();
  // Bounded sort: unpacks the next bucket into heap_ and releases what may go out.
  Status FillSorted();
  // Whether the bucket table's key order may be taken as start-time order (see the .cc).
  Status CheckTimeOrderedKeys();

  timeseries::TimeseriesCollection coll_;
  storage::KvEngine* engine_;
  timeseries::BucketFilter bucket_filter_;
  std::optional<query::Matcher> filter_;  // absent when every measurement of a kept bucket matches
  timeseries::BucketUnpacker unpacker_;
  catalog::RecordRange range_;  // the buckets to scan: a time range, or all
  int64_t lo_seconds_ = 0, hi_seconds_ = 0;
  bson::BsonObj event_filter_;
  std::optional<query::Matcher> meta_matcher_;  // index mode: the meta conjuncts, on {meta: v}
  std::vector<int64_t> rids_;                   // index mode: buckets still to read
  size_t next_rid_ = 0;
  bool collected_ = false;
  bool lastpoint_index_ = false;
  bool series_order_ = false;
  // The partition value ({"": value}) of the series of bucket meta `meta` ({meta: value} or {}).
  bson::BsonObj PartitionOf(const bson::BsonObj& meta) const;
  // series_order_: rids_[i]'s partition (series whose partition values are equal), counted in
  // partition order; and, while the index is walked, each series' partition value ({"": value})
  // and its range of rids_.
  std::vector<uint32_t> rid_series_;
  struct SeriesRids {
    bson::BsonObj partition;
    size_t begin, end;
  };
  std::vector<SeriesRids> series_rids_;
  std::shared_ptr<const pipeline::Expression> partition_by_;
  uint32_t sorting_series_ = 0;          // series_order_: the series the bounded sort holds rows of
  uint32_t adding_series_ = 0;           // series_order_: the series of the bucket AddBucket gets
  std::deque<uint32_t> buckets_series_;  // series_order_: buckets_[i]'s series
  uint32_t next_bucket_series_ = 0;      // series_order_: the series of NextBucket's bucket
  bool user_index_ = false;              // the buckets to read (rids_) come from a user index
  bson::BsonObj user_index_plan_;        // ... chosen by this plan (explain's shape)
  int64_t user_index_keys_examined_ = 0;
  // Block mode: the data columns the consumer reads, and whether it reads the meta field.
  std::vector<std::string> block_columns_;
  bool block_meta_ = false;
  std::vector<std::string> block_visible_;    // the fields the consumer asked for and may see
  std::vector<std::string> visible_columns_;  // ... that are data columns
  bool bound_time_ = false;  // the consumer takes the time field by its bounds (AcceptBounds)
  std::vector<std::string> visible_columns_but_time_;
  // Detached blocks (DetachBlocks), and whether the scan is being read on the thread it was
  // handed off to.
  bool detached_ = false;
  bool reading_ahead_ = false;
  int leave_ = 0;                          // NextBlock: columns to leave to the consumer ...
  std::vector<std::string> left_columns_;  // ... and those it left
  // Cell vectors kept between blocks (and the decoder's output), so that blocks reuse memory.
  std::vector<std::vector<bson::BsonElement>> spare_cells_;
  std::vector<timeseries::BucketUnpacker::Column> decoded_;
  // The event filter as tests of single fields, when it has that form, and the columns it
  // reads (filter_meta_: it reads the meta field).
  std::optional<std::vector<query::FieldPredicate>> block_filter_;
  std::vector<std::string> filter_columns_;
  bool filter_meta_ = false;
  pipeline::ColumnBlock filter_block_;  // UnpackBucket's columns for block_filter_
  std::vector<std::shared_ptr<const void>> filter_owners_;  // ... decoded, if compressed
  bson::BsonObj block_bucket_;                              // the bucket block_ points into
  pipeline::ColumnBlock block_;
  std::vector<std::shared_ptr<const void>> block_owners_;  // block_'s decoded columns
  int chunk_ = 1;
  // The session and cursor of the chunk being read: `read` of its `chunk` buckets so far.
  struct Reader {
    std::unique_ptr<storage::Session> session;
    catalog::RecordCursor cursor;
    int read = 0;
    int chunk = 0;
  };
  std::optional<Reader> reader_;
  // Block mode: kept buckets are not copied; each points into reader_'s cursor, valid until
  // the next NextBucket.
  bool borrow_ = false;
  int64_t rows_kept_ = 0;
  bool limit_reached_ = false;
  std::deque<bson::BsonObj> buffer_;
  std::optional<int64_t> last_id_;  // where the next reader resumes
  bool done_ = false;
  TimeseriesScanOptions options_;
  TimeseriesScanStats stats_;
  std::deque<bson::BsonObj> buckets_;  // read, kept by the bucket filter, not yet unpacked
  // Bounded sort state: measurements ordered by (time, sequence) in the sort direction.
  struct SortEntry {
    int64_t time;
    int64_t seq;  // input order: ties keep it, as $sort's stable sort does
    bson::BsonObj doc;
  };
  std::vector<SortEntry> heap_;
  int64_t next_seq_ = 0;
  int64_t heap_bytes_ = 0;
  std::optional<int64_t> released_bound_;  // the time of the last measurement released
  bool sort_done_ = false;
  // With sort_limit: the times of the sort_limit first measurements (in sort order) pushed so far,
  // the last of them on top. Once it holds that many, nothing after the top can be wanted.
  std::vector<int64_t> top_times_;
  bool checked_order_ = false;
  bool time_ordered_keys_ = true;
};

}  // namespace hourglass::exec
