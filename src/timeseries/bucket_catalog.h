// The BucketCatalog: the in-memory state of every open time-series bucket, and the write path that
// turns inserted measurements into bucket documents (spec §4). See src/timeseries/README.md for the
// lifecycle, the rollover rules and the lock order.
//
// A writer first stages each measurement (Insert): the catalog finds the open bucket of the
// measurement's series (collection + normalized meta), applies the rollover rules, opening,
// reopening or archiving buckets as needed, and adds the measurement to the bucket's open
// WriteBatch. Writers then Commit their batches: for each batch one writer claims commit rights and
// writes every measurement staged into it so far — its own and other writers' — while the others
// wait for the outcome. The first commit of a bucket inserts its document; later ones append to the
// stored document with byte-range edits (BucketDocument).
//
// Write-back (server parameter hourglassTimeseriesWriteBack, read at startup): a commit instead
// appends its measurements to the measurement journal (measurement_journal.h) — one storage write
// for every bucket a request touches — and to its buckets' in-memory layouts, which Flush writes
// to storage in one transaction per collection that also removes the journal entries: every
// second or so, once enough is unwritten, and before any other read of the bucket collection (its
// catalog::ReadBarrier). A read therefore sees every acknowledged measurement, and a crash loses
// none: startup writes what the journal still holds (OpenJournal).
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/catalog.h"
#include "catalog/collection.h"
#include "catalog/transaction_table.h"
#include "storage/session.h"
#include "timeseries/bucket_field_tree.h"
#include "timeseries/latest_measurements.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::timeseries {

// The execution statistics of §4.7, in serverStatus order (globally and per collection),
// generated from bucket_catalog_stats.def.
enum class Stat : int {
#define X(name) k##name,
#include "timeseries/bucket_catalog_stats.def"
#undef X
  kCount
};

// MongoDB's name of `s` in serverStatus and collStats ("numBucketInserts").
std::string_view StatName(Stat s);

class ExecutionStats {
 public:
  void Add(Stat s, int64_t n = 1) {
    v_[static_cast<int>(s)].fetch_add(n, std::memory_order_relaxed);
  }
  int64_t Get(Stat s) const { return v_[static_cast<int>(s)].load(std::memory_order_relaxed); }
  // Appends the statistics under MongoDB's names (avgNumMeasurementsPerCommit only once there are
  // commits). The six of the compression of buckets as they close (numBytesUncompressed to
  // numFailedDecompressBuckets) only `with_close_compression`: MongoDB 8.0, which writes every
  // bucket compressed, no longer reports them.
  void AppendTo(bson::BsonBuilder& b, bool with_close_compression) const;

 private:
  std::array<std::atomic<int64_t>, static_cast<int>(Stat::kCount)> v_{};
};

// What the catalog needs to know of a time-series collection for one write (and reads for one
// read).
struct TimeseriesCollection {
  std::string uuid;  // the bucket collection's UUID: identifies the series' buckets
  TimeseriesOptions options;
  std::shared_ptr<catalog::Collection> buckets;
  // The collection's BucketCatalog::Latest, for last-point reads (null: none, e.g. in tests).
  std::shared_ptr<LatestMeasurements> latest = nullptr;
};

// A version-1 bucket's `control` object: {version: 1, min: <the minimums of `fields` with the time
// field replaced by the bucket start `min_time`>, max: <its maximums>}.
bson::BsonObj BuildBucketControl(const BucketFieldTree& fields, std::string_view time_field,
                                 int64_t min_time);

// How the catalog opens a bucket now (its server parameters), for the writes that make buckets
// outside it (bucket_builder.h): the layout (2: compressed from the first write, as MongoDB 8.0;
// 1: version 1) and the limits of §4.5: the count, the size, the count below which a bucket may
// grow past that size, and the size no bucket passes.
struct NewBucketRules {
  int version = 2;
  int64_t max_count = 1000;
  int64_t max_size = 128000;
  int64_t min_count = 10;
  int64_t absolute_max_size = 12 << 20;
};
NewBucketRules CurrentNewBucketRules();

// The _id of a new bucket starting at `min_time_ms` (its rounded start): that time in seconds,
// then bytes that differ between the buckets this process makes.
bson::ObjectId NewBucketId(int64_t min_time_ms);

// A series' identity (BucketCatalog::SeriesKey) with its hash, computed once: a request of many
// series looks each measurement's series up in more than one table.
struct Bucket;
struct SeriesId {
  explicit SeriesId(std::string k);
  std::string key;
  size_t hash;
  // The bucket the series' last measurement went to (guarded by its stripe's mutex): while the
  // stripe holds it open, it is the series' open bucket, found without a lookup.
  mutable std::weak_ptr<Bucket> open_hint;
};

class WriteBatch;
class MeasurementJournal;
struct Bucket;
struct Stripe;

// The parameters of §4.5, read from the server parameter registry at each use (so setParameter
// takes effect at once). RegisterTimeseriesParameters registers them (idempotent).
void RegisterTimeseriesParameters();

class BucketCatalog {
 public:
  // `cache_bytes` is the storage cache size, the base of the cache-derived bucket size limit.
  explicit BucketCatalog(int64_t cache_bytes);
  ~BucketCatalog();

  // Stages `measurement`, whose time field must hold a Date (callers check: BadValue otherwise),
  // and returns the batch it joined. May read buckets from `s` to reopen them.
  // `series`, if given, must be the SeriesId of SeriesKey(coll, <the measurement's meta>)
  // (callers inserting many measurements look it up with CachedSeriesKey).
  // `statement`, if given, is the measurement's statement of a retryable write: recorded with the
  // commit that writes it (catalog/transaction_table.h; SetTransactionTable).
  StatusWith<std::shared_ptr<WriteBatch>> Insert(
      const TimeseriesCollection& coll, storage::Session& s, const bson::BsonObj& measurement,
      const SeriesId* series = nullptr, const catalog::StatementRecord* statement = nullptr);
  // Where the statements of retryable writes are recorded: in the transaction that writes their
  // buckets, or, with write-back, in one right after their journal entry (so a crash between the
  // two lets a retry after the restart insert those measurements again).
  void SetTransactionTable(catalog::TransactionTable* table) { transactions_ = table; }
  // The identity of a series: the collection and the normalized meta value (EOO: none).
  static std::string SeriesKey(const TimeseriesCollection& coll, const bson::BsonElement& meta);
  // SeriesKey, remembered per collection by the meta element's bytes (normalizing an object —
  // sorting its fields at every level — costs more than a lookup); at most kSeriesKeyCacheSize
  // metas are remembered, then the cache starts over.
  // Shared, not copied: a request of many series looks up one per measurement. `meta_hash` is
  // MetaHash(meta), which the caller may have used already.
  std::shared_ptr<const SeriesId> CachedSeriesKey(const TimeseriesCollection& coll,
                                                  const bson::BsonElement& meta, size_t meta_hash);
  static size_t MetaHash(const bson::BsonElement& meta);
  static constexpr size_t kSeriesKeyCacheSize = 200'000;
  // Writes `batch` (claiming commit rights) or waits for the writer that claimed it; returns the
  // write's outcome. The measurements staged into the batch must stay alive until this returns.
  Status Commit(const TimeseriesCollection& coll, storage::Session& s,
                const std::shared_ptr<WriteBatch>& batch);
  // Commits `batches` (distinct), as Commit does each; `statuses` receives each one's outcome, in
  // order. With write-back, the batches this writer claims share one journal entry.
  void CommitAll(const TimeseriesCollection& coll, storage::Session& s,
                 const std::vector<std::shared_ptr<WriteBatch>>& batches,
                 std::vector<Status>* statuses);

  // Opens the measurement journal in `engine`, writes the measurements it still holds (a crash
  // left them unwritten) to the buckets of `catalog`'s collections, and turns write-back on if
  // the server parameter hourglassTimeseriesWriteBack is true and `allow_write_back` (false on a
  // replica set member, whose buckets must reach the replicated log with each commit). Called
  // once, at startup, before the first write; without it every commit writes its buckets itself.
  Status OpenJournal(storage::KvEngine* engine, catalog::Catalog& catalog,
                     bool allow_write_back = true);
  bool write_back() const { return journal_ != nullptr; }
  // Writes every measurement of `coll` committed to the journal but not yet to its buckets
  // (write-back), in one transaction in `s`, which removes their journal entries too. Buckets
  // that cannot take their rows any more (a direct write rewrote or deleted them) are written as
  // new buckets. Then compresses the buckets that closed for good (CompressClosedBuckets; a
  // failure there is logged). A no-op without write-back.
  // Flushes write a compressed bucket by edits, and whole after
  // hourglassTimeseriesFlushEditsBeforeRewrite writes by edits in a row (far fewer bytes to
  // log and copy than a whole bucket per series per second), except a flush for a read (`kRead`:
  // the collection's read barrier): that one writes its buckets whole and stores again whole every
  // open bucket earlier flushes left edited, so that a read of data just written does not
  // re-apply chains of edits (WiredTiger keeps a value's edits as a chain until it is written
  // out).
  enum class FlushFor { kWrites, kRead };
  Status Flush(const TimeseriesCollection& coll, storage::Session& s,
               FlushFor why = FlushFor::kWrites);
  // What follows a request's commits. With write-back: every kModeWindow commits, chooses
  // whether the collection's commits go to the journal (while they bring fewer than
  // hourglassTimeseriesJournalBelowRows rows per bucket on average, 3 by default; a collection
  // starts journaling) or write their buckets at once (after a flush); flushes
  // when the unwritten measurements are older than hourglassTimeseriesWriteBackIntervalMillis
  // or larger than hourglassTimeseriesWriteBackMaxBytes. Then (or without write-back) compresses
  // the buckets that closed for good (CompressClosedBuckets).
  Status AfterCommits(const TimeseriesCollection& coll, storage::Session& s);
  static constexpr int64_t kModeWindow = 1000;
  // Flushes every collection (clean shutdown).
  Status FlushAll();
  // Forgets a dropped collection (ClearCollection), its unwritten measurements too, and removes
  // their journal entries.
  Status DropCollection(const std::string& uuid, storage::Session& s);

  // Compresses the buckets of `coll` that closed for good (full by count or size, a schema
  // change, cache pressure, or left behind by a measurement past their time span — MongoDB's
  // soft close; one left by a measurement before its span stays archived, open to reopening)
  // and whose last batch has committed: each is rewritten as the
  // version-2 bucket CompressBucket makes of it (spec §3.2, as MongoDB 7.0 does when a bucket
  // closes). Buckets with a batch still in flight, or rows still in the journal, wait for a later
  // call. Only when the server parameter hourglassTimeseriesCompressClosedBuckets is true (the
  // default). Writers call it after their commits, flushes after theirs; an error leaves that
  // bucket uncompressed (still a valid bucket) and is returned after the others are tried.
  // Compressed buckets that are no longer open go through it too: one whose last write was a
  // chain of edits is stored again whole (SettleBucket).
  Status CompressClosedBuckets(const TimeseriesCollection& coll, storage::Session& s);

  // Forgets every open and archived bucket of a collection: after a direct write to its bucket
  // collection, a drop, or a change of its bucketing parameters. Staged batches still commit.
  void ClearCollection(const std::string& uuid);
  // Marks a collection whose buckets may predate this process (found at startup): inserts then
  // look for a reopenable bucket on disk before opening a new one.
  void MarkMayHaveStoredBuckets(const std::string& uuid);

  // The latest measurements of each series of a collection, which every commit reports to
  // (latest_measurements.h); one object per collection for the life of the process.
  std::shared_ptr<LatestMeasurements> Latest(const std::string& uuid);

  // serverStatus's bucketCatalog section (empty when no time-series collection has been written).
  void AppendServerStatus(bson::BsonBuilder& b) const;
  // The per-collection statistics collStats shows under storageStats.timeseries.
  void AppendCollectionStats(const std::string& uuid, bson::BsonBuilder& b) const;

  const ExecutionStats& global_stats() const { return global_; }
  // Open buckets that reads' flushes stored again whole after flushes had written them by edits
  // (Flush's kRead; Hourglass's own figure, serverStatus().hourglass.timeseries).
  int64_t buckets_stored_whole_for_reads() const { return stored_whole_for_reads_.load(); }
  // Writers that waited for a flush because the journal's backlog reached twice
  // hourglassTimeseriesWriteBackMaxBytes (AfterCommits; serverStatus().hourglass.timeseries).
  int64_t flushes_for_backlog() const { return flushes_for_backlog_.load(); }
  // Buckets written by commits in a storage transaction shared with other buckets of the same
  // request (WriteTogether; serverStatus().hourglass.timeseries).
  int64_t buckets_written_together() const { return written_together_.load(); }

 private:
  struct CollectionState;
  CollectionState& State(const std::string& uuid);
  const CollectionState* FindState(const std::string& uuid) const;
  Stripe& StripeFor(const SeriesId& series);
  // The open bucket a measurement goes to, after rollover; under the stripe lock. `add` is the
  // measurement's estimated size; `open` the series' open bucket (its entry in the stripe, or
  // null); `fits_open_schema` whether it takes the measurement's schema.
  StatusWith<std::shared_ptr<Bucket>> BucketFor(const TimeseriesCollection& coll,
                                                storage::Session& s, Stripe& stripe,
                                                const std::string& series_key,
                                                const bson::BsonObj& m, int64_t t,
                                                const bson::BsonElement& meta, size_t add,
                                                bool fits_open_schema,
                                                std::shared_ptr<Bucket> open);
  // A stored bucket brought back into memory (or its live object), nullptr if it cannot take
  // appends.
  std::shared_ptr<Bucket> Reopen(const TimeseriesCollection& coll, Stripe& stripe,
                                 const bson::BsonObj& doc, const std::string& series_key);
  std::shared_ptr<Bucket> ReuseLive(const TimeseriesCollection& coll,
                                    const std::shared_ptr<Bucket>& b);
  std::shared_ptr<Bucket> FindStoredBucket(const TimeseriesCollection& coll, storage::Session& s,
                                           Stripe& stripe, const std::string& series_key,
                                           const bson::BsonElement& meta, int64_t t);
  // Reloads the layout and min/max of `batch`'s bucket from storage (after its collection was
  // cleared) and rebuilds `batch.control` on them.
  Status Resync(const TimeseriesCollection& coll, storage::Session& s, WriteBatch& batch);
  // MongoDB's expiry under memory pressure, before a bucket is opened in `stripe`: while the
  // catalog's memory is above the threshold, archive the buckets given a batch longest ago
  // (never `keep`'s or one with a batch in flight), then forget archived records, at most
  // timeseriesIdleBucketExpiryMaxCountPerAttempt + 1 in all.
  void ExpireIdleBuckets(Stripe& stripe, const std::string& keep);
  // A record of `b` (open until now) for reopening, and the removal of record `i` of series
  // `series_key`'s: both keep the catalog's counts and memory, under the stripe's lock.
  void AddArchived(Stripe& stripe, const Bucket& b);
  void RemoveArchived(Stripe& stripe, const std::string& series_key, size_t i);
  // Writes `batch`'s rows to its bucket's stored document in a transaction of its own, with the
  // retries a bucket's write may need (a layout rewritten under it, a deleted bucket, an _id
  // taken). The caller holds the bucket's commit rights.
  Status Write(const TimeseriesCollection& coll, storage::Session& s, WriteBatch& batch);
  // A bucket write made ready before its transaction (Write's first attempt, WriteTogether's).
  struct PreparedWrite {
    uint64_t untracked_before = 0;  // LatestMeasurements::Committed
    uint64_t era_seen = 0;          // the layout era the write was prepared in
    bson::BsonObj control;
    bool insert = false;
    int64_t old_size = 0;
    std::string full;
    std::vector<storage::Session::Modification> edits;
  };
  Status PrepareWrite(const TimeseriesCollection& coll, storage::Session& s, WriteBatch& batch,
                      PreparedWrite* w);
  // What follows a bucket write's commit (after its document's Finish): the latest
  // measurements, the statistics, the collection's counts and the catalog's memory.
  void Written(const TimeseriesCollection& coll, WriteBatch& batch, const PreparedWrite& w);
  // Writes every batch of `batches` (their commit rights held) in one storage transaction — in a
  // replica set, one oplog batch and one Raft entry for a request's hundred buckets rather than
  // a hundred. Returns false, having written none, when they cannot go together (fewer than two,
  // or one needs Write's retries): then each is written with Write.
  bool WriteTogether(const TimeseriesCollection& coll, storage::Session& s,
                     const std::vector<WriteBatch*>& batches);
  // Write-back's commit of the batches this writer claimed: one journal entry, then the rows
  // join their buckets' unwritten layouts.
  Status Journal(const TimeseriesCollection& coll, storage::Session& s,
                 const std::vector<WriteBatch*>& claimed);
  // Records the retryable-write statements of `batch` in `s`'s open transaction.
  Status RecordStatements(storage::Session& s, const WriteBatch& batch);
  // Flush without the compression of the buckets closed for good that follows it. It holds
  // commits out only while it takes the rows to write (each bucket's unflushed rows and the
  // journal keys), then writes them while commits go on, claiming each bucket's commit rights
  // to prepare its write and again to record it; version-1 buckets, whose layout takes every
  // staged row, stay claimed from the taking to the recording. With `journaling_after` (a change
  // of mode), commits are held out throughout, and the mode set once storage holds every
  // committed row.
  // The caller holds the collection's flush_run_mu (`running`), released at the return.
  Status WriteDirtyBuckets(const TimeseriesCollection& coll, storage::Session& s,
                           std::unique_lock<std::mutex> running,
                           std::optional<bool> journaling_after, FlushFor why);
  // Stores a compressed bucket that is no longer open again, as the same bytes in a plain
  // update, if it was written by edits since it was last stored whole (not after an insert):
  // WiredTiger keeps a value's edits as a chain that every read of data just written re-applies.
  // Skipped while a writer holds the bucket's rights. `*outcome` (if given): what it did.
  // `unlist`: the caller took it off its collection's `edited` list, to which it returns unless
  // it was left edited.
  struct Settled {
    bool stored = false;       // stored again whole by this call
    bool left_edited = false;  // storage may still hold it as edits (skipped, or failed)
  };
  Status SettleBucket(const TimeseriesCollection& coll, storage::Session& s, Bucket& b,
                      Settled* outcome = nullptr, bool unlist = false);
  // A read's flush, after its writes (flush_run_mu held): settles the open buckets earlier
  // flushes, or commits writing through, wrote by edits (CollectionState::edited); those a
  // writer holds, or whose write failed (logged), stay listed.
  void SettleEdited(const TimeseriesCollection& coll, storage::Session& s, CollectionState& cs);
  // Flush, the collection's flush_run_mu held (`running`).
  Status FlushInTurn(const TimeseriesCollection& coll, storage::Session& s,
                     std::unique_lock<std::mutex> running, FlushFor why);
  // The commit of one batch that writes its bucket (Commit without write-back).
  Status CommitWriteThrough(const TimeseriesCollection& coll, storage::Session& s,
                            const std::shared_ptr<WriteBatch>& batch);
  // Takes the commit rights of the batches of `batches` no other writer is committing (their
  // places into `claimed`; the others' into `waiting`, a batch done already gets its status):
  // waiting for one while holding the rights to others could wait for a writer that waits for
  // this one.
  void ClaimUncontended(const std::vector<std::shared_ptr<WriteBatch>>& batches,
                        std::vector<Status>* statuses, std::vector<size_t>* claimed,
                        std::vector<size_t>* waiting);
  // The commit of a request's batches that write their buckets: those no other writer is
  // committing together (WriteTogether), then the others one by one.
  void CommitWriteThroughAll(const TimeseriesCollection& coll, storage::Session& s,
                             const std::vector<std::shared_ptr<WriteBatch>>& batches,
                             std::vector<Status>* statuses);
  // The parts of a write-through commit around its write, the bucket's commit rights held:
  // taking the batch from the bucket (later measurements start another) with its control, and
  // handing the outcome to the batch's other waiters.
  void ClaimForWriteThrough(const TimeseriesCollection& coll, CollectionState& cs,
                            WriteBatch& batch);
  void ReleaseWriteThrough(CollectionState& cs, const std::shared_ptr<WriteBatch>& batch,
                           const Status& st);
  // Adds `batches` to the collection's commit shape (AfterCommits).
  void CountShape(CollectionState& cs, const std::vector<std::shared_ptr<WriteBatch>>& batches);
  // After the commit of the transaction that marked journal entries `keys` written: their log
  // space may go (MeasurementJournal::Prune; a failure there is logged).
  void ForgetJournalEntries(storage::Session& s, const std::vector<uint64_t>& keys);
  // What a flush's write of one bucket did.
  struct FlushedBucket {
    bson::BsonObj control;  // empty: the rows went elsewhere (retired)
    bool inserted = false;  // with size_delta, what it did to the collection's counts
    int64_t size_delta = 0;
    int64_t bytes = 0;  // handed to storage in the flush's transaction
  };
  // Flush's write of one bucket's rows taken for it (`flushing`), its commit rights held.
  Status FlushBucket(const TimeseriesCollection& coll, storage::Session& s, Bucket& b, FlushFor why,
                     FlushedBucket* out);
  void Count(CollectionState& cs, Stat stat, int64_t n = 1);
  // Records the memory `b` holds (its layout's, `doc_memory`, and its field tree's: as given, or
  // as last measured), which the catalog's memory use counts while the bucket is open: a bucket
  // closed or archived took its amount out, and later writes of its rows add nothing.
  void AccountMemory(Bucket& b, size_t doc_memory, std::optional<size_t> fields_memory);

  int64_t cache_bytes_;
  storage::KvEngine* engine_ = nullptr;
  std::unique_ptr<MeasurementJournal> journal_;  // set by OpenJournal when write-back is on
  catalog::TransactionTable* transactions_ = nullptr;
  static constexpr size_t kNumStripes = 32;
  std::array<std::unique_ptr<Stripe>, kNumStripes> stripes_;
  ExecutionStats global_;
  std::atomic<int64_t> stored_whole_for_reads_{0};
  std::atomic<int64_t> flushes_for_backlog_{0};
  std::atomic<int64_t> written_together_{0};
  std::atomic<int64_t> memory_usage_{0};
  std::atomic<int64_t> num_open_{0};
  std::atomic<int64_t> num_archived_{0};
  std::atomic<int64_t> num_idle_{0};
  mutable std::shared_mutex states_mu_;
  std::unordered_map<std::string, std::unique_ptr<CollectionState>> states_;  // by uuid
};

}  // namespace hourglass::timeseries
