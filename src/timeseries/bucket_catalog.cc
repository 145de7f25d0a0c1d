#include "timeseries/bucket_catalog.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <limits>
#include <list>
#include <mutex>
#include <numeric>
#include <random>
#include <shared_mutex>
#include <span>

#include "base/fail_point.h"
#include "base/logger.h"
#include "base/server_parameters.h"
#include "bsoncolumn/bson_column_builder.h"
#include "catalog/record_store.h"
#include "storage/write_conflict.h"
#include "timeseries/bucket_compression.h"
#include "timeseries/bucket_document.h"
#include "timeseries/bucket_field_tree.h"
#include "timeseries/measurement_journal.h"
#include "timeseries/meta_normalize.h"

namespace hourglass::timeseries {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;

// --- statistics ------------------------------------------------------------------------------

namespace {
// Each statistic's serverStatus name: its .def name with the first letter lowercased, built at
// compile time.
struct StatNameText {
  char text[64] = {};
  size_t size = 0;
};
template <size_t N>
constexpr StatNameText LowerFirst(const char (&name)[N]) {
  static_assert(N <= sizeof(StatNameText::text));
  StatNameText out;
  for (size_t i = 0; i + 1 < N; ++i) out.text[i] = name[i];
  out.text[0] = static_cast<char>(out.text[0] - 'A' + 'a');
  out.size = N - 1;
  return out;
}
constexpr StatNameText kStatNames[] = {
#define X(name) LowerFirst(#name),
#include "timeseries/bucket_catalog_stats.def"
#undef X
};
static_assert(std::size(kStatNames) == static_cast<size_t>(Stat::kCount));

// MongoDB's appendNumber: int32 while it fits comfortably, else int64.
void AppendNumber(BsonBuilder& b, std::string_view name, int64_t v) {
  if (v > -(int64_t{1} << 30) && v < (int64_t{1} << 30)) {
    b.AppendInt32(name, static_cast<int32_t>(v));
  } else {
    b.AppendInt64(name, v);
  }
}
}  // namespace

std::string_view StatName(Stat s) {
  const StatNameText& n = kStatNames[static_cast<int>(s)];
  return std::string_view(n.text, n.size);
}

void ExecutionStats::AppendTo(BsonBuilder& b, bool with_close_compression) const {
  for (int i = 0; i < static_cast<int>(Stat::kCount); ++i) {
    if (!with_close_compression && i >= static_cast<int>(Stat::kNumBytesUncompressed) &&
        i <= static_cast<int>(Stat::kNumFailedDecompressBuckets)) {
      continue;
    }
    AppendNumber(b, StatName(static_cast<Stat>(i)), v_[i].load(std::memory_order_relaxed));
    if (static_cast<Stat>(i) == Stat::kNumMeasurementsCommitted) {
      int64_t commits = Get(Stat::kNumCommits);
      if (commits > 0)
        AppendNumber(b, "avgNumMeasurementsPerCommit",
                     Get(Stat::kNumMeasurementsCommitted) / commits);
    }
  }
}

// --- parameters ------------------------------------------------------------------------------

namespace {
struct Params {
  ServerParameter* max_count;
  ServerParameter* max_size;
  ServerParameter* min_count;
  ServerParameter* min_size;
  ServerParameter* idle_threshold;
  ServerParameter* idle_per_attempt;
  ServerParameter* max_retries;
  ServerParameter* compress_closed;
  ServerParameter* always_compress;
  ServerParameter* rewrite_after;        // commits that write their buckets
  ServerParameter* flush_rewrite_after;  // write-back flushes
  ServerParameter* write_back;
  ServerParameter* write_back_interval;
  ServerParameter* write_back_bytes;
  ServerParameter* journal_below_rows;
  ServerParameter* journal_segment_bytes;
  ServerParameter* flush_transaction_bytes;
};

Status AtLeast(const ParameterValue& v, int64_t min, const char* name) {
  int64_t n = std::holds_alternative<int32_t>(v) ? std::get<int32_t>(v) : std::get<int64_t>(v);
  if (n < min) {
    return Status(ErrorCode::kBadValue, std::string("Invalid value for parameter ") + name +
                                            ": must be greater than or equal to " +
                                            std::to_string(min));
  }
  return Status::OK();
}

ServerParameter* RegisterOnce(const char* name, int64_t def, int64_t min) {
  auto& reg = ServerParameterRegistry::Get();
  if (ServerParameter* p = reg.Find(name)) return p;
  return reg.Register(name, int64_t{def}, true, true,
                      [name, min](const ParameterValue& v) { return AtLeast(v, min, name); });
}

const Params& GetParams() {
  static const Params p = [] {
    Params q;
    q.max_count = RegisterOnce("timeseriesBucketMaxCount", 1000, 1);
    q.max_size = RegisterOnce("timeseriesBucketMaxSize", 128000, 1);
    q.min_count = RegisterOnce("timeseriesBucketMinCount", 10, 1);
    q.min_size = RegisterOnce("timeseriesBucketMinSize", 5120, 1);
    q.idle_threshold = RegisterOnce("timeseriesIdleBucketExpiryMemoryUsageThreshold", 0, 0);
    q.idle_per_attempt = RegisterOnce("timeseriesIdleBucketExpiryMaxCountPerAttempt", 3, 2);
    q.max_retries = RegisterOnce("timeseriesInsertMaxRetriesOnDuplicates", 32, 1);
    auto& reg = ServerParameterRegistry::Get();
    const char* compress = "hourglassTimeseriesCompressClosedBuckets";
    q.compress_closed = reg.Find(compress);
    if (q.compress_closed == nullptr) q.compress_closed = reg.Register(compress, true, true, true);
    const char* always = "hourglassTimeseriesAlwaysCompressBuckets";
    q.always_compress = reg.Find(always);
    if (q.always_compress == nullptr) q.always_compress = reg.Register(always, true, true, true);
    // Read once, by OpenJournal at startup: a running server cannot change how it writes.
    const char* write_back = "hourglassTimeseriesWriteBack";
    q.write_back = reg.Find(write_back);
    if (q.write_back == nullptr) q.write_back = reg.Register(write_back, true, true, false);
    q.write_back_interval = RegisterOnce("hourglassTimeseriesWriteBackIntervalMillis", 1000, 0);
    q.write_back_bytes = RegisterOnce("hourglassTimeseriesWriteBackMaxBytes", int64_t{64} << 20, 0);
    q.journal_below_rows = RegisterOnce("hourglassTimeseriesJournalBelowRows", 3, 0);
    // Startup only, as the journal's log is opened once.
    const char* segment = "hourglassTimeseriesJournalSegmentBytes";
    q.journal_segment_bytes = reg.Find(segment);
    if (q.journal_segment_bytes == nullptr) {
      q.journal_segment_bytes =
          reg.Register(segment, int64_t{storage::AppendLog::kDefaultSegmentBytes}, true, false,
                       [segment](const ParameterValue& v) { return AtLeast(v, 4096, segment); });
    }
    q.rewrite_after = RegisterOnce("hourglassTimeseriesBucketEditsBeforeRewrite", 8, -1);
    q.flush_rewrite_after = RegisterOnce("hourglassTimeseriesFlushEditsBeforeRewrite", 32, -1);
    q.flush_transaction_bytes =
        RegisterOnce("hourglassTimeseriesFlushTransactionBytes", int64_t{256} << 10, 0);
    return q;
  }();
  return p;
}

// The default idle-bucket memory threshold: 2.5% of the machine's memory (read once: every
// staged measurement may ask).
int64_t DefaultMemoryThreshold() {
  static const int64_t threshold = [] {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return int64_t{100} << 20;
    return static_cast<int64_t>(pages) * page / 40;
  }();
  return threshold;
}

// timeseriesIdleBucketExpiryMemoryUsageThreshold, 0 meaning the default.
int64_t MemoryThreshold() {
  const int64_t set = GetParams().idle_threshold->GetInt();
  return set == 0 ? DefaultMemoryThreshold() : set;
}

constexpr int64_t kAbsoluteMaxBucketBytes = (int64_t{16} << 20) - (int64_t{4} << 20);
constexpr int64_t kMaxBsonSize = int64_t{16} << 20;
}  // namespace

void RegisterTimeseriesParameters() { (void)GetParams(); }

NewBucketRules CurrentNewBucketRules() {
  const Params& p = GetParams();
  return {.version = p.always_compress->GetBool() ? 2 : 1,
          .max_count = p.max_count->GetInt(),
          .max_size = p.max_size->GetInt(),
          .min_count = p.min_count->GetInt(),
          .absolute_max_size = kAbsoluteMaxBucketBytes};
}

// The rounded start in seconds, then 8 bytes from a per-process counter seeded at random.
// The counter's changing bytes come first, so the 8-byte RecordId prefix of the clustered bucket
// collection differs between buckets of one start time.
bson::ObjectId NewBucketId(int64_t min_time_ms) {
  static std::atomic<uint64_t> counter{std::random_device{}() |
                                       (static_cast<uint64_t>(std::random_device{}()) << 32)};
  int64_t secs = min_time_ms >= 0 ? min_time_ms / 1000 : -((-min_time_ms + 999) / 1000);
  uint32_t ts = static_cast<uint32_t>(static_cast<uint64_t>(secs));
  uint64_t c = counter.fetch_add(1, std::memory_order_relaxed);
  bson::ObjectId id;
  for (int i = 0; i < 4; ++i) id.bytes[i] = static_cast<uint8_t>(ts >> (24 - 8 * i));
  uint32_t low = static_cast<uint32_t>(c), high = static_cast<uint32_t>(c >> 32);
  for (int i = 0; i < 4; ++i) id.bytes[4 + i] = static_cast<uint8_t>(low >> (24 - 8 * i));
  for (int i = 0; i < 4; ++i) id.bytes[8 + i] = static_cast<uint8_t>(high >> (24 - 8 * i));
  return id;
}

// --- in-memory state -------------------------------------------------------------------------

// One batch of measurements staged into one bucket, written by a single commit.
class WriteBatch {
 public:
  explicit WriteBatch(std::shared_ptr<Bucket> b) : bucket(std::move(b)) {}
  std::shared_ptr<Bucket> bucket;
  std::vector<BsonObj> measurements;  // guarded by the stripe mutex until claimed
  // The retryable-write statements of the measurements, one record per write (likewise).
  std::vector<catalog::StatementRecord> statements;
  // Set by the writer that claims the batch: the bucket's control object with this batch's rows,
  // and the approximate memory of its field tree then.
  BsonObj control;
  size_t fields_memory = 0;
  // Set by the writer that claims the batch when it staged (and encoded) the rows into the
  // bucket's document then (CommitWriteThrough); Write stages them otherwise.
  bool staged = false;
  bool done = false;  // guarded by bucket->mu
  Status status = Status::OK();
};

struct Bucket {
  std::string series_key;
  Stripe* stripe = nullptr;  // StripeFor(series_key), set with it
  bool in_open = false;      // its stripe's `open` holds it (guarded by the stripe mutex)
  // Its place in the stripe's `by_use` while in_open (guarded by the stripe mutex).
  std::list<Bucket*>::iterator use_pos;
  uint64_t era = 0;
  int64_t min_time = 0;  // rounded bucket start, millis
  // Staging state, guarded by the stripe mutex.
  uint32_t num_measurements = 0;
  int64_t size = 0;  // estimated bytes of the document with every staged measurement
  // Schema and control.min/max of every staged measurement (a commit's control is read from it
  // when its batch is claimed, when it holds exactly the rows up to that batch).
  BucketFieldTree fields;
  // Set once a measurement of the shape the tree last folded was staged without walking the tree
  // (BucketFieldTree::Shape): the min/max of such rows are folded when they are written, by the
  // commit that writes them through or the flush that writes them from the journal (folding a
  // row twice changes nothing).
  bool minmax_deferred = false;
  // Set when the tree may hold the bounds of rows a running flush does not write: a batch was
  // staged when the flush took its rows, or a measurement walked the tree after (the flush then
  // computes its control from the rows it writes).
  bool tree_ahead = false;
  std::shared_ptr<WriteBatch> pending;
  // The field tree's ApproxMemory as last measured (write-back refreshes it at flushes rather
  // than at every commit).
  size_t fields_memory = 0;
  bool kept_open_large = false;
  std::atomic<bool> broken{false};  // a write failed: accept nothing more
  // Commit state.
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<bool> committing{false};  // written under mu
  BucketDocument doc;
  std::atomic<int64_t> memory{0};  // last amount added to memory_usage_
  // Closed for good and queued for compression (CompressClosedBuckets): never reused, since once
  // compressed its layout no longer matches the stored document.
  std::atomic<bool> closed_for_good{false};
  // Write-back state, guarded by the collection's flush_mu held exclusively (a flush taking its
  // rows), or by commit rights (`committing`) with flush_mu held shared (a committer) or not (the
  // flush writing them). `unflushed`: the rows committed to the journal and not yet to storage
  // (views into journal entries, without the metaField once meta_journaled); `flushing`: those a
  // running flush took, ahead of them. The first of these rows may be staged in `doc` (the flush
  // that writes them stages them; see StageHeldRows), the others are not;
  // `flushed_control`: the control object storage holds (empty before the first write).
  std::vector<BsonObj> unflushed;
  std::vector<BsonObj> flushing;
  // doc.ApproxMemory() as last measured. Rows held for the write-back are staged in `doc` by the
  // flush that writes them (StageHeldRows), so a commit that only holds its rows leaves `doc`
  // alone and counts their handles in `unflushed` instead.
  size_t doc_memory = 0;
  // What the layout and the held rows' handles take (`measure_doc`: the layout measured again).
  size_t HeldMemory(bool measure_doc) {
    if (measure_doc) doc_memory = doc.ApproxMemory();
    return doc_memory + unflushed.capacity() * sizeof(BsonObj);
  }
  // The _ids the unflushed rows were journaled under, each once (a retirement changes it).
  std::vector<bson::ObjectId> unflushed_ids;
  // Whether a journal entry written since the last flush holds this bucket's meta: later ones
  // leave it out of the rows (measurement_journal.h).
  bool meta_journaled = false;
  std::atomic<bool> dirty{false};  // in its collection's dirty list
  // In its collection's `edited` list: set by whoever holds the bucket's commit rights and
  // writes it by edits (a flush, or a commit writing through), cleared by SettleEdited.
  std::atomic<bool> listed_edited{false};
  BsonObj flushed_control;
  // Set by a flush that could not append to the stored document `doc` describes (a direct write
  // changed or deleted it, or its _id was taken): the bucket takes no new measurements, and the
  // rows it still gets go to the bucket `retired_id`, which that flush wrote them to.
  std::atomic<bool> retired{false};
  bson::ObjectId retired_id{};

  // Whether storage may no longer hold what `doc` describes: the collection was cleared (e.g. by
  // a direct write to its buckets, which starts era `current`) after this stored bucket opened.
  bool LayoutMayBeStale(uint64_t current) const { return era != current && doc.stored(); }
  // Whether storage holds what `doc` describes as this process wrote it: stored, in era
  // `current`, neither failed nor retired (a direct write may have changed it otherwise).
  bool StoredAsWritten(uint64_t current) const {
    return doc.stored() && !broken.load() && !retired.load() && era == current;
  }

  // doc.compressed(), readable under the stripe mutex (doc is the committer's).
  std::atomic<bool> compressed{false};

  explicit Bucket(BucketDocument d) : doc(std::move(d)), compressed(doc.compressed()) {}
};

// Takes a bucket's commit rights, waiting for the writer that holds them.
void ClaimCommitRights(Bucket& b) {
  std::unique_lock lk(b.mu);
  while (b.committing.load()) b.cv.wait(lk);
  b.committing = true;
}
bool TryClaimCommitRights(Bucket& b) {
  std::lock_guard lk(b.mu);
  if (b.committing.load()) return false;
  b.committing = true;
  return true;
}
void ReleaseCommitRights(Bucket& b) {
  {
    std::lock_guard lk(b.mu);
    b.committing = false;
  }
  b.cv.notify_all();
}

// Not make_shared: a SeriesId's open_hint (a weak_ptr) would keep a closed bucket's whole block.
// The collation a collection's control.min/max compare strings under (null: simple).
std::shared_ptr<const bson::StringComparator> CollatorOf(const TimeseriesCollection& coll) {
  return coll.buckets ? coll.buckets->DefaultCollator() : nullptr;
}

std::shared_ptr<Bucket> NewBucket(BucketDocument doc) {
  return std::shared_ptr<Bucket>(new Bucket(std::move(doc)));
}

struct Archived {
  bson::ObjectId id;
  int64_t min_time;
  uint64_t era;
};

// Tables keyed by strings that also take a key whose hash is known (a SeriesId's, a meta's).
struct HashedKey {
  std::string_view key;
  size_t hash;
};
struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  size_t operator()(const HashedKey& k) const { return k.hash; }
};
struct KeyEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
  bool operator()(const HashedKey& a, std::string_view b) const { return a.key == b; }
  bool operator()(std::string_view a, const HashedKey& b) const { return a == b.key; }
};
template <typename T>
using HashedMap = std::unordered_map<std::string, T, KeyHash, KeyEq>;

// The catalog's memory for one archived record: the record, and for a series' only one the
// table's entry and key too.
int64_t ArchivedMemory(const std::string& series_key, bool only) {
  int64_t n = sizeof(Archived);
  if (only) n += static_cast<int64_t>(sizeof(std::vector<Archived>) + series_key.size() + 64);
  return n;
}

struct Stripe {
  std::mutex mu;
  HashedMap<std::shared_ptr<Bucket>> open;    // series key → bucket
  HashedMap<std::vector<Archived>> archived;  // series key → records
  // The open buckets, the one most recently given a write batch first: memory pressure archives
  // from the back. MongoDB keeps a list of idle buckets, entered when a commit leaves a bucket
  // with nothing pending; ordering by the last batch instead needs no lock when a commit ends,
  // and a bucket idle longest is almost always the one given a batch longest ago.
  std::list<Bucket*> by_use;

  void AddOpen(const std::string& key, const std::shared_ptr<Bucket>& b) {
    b->in_open = true;
    b->use_pos = by_use.insert(by_use.begin(), b.get());
    open[key] = b;
  }
  // `b` may die here, with its entry in `open`.
  void RemoveOpen(Bucket& b) {
    b.in_open = false;
    by_use.erase(b.use_pos);
    auto it = open.find(b.series_key);
    std::shared_ptr<Bucket> last = std::move(it->second);
    open.erase(it);
  }
  void Used(Bucket& b) {
    if (b.use_pos != by_use.begin()) by_use.splice(by_use.begin(), by_use, b.use_pos);
  }
  // Every bucket object still alive (open, or closed/archived with a batch in flight), by _id. A
  // bucket's rows may only be appended through one object — the one whose layout matches the
  // stored document — so reopening goes through this first. Entries die with their buckets and
  // are swept now and then.
  std::unordered_map<std::string, std::weak_ptr<Bucket>> live;

  static std::string IdKey(const bson::ObjectId& id) {
    return std::string(reinterpret_cast<const char*>(id.bytes), 12);
  }
  std::shared_ptr<Bucket> Live(const bson::ObjectId& id) {
    auto it = live.find(IdKey(id));
    if (it == live.end()) return nullptr;
    auto b = it->second.lock();
    if (!b) live.erase(it);
    return b;
  }
  void Register(const std::shared_ptr<Bucket>& b, const bson::ObjectId& id) {
    if (live.size() > 2 * open.size() + 64) {
      for (auto it = live.begin(); it != live.end();) {
        it = it->second.expired() ? live.erase(it) : std::next(it);
      }
    }
    live[IdKey(id)] = b;
  }
};

namespace {
// CachedSeriesKey's memory: meta element bytes → series key, in shards by hash.
struct SeriesKeyCache {
  struct Shard {
    std::mutex mu;
    HashedMap<std::shared_ptr<const SeriesId>> keys;
  };
  static constexpr size_t kShards = 16;
  std::array<Shard, kShards> shards;
};
}  // namespace

struct BucketCatalog::CollectionState {
  ExecutionStats stats;
  SeriesKeyCache series_keys;
  std::atomic<uint64_t> era{0};
  std::atomic<bool> may_have_stored{false};
  // Buckets closed for good, waiting to be compressed (CompressClosedBuckets).
  std::mutex closed_mu;
  std::vector<std::shared_ptr<Bucket>> closed;  // guarded by closed_mu
  std::shared_ptr<LatestMeasurements> latest = std::make_shared<LatestMeasurements>();
  // Write-back: committers hold flush_mu shared from claiming their batches to registering their
  // rows; a flush holds it exclusively while it takes the rows to write (a change of mode or a
  // drop, throughout). Then dirty_mu guards the lists below. flush_run_mu: one flush at a time.
  // flush_waiters counts the flushes that must run (a read's barrier, a shutdown, a change of
  // mode, a drop) waiting for flush_run_mu: a commit's own flush gives way to them, or commits
  // that keep flushing could hold a reader out for as long as they go on.
  std::mutex flush_run_mu;
  std::atomic<int> flush_waiters{0};
  std::shared_mutex flush_mu;
  std::mutex dirty_mu;
  std::vector<std::shared_ptr<Bucket>> dirty;  // buckets with unflushed rows
  std::vector<uint64_t> journal_keys;          // their journal entries, oldest first
  int64_t unflushed_bytes = 0;
  int64_t oldest_unflushed_ms = 0;  // when the oldest journal entry was written
  TimeseriesCollection last_coll;   // as the last committer saw it (the read barrier's flushes)
  // The read barrier is installed by the first commit; later commits wait until it is (a
  // commit acknowledged before a reader could find the barrier would be invisible to it).
  std::once_flag barrier_installed;
  // Whether commits go to the journal (guarded by flush_mu; changed only with no journal entry
  // left, so storage then holds every committed row), and the commits' shape since the mode was
  // last chosen (guarded by dirty_mu).
  bool journaling = true;
  int64_t mode_batches = 0;
  int64_t mode_rows = 0;
  // The journal's partly-written records of flushes that failed after writing some of their
  // buckets, to forget when a later flush (or a drop) marks their entries (under flush_run_mu).
  std::vector<std::string> partly_written;
  // The buckets flushes or commits left stored as a chain of edits (under edited_mu; weak: a
  // bucket closed and compressed meanwhile is forgotten), for the next read's flush to settle,
  // and whether there are any (read without a lock by the read barrier).
  std::mutex edited_mu;
  std::vector<std::weak_ptr<Bucket>> edited;
  size_t edited_pruned_at = 0;  // its size when the closed ones were last taken out
  std::atomic<bool> has_edited{false};

  // Lists `b`, just written by edits by a holder of its commit rights, for the next read's flush
  // to settle, unless it is listed already.
  void ListEdited(const std::shared_ptr<Bucket>& b) {
    if (!b->doc.edited_since_whole() || b->listed_edited.exchange(true)) return;
    std::lock_guard lk(edited_mu);
    // Without reads, buckets that closed meanwhile would pile up.
    if (edited.size() >= 2 * std::max<size_t>(edited_pruned_at, 64)) {
      std::erase_if(edited, [](const std::weak_ptr<Bucket>& w) { return w.expired(); });
      edited_pruned_at = edited.size();
    }
    edited.push_back(b);
    has_edited = true;
  }

  // Takes the dirty list and the journal keys out, for a flush or a drop (holding flush_mu).
  void TakeUnflushed(std::vector<std::shared_ptr<Bucket>>* buckets, std::vector<uint64_t>* keys) {
    std::lock_guard lk(dirty_mu);
    buckets->swap(dirty);
    keys->swap(journal_keys);
  }
};

// Holds a flush that writes its buckets in several transactions after each but the last (tests
// kill the server there).
HG_FAIL_POINT_DEFINE(hangTimeseriesFlushBetweenTransactions);
// Fails a flush's transaction before it writes anything.
HG_FAIL_POINT_DEFINE(failTimeseriesFlushTransaction);
// Fails the transaction of a request's buckets written together before it writes anything (each
// is then written alone).
HG_FAIL_POINT_DEFINE(failTimeseriesWriteTogether);

namespace {
// The bucket catalog's own reads of bucket collections (reopening, resyncing, compressing,
// flushing) skip the collections' read barriers: the catalog knows its unwritten rows, and a
// flush from inside it would deadlock on its locks.
thread_local int t_internal_reads = 0;
struct InternalReads {
  InternalReads() { ++t_internal_reads; }
  ~InternalReads() { --t_internal_reads; }
  InternalReads(const InternalReads&) = delete;
  InternalReads& operator=(const InternalReads&) = delete;
};

// The document of a new bucket: compressed from its first write while the server parameter
// hourglassTimeseriesAlwaysCompressBuckets is true (the default, as MongoDB 8.0), else version 1.
BucketDocument NewBucketDocument(const bson::ObjectId& id, const BsonElement& meta,
                                 std::string_view time_field) {
  if (GetParams().always_compress->GetBool()) {
    return BucketDocument::Compressed(id, meta, time_field);
  }
  return BucketDocument(id, meta);
}

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Bytes a measurement adds to its bucket's data: each field's value under a row key of up to four
// digits (`row`), plus the control summaries it may widen (`first_row`, counted once, at the
// bucket's first row). Fed one top-level field at a time (the metaField left out).
struct MeasurementSize {
  int64_t row = 0;
  int64_t first_row = 0;
  void Add(const bson::FieldView& f) {
    row += 1 + 4 + 1 + static_cast<int64_t>(f.value_size);
    // The first row also adds the field's control.min and control.max entries and its column
    // header (type, name, length, terminator).
    first_row += 2 * static_cast<int64_t>(2 + f.name.size() + f.value_size) + f.name.size() + 7;
  }
  int64_t Total(bool first) const { return row + (first ? first_row : 0); }
};

enum class Rollover { kNone, kTimeForward, kTimeBackward, kCount, kSize, kCachePressure, kSchema };
}  // namespace

BsonObj BuildBucketControl(const BucketFieldTree& fields, std::string_view time_field,
                           int64_t min_time) {
  BsonBuilder b;
  b.AppendInt32("version", 1);
  size_t token = b.OpenObject("min");
  fields.AppendMin(b, time_field, min_time);
  b.Close(token);
  token = b.OpenObject("max");
  fields.AppendMax(b);
  b.Close(token);
  return b.Obj();
}

BucketCatalog::BucketCatalog(int64_t cache_bytes) : cache_bytes_(cache_bytes) {
  (void)GetParams();
  for (auto& s : stripes_) s = std::make_unique<Stripe>();
}

BucketCatalog::~BucketCatalog() = default;

BucketCatalog::CollectionState& BucketCatalog::State(const std::string& uuid) {
  {
    // Every staged measurement looks its collection up: readers share the lock.
    std::shared_lock lk(states_mu_);
    auto it = states_.find(uuid);
    if (it != states_.end()) return *it->second;
  }
  std::unique_lock lk(states_mu_);
  auto& p = states_[uuid];
  if (!p) p = std::make_unique<CollectionState>();
  return *p;
}

const BucketCatalog::CollectionState* BucketCatalog::FindState(const std::string& uuid) const {
  std::shared_lock lk(states_mu_);
  auto it = states_.find(uuid);
  return it == states_.end() ? nullptr : it->second.get();
}

SeriesId::SeriesId(std::string k) : key(std::move(k)), hash(KeyHash{}(key)) {}

Stripe& BucketCatalog::StripeFor(const SeriesId& series) {
  return *stripes_[series.hash % kNumStripes];
}

void BucketCatalog::Count(CollectionState& cs, Stat stat, int64_t n) {
  cs.stats.Add(stat, n);
  global_.Add(stat, n);
}

void BucketCatalog::ClearCollection(const std::string& uuid) {
  CollectionState& cs = State(uuid);
  cs.era.fetch_add(1);
  cs.may_have_stored = true;
  // Buckets of the old era are not compressed (what is stored may have changed).
  std::lock_guard ck(cs.closed_mu);
  cs.closed.clear();
}

std::shared_ptr<LatestMeasurements> BucketCatalog::Latest(const std::string& uuid) {
  return State(uuid).latest;
}

void BucketCatalog::MarkMayHaveStoredBuckets(const std::string& uuid) {
  State(uuid).may_have_stored = true;
}

// --- staging -----------------------------------------------------------------------------------

namespace {
struct Limits {
  int64_t max_count, max_size, min_count, min_size;
};

Limits CurrentLimits() {
  const Params& p = GetParams();
  return {p.max_count->GetInt(), p.max_size->GetInt(), p.min_count->GetInt(), p.min_size->GetInt()};
}

// The largest a bucket may grow before the size rule closes it, given how many buckets share the
// storage cache (spec §4.2 rule 4).
int64_t CacheDerivedMax(int64_t cache_bytes, int64_t open_buckets, const Limits& l) {
  if (open_buckets <= 0) return std::numeric_limits<int32_t>::max();
  int64_t per =
      std::min<int64_t>(cache_bytes / (2 * open_buckets), std::numeric_limits<int32_t>::max());
  return std::max(per, l.min_size);
}

// `fits_schema`: whether b's schema takes the measurement.
Rollover DecideRollover(const Bucket& b, int64_t t, int64_t max_span_ms, int64_t add,
                        bool fits_schema, const Limits& l, int64_t cache_derived,
                        bool* keep_open_large) {
  *keep_open_large = false;
  if (t - b.min_time >= max_span_ms) return Rollover::kTimeForward;
  if (t < b.min_time) return Rollover::kTimeBackward;
  if (b.num_measurements >= l.max_count) return Rollover::kCount;
  int64_t effective_max = std::min(l.max_size, cache_derived);
  if (b.size + add > effective_max) {
    if (b.num_measurements < l.min_count) {
      int64_t absolute_max = std::min(kAbsoluteMaxBucketBytes, cache_derived);
      if (b.size + add <= absolute_max) {
        *keep_open_large = true;
      } else {
        return absolute_max != kAbsoluteMaxBucketBytes ? Rollover::kCachePressure : Rollover::kSize;
      }
    } else {
      return effective_max == l.max_size ? Rollover::kSize : Rollover::kCachePressure;
    }
  }
  if (!fits_schema) return Rollover::kSchema;
  return Rollover::kNone;
}
}  // namespace

std::shared_ptr<Bucket> BucketCatalog::Reopen(const TimeseriesCollection& coll, Stripe& stripe,
                                              const BsonObj& doc, const std::string& series_key) {
  const auto& o = coll.options;
  if (doc["_id"].type() == bson::BsonType::kObjectId) {
    if (auto b = stripe.Live(doc["_id"].Oid())) return ReuseLive(coll, b);
  }
  auto layout = BucketDocument::FromStored(doc, o.time_field);
  BsonObj control = doc["control"].Obj();
  BsonElement min_t = control["min"].Obj()[o.time_field];
  if (!layout.ok() || min_t.type() != bson::BsonType::kDate || control["closed"].Truthy()) {
    return nullptr;
  }
  auto b = NewBucket(std::move(layout).value());
  b->series_key = series_key;
  b->stripe = &stripe;
  b->min_time = min_t.DateMillis();
  auto fields =
      BucketFieldTree::FromBucket(control["min"].Obj(), control["max"].Obj(), CollatorOf(coll));
  if (!fields.ok()) return nullptr;
  b->fields = std::move(fields).value();
  b->num_measurements = b->doc.num_rows();
  b->size = static_cast<int64_t>(b->doc.size());
  b->flushed_control = control.Owned();
  stripe.Register(b, b->doc.id());
  return b;
}

std::shared_ptr<Bucket> BucketCatalog::ReuseLive(const TimeseriesCollection& coll,
                                                 const std::shared_ptr<Bucket>& b) {
  // The object that wrote this bucket is still alive (a batch of it may be in flight): only it
  // knows the bucket's true layout. It is reused unless it belongs to a cleared era or failed.
  CollectionState& cs = State(coll.uuid);
  if (b->era != cs.era.load() || b->broken.load() || b->closed_for_good.load() ||
      b->retired.load()) {
    Count(cs, Stat::kNumBucketReopeningsFailed);
    return nullptr;
  }
  return b;
}

std::shared_ptr<Bucket> BucketCatalog::FindStoredBucket(const TimeseriesCollection& coll,
                                                        storage::Session& s, Stripe& stripe,
                                                        const std::string& series_key,
                                                        const BsonElement& meta, int64_t t) {
  // The candidates for `t` are the series' buckets that started in (t - maxSpan, t]: found
  // through the series index when the collection has one, else by scanning the buckets of that
  // start-time range (the bucket table is in start-time order) and comparing metas.
  const auto& o = coll.options;
  const int64_t span_ms = o.bucket_max_span_seconds * 1000;
  CollectionState& cs = State(coll.uuid);
  std::string want_meta;
  BsonObj meta_holder;
  if (!meta.eoo()) {
    BsonBuilder mb;
    AppendNormalizedMeta(mb, "meta", meta);
    meta_holder = mb.Obj();
    want_meta = std::string(meta_holder.FirstElement().raw(), meta_holder.FirstElement().size());
  }
  std::vector<int64_t> candidates;
  const catalog::SecondaryIndex* index = coll.buckets->SeriesIndex();
  if (index != nullptr) {
    Count(cs, Stat::kNumBucketsQueried);
    auto cursor_or = catalog::IndexCursor::Open(s, *index);
    if (!cursor_or.ok()) {
      Count(cs, Stat::kNumBucketQueriesFailed);
      return nullptr;
    }
    auto& cursor = cursor_or.value();
    std::string prefix = catalog::BucketIndexSeriesPrefix(meta_holder.FirstElement());
    cursor.SetBounds(
        {t > INT64_MIN + span_ms ? prefix + catalog::BucketIndexStartKey(t - span_ms + 1) : prefix,
         prefix + catalog::BucketIndexStartKey(t) + "\xff"});
    auto more = cursor.Next();
    while (more.ok() && more.value()) {
      candidates.push_back(cursor.record_id());
      more = cursor.Next();
    }
    if (!more.ok()) Count(cs, Stat::kNumBucketQueriesFailed);
  } else {
    int64_t lo_s = (t - span_ms) / 1000 - 1, hi_s = t / 1000 + 1;
    if (t < 0 || lo_s < 0 || hi_s > int64_t{0xffffffff}) return nullptr;  // extended range
    Count(cs, Stat::kNumBucketsQueried);
    auto cursor_or = catalog::RecordCursor::Open(
        s, *coll.buckets,
        catalog::ClusteredTimeRange(static_cast<uint32_t>(lo_s), static_cast<uint32_t>(hi_s)));
    if (!cursor_or.ok()) {
      Count(cs, Stat::kNumBucketQueriesFailed);
      return nullptr;
    }
    auto& cursor = cursor_or.value();
    auto more = cursor.Next();
    while (more.ok() && more.value()) {
      candidates.push_back(cursor.id());
      more = cursor.Next();
    }
    if (!more.ok()) Count(cs, Stat::kNumBucketQueriesFailed);
  }
  const Limits l = CurrentLimits();
  for (int64_t rid : candidates) {
    auto rec = coll.buckets->FindRecord(s, rid);
    if (!rec.ok() || !rec.value()) continue;
    const BsonObj& doc = rec.value()->doc;
    BsonElement m = doc["meta"];
    std::string_view got = m.eoo() ? std::string_view() : std::string_view(m.raw(), m.size());
    BsonElement min_t = doc["control"].Obj()["min"].Obj()[o.time_field];
    if (got == want_meta && min_t.type() == bson::BsonType::kDate && min_t.DateMillis() <= t &&
        t - min_t.DateMillis() < span_ms) {
      auto b = Reopen(coll, stripe, doc, series_key);
      if (b && b->num_measurements < l.max_count && b->size < l.max_size) return b;
    }
  }
  return nullptr;
}

void BucketCatalog::ExpireIdleBuckets(Stripe& stripe, const std::string& keep) {
  const Params& p = GetParams();
  const int64_t threshold = MemoryThreshold();
  // As MongoDB: at most maxCountPerAttempt + 1 buckets or records go per attempt, idle buckets
  // first, so that memory above the threshold is given back gradually, not all at once.
  int64_t budget = p.idle_per_attempt->GetInt() + 1;
  // Buckets with a batch in flight sit near the front; a few steps past them bound the walk.
  int steps = 64;
  for (auto it = stripe.by_use.end(); it != stripe.by_use.begin() && budget > 0 && steps-- > 0 &&
                                      memory_usage_.load() > threshold;) {
    Bucket& b = **--it;
    if (b.series_key == keep || b.pending || b.committing.load()) continue;
    // An idle bucket leaves memory; a small record lets a later measurement reopen it.
    it = std::next(it);
    AddArchived(stripe, b);
    --num_open_;
    memory_usage_ -= b.memory;
    global_.Add(Stat::kNumBucketsArchivedDueToMemoryThreshold);
    stripe.RemoveOpen(b);
    --budget;
  }
  while (budget-- > 0 && memory_usage_.load() > threshold && !stripe.archived.empty()) {
    // Still above: forget an archived record, the oldest of a series; its bucket can then only
    // come back by a query.
    auto ait = stripe.archived.begin();
    auto oldest = std::min_element(
        ait->second.begin(), ait->second.end(),
        [](const Archived& a, const Archived& b) { return a.min_time < b.min_time; });
    RemoveArchived(stripe, ait->first, static_cast<size_t>(oldest - ait->second.begin()));
    global_.Add(Stat::kNumBucketsClosedDueToMemoryThreshold);
  }
}

void BucketCatalog::AddArchived(Stripe& stripe, const Bucket& b) {
  auto& recs = stripe.archived[b.series_key];
  recs.push_back({b.doc.id(), b.min_time, b.era});
  ++num_archived_;
  memory_usage_ += ArchivedMemory(b.series_key, recs.size() == 1);
}

void BucketCatalog::RemoveArchived(Stripe& stripe, const std::string& series_key, size_t i) {
  auto it = stripe.archived.find(series_key);
  auto& recs = it->second;
  memory_usage_ -= ArchivedMemory(it->first, recs.size() == 1);
  --num_archived_;
  recs.erase(recs.begin() + static_cast<std::ptrdiff_t>(i));
  if (recs.empty()) stripe.archived.erase(it);
}

StatusWith<std::shared_ptr<Bucket>> BucketCatalog::BucketFor(
    const TimeseriesCollection& coll, storage::Session& s, Stripe& stripe,
    const std::string& series_key, const BsonObj& m, int64_t t, const BsonElement& meta, size_t add,
    bool fits_open_schema, std::shared_ptr<Bucket> open) {
  const auto& o = coll.options;
  CollectionState& cs = State(coll.uuid);
  const uint64_t era = cs.era.load();
  const int64_t span_ms = o.bucket_max_span_seconds * 1000;
  const Limits l = CurrentLimits();
  std::string_view meta_field = o.meta_field ? std::string_view(*o.meta_field) : std::string_view();

  if (open != nullptr) {
    // Taken over, so that a bucket left behind dies with this block (a live object of a cleared
    // era would keep the reopening below from reading the stored bucket).
    std::shared_ptr<Bucket> b = std::move(open);
    if (b->era != era || b->broken.load() || b->retired.load()) {
      stripe.RemoveOpen(*b);
      --num_open_;
      memory_usage_ -= b->memory;
    } else {
      bool large = false;
      Rollover r = DecideRollover(*b, t, span_ms, static_cast<int64_t>(add), fits_open_schema, l,
                                  CacheDerivedMax(cache_bytes_, num_open_.load(), l), &large);
      if (r == Rollover::kNone) {
        if (large && !b->kept_open_large) {
          b->kept_open_large = true;
          Count(cs, Stat::kNumBucketsKeptOpenDueToLargeMeasurements);
        }
        return b;
      }
      switch (r) {
        case Rollover::kTimeForward:
          Count(cs, Stat::kNumBucketsClosedDueToTimeForward);
          break;
        case Rollover::kTimeBackward:
          Count(cs, Stat::kNumBucketsArchivedDueToTimeBackward);
          break;
        case Rollover::kCount:
          Count(cs, Stat::kNumBucketsClosedDueToCount);
          break;
        case Rollover::kSize:
          Count(cs, Stat::kNumBucketsClosedDueToSize);
          break;
        case Rollover::kCachePressure:
          Count(cs, Stat::kNumBucketsClosedDueToCachePressure);
          break;
        case Rollover::kSchema:
          Count(cs, Stat::kNumBucketsClosedDueToSchemaChange);
          break;
        case Rollover::kNone:
          break;
      }
      // A bucket left behind by time moving forward is closed for good when closed buckets are
      // compressed (MongoDB's soft close); otherwise it, like one left by time moving backward,
      // still has room that a later measurement of its time range may reopen.
      // (A compressed bucket needs no compressing and stays reopenable like any other.)
      const bool compress = !b->compressed.load() && GetParams().compress_closed->GetBool() &&
                            r != Rollover::kTimeBackward;
      if (!compress && (r == Rollover::kTimeForward || r == Rollover::kTimeBackward)) {
        AddArchived(stripe, *b);
      } else if (compress) {
        b->closed_for_good = true;
      }
      // A compressed bucket no longer open is queued too: if edits wrote it last, it is
      // rewritten whole (SettleBucket).
      if (compress || b->compressed.load()) {
        std::lock_guard ck(cs.closed_mu);
        cs.closed.push_back(b);
      }
      stripe.RemoveOpen(*b);
      --num_open_;
      memory_usage_ -= b->memory;
    }
  }

  // Reopen an archived bucket whose time range holds t, if it still has room. A record tried
  // goes, whether or not its bucket could take the measurement.
  std::shared_ptr<Bucket> found;
  for (auto ait = stripe.archived.find(series_key); !found && ait != stripe.archived.end();
       ait = stripe.archived.find(series_key)) {
    auto& recs = ait->second;
    auto pick = std::find_if(recs.begin(), recs.end(), [&](const Archived& a) {
      return a.era == era && a.min_time <= t && t - a.min_time < span_ms;
    });
    if (pick == recs.end()) break;
    const Archived a = *pick;
    RemoveArchived(stripe, series_key, static_cast<size_t>(pick - recs.begin()));
    if (auto b = stripe.Live(a.id)) {
      found = ReuseLive(coll, b);
    } else {
      Count(cs, Stat::kNumBucketsFetched);
      auto rec = coll.buckets->FindRecord(s, catalog::ClusteredRecordId(a.id));
      if (!rec.ok() || !rec.value()) {
        Count(cs, Stat::kNumBucketFetchesFailed);
      } else {
        found = Reopen(coll, stripe, rec.value()->doc, series_key);
      }
    }
    if (found && (found->num_measurements >= l.max_count ||
                  found->size + static_cast<int64_t>(add) > l.max_size ||
                  !found->fields.IsCompatible(m, meta_field))) {
      found.reset();
    }
  }
  if (!found && cs.may_have_stored.load()) {
    found = FindStoredBucket(coll, s, stripe, series_key, meta, t);
    if (found && !found->fields.IsCompatible(m, meta_field)) found.reset();
  }
  if (found) {
    Count(cs, Stat::kNumBucketsReopened);
  } else {
    int64_t min_time = RoundTimeDownMillis(t, o.RoundingSeconds());
    BsonBuilder mb;
    if (!meta.eoo()) AppendNormalizedMeta(mb, "meta", meta);
    BsonObj meta_obj = mb.Obj();
    found =
        NewBucket(NewBucketDocument(NewBucketId(min_time), meta_obj.FirstElement(), o.time_field));
    found->series_key = series_key;
    found->stripe = &stripe;
    found->min_time = min_time;
    found->fields.SetCollator(CollatorOf(coll));
    stripe.Register(found, found->doc.id());
    found->size = 64 + meta_obj.size();
    Count(cs, Stat::kNumBucketsOpenedDueToMetadata);
  }
  found->era = era;
  found->fields_memory = found->fields.ApproxMemory();
  found->memory = static_cast<int64_t>(sizeof(Bucket) + found->HeldMemory(/*measure_doc=*/true) +
                                       found->fields_memory);
  memory_usage_ += found->memory;
  stripe.AddOpen(series_key, found);
  ++num_open_;
  ExpireIdleBuckets(stripe, series_key);
  return found;
}

std::string BucketCatalog::SeriesKey(const TimeseriesCollection& coll, const BsonElement& meta) {
  std::string key = coll.uuid;
  key += NormalizedMetaKey(meta);
  return key;
}

size_t BucketCatalog::MetaHash(const BsonElement& meta) {
  return meta.eoo() ? 0 : KeyHash{}(std::string_view(meta.raw(), meta.size()));
}

std::shared_ptr<const SeriesId> BucketCatalog::CachedSeriesKey(const TimeseriesCollection& coll,
                                                               const BsonElement& meta,
                                                               size_t meta_hash) {
  if (meta.eoo()) return std::make_shared<const SeriesId>(SeriesKey(coll, meta));
  const std::string_view raw(meta.raw(), meta.size());
  SeriesKeyCache::Shard& shard =
      State(coll.uuid).series_keys.shards[meta_hash % SeriesKeyCache::kShards];
  {
    std::lock_guard lk(shard.mu);
    auto it = shard.keys.find(HashedKey{raw, meta_hash});
    if (it != shard.keys.end()) return it->second;
  }
  auto key = std::make_shared<const SeriesId>(SeriesKey(coll, meta));
  std::lock_guard lk(shard.mu);
  if (shard.keys.size() >= kSeriesKeyCacheSize / SeriesKeyCache::kShards) shard.keys.clear();
  shard.keys.emplace(std::string(raw), key);
  return key;
}

StatusWith<std::shared_ptr<WriteBatch>> BucketCatalog::Insert(
    const TimeseriesCollection& coll, storage::Session& s, const BsonObj& m, const SeriesId* given,
    const catalog::StatementRecord* statement) {
  const auto& o = coll.options;
  BsonElement time = m[o.time_field];
  invariant(time.type() == bson::BsonType::kDate);
  const int64_t t = time.DateMillis();
  BsonElement meta = o.meta_field ? m[*o.meta_field] : BsonElement();
  std::optional<SeriesId> computed;
  if (given == nullptr) computed.emplace(SeriesKey(coll, meta));
  const SeriesId& series = given != nullptr ? *given : *computed;
  const std::string& series_key = series.key;
  std::string_view meta_field = o.meta_field ? std::string_view(*o.meta_field) : std::string_view();

  Stripe& stripe = StripeFor(series);
  InternalReads internal;  // reopening reads stored buckets under the stripe lock
  std::lock_guard lk(stripe.mu);
  // The series' open bucket: the one it last went to, while the stripe still holds it open.
  std::shared_ptr<Bucket> open = series.open_hint.lock();
  if (!open || !open->in_open) {
    auto it = stripe.open.find(HashedKey{series.key, series.hash});
    open = it == stripe.open.end() ? nullptr : it->second;
  }
  const bool first = !open || open->num_measurements == 0;
  // One walk of the measurement sizes it and compares its shape with the one the open bucket
  // last took: of that shape, it is compatible without a walk of the bucket's field tree.
  static const BucketFieldTree kNoFields;
  const BucketFieldTree& open_fields = open ? open->fields : kNoFields;
  MeasurementSize size;
  bool compressible = true;
  const bool same_shape = open_fields.HasShapeOf(m, meta_field, [&](const bson::FieldView& f) {
    size.Add(f);
    compressible = compressible && bsoncolumn::BsonColumnBuilder::CanHold(f.type, f.value);
  });
  const bool fits = same_shape || open_fields.IsCompatible(m, meta_field);
  int64_t add = size.Total(first);
  // Its identity, without keeping it alive (an address could be reused by the next bucket).
  const std::weak_ptr<Bucket> was_open = open;
  HG_ASSIGN_OR_RETURN(std::shared_ptr<Bucket> b,
                      BucketFor(coll, s, stripe, series_key, m, t, meta, static_cast<size_t>(add),
                                fits, std::move(open)));
  const bool same_bucket = !was_open.owner_before(b) && !b.owner_before(was_open);
  if (!same_bucket) series.open_hint = b;
  if (!compressible && b->compressed.load()) {
    return Status(ErrorCode::kBadValue,
                  "a measurement holding a javascriptWithScope value cannot be stored in a "
                  "compressed time-series bucket (see hourglassTimeseriesAlwaysCompressBuckets)");
  }
  if (b->num_measurements == 0) add = size.Total(true);
  b->num_measurements++;
  b->size += add;
  if (same_bucket ? same_shape : b->fields.HasShapeOf(m, meta_field)) {
    b->minmax_deferred = true;  // the schema holds it already
  } else {
    b->fields.UpdateRecordingShape(m, meta_field);
    b->tree_ahead = true;
  }
  if (!b->pending) {
    b->pending = std::make_shared<WriteBatch>(b);
    stripe.Used(*b);
    // Series whose buckets are all open open none: their growth makes room too.
    if (same_bucket && memory_usage_.load() > MemoryThreshold())
      ExpireIdleBuckets(stripe, series_key);
  }
  b->pending->measurements.push_back(m);
  if (statement != nullptr) {
    std::vector<catalog::StatementRecord>& records = b->pending->statements;
    if (!records.empty() && records.back().session == statement->session &&
        records.back().txn_number == statement->txn_number) {
      records.back().stmt_ids.insert(records.back().stmt_ids.end(), statement->stmt_ids.begin(),
                                     statement->stmt_ids.end());
    } else {
      records.push_back(*statement);
    }
  }
  return b->pending;
}

// --- commit ------------------------------------------------------------------------------------

Status BucketCatalog::Commit(const TimeseriesCollection& coll, storage::Session& s,
                             const std::shared_ptr<WriteBatch>& batch) {
  Bucket& b = *batch->bucket;
  CollectionState& cs = State(coll.uuid);
  if (journal_) {
    {
      // Wait for the bucket's committer, which may write this batch too.
      std::unique_lock lk(b.mu);
      if (!batch->done && b.committing.load()) Count(cs, Stat::kNumWaits);
      while (!batch->done && b.committing.load()) b.cv.wait(lk);
      if (batch->done) return batch->status;
    }
    std::vector<Status> statuses;
    CommitAll(coll, s, {batch}, &statuses);
    return statuses[0];
  }
  return CommitWriteThrough(coll, s, batch);
}

Status BucketCatalog::CommitWriteThrough(const TimeseriesCollection& coll, storage::Session& s,
                                         const std::shared_ptr<WriteBatch>& batch) {
  InternalReads internal;  // its reads (resync, index maintenance) are the catalog's own
  Bucket& b = *batch->bucket;
  CollectionState& cs = State(coll.uuid);
  {
    std::unique_lock lk(b.mu);
    bool waited = false;
    while (!batch->done && b.committing.load()) {
      if (!waited) Count(cs, Stat::kNumWaits);
      waited = true;
      b.cv.wait(lk);
    }
    if (batch->done) return batch->status;
    b.committing = true;
  }
  ClaimForWriteThrough(coll, cs, *batch);
  Status st = Write(coll, s, *batch);
  ReleaseWriteThrough(cs, batch, st);
  return st;
}

void BucketCatalog::ClaimForWriteThrough(const TimeseriesCollection& coll, CollectionState& cs,
                                         WriteBatch& batch) {
  Bucket& b = *batch.bucket;
  // Later measurements start a new batch.
  Stripe& stripe = *b.stripe;
  std::lock_guard lk(stripe.mu);
  if (b.pending.get() == &batch) b.pending.reset();
  // The tree now holds the committed rows and this batch's; later ones go to the next batch.
  if (b.minmax_deferred) {
    const auto& mf = coll.options.meta_field;
    const std::string_view meta_field = mf ? std::string_view(*mf) : std::string_view();
    // A compressed bucket's rows are encoded here, under the lock that guards the tree, by
    // the walk that also bounds their fields: one walk per row instead of two, and the tree
    // folds each field once (Write must not re-stage them, unless it resyncs the document).
    BucketFieldTree::RowBounds bounds;
    if (b.doc.CanStageEncoded() && !b.broken.load() && !b.LayoutMayBeStale(cs.era.load())) {
      b.doc.StageEncoded(batch.measurements, meta_field, &bounds);
      batch.staged = true;
    }
    if (!batch.staged || !b.fields.FoldBounds(bounds)) {
      for (const BsonObj& row : batch.measurements) b.fields.UpdateMinMax(row, meta_field);
    }
  }
  batch.control = BuildBucketControl(b.fields, coll.options.time_field, b.min_time);
  batch.fields_memory = b.fields.ApproxMemory();
}

void BucketCatalog::ReleaseWriteThrough(CollectionState& cs,
                                        const std::shared_ptr<WriteBatch>& batch,
                                        const Status& st) {
  Bucket& b = *batch->bucket;
  // Reads of data just written should not re-apply its chain of edits (with write-back, whose
  // read barrier settles them).
  if (st.ok() && journal_) cs.ListEdited(batch->bucket);
  {
    std::lock_guard lk(b.mu);
    batch->done = true;
    batch->status = st;
    b.committing = false;
  }
  b.cv.notify_all();
}

void BucketCatalog::ClaimUncontended(const std::vector<std::shared_ptr<WriteBatch>>& batches,
                                     std::vector<Status>* statuses, std::vector<size_t>* claimed,
                                     std::vector<size_t>* waiting) {
  for (size_t i = 0; i < batches.size(); ++i) {
    WriteBatch& batch = *batches[i];
    Bucket& b = *batch.bucket;
    std::lock_guard lk(b.mu);
    if (batch.done) {
      (*statuses)[i] = batch.status;
    } else if (b.committing.load()) {
      waiting->push_back(i);
    } else {
      b.committing = true;
      claimed->push_back(i);
    }
  }
}

void BucketCatalog::CommitWriteThroughAll(const TimeseriesCollection& coll, storage::Session& s,
                                          const std::vector<std::shared_ptr<WriteBatch>>& batches,
                                          std::vector<Status>* statuses) {
  InternalReads internal;
  CollectionState& cs = State(coll.uuid);
  std::vector<size_t> claimed, waiting;
  ClaimUncontended(batches, statuses, &claimed, &waiting);
  std::vector<WriteBatch*> together;
  together.reserve(claimed.size());
  for (size_t i : claimed) {
    ClaimForWriteThrough(coll, cs, *batches[i]);
    together.push_back(batches[i].get());
  }
  const bool written = WriteTogether(coll, s, together);
  for (size_t i : claimed) {
    Status st = written ? Status::OK() : Write(coll, s, *batches[i]);
    ReleaseWriteThrough(cs, batches[i], st);
    (*statuses)[i] = st;
  }
  for (size_t i : waiting) (*statuses)[i] = CommitWriteThrough(coll, s, batches[i]);
}

namespace {

// For a bucket whose stored document changed under it: rebuilds its min/max from `stored_control`
// (null: the bucket starts afresh) and the rows of `batch`, which is being written, into
// `batch.control`; then folds in the rows of the batch staged after it, if any. Its schema stays
// what it accepted. Takes the stripe lock, which guards the tree.
void RebuildMinMax(Stripe& stripe, WriteBatch& batch, const TimeseriesOptions& o,
                   const BsonObj* stored_control) {
  Bucket& b = *batch.bucket;
  std::string_view meta_field = o.meta_field ? std::string_view(*o.meta_field) : std::string_view();
  std::lock_guard lk(stripe.mu);
  b.fields.ResetMinMax();
  if (stored_control != nullptr) {
    b.fields.UpdateMinMax((*stored_control)["min"].Obj(), {});
    b.fields.UpdateMinMax((*stored_control)["max"].Obj(), {});
  }
  for (const BsonObj& row : batch.measurements) b.fields.UpdateMinMax(row, meta_field);
  batch.control = BuildBucketControl(b.fields, o.time_field, b.min_time);
  batch.fields_memory = b.fields.ApproxMemory();
  if (b.pending) {
    for (const BsonObj& row : b.pending->measurements) b.fields.UpdateMinMax(row, meta_field);
  }
}

// Stores what `doc`'s Prepare made (`full`, `edits`): a new bucket's document, a stored one's
// whole rewrite (a plain update), or a stored one's edits (in place; the user indexes on
// control.min/max and meta follow the new bounds either way).
Status StoreBucket(catalog::Collection& buckets, storage::Session& s, BucketDocument& doc,
                   const std::string& full,
                   const std::vector<storage::Session::Modification>& edits) {
  if (!doc.stored()) {
    return buckets.Insert(s, BsonObj(full.data()), catalog::Collection::WriteOrigin::kBucketCatalog)
        .status();
  }
  const int64_t rid = catalog::ClusteredRecordId(doc.id());
  // The diff only a replicated collection logs; a standalone's writes skip building it.
  const BsonObj diff = buckets.IsReplicated() ? doc.PreparedDiff() : BsonObj();
  if (doc.prepared_whole()) return buckets.ReplaceRecord(s, rid, BsonObj(full.data()), diff);
  BsonObj id = bson::BsonBuilder().AppendObjectId("_id", doc.id()).Obj();
  return buckets.ModifyRecord(s, rid, id.FirstElement(), edits, diff);
}

// Reports the committed `rows` of bucket `doc` at or after their latest.Depth()-th latest time,
// as unpacking the bucket yields them (time, meta, then the columns in stored order), to `latest`.
void ReportLatest(LatestMeasurements& latest, const TimeseriesOptions& o, const BucketDocument& doc,
                  const std::vector<BsonObj>& rows, uint64_t untracked_before) {
  if (!latest.Wanted()) return;  // dropped anyway (no last-point reader yet)
  const int64_t depth = latest.Depth();
  int64_t max = std::numeric_limits<int64_t>::min(), from = max;
  for (const BsonObj& row : rows) max = std::max(max, row[o.time_field].DateMillis());
  if (depth == 1) {
    from = max;
  } else {
    std::vector<int64_t> times;
    times.reserve(rows.size());
    for (const BsonObj& row : rows) times.push_back(row[o.time_field].DateMillis());
    from = LatestMeasurements::NthLargest(std::move(times), depth);
  }
  const std::vector<std::string_view> columns = doc.ColumnNames();
  std::vector<BsonObj> recent;
  for (const BsonObj& row : rows) {
    BsonElement t = row[o.time_field];
    if (t.DateMillis() < from) continue;
    bson::BsonBuilder m;
    m.AppendElement(t);
    if (o.meta_field && !doc.meta().eoo()) m.AppendElementAs(doc.meta(), *o.meta_field);
    for (std::string_view name : columns) {
      if (name == o.time_field) continue;
      BsonElement e = row.GetField(name);
      if (!e.eoo()) m.AppendElement(e);
    }
    recent.push_back(m.Obj());
  }
  if (!recent.empty())
    latest.Committed(doc.meta(), max, std::move(recent), untracked_before, depth);
}

}  // namespace

Status BucketCatalog::Write(const TimeseriesCollection& coll, storage::Session& s,
                            WriteBatch& batch) {
  Bucket& b = *batch.bucket;
  CollectionState& cs = State(coll.uuid);
  const auto& o = coll.options;
  std::string_view meta_field = o.meta_field ? std::string_view(*o.meta_field) : std::string_view();
  PreparedWrite w;
  HG_RETURN_IF_ERROR(PrepareWrite(coll, s, batch, &w));
  uint64_t& era_seen = w.era_seen;
  BsonObj& control = w.control;
  bool& insert = w.insert;
  int64_t& old_size = w.old_size;
  std::string& full = w.full;
  std::vector<storage::Session::Modification>& edits = w.edits;
  Status st = Status::OK();
  const int64_t max_retries = GetParams().max_retries->GetInt();
  for (int64_t attempt = 0;; ++attempt) {
    if (insert && static_cast<int64_t>(full.size()) > kMaxBsonSize) {
      Count(cs, Stat::kNumBucketDocumentsTooLargeInsert);
      st = Status(ErrorCode::kBSONObjectTooLarge, "time-series bucket document is too large");
      break;
    }
    bool stale = false;
    st = storage::RetryOnWriteConflict([&] {
      auto guard = coll.buckets->WriteGuard();  // until the commit (index builds wait for it)
      // A rewrite of stored buckets (timeseries/bucket_scan.h) that committed since the layout
      // was checked would make these edits land on bytes they were not made for.
      stale = b.doc.stored() && cs.era.load() != era_seen;
      if (stale) return Status::OK();
      storage::WriteUnit wu(s);
      HG_RETURN_IF_ERROR(wu.begin_status());
      HG_RETURN_IF_ERROR(StoreBucket(*coll.buckets, s, b.doc, full, edits));
      HG_RETURN_IF_ERROR(RecordStatements(s, batch));
      return wu.Commit();
    });
    if (st.ok() && stale) {
      era_seen = cs.era.load();
      HG_RETURN_IF_ERROR(Resync(coll, s, batch));
      control = batch.control;
      if (!batch.staged) {
        b.doc.StageRows(batch.measurements, meta_field);
        batch.staged = true;
      }
      insert = !b.doc.stored();
      old_size = static_cast<int64_t>(b.doc.size());
      b.doc.Prepare(control, &full, &edits, GetParams().rewrite_after->GetInt());
      continue;
    }
    if (!insert && st.code() == ErrorCode::kNoSuchKey) {
      // The stored bucket is gone (expired by TTL or deleted directly) while it was open: these
      // rows start a new bucket instead.
      std::string meta_bytes;
      if (!b.doc.meta().eoo()) meta_bytes.assign(b.doc.meta().raw(), b.doc.meta().size());
      b.doc = NewBucketDocument(NewBucketId(b.min_time),
                                meta_bytes.empty() ? BsonElement() : BsonElement(meta_bytes.data()),
                                o.time_field);
      b.compressed = b.doc.compressed();
      RebuildMinMax(*b.stripe, batch, o, nullptr);
      control = batch.control;
      b.doc.StageRows(batch.measurements, meta_field);
      b.doc.Prepare(control, &full, &edits);
      insert = true;
      old_size = 0;
      continue;
    }
    if (!insert || st.code() != ErrorCode::kDuplicateKey) break;
    if (attempt + 1 >= max_retries) {
      st = Status(ErrorCode::kLocation6130900,
                  "Unable to insert a new time-series bucket: too many _id collisions");
      break;
    }
    // Another bucket already has this _id prefix: draw a new one.
    b.doc.SetId(NewBucketId(b.min_time));
    b.doc.Prepare(control, &full, &edits);
    {
      Stripe& stripe = *b.stripe;
      std::lock_guard lk(stripe.mu);
      stripe.Register(batch.bucket, b.doc.id());
    }
  }
  b.doc.Finish(st.ok());
  if (!st.ok()) {
    b.broken = true;
    return st;
  }
  Written(coll, batch, w);
  return Status::OK();
}

Status BucketCatalog::PrepareWrite(const TimeseriesCollection& coll, storage::Session& s,
                                   WriteBatch& batch, PreparedWrite* w) {
  Bucket& b = *batch.bucket;
  CollectionState& cs = State(coll.uuid);
  const auto& o = coll.options;
  std::string_view meta_field = o.meta_field ? std::string_view(*o.meta_field) : std::string_view();
  if (b.broken.load()) {
    return Status(ErrorCode::kInternalError,
                  "time-series bucket " + b.doc.id().ToHex() + " had a failed write");
  }
  // Read before the write's transaction: see LatestMeasurements::Committed.
  w->untracked_before = coll.buckets->UntrackedWrites();
  w->era_seen = cs.era.load();
  if (b.LayoutMayBeStale(w->era_seen)) {
    // Append to what is stored now, not to the layout remembered.
    HG_RETURN_IF_ERROR(Resync(coll, s, batch));
  }
  w->control = batch.control;
  if (!batch.staged) {
    b.doc.StageRows(batch.measurements, meta_field);
    batch.staged = true;  // a second Prepare (a retry alone after a failed group) takes them
  }
  w->insert = !b.doc.stored();
  w->old_size = static_cast<int64_t>(b.doc.size());
  b.doc.Prepare(w->control, &w->full, &w->edits, GetParams().rewrite_after->GetInt());
  return Status::OK();
}

void BucketCatalog::Written(const TimeseriesCollection& coll, WriteBatch& batch,
                            const PreparedWrite& w) {
  Bucket& b = *batch.bucket;
  CollectionState& cs = State(coll.uuid);
  ReportLatest(*cs.latest, coll.options, b.doc, batch.measurements, w.untracked_before);
  int64_t n = static_cast<int64_t>(batch.measurements.size());
  Count(cs, w.insert ? Stat::kNumBucketInserts : Stat::kNumBucketUpdates);
  Count(cs, Stat::kNumCommits);
  Count(cs, Stat::kNumMeasurementsCommitted, n);
  coll.buckets->AdjustCounts(w.insert ? 1 : 0, static_cast<int64_t>(b.doc.size()) - w.old_size);
  AccountMemory(b, b.HeldMemory(/*measure_doc=*/true), batch.fields_memory);
}

bool BucketCatalog::WriteTogether(const TimeseriesCollection& coll, storage::Session& s,
                                  const std::vector<WriteBatch*>& batches) {
  if (batches.size() < 2) return false;
  CollectionState& cs = State(coll.uuid);
  std::vector<PreparedWrite> ws(batches.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    if (!PrepareWrite(coll, s, *batches[i], &ws[i]).ok()) return false;
    if (ws[i].insert && static_cast<int64_t>(ws[i].full.size()) > kMaxBsonSize) return false;
  }
  bool stale = false;
  Status st = storage::RetryOnWriteConflict([&] {
    if (failTimeseriesWriteTogether.ShouldFail()) {
      return Status(ErrorCode::kInternalError, "failTimeseriesWriteTogether");
    }
    auto guard = coll.buckets->WriteGuard();  // until the commit (index builds wait for it)
    // A rewrite of stored buckets since the layouts were read: Write resyncs each.
    for (size_t i = 0; i < batches.size() && !stale; ++i) {
      stale = batches[i]->bucket->doc.stored() && cs.era.load() != ws[i].era_seen;
    }
    if (stale) return Status::OK();
    storage::WriteUnit wu(s);
    HG_RETURN_IF_ERROR(wu.begin_status());
    for (size_t i = 0; i < batches.size(); ++i) {
      HG_RETURN_IF_ERROR(
          StoreBucket(*coll.buckets, s, batches[i]->bucket->doc, ws[i].full, ws[i].edits));
      HG_RETURN_IF_ERROR(RecordStatements(s, *batches[i]));
    }
    return wu.Commit();
  });
  if (!st.ok() || stale) return false;
  for (size_t i = 0; i < batches.size(); ++i) {
    batches[i]->bucket->doc.Finish(true);
    Written(coll, *batches[i], ws[i]);
  }
  written_together_ += static_cast<int64_t>(batches.size());
  return true;
}

Status BucketCatalog::CompressClosedBuckets(const TimeseriesCollection& coll, storage::Session& s) {
  CollectionState& cs = State(coll.uuid);
  InternalReads internal;
  // The stripe mutex is taken before closed_mu elsewhere (BucketFor): take the list out first.
  std::vector<std::shared_ptr<Bucket>> taken;
  {
    std::lock_guard ck(cs.closed_mu);
    if (cs.closed.empty()) return Status::OK();
    taken.swap(cs.closed);
  }
  std::vector<std::shared_ptr<Bucket>> ready, waiting;
  for (auto& b : taken) {
    bool in_flight;
    {
      std::lock_guard lk(b->stripe->mu);
      in_flight = b->pending != nullptr;
    }
    // With write-back, a bucket is compressed once storage holds all its rows.
    in_flight = in_flight || b->committing.load() || b->dirty.load();
    (in_flight ? waiting : ready).push_back(std::move(b));
  }
  if (!waiting.empty()) {
    std::lock_guard ck(cs.closed_mu);
    for (auto& b : waiting) cs.closed.push_back(std::move(b));
  }
  Status first_error = Status::OK();
  // MongoDB's compression statistics: a bucket that fails to compress counts its own size as
  // compressed (it stays as it was).
  auto record = [&](int64_t uncompressed, int64_t compressed, int64_t restarts, bool ok) {
    Count(cs, Stat::kNumBytesUncompressed, uncompressed);
    Count(cs, Stat::kNumBytesCompressed, ok ? compressed : uncompressed);
    Count(cs, Stat::kNumSubObjCompressionRestart, restarts);
    Count(cs, ok ? Stat::kNumCompressedBuckets : Stat::kNumUncompressedBuckets);
  };
  for (const auto& b : ready) {
    // A bucket that never reached storage, failed, or belongs to a cleared era (a direct write
    // may have changed it) is left as it is.
    if (!b->StoredAsWritten(cs.era.load())) continue;
    if (b->compressed.load()) {
      if (Status st = SettleBucket(coll, s, *b); !st.ok() && first_error.ok()) first_error = st;
      continue;
    }
    int64_t old_size = 0, new_size = 0, restarts = 0;
    bool compress_failed = false;
    Status st = storage::RetryOnWriteConflict([&] {
      old_size = new_size = restarts = 0;  // this attempt's
      auto guard = coll.buckets->WriteGuard();
      storage::WriteUnit wu(s);
      HG_RETURN_IF_ERROR(wu.begin_status());
      const int64_t rid = catalog::ClusteredRecordId(b->doc.id());
      HG_ASSIGN_OR_RETURN(auto rec, coll.buckets->FindRecord(s, rid));
      if (!rec) return Status::OK();  // expired or deleted meanwhile
      BsonElement version = rec->doc["control"].Obj()["version"];
      if (!version.IsNumber() || version.NumberLong() != 1) return Status::OK();
      old_size = rec->doc.size();
      auto compressed = CompressBucket(rec->doc, coll.options.time_field, 2, &restarts);
      compress_failed = !compressed.ok();
      if (compress_failed) return compressed.status();
      HG_RETURN_IF_ERROR(coll.buckets->Update(s, rid, rec->doc, compressed.value(),
                                              catalog::Collection::WriteOrigin::kBucketCatalog));
      new_size = compressed.value().size();
      return wu.Commit();
    });
    if (!st.ok()) {
      if (compress_failed) record(old_size, old_size, 0, false);
      if (first_error.ok()) first_error = st;
      continue;
    }
    if (new_size == 0) continue;  // nothing to compress (gone, or compressed already)
    record(old_size, new_size, restarts, true);
    coll.buckets->AdjustCounts(0, new_size - old_size);
  }
  return first_error;
}

Status BucketCatalog::SettleBucket(const TimeseriesCollection& coll, storage::Session& s, Bucket& b,
                                   Settled* outcome, bool unlist) {
  Settled unused;
  Settled& out = outcome != nullptr ? *outcome : unused;
  out = Settled{.stored = false, .left_edited = true};
  if (!TryClaimCommitRights(b)) return Status::OK();  // a writer holds it: left as it is
  Status st = Status::OK();
  out.left_edited = b.doc.edited_since_whole();
  if (out.left_edited) {
    st = storage::RetryOnWriteConflict([&] {
      out.stored = false;  // this attempt's
      auto guard = coll.buckets->WriteGuard();
      storage::WriteUnit wu(s);
      HG_RETURN_IF_ERROR(wu.begin_status());
      // False when it expired or was deleted meanwhile.
      HG_ASSIGN_OR_RETURN(bool found,
                          coll.buckets->StoreAgainWhole(s, catalog::ClusteredRecordId(b.doc.id())));
      HG_RETURN_IF_ERROR(wu.Commit());
      out.stored = found;
      return Status::OK();
    });
    if (st.ok()) b.doc.MarkStoredWhole();
    out.stored = out.stored && st.ok();
    out.left_edited = !st.ok();
  }
  // Before the rights go: a writer that edits it after them lists it again.
  if (unlist && !out.left_edited) b.listed_edited = false;
  ReleaseCommitRights(b);
  return st;
}

void BucketCatalog::SettleEdited(const TimeseriesCollection& coll, storage::Session& s,
                                 CollectionState& cs) {
  std::vector<std::weak_ptr<Bucket>> listed, left;
  {
    std::lock_guard lk(cs.edited_mu);
    listed.swap(cs.edited);
  }
  Status first_error = Status::OK();
  for (std::weak_ptr<Bucket>& w : listed) {
    std::shared_ptr<Bucket> b = w.lock();
    if (!b) continue;
    // One that failed, was retired or belongs to a cleared era is no longer written.
    if (!b->StoredAsWritten(cs.era.load())) {
      b->listed_edited = false;
      continue;
    }
    Settled done;
    Status st = SettleBucket(coll, s, *b, &done, /*unlist=*/true);
    if (!st.ok() && first_error.ok()) first_error = st;
    if (done.stored) stored_whole_for_reads_.fetch_add(1);
    if (done.left_edited) left.push_back(std::move(w));
  }
  {
    // Commits writing through may have listed buckets meanwhile.
    std::lock_guard lk(cs.edited_mu);
    cs.edited.insert(cs.edited.end(), left.begin(), left.end());
    cs.has_edited = !cs.edited.empty();
  }
  // The read goes on: the bucket holds every row either way, and the next read tries again.
  if (!first_error.ok()) {
    LOGW("STORAGE", 8800107, "An edited time-series bucket was not stored again whole",
         "{\"ns\":" + JsonQuote(coll.buckets->ns()) +
             ",\"error\":" + JsonQuote(first_error.ToString()) + "}");
  }
}

Status BucketCatalog::Resync(const TimeseriesCollection& coll, storage::Session& s,
                             WriteBatch& batch) {
  Bucket& b = *batch.bucket;
  const auto& o = coll.options;
  HG_ASSIGN_OR_RETURN(auto rec,
                      coll.buckets->FindRecord(s, catalog::ClusteredRecordId(b.doc.id())));
  if (!rec) {
    // Deleted: the commit starts a new bucket (Write's NoSuchKey path).
    return Status::OK();
  }
  BsonObj control = rec->doc["control"].Obj();
  auto layout = BucketDocument::FromStored(rec->doc, o.time_field);
  if (!layout.ok() || !(layout.value().id() == b.doc.id())) {
    b.broken = true;
    return Status(ErrorCode::kWriteConflict,
                  "time-series bucket " + b.doc.id().ToHex() + " was rewritten concurrently");
  }
  b.doc = std::move(layout).value();
  b.compressed = b.doc.compressed();
  batch.staged = false;  // into the document replaced: Write stages the rows again
  RebuildMinMax(*b.stripe, batch, o, &control);
  return Status::OK();
}

void BucketCatalog::AccountMemory(Bucket& b, size_t doc_memory,
                                  std::optional<size_t> fields_memory) {
  std::lock_guard lk(b.stripe->mu);
  const int64_t mem =
      static_cast<int64_t>(sizeof(Bucket) + doc_memory + fields_memory.value_or(b.fields_memory));
  const int64_t old = b.memory.exchange(mem);
  if (b.in_open) memory_usage_ += mem - old;
}

// --- write-back ----------------------------------------------------------------------------------

namespace {
// What writing rows to a stored bucket did.
struct AppendResult {
  bson::ObjectId id;  // the bucket the rows went to
  bool inserted = false;
  int64_t size_delta = 0;
};

// Appends `rows` to the stored bucket `*existing` when it is a version-1 bucket that takes
// appends, recreates it under that _id if it is gone, and otherwise (no `existing`, a compressed,
// closed or unreadable bucket) writes them as a new bucket of start `min_time`: how rows whose
// in-memory bucket no longer describes storage (and the journal's rows at startup) reach storage.
StatusWith<AppendResult> AppendToStoredBucket(catalog::Collection& buckets, storage::Session& s,
                                              const bson::ObjectId* existing,
                                              const BsonElement& meta, int64_t min_time,
                                              const std::vector<BsonObj>& rows,
                                              std::string_view time_field,
                                              std::string_view meta_field, int64_t max_retries) {
  std::optional<BucketDocument> doc;
  BucketFieldTree tree;
  tree.SetCollator(buckets.DefaultCollator());
  int64_t start = min_time, old_size = 0;
  bool fresh = existing == nullptr;
  if (existing != nullptr) {
    HG_ASSIGN_OR_RETURN(auto rec, buckets.FindRecord(s, catalog::ClusteredRecordId(*existing)));
    if (!rec) {
      doc.emplace(NewBucketDocument(*existing, meta, time_field));
    } else {
      const BsonObj& d = rec->doc;
      BsonElement c = d["control"];
      if (c.type() == bson::BsonType::kObject && !c.Obj()["closed"].Truthy() &&
          c.Obj()["min"].type() == bson::BsonType::kObject &&
          c.Obj()["max"].type() == bson::BsonType::kObject) {
        BsonElement min_t = c.Obj()["min"].Obj()[time_field];
        auto layout = BucketDocument::FromStored(d, time_field);
        auto fields = BucketFieldTree::FromBucket(c.Obj()["min"].Obj(), c.Obj()["max"].Obj(),
                                                  buckets.DefaultCollator());
        if (layout.ok() && fields.ok() && min_t.type() == bson::BsonType::kDate &&
            layout.value().id() == *existing) {
          doc.emplace(std::move(layout).value());
          tree = std::move(fields).value();
          start = min_t.DateMillis();
          old_size = d.size();
        }
      }
    }
  }
  if (!doc) {
    fresh = true;
    doc.emplace(NewBucketDocument(NewBucketId(min_time), meta, time_field));
  }
  for (const BsonObj& row : rows) tree.Update(row, meta_field);
  const BsonObj control = BuildBucketControl(tree, time_field, start);
  doc->StageRows(rows, meta_field);
  std::string full;
  std::vector<storage::Session::Modification> edits;
  const bool stored = doc->stored();
  for (int64_t attempt = 0;; ++attempt) {
    doc->Prepare(control, &full, &edits);
    Status st = StoreBucket(buckets, s, *doc, full, edits);
    if (st.ok()) break;
    if (st.code() != ErrorCode::kDuplicateKey || !fresh || attempt + 1 >= max_retries) return st;
    doc->SetId(NewBucketId(min_time));  // another bucket has this _id's RecordId
  }
  doc->Finish(true);
  return AppendResult{doc->id(), !stored, static_cast<int64_t>(doc->size()) - old_size};
}

// The _id a flush writes `b`'s rows under (guarded by the collection's flush_mu).
const bson::ObjectId& TargetId(const Bucket& b) {
  return b.retired.load() ? b.retired_id : b.doc.id();
}

// Stages in `b.doc` the rows held for the write-back (`flushing`, then `unflushed`) up to the
// `upto`-th that are not staged yet: `doc` stages them in their order, so its staged rows are
// always the first of those. Returns whether it staged any. At thousands of series a commit
// brings one row to each of a thousand buckets, whose layouts are no longer in the processor's
// caches; a flush stages a bucket's rows in one run. The caller holds the bucket's commit rights.
bool StageHeldRows(Bucket& b, size_t upto, std::string_view meta_field) {
  size_t staged = b.doc.staged_rows();
  if (staged >= upto) return false;
  const std::span<const BsonObj> flushing(b.flushing), unflushed(b.unflushed);
  if (staged < flushing.size()) {
    const size_t to = std::min(upto, flushing.size());
    b.doc.StageSharedRows(flushing.subspan(staged, to - staged), meta_field);
    staged = to;
  }
  if (staged < upto) {
    const size_t from = staged - flushing.size();
    b.doc.StageSharedRows(unflushed.subspan(from, upto - staged), meta_field);
  }
  return true;
}
}  // namespace

void BucketCatalog::CommitAll(const TimeseriesCollection& coll, storage::Session& s,
                              const std::vector<std::shared_ptr<WriteBatch>>& batches,
                              std::vector<Status>* statuses) {
  statuses->assign(batches.size(), Status::OK());
  if (!journal_) {
    CommitWriteThroughAll(coll, s, batches, statuses);
    return;
  }
  CollectionState& cs = State(coll.uuid);
  std::call_once(cs.barrier_installed, [&] {
    coll.buckets->read_barrier().Set([this, uuid = coll.uuid]() -> Status {
      if (t_internal_reads > 0) return Status::OK();
      CollectionState& st = State(uuid);
      TimeseriesCollection c;
      {
        std::lock_guard lk(st.dirty_mu);
        // Nothing to write unless a commit left rows or a flush is still writing those it took
        // (it holds flush_run_mu until its storage commit).
        if (st.journal_keys.empty() && !st.has_edited.load() &&
            std::unique_lock(st.flush_run_mu, std::try_to_lock)) {
          return Status::OK();
        }
        c = st.last_coll;
      }
      auto session = engine_->NewSession();
      return Flush(c, *session, FlushFor::kRead);
    });
  });
  std::vector<size_t> waiting;
  {
    std::shared_lock fl(cs.flush_mu);
    if (!cs.journaling) {
      // Buckets are written at each commit (no flush runs meanwhile: flush_mu).
      CommitWriteThroughAll(coll, s, batches, statuses);
      CountShape(cs, batches);
      return;
    }
    CountShape(cs, batches);
    std::vector<size_t> claimed_at;
    ClaimUncontended(batches, statuses, &claimed_at, &waiting);
    std::vector<WriteBatch*> claimed;
    for (size_t i : claimed_at) claimed.push_back(batches[i].get());
    for (WriteBatch* batch : claimed) {
      Bucket& b = *batch->bucket;
      std::lock_guard lk(b.stripe->mu);
      if (b.pending.get() == batch) b.pending.reset();
      batch->fields_memory = b.fields_memory;
    }
    Status st = claimed.empty() ? Status::OK() : Journal(coll, s, claimed);
    for (size_t k = 0; k < claimed.size(); ++k) {
      Bucket& b = *claimed[k]->bucket;
      {
        std::lock_guard lk(b.mu);
        claimed[k]->done = true;
        claimed[k]->status = st;
        b.committing = false;
      }
      b.cv.notify_all();
      (*statuses)[claimed_at[k]] = st;
    }
  }
  for (size_t i : waiting) (*statuses)[i] = Commit(coll, s, batches[i]);
  // This operation's later reads must find these rows in storage (an upsert, then a read).
  coll.buckets->read_barrier().RunAgainInThisOperation();
}

Status BucketCatalog::RecordStatements(storage::Session& s, const WriteBatch& batch) {
  if (transactions_ == nullptr) return Status::OK();
  for (const catalog::StatementRecord& rec : batch.statements) {
    HG_RETURN_IF_ERROR(transactions_->Record(s, rec));
  }
  return Status::OK();
}

Status BucketCatalog::Journal(const TimeseriesCollection& coll, storage::Session& s,
                              const std::vector<WriteBatch*>& claimed) {
  CollectionState& cs = State(coll.uuid);
  const auto& o = coll.options;
  std::string_view meta_field = o.meta_field ? std::string_view(*o.meta_field) : std::string_view();
  // Read before the write's transaction: see LatestMeasurements::Committed.
  const uint64_t untracked_before = coll.buckets->UntrackedWrites();
  JournalEntryRows je{coll.uuid, o.time_field, meta_field, {}};
  je.buckets.reserve(claimed.size());
  for (WriteBatch* batch : claimed) {
    const Bucket& b = *batch->bucket;
    je.buckets.push_back(
        {TargetId(b), b.min_time, batch->measurements, o.meta_field && b.meta_journaled});
  }
  std::vector<size_t> row_at;
  auto entry = std::make_shared<const std::string>(EncodeJournalEntry(je, &row_at));
  HG_ASSIGN_OR_RETURN(uint64_t key, journal_->Append(*entry));
  if (transactions_ != nullptr &&
      std::any_of(claimed.begin(), claimed.end(),
                  [](const WriteBatch* b) { return !b->statements.empty(); })) {
    // After the entry, which holds the measurements: a failure here leaves them written, and
    // only a retry of their write would insert them again — never a statement recorded but not
    // written.
    Status recorded = storage::RetryOnWriteConflict([&] {
      storage::WriteUnit wu(s);
      HG_RETURN_IF_ERROR(wu.begin_status());
      for (const WriteBatch* batch : claimed) HG_RETURN_IF_ERROR(RecordStatements(s, *batch));
      return wu.Commit();
    });
    if (!recorded.ok()) {
      LOGW("STORAGE", 8800108, "Retryable write statements not recorded",
           "{\"error\":" + JsonQuote(recorded.ToString()) + "}");
    }
  }
  // The rows stay readable as views into the entry until they are flushed.
  int64_t inserts = 0, measurements = 0;
  // Read once: staging and reporting must agree for every bucket of the entry.
  const bool latest_wanted = cs.latest->Wanted();
  size_t row = 0;
  for (size_t k = 0; k < claimed.size(); ++k) {
    WriteBatch* batch = claimed[k];
    const std::shared_ptr<Bucket>& bp = batch->bucket;
    Bucket& b = *bp;
    b.meta_journaled = true;
    const bson::ObjectId& id = je.buckets[k].id;
    if (b.unflushed_ids.empty() || !(b.unflushed_ids.back() == id)) b.unflushed_ids.push_back(id);
    // MongoDB counts a commit that starts a bucket as an insert, any later one as an update.
    inserts += !b.doc.stored() && b.unflushed.empty() && b.flushing.empty() ? 1 : 0;
    const size_t n = batch->measurements.size();
    for (size_t j = 0; j < n; ++j) b.unflushed.emplace_back(entry, entry->data() + row_at[row++]);
    if (!b.dirty.exchange(true)) {
      std::lock_guard lk(cs.dirty_mu);
      cs.dirty.push_back(bp);
    }
    // The rows wait in `unflushed` for the flush to stage them in `doc`. A last-point reader's
    // cache needs the bucket's columns now, so while it is kept they are staged here.
    bool doc_changed = false;
    if (latest_wanted) {
      doc_changed = StageHeldRows(b, b.flushing.size() + b.unflushed.size(), meta_field);
      ReportLatest(*cs.latest, o, b.doc, batch->measurements, untracked_before);
    }
    measurements += static_cast<int64_t>(batch->measurements.size());
    AccountMemory(b, b.HeldMemory(doc_changed), batch->fields_memory);
  }
  const int64_t commits = static_cast<int64_t>(claimed.size());
  Count(cs, Stat::kNumBucketInserts, inserts);
  Count(cs, Stat::kNumBucketUpdates, commits - inserts);
  Count(cs, Stat::kNumCommits, commits);
  Count(cs, Stat::kNumMeasurementsCommitted, measurements);
  std::lock_guard lk(cs.dirty_mu);
  if (cs.journal_keys.empty()) cs.oldest_unflushed_ms = NowMillis();
  cs.journal_keys.push_back(key);
  cs.unflushed_bytes += static_cast<int64_t>(entry->size());
  cs.last_coll = coll;
  return Status::OK();
}

Status BucketCatalog::FlushBucket(const TimeseriesCollection& coll, storage::Session& s, Bucket& b,
                                  FlushFor why, FlushedBucket* out) {
  CollectionState& cs = State(coll.uuid);
  const auto& o = coll.options;
  std::string_view meta_field = o.meta_field ? std::string_view(*o.meta_field) : std::string_view();
  const int64_t max_retries = GetParams().max_retries->GetInt();
  *out = FlushedBucket();
  BsonObj* control = &out->control;
  auto retire_to = [&](const bson::ObjectId* existing) -> Status {
    HG_ASSIGN_OR_RETURN(AppendResult r,
                        AppendToStoredBucket(*coll.buckets, s, existing, b.doc.meta(), b.min_time,
                                             b.flushing, o.time_field, meta_field, max_retries));
    b.retired_id = r.id;
    b.retired = true;
    out->inserted = r.inserted;
    out->size_delta = r.size_delta;
    for (const BsonObj& row : b.flushing) out->bytes += row.size();
    return Status::OK();
  };
  if (b.retired.load() || b.LayoutMayBeStale(cs.era.load())) {
    // Storage may no longer hold what `doc` describes: append to what it holds now.
    const bson::ObjectId target = TargetId(b);
    return retire_to(&target);
  }
  // A compressed bucket's rows are encoded before its control is built, by the walk that also
  // bounds their fields (as a commit that writes through does): the tree then folds each field
  // once instead of walking every row again. We hold the bucket's commit rights: the layout is
  // ours, and only the tree needs the stripe's lock.
  StageHeldRows(b, b.flushing.size(), meta_field);
  const auto rows = static_cast<uint32_t>(b.flushing.size());
  BucketFieldTree::RowBounds bounds;
  const uint32_t unbounded = b.doc.EncodeRowsBounded(rows, &bounds);
  {
    // Unless a measurement walked the tree since the flush took its rows (or was being staged
    // then), the tree holds the bounds of the stored rows and of these once they are folded:
    // rows staged since, of the recorded shape, wait for their own flush to fold them.
    std::lock_guard lk(b.stripe->mu);
    if (b.minmax_deferred) {
      auto fold_rows = [&](uint32_t from, uint32_t to) {
        for (uint32_t i = from; i < to; ++i) b.fields.UpdateMinMax(b.flushing[i], meta_field);
      };
      fold_rows(0, unbounded);
      if (unbounded < rows && !b.fields.FoldBounds(bounds)) fold_rows(unbounded, rows);
    }
    if (!b.tree_ahead) *control = BuildBucketControl(b.fields, o.time_field, b.min_time);
    b.fields_memory = b.fields.ApproxMemory();
  }
  if (control->IsEmpty()) {
    BucketFieldTree tree;
    tree.SetCollator(CollatorOf(coll));
    if (!b.flushed_control.IsEmpty()) {
      auto t = BucketFieldTree::FromBucket(b.flushed_control["min"].Obj(),
                                           b.flushed_control["max"].Obj(), CollatorOf(coll));
      if (t.ok()) tree = std::move(t).value();
    }
    for (const BsonObj& row : b.flushing) tree.Update(row, meta_field);
    *control = BuildBucketControl(tree, o.time_field, b.min_time);
  }
  // A read's flush writes a compressed bucket whole, as a plain update: a stored bucket's edits
  // stay a chain in WiredTiger that every read of data just written re-applies.
  std::string full;
  std::vector<storage::Session::Modification> edits;
  b.doc.Prepare(*control, &full, &edits,
                why == FlushFor::kRead ? 0 : GetParams().flush_rewrite_after->GetInt(),
                static_cast<uint32_t>(b.flushing.size()));
  const bool insert = !b.doc.stored();
  Status st = StoreBucket(*coll.buckets, s, b.doc, full, edits);
  if (st.code() == ErrorCode::kNoSuchKey || st.code() == ErrorCode::kDuplicateKey) {
    // Deleted while open (TTL, a direct delete), or its _id taken: the rows start a new bucket.
    *control = BsonObj();
    return retire_to(nullptr);
  }
  HG_RETURN_IF_ERROR(st);
  out->inserted = insert;
  out->size_delta = 0;  // known once the flush commits (Finish)
  out->bytes = static_cast<int64_t>(full.size());
  for (const auto& e : edits) out->bytes += static_cast<int64_t>(e.data.size());
  return Status::OK();
}

namespace {
// flush_run_mu for a flush that must run, counted in flush_waiters while it waits.
std::unique_lock<std::mutex> AwaitFlushTurn(std::mutex& run_mu, std::atomic<int>& waiters) {
  waiters.fetch_add(1);
  std::unique_lock run(run_mu);
  waiters.fetch_sub(1);
  return run;
}
}  // namespace

Status BucketCatalog::Flush(const TimeseriesCollection& coll, storage::Session& s, FlushFor why) {
  if (!journal_) return Status::OK();
  CollectionState& cs = State(coll.uuid);
  return FlushInTurn(coll, s, AwaitFlushTurn(cs.flush_run_mu, cs.flush_waiters), why);
}

Status BucketCatalog::FlushInTurn(const TimeseriesCollection& coll, storage::Session& s,
                                  std::unique_lock<std::mutex> running, FlushFor why) {
  HG_RETURN_IF_ERROR(WriteDirtyBuckets(coll, s, std::move(running), std::nullopt, why));
  // The buckets that closed for good now have all their rows in storage.
  if (Status st = CompressClosedBuckets(coll, s); !st.ok()) {
    LOGW("STORAGE", 8800101, "A closed time-series bucket stays as it was",
         "{\"ns\":" + JsonQuote(coll.buckets->ns()) + ",\"error\":" + JsonQuote(st.ToString()) +
             "}");
  }
  return Status::OK();
}

Status BucketCatalog::WriteDirtyBuckets(const TimeseriesCollection& coll, storage::Session& s,
                                        [[maybe_unused]] std::unique_lock<std::mutex> running,
                                        std::optional<bool> journaling_after, FlushFor why) {
  InternalReads internal;
  CollectionState& cs = State(coll.uuid);
  std::unique_lock fl(cs.flush_mu);
  std::vector<std::shared_ptr<Bucket>> dirty;
  std::vector<uint64_t> keys;
  cs.TakeUnflushed(&dirty, &keys);
  if (dirty.empty() && keys.empty()) {
    if (journaling_after) cs.journaling = *journaling_after;
    fl.unlock();
    if (why == FlushFor::kRead) SettleEdited(coll, s, cs);
    return Status::OK();
  }
  int64_t taken_bytes = 0, oldest_ms = 0;
  {
    std::lock_guard lk(cs.dirty_mu);
    taken_bytes = std::exchange(cs.unflushed_bytes, 0);
    oldest_ms = cs.oldest_unflushed_ms;
  }
  struct Out {
    FlushedBucket written;
    bool meta_journaled = false;      // as the rows were taken
    bool held = false;                // claimed from the taking to the recording (version 1)
    std::vector<bson::ObjectId> ids;  // the _ids its rows were journaled under
  };
  std::vector<Out> outs(dirty.size());
  for (size_t i = 0; i < dirty.size(); ++i) {
    Bucket& b = *dirty[i];
    b.flushing.swap(b.unflushed);  // `flushing` is empty between flushes
    outs[i].meta_journaled = std::exchange(b.meta_journaled, false);  // its entries go with these
    outs[i].ids = std::exchange(b.unflushed_ids, {});
    b.dirty = false;
    {
      std::lock_guard lk(b.stripe->mu);
      b.tree_ahead = b.pending != nullptr;
    }
    if (!b.doc.compressed()) {
      // No committer holds rights now (they hold flush_mu shared).
      ClaimCommitRights(b);
      outs[i].held = true;
    }
  }
  if (!journaling_after) fl.unlock();
  // Runs fn(i) with bucket i's commit rights held for each i of `todo`, in order, until `full()`,
  // taking each out of `todo` and adding it to `*ran` before its run. A committer holds a
  // bucket's rights while it journals a request's worth of buckets: a bucket it holds is left for
  // later rather than waited for (waiting at each would leave the flush far behind the commits),
  // unless every one left is held.
  auto run_claimed = [&](std::deque<size_t>& todo, const std::function<Status(size_t)>& fn,
                         const std::function<bool()>& full, std::vector<size_t>* ran) -> Status {
    size_t held_in_a_row = 0;
    while (!todo.empty() && !full()) {
      const size_t i = todo.front();
      todo.pop_front();
      const bool claim = !outs[i].held;
      if (claim && !TryClaimCommitRights(*dirty[i])) {
        if (++held_in_a_row <= todo.size()) {
          todo.push_back(i);
          continue;
        }
        ClaimCommitRights(*dirty[i]);  // every one left is held: wait for this one
      }
      held_in_a_row = 0;
      if (ran != nullptr) ran->push_back(i);
      Status st = fn(i);
      if (claim) ReleaseCommitRights(*dirty[i]);
      HG_RETURN_IF_ERROR(st);
    }
    return Status::OK();
  };
  auto run_each = [&](const std::vector<size_t>& which, const std::function<Status(size_t)>& fn) {
    std::deque<size_t> todo(which.begin(), which.end());
    return run_claimed(
        todo, fn, [] { return false; }, nullptr);
  };
  auto write = [&](size_t i) { return FlushBucket(coll, s, *dirty[i], why, &outs[i].written); };
  // The buckets go to storage in transactions of about hourglassTimeseriesFlushTransactionBytes
  // each (0: all in one): WiredTiger builds a transaction's log record in one buffer, grown by
  // copying, so one transaction for thousands of buckets touches as much new memory as it writes;
  // and it writes a record of 512 KiB or more to the log file on its own, from that buffer, which
  // cost the 4,000-series load 10% of its CPU in the kernel's copies (a 256 KiB budget, a
  // bucket over at most, keeps records in its shared log buffers).
  // Each transaction but the last records its buckets' shares of the entries `keys` as written
  // (a crash before the last then replays only the others); the last marks the entries written
  // and forgets those records.
  const int64_t budget = GetParams().flush_transaction_bytes->GetInt();
  std::deque<size_t> todo(dirty.size());
  std::iota(todo.begin(), todo.end(), size_t{0});
  std::vector<size_t> committed;    // the buckets of the transactions that committed
  std::vector<std::string> partly;  // this flush's partly-written records
  Status st = Status::OK();
  do {
    std::vector<size_t> chunk;
    std::string record;
    st = storage::RetryOnWriteConflict([&] {
      if (failTimeseriesFlushTransaction.ShouldFail()) {
        return Status(ErrorCode::kInternalError, "failTimeseriesFlushTransaction");
      }
      auto guard = coll.buckets->WriteGuard();  // until the commit (index builds wait for it)
      storage::WriteUnit wu(s);
      HG_RETURN_IF_ERROR(wu.begin_status());
      if (chunk.empty()) {
        int64_t bytes = 0;
        auto write_counted = [&](size_t i) {
          HG_RETURN_IF_ERROR(write(i));
          bytes += outs[i].written.bytes;
          return Status::OK();
        };
        HG_RETURN_IF_ERROR(run_claimed(
            todo, write_counted, [&] { return budget > 0 && bytes >= budget; }, &chunk));
      } else {
        HG_RETURN_IF_ERROR(run_each(chunk, write));  // a retry writes the same buckets again
      }
      if (todo.empty()) {
        for (uint64_t k : keys) HG_RETURN_IF_ERROR(journal_->MarkWritten(s, k));
        HG_RETURN_IF_ERROR(journal_->ForgetPartlyWritten(s, &partly));
        HG_RETURN_IF_ERROR(journal_->ForgetPartlyWritten(s, &cs.partly_written));
      } else {
        std::vector<bson::ObjectId> ids;
        for (size_t i : chunk) ids.insert(ids.end(), outs[i].ids.begin(), outs[i].ids.end());
        HG_ASSIGN_OR_RETURN(record, journal_->MarkPartlyWritten(s, keys, ids));
      }
      return wu.Commit();
    });
    if (!st.ok()) break;
    committed.insert(committed.end(), chunk.begin(), chunk.end());
    if (!record.empty()) {
      partly.push_back(std::move(record));
      hangTimeseriesFlushBetweenTransactions.PauseWhileSet();
    }
  } while (!todo.empty());
  // The committed buckets' layouts now describe what storage holds.
  int64_t records = 0, bytes = 0;
  Status recorded = run_each(committed, [&](size_t i) {
    Bucket& b = *dirty[i];
    FlushedBucket& out = outs[i].written;
    if (!out.control.IsEmpty()) {
      const int64_t old_size = static_cast<int64_t>(b.doc.size());
      b.doc.Finish(true);
      out.size_delta = static_cast<int64_t>(b.doc.size()) - old_size;
      b.flushed_control = out.control;
      // The rows committed since the flush took its own are the next flush's. Copies of them
      // are encoded now, not to wait in memory for it; held ones (views into the journal's
      // entries, which `unflushed` holds anyway) wait, to be encoded in one run with the rows
      // after them, and bounded as they are.
      b.doc.EncodeStagedCopies();
      AccountMemory(b, b.HeldMemory(/*measure_doc=*/true), std::nullopt);
      cs.ListEdited(dirty[i]);
    }
    b.flushing.clear();
    b.flushing.shrink_to_fit();
    records += out.inserted ? 1 : 0;
    bytes += out.size_delta;
    return Status::OK();
  });
  invariant(recorded.ok());
  coll.buckets->AdjustCounts(records, bytes);
  if (!st.ok()) {
    // The other buckets' rows go back ahead of those committed since, in memory, and every
    // entry stays in the journal, for the next flush; the records of what was written tell a
    // replay before it which shares to skip.
    cs.partly_written.insert(cs.partly_written.end(), partly.begin(), partly.end());
    std::vector<bool> written(dirty.size());
    for (size_t i : committed) written[i] = true;
    if (!fl.owns_lock()) fl.lock();
    {
      std::lock_guard lk(cs.dirty_mu);
      for (size_t i = 0; i < dirty.size(); ++i) {
        if (written[i]) continue;
        Bucket& b = *dirty[i];
        b.unflushed.insert(b.unflushed.begin(), b.flushing.begin(), b.flushing.end());
        b.flushing.clear();
        std::vector<bson::ObjectId>& ids = outs[i].ids;
        for (const bson::ObjectId& id : b.unflushed_ids) {
          if (ids.empty() || ids.back() != id) ids.push_back(id);
        }
        b.unflushed_ids = std::move(ids);
        b.meta_journaled = b.meta_journaled || outs[i].meta_journaled;
        if (!b.dirty.exchange(true)) cs.dirty.push_back(dirty[i]);
      }
      keys.insert(keys.end(), cs.journal_keys.begin(), cs.journal_keys.end());
      cs.journal_keys.swap(keys);
      cs.unflushed_bytes += taken_bytes;
      cs.oldest_unflushed_ms = oldest_ms;
    }
    for (size_t i = 0; i < dirty.size(); ++i) {
      if (outs[i].held) ReleaseCommitRights(*dirty[i]);
    }
    return st;
  }
  for (size_t i = 0; i < dirty.size(); ++i) {
    if (outs[i].held) ReleaseCommitRights(*dirty[i]);
  }
  cs.partly_written.clear();
  if (journaling_after) cs.journaling = *journaling_after;  // storage holds every row now
  ForgetJournalEntries(s, keys);
  if (why == FlushFor::kRead) SettleEdited(coll, s, cs);
  return Status::OK();
}

void BucketCatalog::CountShape(CollectionState& cs,
                               const std::vector<std::shared_ptr<WriteBatch>>& batches) {
  int64_t rows = 0;
  for (const auto& b : batches) rows += static_cast<int64_t>(b->measurements.size());
  std::lock_guard lk(cs.dirty_mu);
  cs.mode_batches += static_cast<int64_t>(batches.size());
  cs.mode_rows += rows;
}

Status BucketCatalog::AfterCommits(const TimeseriesCollection& coll, storage::Session& s) {
  if (!journal_) return CompressClosedBuckets(coll, s);
  CollectionState& cs = State(coll.uuid);
  const Params& p = GetParams();
  bool due = false, behind = false, journaling;
  std::optional<bool> journal;
  {
    std::lock_guard lk(cs.dirty_mu);
    if (cs.mode_batches >= kModeWindow) {
      // Journal while commits bring fewer than hourglassTimeseriesJournalBelowRows rows per
      // bucket: then a storage write per bucket per commit is what costs; with more, writing
      // them at once costs less than writing them twice.
      journal = cs.mode_rows < p.journal_below_rows->GetInt() * cs.mode_batches;
      cs.mode_batches = cs.mode_rows = 0;
    }
    due = !cs.journal_keys.empty() &&
          (cs.unflushed_bytes >= p.write_back_bytes->GetInt() ||
           NowMillis() - cs.oldest_unflushed_ms >= p.write_back_interval->GetInt());
    behind = cs.unflushed_bytes >= 2 * p.write_back_bytes->GetInt();
  }
  {
    std::shared_lock fl(cs.flush_mu);
    journaling = cs.journaling;
  }
  if (journal && *journal != journaling) {
    if (*journal) {
      std::unique_lock fl(cs.flush_mu);
      cs.journaling = true;
    } else {
      HG_RETURN_IF_ERROR(WriteDirtyBuckets(coll, s,
                                           AwaitFlushTurn(cs.flush_run_mu, cs.flush_waiters),
                                           /*journaling_after=*/false, FlushFor::kWrites));
      due = true;  // compress what closed
    }
  }
  if (behind) {
    // Commits have outrun the flushes by twice what starts one: this writer waits for the running
    // flush and writes what is left. Otherwise the backlog (journal entries held in memory)
    // grows for as long as writers keep the flush's thread from the processor.
    flushes_for_backlog_.fetch_add(1);
    return FlushInTurn(coll, s, AwaitFlushTurn(cs.flush_run_mu, cs.flush_waiters),
                       FlushFor::kWrites);
  }
  if (due && cs.flush_waiters.load() == 0) {
    // A flush that is running, or waiting to, takes these rows too or leaves them to the next.
    std::unique_lock running(cs.flush_run_mu, std::try_to_lock);
    if (running.owns_lock()) return FlushInTurn(coll, s, std::move(running), FlushFor::kWrites);
  }
  // Journaled buckets are compressed by the flush that writes them.
  return journaling ? Status::OK() : CompressClosedBuckets(coll, s);
}

Status BucketCatalog::FlushAll() {
  if (!journal_) return Status::OK();
  std::vector<TimeseriesCollection> colls;
  {
    std::shared_lock lk(states_mu_);
    for (const auto& [uuid, cs] : states_) {
      std::lock_guard dk(cs->dirty_mu);
      if (!cs->journal_keys.empty()) colls.push_back(cs->last_coll);
    }
  }
  auto session = engine_->NewSession();
  Status first = Status::OK();
  for (const auto& c : colls) {
    Status st = Flush(c, *session);
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

Status BucketCatalog::DropCollection(const std::string& uuid, storage::Session& s) {
  ClearCollection(uuid);
  if (!journal_) return Status::OK();
  CollectionState& cs = State(uuid);
  std::unique_lock run = AwaitFlushTurn(cs.flush_run_mu, cs.flush_waiters);
  std::unique_lock fl(cs.flush_mu);
  std::vector<std::shared_ptr<Bucket>> dirty;
  std::vector<uint64_t> keys;
  cs.TakeUnflushed(&dirty, &keys);
  {
    std::lock_guard lk(cs.dirty_mu);
    cs.unflushed_bytes = 0;
    cs.last_coll = TimeseriesCollection{};
  }
  for (const auto& b : dirty) {
    b->unflushed.clear();
    b->unflushed_ids.clear();
    b->meta_journaled = false;
    b->dirty = false;
  }
  if (keys.empty()) return Status::OK();
  // Entries left behind by a failure here belong to no collection: startup drops them, and
  // their log space may go all the same.
  Status st = storage::RetryOnWriteConflict([&] {
    storage::WriteUnit wu(s);
    HG_RETURN_IF_ERROR(wu.begin_status());
    for (uint64_t k : keys) HG_RETURN_IF_ERROR(journal_->MarkWritten(s, k));
    HG_RETURN_IF_ERROR(journal_->ForgetPartlyWritten(s, &cs.partly_written));
    return wu.Commit();
  });
  if (st.ok()) cs.partly_written.clear();
  ForgetJournalEntries(s, keys);
  return st;
}

void BucketCatalog::ForgetJournalEntries(storage::Session& s, const std::vector<uint64_t>& keys) {
  journal_->Written(keys);
  if (Status st = journal_->Prune(s); !st.ok()) {
    LOGW("STORAGE", 8800106, "The time-series journal keeps entries already written",
         "{\"error\":" + JsonQuote(st.ToString()) + "}");
  }
}

Status BucketCatalog::OpenJournal(storage::KvEngine* engine, catalog::Catalog& catalog,
                                  bool allow_write_back) {
  InternalReads internal;
  engine_ = engine;
  HG_ASSIGN_OR_RETURN(
      std::unique_ptr<MeasurementJournal> journal,
      MeasurementJournal::Open(engine,
                               static_cast<uint64_t>(GetParams().journal_segment_bytes->GetInt())));
  std::unordered_map<std::string, std::shared_ptr<catalog::Collection>> by_uuid;
  for (const std::string& db : catalog.ListDatabases()) {
    for (const auto& c : catalog.ListCollections(db)) {
      if (c->nss().IsTimeseriesBuckets()) by_uuid[c->entry().uuid] = c;
    }
  }
  auto s = engine->NewSession();
  // The shares of entries a flush wrote before a crash stopped it short of marking them.
  HG_ASSIGN_OR_RETURN(PartlyWrittenShares written, journal->PartlyWritten(*s));
  struct Entry {
    uint64_t key;
    JournalEntry entry;
  };
  std::vector<Entry> entries;
  HG_RETURN_IF_ERROR(
      journal->ForEach(*s, [&](uint64_t key, std::shared_ptr<const std::string> bytes) {
        HG_ASSIGN_OR_RETURN(JournalEntry e, DecodeJournalEntry(std::move(bytes)));
        entries.push_back({key, std::move(e)});
        return Status::OK();
      }));
  if (!entries.empty()) {
    const int64_t max_retries = GetParams().max_retries->GetInt();
    std::unordered_map<std::string, std::pair<int64_t, int64_t>> counts;  // uuid → records, bytes
    int64_t measurements = 0;
    HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
      counts.clear();
      measurements = 0;
      storage::WriteUnit wu(*s);
      HG_RETURN_IF_ERROR(wu.begin_status());
      // Each bucket's meta, from the first entry that holds it (later ones may leave it out).
      std::unordered_map<std::string, BsonObj> metas;
      for (const Entry& e : entries) {
        auto it = by_uuid.find(e.entry.uuid);
        if (it != by_uuid.end()) {  // else: its collection was dropped
          const std::string& meta_field = e.entry.meta_field;
          for (const JournalBucket& jb : e.entry.buckets) {
            if (jb.rows.empty()) continue;
            // A bucket never written takes its meta from its rows, as its first commit did.
            const std::string id_key = Stripe::IdKey(jb.id);
            BsonObj meta_holder;
            if (jb.meta_omitted) {
              auto known = metas.find(id_key);
              if (known == metas.end()) {
                return Status(ErrorCode::kInternalError,
                              "a time-series journal entry leaves out the meta of bucket " +
                                  jb.id.ToHex() + ", which no earlier entry holds");
              }
              meta_holder = known->second;
            } else {
              BsonElement m = meta_field.empty() ? BsonElement() : jb.rows.front()[meta_field];
              if (!m.eoo()) {
                BsonBuilder mb;
                AppendNormalizedMeta(mb, "meta", m);
                meta_holder = mb.Obj();
              }
              metas.emplace(id_key, meta_holder);
            }
            if (written.Holds(e.key, jb.id)) continue;
            HG_ASSIGN_OR_RETURN(
                AppendResult r,
                AppendToStoredBucket(*it->second, *s, &jb.id, meta_holder.FirstElement(), jb.start,
                                     jb.rows, e.entry.time_field, meta_field, max_retries));
            auto& c = counts[it->first];
            c.first += r.inserted ? 1 : 0;
            c.second += r.size_delta;
            measurements += static_cast<int64_t>(jb.rows.size());
          }
        }
        HG_RETURN_IF_ERROR(journal->MarkWritten(*s, e.key));
      }
      HG_RETURN_IF_ERROR(journal->ForgetPartlyWritten(*s, nullptr));
      return wu.Commit();
    }));
    for (const auto& [uuid, c] : counts) by_uuid[uuid]->AdjustCounts(c.first, c.second);
    LOGI("STORAGE", 8800102, "Wrote the time-series measurements the journal held",
         "{\"entries\":" + std::to_string(entries.size()) +
             ",\"measurements\":" + std::to_string(measurements) + "}");
  }
  if (entries.empty() && !written.empty()) {
    // Records whose entries are all marked (they go in the same transaction, so none is
    // expected): they could only mislead a later replay.
    HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
      storage::WriteUnit wu(*s);
      HG_RETURN_IF_ERROR(wu.begin_status());
      HG_RETURN_IF_ERROR(journal->ForgetPartlyWritten(*s, nullptr));
      return wu.Commit();
    }));
  }
  // The log's segments from before now hold only written entries.
  HG_RETURN_IF_ERROR(journal->Prune(*s));
  if (allow_write_back && GetParams().write_back->GetBool()) journal_ = std::move(journal);
  return Status::OK();
}

// --- statistics output -------------------------------------------------------------------------

void BucketCatalog::AppendServerStatus(BsonBuilder& b) const {
  {
    std::shared_lock lk(states_mu_);
    if (states_.empty()) return;
  }
  // Archived records are counted as they come and go (there may be many more of them than open
  // buckets); only the open buckets are walked, for which of them are idle.
  int64_t idle = 0, open = 0;
  for (const auto& sp : stripes_) {
    std::lock_guard lk(sp->mu);
    open += static_cast<int64_t>(sp->open.size());
    for (const auto& [k, bucket] : sp->open) {
      if (!bucket->pending && !bucket->committing.load()) ++idle;
    }
  }
  const int64_t archived = num_archived_.load();
  size_t tok = b.OpenObject("bucketCatalog");
  AppendNumber(b, "numBuckets", open + archived);
  AppendNumber(b, "numOpenBuckets", open);
  AppendNumber(b, "numIdleBuckets", idle);
  AppendNumber(b, "numArchivedBuckets", archived);
  AppendNumber(b, "memoryUsage", std::max<int64_t>(0, memory_usage_.load()));
  AppendNumber(b, "numActiveBuckets", open);
  global_.AppendTo(b, !GetParams().always_compress->GetBool());
  size_t sm = b.OpenObject("stateManagement");
  int64_t eras = 0, clears = 0;
  {
    std::shared_lock lk(states_mu_);
    for (const auto& [uuid, st] : states_) clears += static_cast<int64_t>(st->era.load());
    eras = static_cast<int64_t>(states_.size());
  }
  AppendNumber(b, "bucketsManaged", open + archived);
  AppendNumber(b, "currentEra", clears);
  AppendNumber(b, "erasWithRemainingBuckets", open + archived > 0 ? eras : 0);
  AppendNumber(b, "trackedClearOperations", clears);
  b.Close(sm);
  b.Close(tok);
}

void BucketCatalog::AppendCollectionStats(const std::string& uuid, BsonBuilder& b) const {
  static const ExecutionStats kNone;
  const CollectionState* cs = FindState(uuid);
  (cs == nullptr ? kNone : cs->stats).AppendTo(b, !GetParams().always_compress->GetBool());
}

}  // namespace hourglass::timeseries
