// A collection's durable description (CollectionEntry) and its runtime handle (Collection): the
// record table (RecordId → BSON document) and its indexes, and the one function per kind of write
// (Insert, Update, Remove, ModifyRecord) that every write to a collection, its indexes and its
// buckets goes through. Reads go through catalog/record_store.h.
//
// Thread-safety: a Collection is immutable except for its counters (atomics) and RecordId
// allocator; DDL replaces the Collection object in the Catalog instead of mutating it, so a handle
// obtained by a command stays consistent for the command's life. Data methods run inside the
// caller's storage transaction (a WriteUnit) and surface conflicts as WriteConflict (112).
//
// Indexes, one list (CollectionIndex::kind says which table format each uses, src/storage/README.md
// "Index tables"):
// - `_id_` of a regular collection: the unique index mapping the order-preserving key of `_id`
//   (bson/key_string.h) to the RecordId.
// - A clustered collection (option `clusteredIndex: true`, used for time-series buckets) has no
//   `_id` index: its record table is keyed by the `_id` itself. `_id` must then be an ObjectId and
//   the RecordId is its first 8 bytes (storage::ClusteredRecordId), so records sit in `_id` (for
//   buckets: time) order and an `_id` range is a key range.
// - The series index of a bucket collection with a metaField, `{meta: 1, control.min.<time>: 1,
//   control.max.<time>: 1}` as MongoDB lists it (`{meta: 1, control.min.<time>: 1}` in catalogs
//   written before): key BucketIndexSeriesPrefix(meta) + encoding(control.min.<time>) + RecordId
//   (the end of a bucket, which moves with each append, is not in it), value the
//   bucket's `meta` element (a single EOO byte when it has none), so a scan can test metas
//   without fetching buckets.
// - User indexes (catalog/index_keys.h), keyed by the order-preserving encoding of the indexed
//   fields; on a bucket collection they are the converted user indexes of the time-series view
//   (timeseries/index_conversion.h), keyed on bucket fields (meta, control.min.f, control.max.f).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <typeinfo>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/index_keys.h"
#include "catalog/namespace.h"
#include "catalog/series_directory.h"
#include "storage/kv_engine.h"
#include "storage/session.h"

namespace hourglass::catalog {

class OpObserver;

// The table holding which secondary indexes are multikey: index ident -> "1", and for wildcard
// indexes "<ident>/<path>" -> "1" per array path (MultikeyPaths). Written in the transaction of
// the first write that makes an index (a path) multikey; read by Catalog::Open.
inline constexpr std::string_view kMultikeyTable = "_index_multikey";

// $indexStats' accesses of one index: queries that used it since `since_millis` (when this
// server created or loaded the index). Counted by the read and write commands, not by explain.
struct IndexUsage {
  std::atomic<int64_t> ops{0};
  int64_t since_millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
};

// The array paths of a wildcard index (IndexKeySet::array_paths), persisted in kMultikeyTable as
// "<ident>/<path>" rows. Shared by every copy of the entry, like IndexEntry::multikey.
// Thread-safe.
class MultikeyPaths {
 public:
  // What the planner may rely on: every path some write (committed or not) walked as an array.
  std::vector<std::string> Snapshot() const;
  // Records `paths` for the planner; returns those whose row was not loaded at startup (a write
  // must check that its transaction sees their rows: an earlier writer may have rolled back).
  std::vector<std::string> Add(const std::vector<std::string>& paths);
  // Records `path` as having a committed row (loaded at startup).
  void Confirm(const std::string& path);

 private:
  mutable std::mutex mu_;
  std::vector<std::string> paths_;      // guarded by mu_
  std::vector<std::string> confirmed_;  // guarded by mu_
};

struct IndexEntry {
  bson::BsonObj spec;  // {v: 2, key: {...}, name: "..." [, unique: true, ...]}
  std::string ident;
  // Whether some document produced several keys (arrays). Shared by every copy of the entry, so
  // it survives the Collection replacements of DDL; it only ever turns true.
  std::shared_ptr<std::atomic<bool>> multikey = std::make_shared<std::atomic<bool>>(false);
  // False while the index is being built: writes maintain it, the planner ignores it. Not
  // persisted (only finished indexes reach the catalog table).
  bool ready = true;
  // Shared by every copy of the entry, like `multikey`.
  std::shared_ptr<IndexUsage> usage = std::make_shared<IndexUsage>();
  // Wildcard indexes only: which paths are multikey.
  std::shared_ptr<MultikeyPaths> multikey_paths = std::make_shared<MultikeyPaths>();
  // The series index of a bucket collection only: its distinct series.
  std::shared_ptr<SeriesDirectory> series_directory = std::make_shared<SeriesDirectory>();
  // Whether this is that series index, made with the bucket collection in its own format. Any
  // other index, even one with the same key pattern created later, is a user index.
  bool series = false;
  std::string name() const { return std::string(spec["name"].Str()); }
  bson::BsonObj key() const { return spec["key"].Obj(); }
};

// The normalized default collation a collection's or view's options hold ({}: simple).
bson::BsonObj CollationOption(const bson::BsonObj& options);

struct CollectionEntry {
  NamespaceString nss;
  std::string uuid;       // 16 bytes
  std::string type;       // "collection", "view" or "timeseries"
  bson::BsonObj options;  // the create options as given (validated)
  std::string ident;      // record table; empty for views
  std::vector<IndexEntry> indexes;

  bson::BsonObj ToBson() const;
  static StatusWith<CollectionEntry> FromBson(const bson::BsonObj& obj);
};

struct Record {
  int64_t id;
  bson::BsonObj doc;  // owned
};

// The RecordId of a clustered collection's record with `_id` `oid` (storage::ClusteredRecordId).
int64_t ClusteredRecordId(const bson::ObjectId& oid);

// The start of every bucket index key of the series whose meta element is `meta` (EOO: no meta):
// the order-preserving encoding of the meta value, then of its exact bytes (type and value), so
// that values equal in index order but distinct as series (1 and NumberLong(1), null and
// missing) never share a prefix. The bucket's start time and RecordId follow.
std::string BucketIndexSeriesPrefix(const bson::BsonElement& meta);

// Whether `spec` has the key the built-in series index of a bucket collection had before it was
// listed with control.max.<time>: key exactly {meta: 1, control.min.<time>: 1}. (User indexes on
// the time field always hold the pair control.min.<time>, control.max.<time>, so they never look
// like it.)
bool IsSeriesIndexSpec(const bson::BsonObj& spec);

// What an index is for, which decides its table format (see the top of this file).
enum class IndexKind { kId, kSeries, kUser };

// A hook run before a read of a collection's records or index entries: the bucket catalog's
// write-back cache installs one on a bucket collection so that every read first finds in storage
// each measurement acknowledged before it. Shared by every handle of one collection and by its
// indexes; thread-safe. Without a hook, Run is a single atomic load.
//
// Within an OperationScope (one command on one thread), a hook that succeeded once is not run
// again: the operation's later reads (the next chunk of a scan, the next bucket an index names)
// need nothing acknowledged after the operation began, and running it at each would make a read
// chase the commits of every other connection. RunAgainInThisOperation undoes that when the
// operation itself committed rows the hook must bring into storage.
class ReadBarrier {
 public:
  using Fn = std::function<Status()>;
  // Installs `fn` (replacing any earlier one).
  void Set(Fn fn);
  Status Run() const {
    if (!set_.load(std::memory_order_acquire)) return Status::OK();
    return RunSlow();
  }
  // The current operation's next Run runs the hook again (a no-op outside an OperationScope).
  void RunAgainInThisOperation() const;
  // The barriers whose hooks ran in the current thread's operation, for a helper thread that
  // reads on the operation's behalf (OperationScope's second constructor).
  static std::vector<const ReadBarrier*> RunInThisOperation();

  // One operation on the current thread; scopes nest (the outermost one counts).
  class OperationScope {
   public:
    OperationScope();
    // On a thread outside any operation: a part of the operation whose barriers `inherited` are,
    // run on this thread (they are not run again).
    explicit OperationScope(const std::vector<const ReadBarrier*>& inherited);
    ~OperationScope();
    OperationScope(const OperationScope&) = delete;
    OperationScope& operator=(const OperationScope&) = delete;
  };

 private:
  Status RunSlow() const;
  std::atomic<bool> set_{false};
  mutable std::mutex mu_;
  std::shared_ptr<const Fn> fn_;  // guarded by mu_
};

// Told of every write that changes the measurements a bucket collection holds, in the writing
// transaction: a rollup's source reports them so that the rollup recomputes the time they cover
// (timeseries/rollup_marks.h), and its TTL deletes (`expired`), whose time a rollup keeps as it
// was. Not told of the bucket catalog's rewrites of a bucket's form (compression, settling).
class WriteObserver {
 public:
  virtual ~WriteObserver() = default;
  // `rid`: the bucket's RecordId; `doc`: the bucket as written or removed.
  virtual Status OnWrite(storage::Session& s, int64_t rid, const bson::BsonObj* doc,
                         bool expired) = 0;
};

// An index of a collection with its parsed spec.
struct SecondaryIndex {
  const IndexEntry* entry;
  IndexDescriptor desc;
  IndexKind kind = IndexKind::kUser;
  // The collection's read barrier (IndexCursor::Open runs it).
  std::shared_ptr<ReadBarrier> read_barrier = nullptr;
};

class Collection {
 public:
  Collection(storage::KvEngine* engine, CollectionEntry entry, int64_t next_record_id);
  // The same collection under a changed entry (index DDL): shares the RecordId allocator and the
  // counters with `predecessor`, so writes still running through the old handle stay consistent.
  Collection(CollectionEntry entry, const Collection& predecessor);

  const CollectionEntry& entry() const { return entry_; }
  const NamespaceString& nss() const { return entry_.nss; }
  std::string ns() const { return entry_.nss.ns(); }
  const std::string& ident() const { return entry_.ident; }
  bool IsView() const { return entry_.type != "collection"; }
  bool IsClustered() const { return clustered_; }
  // A collection created with `clusteredIndex: {key: {_id: 1}, unique: true, ...}`: its clustered
  // index as listIndexes shows it ({v, key, name, unique, clustered: true}); nullopt for other
  // collections. Such a collection keeps its records under allocated RecordIds with an `_id_`
  // index (IsClustered() is false), and its natural order is that index's: `_id` order.
  const std::optional<bson::BsonObj>& ClusteredIndexSpec() const { return clustered_index_; }
  // The collection's default collation (option `collation`): what its reads and writes compare
  // strings under when they name none, and what its indexes take. Null: simple.
  const std::shared_ptr<const collation::Collator>& DefaultCollator() const {
    return default_collator_;
  }

  // Who writes to a bucket collection. The bucket catalog reports its own writes (new buckets,
  // appends) to the caches readers keep of the buckets (the latest measurements of each series);
  // every other write makes those caches stale (UntrackedWrites).
  // kTtl: a TTL deletion.
  enum class WriteOrigin { kOther, kBucketCatalog, kTtl };
  // The writes to a bucket collection other than the bucket catalog's that have committed: every
  // Update and Remove, and Inserts of other origins (ModifyRecord is the catalog's). A reader's
  // cache of what the buckets hold is current while this count stays what it was when the cache
  // was filled. Always 0 for other collections.
  uint64_t UntrackedWrites() const { return counters_->untracked_writes.load(); }

  // Stores `doc` (which must already have an `_id` and be valid) under a new RecordId and adds
  // its index keys. DuplicateKey (11000) with keyPattern/keyValue if `_id` exists (for clustered
  // collections: if a record with the same RecordId exists). BadValue if a clustered collection's
  // `_id` is not an ObjectId.
  StatusWith<int64_t> Insert(storage::Session& s, const bson::BsonObj& doc,
                             WriteOrigin origin = WriteOrigin::kOther);
  // Stores `doc` under RecordId `rid` in a collection without an `_id` index (the oplog,
  // `local.oplog.rs`, keyed by its entries' timestamps). DuplicateKey if `rid` is taken. Not
  // reported to the OpObserver (the oplog is what it writes).
  Status InsertAt(storage::Session& s, int64_t rid, const bson::BsonObj& doc);
  // Replaces the document at `id` (`old_doc` is what it holds now). `_id` must be unchanged
  // (callers check). The bucket catalog's updates rewrite a bucket's form, not its measurements
  // (compression): they are not untracked writes.
  Status Update(storage::Session& s, int64_t id, const bson::BsonObj& old_doc,
                const bson::BsonObj& new_doc, WriteOrigin origin = WriteOrigin::kOther);
  Status Remove(storage::Session& s, int64_t id, const bson::BsonObj& doc,
                WriteOrigin origin = WriteOrigin::kOther);
  // Applies `edits` to the record at `id` in place (storage::Session::Modify: the bucket catalog's
  // appends, and updates a replica set member applies); `id_field` is the record's `_id` element
  // and `diff` the same change as an update diff (catalog/update_diff.h): replication logs the
  // diff under the `_id`. The series index does not move (callers change neither meta nor the
  // start time). If the collection has user indexes, reads the record before and after to move
  // their keys. An origin other than the bucket catalog's is an untracked write. NoSuchKey if the
  // record is gone.
  Status ModifyRecord(storage::Session& s, int64_t id, const bson::BsonElement& id_field,
                      const std::vector<storage::Session::Modification>& edits,
                      const bson::BsonObj& diff, WriteOrigin origin = WriteOrigin::kBucketCatalog);
  // Whether this collection's writes are logged (a replica set member's; not `local`'s).
  bool IsReplicated() const { return Replicated() != nullptr; }
  // Whether an update by `diff` (catalog/update_diff.h) can be made in place, by ModifyRecord: it
  // changes none of the fields the series index keys (a bucket's meta and start time).
  bool CanModifyInPlace(const bson::BsonObj& diff) const;
  // Replaces the record at `id` with `doc` as one plain storage update (the bucket catalog's
  // whole rewrites of a bucket; moves user index keys like ModifyRecord); replication logs
  // `diff`, the change as an update diff from the record stored (empty: `doc`). NoSuchKey if the
  // record is gone.
  Status ReplaceRecord(storage::Session& s, int64_t id, const bson::BsonObj& doc,
                       const bson::BsonObj& diff);
  // Stores the record at `id` again, the same bytes, as one plain storage update: the chain of
  // edits the storage engine keeps for it ends there (the bucket catalog's settling of buckets
  // written by edits). No index key moves. False if the record is gone.
  StatusWith<bool> StoreAgainWhole(storage::Session& s, int64_t id);
  // Both run the read barrier first.
  StatusWith<std::optional<Record>> FindById(storage::Session& s, const bson::BsonElement& id);
  StatusWith<std::optional<Record>> FindRecord(storage::Session& s, int64_t id);
  // The hook every read of this collection runs first (RecordCursor::Open, IndexCursor::Open,
  // FindRecord; and readers of the counts, such as collStats).
  ReadBarrier& read_barrier() const { return *counters_->read_barrier; }

  // Installs (or, with nullptr, removes) the observer of this collection's writes; shared by
  // every handle of the collection, as the read barrier is.
  void SetWriteObserver(std::shared_ptr<WriteObserver> observer) const;

  // User secondary indexes (of a regular or a bucket collection), in creation order.
  std::span<const SecondaryIndex> Indexes() const {
    return std::span<const SecondaryIndex>(indexes_).subspan(first_user_index_);
  }
  const SecondaryIndex* FindIndex(std::string_view name) const;
  // The `_id_` index (a unique index on {_id: 1}); nullptr for clustered collections and views.
  const SecondaryIndex* IdIndex() const { return IndexOfKind(IndexKind::kId); }
  // Adds the keys of the document `doc` stored at `rid` to `idx` (index builds). DuplicateKey
  // if a unique index holds one of its keys for another record; 171/16766 as GenerateIndexKeys.
  Status AddIndexKeys(storage::Session& s, const SecondaryIndex& idx, const bson::BsonObj& doc,
                      int64_t rid) const;

  // Index builds: rewrites record `id` with its own bytes `doc`, so that a concurrent update or
  // delete of it conflicts with the build's transaction and the keys the build adds are never
  // those of an outdated version. Not a change of the data: nothing else sees it.
  Status RewriteForIndexBuild(storage::Session& s, int64_t id, const bson::BsonObj& doc) const;

  // The series index of a bucket collection (see above), or nullptr.
  const SecondaryIndex* SeriesIndex() const { return IndexOfKind(IndexKind::kSeries); }

  // A value derived from this handle's entry alone, computed by the first caller and kept: the
  // entry never changes (DDL installs a new handle), so neither does the value. A time-series
  // view keeps its parsed options here, so that commands do not parse them again. `make` runs
  // once per handle (again only after it failed); every caller must ask for the same T.
  // Thread-safe; blocks while another caller runs `make`.
  template <class T, class Make>
  StatusWith<std::shared_ptr<const T>> Derived(const Make& make) const {
    std::lock_guard lk(derived_mu_);
    if (derived_) {
      invariant(*derived_type_ == typeid(T));
      return std::static_pointer_cast<const T>(derived_);
    }
    StatusWith<T> made = make();
    if (!made.ok()) return made.status();
    auto value = std::make_shared<const T>(std::move(made).value());
    derived_ = value;
    derived_type_ = &typeid(T);
    return std::shared_ptr<const T>(std::move(value));
  }

  // The RecordId the next insert will get (a renamed collection continues from it).
  int64_t NextRecordId() const { return counters_->next_record_id.load(); }

  // Held by a write transaction on this collection until it commits or rolls back (see
  // Counters::write_mu); never blocks except while an index build starts.
  std::shared_lock<std::shared_mutex> WriteGuard() const {
    return std::shared_lock<std::shared_mutex>(counters_->write_mu);
  }
  // Held instead by a write that must not interleave with any other write transaction on this
  // collection: a rewrite of stored buckets from what it read, which the bucket catalog's appends
  // must not cross (timeseries/bucket_scan.h). Waits for the writes running.
  std::unique_lock<std::shared_mutex> ExclusiveWriteGuard() const {
    return std::unique_lock<std::shared_mutex>(counters_->write_mu);
  }
  // For Catalog: makes `self` the handle whose indexes all writes maintain, then waits until
  // no write that may have used an older handle's indexes is still open.
  static void InstallAsLatest(const std::shared_ptr<const Collection>& self);

  // Approximate counts for count/collStats/dbStats, adjusted by callers after a commit.
  int64_t NumRecords() const { return counters_->num_records.load(); }
  int64_t DataSize() const { return counters_->data_size.load(); }
  void AdjustCounts(int64_t records, int64_t bytes) {
    counters_->num_records += records;
    counters_->data_size += bytes;
  }
  void SetCounts(int64_t records, int64_t bytes) {
    counters_->num_records = records;
    counters_->data_size = bytes;
  }

 private:
  void Init();
  const SecondaryIndex* IndexOfKind(IndexKind kind) const;
  Status DuplicateKeyError(const bson::BsonElement& id) const;
  Status IndexDuplicateKeyError(const SecondaryIndex& idx, std::string_view key) const;
  // Moves the keys of the record `id` in `indexes` (the newest handle's user indexes, which the
  // caller has looked up) from `old_doc` to `new_doc`.
  Status UpdateIndexKeys(storage::Session& s, std::span<const SecondaryIndex> indexes, int64_t id,
                         const bson::BsonObj& old_doc, const bson::BsonObj& new_doc) const;
  Status RemoveIndexKeys(storage::Session& s, const SecondaryIndex& idx,
                         const std::vector<std::string>& keys, int64_t rid) const;
  Status AddKeys(storage::Session& s, const SecondaryIndex& idx, const IndexKeySet& keys,
                 int64_t rid) const;
  // The entry of `doc` in the series index `idx`: key and value.
  // `prefix_size` (if given) receives the size of the key's series prefix.
  static std::pair<std::string, std::string> SeriesEntryFor(const SecondaryIndex& idx,
                                                            const bson::BsonObj& doc, int64_t rid,
                                                            size_t* prefix_size = nullptr);
  // Writes the series index entry of bucket `doc` (SeriesEntryFor) and tells the index's
  // SeriesDirectory its series.
  static Status PutSeriesEntry(storage::Session& s, const SecondaryIndex& idx,
                               const bson::BsonObj& doc, int64_t rid);

  storage::KvEngine* engine_;
  CollectionEntry entry_;
  bool clustered_;
  std::optional<bson::BsonObj> clustered_index_;
  std::shared_ptr<const collation::Collator> default_collator_;
  // Every index, pointing into entry_.indexes: `_id_` and the series index first, then the user
  // indexes from first_user_index_ on, in creation order.
  std::vector<SecondaryIndex> indexes_;
  size_t first_user_index_ = 0;
  // The newest handle of this collection (set by Catalog::Install), whose indexes every write
  // maintains whichever handle it came through; nullptr before the first index DDL.
  std::shared_ptr<const Collection> Latest() const;

  // State shared by every handle of one collection (Collection(entry, predecessor)).
  struct Counters {
    std::atomic<int64_t> next_record_id;
    std::atomic<int64_t> num_records{0};
    std::atomic<int64_t> data_size{0};
    std::mutex latest_mu;
    std::weak_ptr<const Collection> latest;  // guarded by latest_mu
    // Writers hold it shared from their first index-maintaining call to their commit; an index
    // build takes it exclusively once, after installing the new handle, to wait for writers that
    // may still use the old index set.
    std::shared_mutex write_mu;
    std::atomic<uint64_t> untracked_writes{0};
    std::shared_ptr<ReadBarrier> read_barrier = std::make_shared<ReadBarrier>();
    std::atomic<bool> has_write_observer{false};
    std::mutex write_observer_mu;
    std::shared_ptr<WriteObserver> write_observer;  // guarded by write_observer_mu
  };
  // The process's OpObserver when this collection's writes are replicated (not in `local`).
  OpObserver* Replicated() const;
  // Tells the write observer, if any, of a write of bucket `rid`.
  Status NotifyWrite(storage::Session& s, int64_t rid, const bson::BsonObj* doc,
                     bool expired = false) const;
  StatusWith<int64_t> InsertRecord(storage::Session& s, const bson::BsonObj& doc);
  // For a bucket collection: counts the write in UntrackedWrites once it commits.
  void CountUntrackedWrite(storage::Session& s) const;
  std::shared_ptr<Counters> counters_;
  mutable std::mutex derived_mu_;
  mutable std::shared_ptr<const void> derived_;           // guarded by derived_mu_
  mutable const std::type_info* derived_type_ = nullptr;  // guarded by derived_mu_
};

}  // namespace hourglass::catalog
