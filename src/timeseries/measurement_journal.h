// The measurement journal: the durable record of time-series measurements that have been
// acknowledged but are not yet in their bucket documents (the bucket catalog's write-back cache,
// bucket_catalog.h). One storage table keyed by an increasing 8-byte big-endian number; each
// entry holds one commit's measurements of one collection, grouped by bucket:
//
// (the bucket collection's UUID, the time and meta field names, each bucket's _id and start, and
// the measurements)
// stored in a compact form (EncodeJournalEntry): the bucket table and the rows are two BinData
// fields, so an entry costs one copy of the rows' bytes:
//
//   {u: <UUID>, t: <timeField>, [m: <metaField>],
//    b: BinData(<_id: 12 bytes><start millis: int64 LE><rows: uint32 LE> per bucket),
//    r: BinData(<the rows' BSON documents, one after another, bucket by bucket>)}
//
// The top bit of a bucket's row count says its rows were written without their metaField: the
// bucket's meta is in an earlier entry still present (the catalog journals a bucket's meta once
// between two flushes), which halves an entry when every series sends one row per commit.
//
// An entry is removed in the transaction that writes its rows to their buckets, so at any moment
// the entries present are exactly the rows storage does not hold yet; after a crash, startup
// writes them (BucketCatalog::ReplayJournal). Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "storage/kv_engine.h"
#include "storage/session.h"

namespace hourglass::timeseries {

inline constexpr std::string_view kMeasurementJournalTable = "_timeseries_journal";

// One bucket's share of a journal entry.
struct JournalBucket {
  bson::ObjectId id;
  int64_t start = 0;                // the bucket's start time, millis
  std::vector<bson::BsonObj> rows;  // the measurements (metaField included unless meta_omitted)
  // Encode: write the rows without their top-level metaField. Decode: they were written so.
  bool meta_omitted = false;
};
struct JournalEntry {
  std::string uuid;
  std::string time_field;
  std::string meta_field;  // empty: none
  std::vector<JournalBucket> buckets;
};
// The entry's document; `row_at` (if given) receives each row's offset in it, bucket by bucket.
std::string EncodeJournalEntry(const JournalEntry& e, std::vector<size_t>* row_at = nullptr);
// The entry whose document `entry` holds, its rows viewing (and sharing) that buffer;
// InternalError if it is malformed.
StatusWith<JournalEntry> DecodeJournalEntry(std::shared_ptr<const std::string> entry);

class MeasurementJournal {
 public:
  // Creates the table if it does not exist and numbers new entries after the last one stored.
  static StatusWith<std::unique_ptr<MeasurementJournal>> Open(storage::KvEngine* engine);

  // Adds `entry` (a BSON document) in `s`'s open transaction; returns its key.
  StatusWith<std::string> Append(storage::Session& s, std::string_view entry);
  // Removes the entry under `key` in `s`'s open transaction.
  Status Remove(storage::Session& s, std::string_view key);
  // Calls `fn` with every entry's document, in the order they were appended.
  Status ForEach(storage::Session& s,
                 const std::function<Status(std::string_view key,
                                            std::shared_ptr<const std::string> entry)>& fn);

 private:
  explicit MeasurementJournal(uint64_t next) : next_(next) {}
  std::atomic<uint64_t> next_;
};

}  // namespace hourglass::timeseries
