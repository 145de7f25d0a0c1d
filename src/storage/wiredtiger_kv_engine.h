// INTERNAL to src/storage: the WiredTiger implementation of KvEngine, Session and Cursor. Only
// files in src/storage include this header (it pulls in wiredtiger.h).
//
// Session cache and drops: each WtSessionHandle owns one WT_SESSION plus the cursors it has opened,
// cached per table for reuse. WiredTiger refuses to drop a table (EBUSY) while any session has a
// cursor open on it, so DropTable bumps the engine's drop epoch; a handle that sees a new epoch
// (when lent, when a cursor is taken or returned, and when DropTable sweeps the idle handles)
// closes all its cached cursors, and a lent cursor from an older epoch is closed rather than cached
// when it comes back. Drops are therefore rare-but-expensive and point operations cheap.
//
// Lock order: drop_mu_ before pool_mu_. Neither is held while calling into a lent session.
#pragma once

#include <wiredtiger.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "storage/kv_engine.h"

namespace hourglass::storage::internal {

// "table:<ident>".
std::string TableUri(std::string_view ident);

// A WT cursor lent out of a handle's cache, tagged with the drop epoch at which it was lent.
struct LentCursor {
  WT_CURSOR* cursor = nullptr;
  uint64_t epoch = 0;
};

class WtKvEngine;

// One WT_SESSION and its per-table cursor cache. Single-threaded like the session it wraps.
class WtSessionHandle {
 public:
  WtSessionHandle(WT_SESSION* session, WtKvEngine* engine);
  ~WtSessionHandle();  // closes the session, and with it every cursor
  WtSessionHandle(const WtSessionHandle&) = delete;
  WtSessionHandle& operator=(const WtSessionHandle&) = delete;

  WT_SESSION* session() const { return session_; }

  // Takes a cached cursor on `ident` or opens one (overwrite=false, so insert reports duplicates
  // and update/remove report missing keys). NamespaceNotFound if the table does not exist or is
  // being dropped.
  StatusWith<LentCursor> AcquireCursor(std::string_view ident);
  // Resets the cursor and caches it, or closes it if a drop happened since it was lent.
  void ReleaseCursor(LentCursor lent);
  // Closes every cached cursor if the drop epoch moved since the last check.
  void SyncWithDropEpoch();
  size_t CachedCursorCountForTest() const;

 private:
  void CloseCachedCursors();

  WT_SESSION* session_;
  WtKvEngine* engine_;
  const std::atomic<uint64_t>* drop_epoch_;
  uint64_t seen_epoch_;
  // Keyed by the cursor's URI ("table:<ident>").
  std::map<std::string, std::vector<WT_CURSOR*>, std::less<>> cache_;
};

class WtKvEngine final : public KvEngine {
 public:
  // Use KvEngine::Open.
  // `compressors`: the block compressors loaded (beyond "none").
  WtKvEngine(WT_CONNECTION* conn, EngineOptions opts, std::set<std::string> compressors);
  ~WtKvEngine() override;

  using KvEngine::CreateTable;
  Status CreateTable(std::string_view ident, std::string_view config) override;
  Status CheckTableConfig(std::string_view config) override;
  Status DropTable(std::string_view ident) override;
  bool TableExists(std::string_view ident) override;
  StatusWith<std::string> TableCreationString(std::string_view ident) override;
  std::vector<std::string> ListTables() override;
  Status Checkpoint() override;
  Status WaitForJournal() override;
  using KvEngine::OpenAppendLog;
  StatusWith<std::shared_ptr<AppendLog>> OpenAppendLog(std::string_view name,
                                                       uint64_t segment_bytes) override;
  int64_t TableSizeBytes(std::string_view ident) override;
  StatusWith<int64_t> CompactTable(std::string_view ident) override;
  std::unique_ptr<Session> NewSession() override;
  int ActiveSessionsForTest() const override { return active_sessions_.load(); }

  // Used by WtSession.
  std::unique_ptr<WtSessionHandle> AcquireHandle();
  void ReleaseHandle(std::unique_ptr<WtSessionHandle> handle);
  void OnSessionDestroyed() { active_sessions_.fetch_sub(1); }
  const std::atomic<uint64_t>* drop_epoch() const { return &drop_epoch_; }
  // True while a drop of `ident` is being attempted or deferred: no new cursors open on it.
  bool IsDropPending(std::string_view ident);

 private:
  // One drop attempt: sweeps idle handles' cursors and calls WT_SESSION::drop. Returns EBUSY
  // (as an int) if a cursor is still open somewhere, 0 on success, another WT code on error.
  int TryDrop(const std::string& ident);
  void SetDropPending(const std::string& ident, bool pending);
  // Retries deferred drops once each.
  void ProcessPendingDrops();
  bool TableInMetadata(WT_SESSION* session, std::string_view ident);
  void CheckpointLoop();
  void JournalFlushLoop();

  WT_CONNECTION* conn_;
  const EngineOptions opts_;
  const std::set<std::string> compressors_;

  std::atomic<uint64_t> drop_epoch_{0};
  std::atomic<int> active_sessions_{0};

  std::mutex drop_mu_;
  std::set<std::string, std::less<>> pending_drops_;  // guarded by drop_mu_
  std::atomic<size_t> pending_drop_count_{0};         // pending_drops_.size(), read lock-free

  std::mutex pool_mu_;
  std::vector<std::unique_ptr<WtSessionHandle>> idle_;  // guarded by pool_mu_

  std::mutex logs_mu_;
  std::map<std::string, std::shared_ptr<AppendLog>, std::less<>> logs_;  // guarded by logs_mu_

  std::mutex bg_mu_;
  std::condition_variable bg_cv_;
  bool stopping_ = false;  // guarded by bg_mu_
  std::thread checkpointer_;
  std::thread journal_flusher_;
};

// Defined in wiredtiger_session.cc: the Session implementation over a cached handle.
std::unique_ptr<Session> MakeWtSession(WtKvEngine* engine, std::unique_ptr<WtSessionHandle> handle);

}  // namespace hourglass::storage::internal
