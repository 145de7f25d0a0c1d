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
// Like CollectionScan it reads in chunks, each in its own short storage session, so a client
// cursor can span getMores without pinning a snapshot.
//
// It is also a pipeline::BlockSource: a consumer that works on columns (block processing of
// $group) takes each matching bucket as one column block — the bucket's cells column by column,
// the meta field as a block constant, and the rows that pass the per-measurement filter as the
// selection — without a document per measurement.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "commands/service_context.h"
#include "pipeline/column_block.h"
#include "pipeline/pipeline.h"
#include "query/matcher.h"
#include "timeseries/bucket_catalog.h"
#include "timeseries/bucket_filter.h"
#include "timeseries/bucket_unpacker.h"

namespace hourglass::commands {

// Work done by time-series reads, reported by serverStatus (hourglass.timeseries).
struct TimeseriesReadCounters {
  std::atomic<int64_t> buckets_read{0};      // bucket documents read from storage
  std::atomic<int64_t> buckets_unpacked{0};  // ... that passed the bucket-level filter
  std::atomic<int64_t> measurements_unpacked{0};
  std::atomic<int64_t> buckets_as_blocks{0};  // ... of those, handed over as column blocks
};
TimeseriesReadCounters& GlobalTimeseriesReadCounters();

class TimeseriesScan : public pipeline::DocumentStream, public pipeline::BlockSource {
 public:
  // `filter` is the filter document on measurements ({} for all). `hint` (EOO: none) is the
  // user's hint; a user index it names, or one that serves the filter better, supplies the
  // buckets to read (timeseries_index_plan.h). BadValue (2) for a hint naming no index.
  static StatusWith<std::unique_ptr<TimeseriesScan>> Make(
      timeseries::TimeseriesCollection coll, storage::KvEngine* engine, const bson::BsonObj& filter,
      const bson::BsonElement& hint = bson::BsonElement());
  StatusWith<std::optional<bson::BsonObj>> Next() override;

  pipeline::BlockSource* AsBlockSource() override { return this; }
  void RequireFields(const std::vector<std::string>& names) override;
  StatusWith<const pipeline::ColumnBlock*> NextBlock() override;

 private:
  TimeseriesScan(timeseries::TimeseriesCollection coll, storage::KvEngine* engine,
                 timeseries::BucketFilter bucket_filter, std::optional<query::Matcher> filter);
  Status ReadChunk();
  // Index mode: the RecordIds of the buckets of matching series within the time bounds.
  Status CollectFromIndex();
  Status ReadIndexedChunk();
  void AddBucket(const bson::BsonObj& bucket, Status* st);

  timeseries::TimeseriesCollection coll_;
  storage::KvEngine* engine_;
  timeseries::BucketFilter bucket_filter_;
  std::optional<query::Matcher> filter_;  // absent when every measurement of a kept bucket matches
  timeseries::BucketUnpacker unpacker_;
  std::string lo_key_, hi_key_;                 // the scanned key range (hi_key_ empty: to the end)
  std::optional<query::Matcher> meta_matcher_;  // index mode: the meta conjuncts, on {meta: v}
  std::vector<int64_t> rids_;                   // index mode: buckets still to read
  bool user_index_ = false;                     // index mode through a user index
  size_t next_rid_ = 0;
  bool collected_ = false;
  std::deque<bson::BsonObj> buffer_;
  // Block mode (after RequireFields): matching buckets wait here instead of being unpacked.
  bool block_mode_ = false;
  std::vector<std::string> block_fields_;
  std::deque<bson::BsonObj> buckets_;
  bson::BsonObj block_bucket_;  // the bucket block_ points into
  // Unpacks only the fields the per-measurement filter reads, when that is known.
  std::optional<timeseries::BucketUnpacker> filter_unpacker_;
  pipeline::ColumnBlock block_;
  std::string last_key_;
  bool started_ = false;
  bool done_ = false;
};

}  // namespace hourglass::commands
