// KvEngine: the process's one storage engine, a thin layer over WiredTiger that deals only in byte
// strings. It owns the WiredTiger connection, a cache of sessions, and a background checkpointer.
// Tables ("idents") map byte keys to byte values and are ordered by memcmp of the key; callers
// choose the key encoding (see record_id.h and README.md).
//
// Thread-safety: every KvEngine method may be called from any thread concurrently. The Sessions it
// hands out are single-threaded (one per operation at a time).
// Lifetime: every Session (and every Cursor of it) must be destroyed before the engine; destroying
// the engine with live Sessions aborts. The destructor stops the background threads, finishes
// deferred drops and closes WiredTiger, which takes a final checkpoint. Errors: NamespaceNotFound
// (26) for a missing table where one is required, BadValue (2) for an invalid ident,
// ConflictingOperationInProgress (117) when the dbpath is in use by another process or a table is
// still being dropped, OutOfDiskSpace (14031), InternalError (1) for anything else WiredTiger
// reports. The full mapping is in README.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "storage/append_log.h"
#include "storage/session.h"

namespace hourglass::storage {

// The default level of the zstd block compressor: 1, where mongod's is 6. On compressed buckets
// (already BSONColumn-packed) level 6 saved 0.5% of the bytes for four times the compression
// time, a tenth of the server's CPU while ingesting (docs/benchmarks.md).
inline constexpr int kDefaultZstdLevel = 1;

struct EngineOptions {
  // Directory of the database; must already exist unless in_memory (the server creates it).
  std::string dbpath;
  // No files and no journal: everything lives in the cache and is lost on close. Used by tests
  // and --inMemory. cache_size_mb then bounds the data size (writes beyond it fail).
  bool in_memory = false;
  int cache_size_mb = 256;
  // Period of the background checkpoint; <= 0 disables periodic checkpoints (close still takes
  // one).
  int checkpoint_interval_secs = 60;
  // Period of the background journal flush: a commit not followed by WaitForJournal is durable
  // after at most about this long. <= 0 disables it (commits then reach the journal file only when
  // WiredTiger's buffers fill, at WaitForJournal, or at a checkpoint).
  int journal_commit_interval_ms = 100;
  // The block compressor of tables created from now on, as mongod's
  // --wiredTigerCollectionBlockCompressor: "snappy" (default), "zlib", "zstd" or "none"; another
  // name fails Open with BadValue. Existing tables keep theirs. snappy and zlib are Debian's
  // WiredTiger extensions (without the snappy one, the default falls back to none with a
  // warning; a zlib asked for and missing fails Open); zstd is built in (wiredtiger_zstd.cc).
  std::string block_compressor = "snappy";
  // The level of the zstd block compressor (mongod's --zstdDefaultCompressionLevel /
  // storage.wiredTiger.engineConfig.zstdCompressionLevel, -7 to 22).
  int zstd_level = kDefaultZstdLevel;
  // WiredTiger configuration appended to the engine's own at open (mongod's
  // --wiredTigerEngineConfigString); a later key overrides an earlier one. Invalid: Open fails.
  std::string extra_config;
};

// The block compressors a table may name (block_compressor=...): none, snappy, zlib, zstd.
bool IsKnownBlockCompressor(std::string_view name);

class KvEngine {
 public:
  // Opens (creating if needed) the WiredTiger database in opts.dbpath with the journal on (unless
  // in_memory) and starts the checkpointer and the journal flusher. Fails with
  // ConflictingOperationInProgress if another process (or another engine in this process) has the
  // dbpath open, and with the WiredTiger error otherwise (e.g. a missing directory). Runs journal
  // recovery after an unclean shutdown, so it may block for a while.
  static StatusWith<std::unique_ptr<KvEngine>> Open(const EngineOptions& opts);

  virtual ~KvEngine() = default;

  // Creates table `ident` (byte keys, byte values). Succeeds without change if it already exists.
  // Idents are 1..200 characters from [A-Za-z0-9_.-] and must not start with "WiredTiger";
  // others fail with BadValue. ConflictingOperationInProgress if a drop of `ident` is pending.
  // `config`: WiredTiger table options a user gave (a collection's
  // storageEngine.wiredTiger.configString, e.g. "block_compressor=zstd"), applied after the
  // engine's own so that they win; checked first (CheckTableConfig).
  virtual Status CreateTable(std::string_view ident, std::string_view config) = 0;
  Status CreateTable(std::string_view ident) { return CreateTable(ident, {}); }

  // Whether `config` is a valid WiredTiger table configuration whose block compressor (if it
  // names one) this engine has: BadValue with WiredTiger's reason otherwise.
  virtual Status CheckTableConfig(std::string_view config) = 0;

  // Drops table `ident`; succeeds if it does not exist. From the start of the call the table is
  // hidden and new cursors on it fail with NamespaceNotFound; cursors cached by idle sessions are
  // closed first. If the table stays busy (a Session in use still holds a cursor on it) the drop is
  // retried for a short while and then deferred: the call returns OK, the table disappears from
  // TableExists/ListTables at once, and the background thread (or the destructor) removes it
  // once the last cursor is gone. A deferred drop is lost on a crash (the table reappears). Blocks
  // for at most about a quarter of a second.
  virtual Status DropTable(std::string_view ident) = 0;

  virtual bool TableExists(std::string_view ident) = 0;

  // The configuration table `ident` was created with, as WiredTiger stores it (every option
  // spelled out: what collStats shows as wiredTiger.creationString). NamespaceNotFound if there
  // is no such table.
  virtual StatusWith<std::string> TableCreationString(std::string_view ident) = 0;

  // Rewrites the table `ident` to give its file's free space back to the file system (WiredTiger's
  // compact: online, other sessions go on reading and writing). Returns how many bytes its file
  // lost (0 in memory). NamespaceNotFound if there is no such table.
  virtual StatusWith<int64_t> CompactTable(std::string_view ident) = 0;

  // Idents of all tables, sorted bytewise; excludes tables whose drop is pending.
  virtual std::vector<std::string> ListTables() = 0;

  // Writes all committed data to the data files. No-op in memory. Blocks.
  virtual Status Checkpoint() = 0;

  // Blocks until every transaction committed before the call is durable in the journal (the
  // journal is flushed and fsync'ed: WiredTiger log_flush with sync=on), and every record appended
  // to the engine's append logs before the call too. Used for write concern j:true. No-op in
  // memory.
  virtual Status WaitForJournal() = 0;

  // Opens the append log `name` (append_log.h) in the directory of that name in the dbpath (in
  // memory: a log that keeps nothing), which the engine's journal flushes from now on make durable
  // with its own (WaitForJournal, the periodic flush, and the close). `name` is an ident; opening
  // it again returns the same log. `segment_bytes`: see AppendLog::Open.
  virtual StatusWith<std::shared_ptr<AppendLog>> OpenAppendLog(std::string_view name,
                                                               uint64_t segment_bytes) = 0;
  StatusWith<std::shared_ptr<AppendLog>> OpenAppendLog(std::string_view name) {
    return OpenAppendLog(name, AppendLog::kDefaultSegmentBytes);
  }

  // Size in bytes of the table's data file on disk; 0 if unknown, missing, or in memory.
  virtual int64_t TableSizeBytes(std::string_view ident) = 0;

  // Returns a Session, reusing one released earlier when possible. Never fails for lack of
  // sessions below the configured maximum (20000 concurrently); aborts beyond it.
  virtual std::unique_ptr<Session> NewSession() = 0;

  // Number of Sessions currently handed out (for tests and diagnostics).
  virtual int ActiveSessionsForTest() const = 0;
};

}  // namespace hourglass::storage
