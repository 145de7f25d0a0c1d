// The measurement journal: the durable record of time-series measurements that have been
// acknowledged but are not yet in their bucket documents (the bucket catalog's write-back cache,
// bucket_catalog.h). Each entry holds one commit's measurements of one collection, grouped by
// bucket:
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
// Entries are records of the storage engine's append log "timeseries-journal" (append_log.h),
// durable with the engine's journal: an entry is read back only after a crash, so it never goes
// through WiredTiger's cache. The transaction that writes an entry's rows to their buckets marks
// it written, in the table _timeseries_journal_written (a key per entry, no value), so at any
// moment the entries not marked are exactly the rows storage does not hold yet; after a crash,
// startup writes them (BucketCatalog::OpenJournal). The log's segments whose entries are all
// marked, durably, are removed, and then their marks (Prune). Entries an earlier version kept in
// the table _timeseries_journal are read, and removed when marked, the same way.
//
// A flush may write its buckets in several transactions: each but the last records, in the table
// _timeseries_journal_partly_written, which buckets' shares of which entries it wrote
// (MarkPartlyWritten), and the last marks the entries written and forgets those records. Replay
// after a crash in between skips the shares recorded (PartlyWritten). Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "storage/append_log.h"
#include "storage/kv_engine.h"
#include "storage/session.h"

namespace hourglass::timeseries {

inline constexpr std::string_view kMeasurementJournalLog = "timeseries-journal";
inline constexpr std::string_view kMeasurementJournalWrittenTable = "_timeseries_journal_written";
inline constexpr std::string_view kMeasurementJournalPartlyWrittenTable =
    "_timeseries_journal_partly_written";
// Where an earlier version kept the entries themselves.
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
// What an entry is written from: as JournalEntry, its strings and rows viewed rather than copied
// (a commit at thousands of series journals a row for each of a thousand buckets).
struct JournalBucketRows {
  bson::ObjectId id;
  int64_t start = 0;
  std::span<const bson::BsonObj> rows;
  bool meta_omitted = false;
};
struct JournalEntryRows {
  std::string_view uuid;
  std::string_view time_field;
  std::string_view meta_field;
  std::vector<JournalBucketRows> buckets;
};
// The entry's document; `row_at` (if given) receives each row's offset in it, bucket by bucket.
std::string EncodeJournalEntry(const JournalEntryRows& e, std::vector<size_t>* row_at = nullptr);
std::string EncodeJournalEntry(const JournalEntry& e, std::vector<size_t>* row_at = nullptr);
// The entry whose document `entry` holds, its rows viewing (and sharing) that buffer;
// InternalError if it is malformed.
StatusWith<JournalEntry> DecodeJournalEntry(std::shared_ptr<const std::string> entry);

// The bucket shares of entries recorded as in storage (MeasurementJournal::PartlyWritten).
class PartlyWrittenShares {
 public:
  // Whether the rows of bucket `id` in entry `n` are in storage.
  bool Holds(uint64_t n, const bson::ObjectId& id) const;
  bool empty() const { return records_.empty(); }

 private:
  friend class MeasurementJournal;
  struct Record {
    std::vector<uint64_t> entries;  // ascending
    std::set<std::string> ids;      // 12-byte ObjectIds
  };
  std::vector<Record> records_;
};

class MeasurementJournal {
 public:
  // Opens the log and the marks table (creating them if needed) and numbers new entries after
  // every one stored. `segment_bytes`: the log's (AppendLog::Open).
  static StatusWith<std::unique_ptr<MeasurementJournal>> Open(
      storage::KvEngine* engine, uint64_t segment_bytes = storage::AppendLog::kDefaultSegmentBytes);

  // Appends `entry` (a BSON document) and returns its number; durable once the engine's journal
  // is flushed after it (KvEngine::WaitForJournal).
  StatusWith<uint64_t> Append(std::string_view entry);
  // Marks entry `n` written (its rows are in storage, or no longer wanted) in `s`'s open
  // transaction: from that transaction's commit on, ForEach leaves it out.
  Status MarkWritten(storage::Session& s, uint64_t n);
  // Records in `s`'s open transaction that the rows buckets `ids` hold in entries `ns` are in
  // storage (written in that transaction), though the entries are not marked written yet; returns
  // the record's key, for ForgetPartlyWritten in the transaction that marks them.
  StatusWith<std::string> MarkPartlyWritten(storage::Session& s, const std::vector<uint64_t>& ns,
                                            const std::vector<bson::ObjectId>& ids);
  // Removes the records `keys` (all of them if `keys` is null) in `s`'s open transaction.
  Status ForgetPartlyWritten(storage::Session& s, const std::vector<std::string>* keys);
  // Every share recorded and not forgotten (startup's replay).
  StatusWith<PartlyWrittenShares> PartlyWritten(storage::Session& s);
  // Says that the transaction marking `ns` committed: their space in the log may go (Prune).
  void Written(const std::vector<uint64_t>& ns);
  // Removes the log's segments whose entries are all written, once their marks are durable, and
  // then those marks; in transactions of its own in `s`. Returns at once when no segment is done
  // or another call is at it.
  Status Prune(storage::Session& s);
  // Calls `fn` with every entry not marked written, in the order they were appended (startup's
  // replay, before any Append).
  Status ForEach(
      storage::Session& s,
      const std::function<Status(uint64_t n, std::shared_ptr<const std::string> entry)>& fn);

 private:
  MeasurementJournal(storage::KvEngine* engine, std::shared_ptr<storage::AppendLog> log,
                     uint64_t legacy_last, uint64_t last_partial)
      : engine_(engine),
        log_(std::move(log)),
        legacy_last_(legacy_last),
        last_partial_(last_partial) {}

  storage::KvEngine* const engine_;
  const std::shared_ptr<storage::AppendLog> log_;
  // The last key of the entries kept in the earlier version's table (0: none are left); numbers
  // up to it name those entries.
  const uint64_t legacy_last_;
  std::atomic<uint64_t> last_partial_;  // the last key of a partly-written record
  std::mutex mu_;
  std::set<uint64_t> unwritten_;  // appended, not yet said Written; guarded by mu_
  std::mutex prune_mu_;
};

}  // namespace hourglass::timeseries
