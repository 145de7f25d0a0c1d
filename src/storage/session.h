// Session: one unit of work against the KvEngine — point reads and writes, ordered cursors, and
// snapshot-isolation transactions. Obtained from KvEngine::NewSession(); destroying it rolls back
// any open transaction and returns it (with its cached per-table cursors) to the engine's cache.
//
// Thread-safety: none. A Session is used by one thread at a time (one per operation); hand it to
// another thread only between operations.
// Lifetime: must be destroyed before its KvEngine; every Cursor it opened must be destroyed before
// it (both checked with invariants).
// Transactions: outside Begin()/Commit() every call is its own atomic, immediately committed
// transaction ("autocommit"). Inside, reads see one snapshot taken at the first read or write and
// the transaction's own writes; writes become visible to others at Commit. Two transactions that
// write the same key conflict: the second writer's call fails with WriteConflict (112) and from
// then on the transaction is doomed — every call returns WriteConflict until Rollback (WriteUnit
// does that). Re-run the whole unit, e.g. with RetryOnWriteConflict (write_conflict.h). An
// autocommit write normally does not fail with WriteConflict: WiredTiger retries it internally, so
// it waits (spinning) until a transaction holding an uncommitted update of the same key ends.
// Durability: Commit puts the transaction in the journal buffer; the journal flusher makes it
// durable within EngineOptions::journal_commit_interval_ms, or KvEngine::WaitForJournal() at once.
// Errors: WriteConflict (112), DuplicateKey (11000), NoSuchKey (4), NamespaceNotFound (26) for a
// missing table, IllegalOperation (20) for misuse (Begin twice, Commit without Begin),
// OutOfDiskSpace (14031), InternalError (1).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "storage/cursor.h"

namespace hourglass::storage {

class Session {
 public:
  virtual ~Session() = default;

  // Starts a snapshot-isolation transaction. IllegalOperation if one is already open.
  virtual Status Begin() = 0;
  // Commits the open transaction. On any error the transaction has been rolled back (WriteConflict
  // if it was doomed by a conflict). IllegalOperation if none is open.
  virtual Status Commit() = 0;
  // Abandons the open transaction's writes; no-op if none is open.
  virtual void Rollback() = 0;
  virtual bool InTransaction() const = 0;

  // Value stored under `key`, or nullopt if absent.
  virtual StatusWith<std::optional<std::string>> Get(std::string_view ident,
                                                     std::string_view key) = 0;
  // Keys are 1 or more bytes (WiredTiger stores no empty key): Insert and Put of an empty key fail
  // with BadValue (2); Get, Remove and Modify treat it as absent.

  // Adds `key`; DuplicateKey (11000) if it exists.
  virtual Status Insert(std::string_view ident, std::string_view key, std::string_view value) = 0;
  // Adds `key` or replaces its value.
  virtual Status Put(std::string_view ident, std::string_view key, std::string_view value) = 0;
  // Replaces the value of `key`; NoSuchKey (4) if absent.
  virtual Status Update(std::string_view ident, std::string_view key, std::string_view value) = 0;
  // Deletes `key`; NoSuchKey (4) if absent.
  virtual Status Remove(std::string_view ident, std::string_view key) = 0;

  // A byte-range edit of an existing value: replace `size` bytes at `offset` with `data` (so
  // size 0 inserts, empty data deletes). An offset past the end pads the value with zero bytes.
  struct Modification {
    std::string data;
    size_t offset = 0;
    size_t size = 0;
  };
  // Applies `mods` in order (later ones see earlier ones' results) to the value under `key`
  // without rewriting it: WiredTiger stores and journals only the change (WiredTiger cursor
  // modify). WiredTiger requires a transaction for this; outside Begin()/Commit() one is opened and
  // committed around the call. NoSuchKey (4) if `key` is absent.
  virtual Status Modify(std::string_view ident, std::string_view key,
                        const std::vector<Modification>& mods) = 0;

  // An unpositioned cursor over table `ident`, reading in this session's transaction (or, outside
  // one, the latest committed data at each move). NamespaceNotFound if the table is missing.
  virtual StatusWith<std::unique_ptr<Cursor>> OpenCursorOrError(std::string_view ident) = 0;
  // As OpenCursorOrError, but returns nullptr on error.
  std::unique_ptr<Cursor> OpenCursor(std::string_view ident);

  // Runs `fn` once the open transaction has committed (before Commit returns), or forgets it if
  // the transaction rolls back or fails to commit. Outside a transaction the write that
  // registers it has already committed: `fn` runs at once.
  void OnCommit(std::function<void()> fn);
  // Runs `fn` inside the open transaction just before it commits, after every write the caller
  // made (hooks run in registration order and may write too). An error rolls the transaction back
  // and is Commit's result. Only inside a transaction. The replicated log writes its entries for
  // the transaction's writes here, in the transaction itself.
  void OnPreCommit(std::function<Status()> fn);
  // What a caller keeps for the open transaction, under a key of its own (its address): empty
  // at first, dropped when the transaction ends. Only inside a transaction.
  std::shared_ptr<void>& TransactionState(const void* owner) { return transaction_state_[owner]; }

 protected:
  // For implementations, at the end of every transaction: run the hooks OnCommit registered
  // (committed) or forget them, then drop the transaction's state (after the hooks, so that a
  // lock kept there is held until they ran).
  void EndTransactionHooks(bool committed);
  // For implementations, in Commit before the engine commits: the OnPreCommit hooks.
  Status RunPreCommitHooks();

 private:
  std::vector<std::function<Status()>> pre_commit_hooks_;
  std::vector<std::function<void()>> commit_hooks_;
  std::map<const void*, std::shared_ptr<void>> transaction_state_;
};

// RAII transaction: Begin() on construction, Rollback() on destruction unless Commit() succeeded.
// Check begin_status() (it fails only on misuse, e.g. a transaction already open).
class WriteUnit {
 public:
  explicit WriteUnit(Session& session);
  ~WriteUnit();
  WriteUnit(const WriteUnit&) = delete;
  WriteUnit& operator=(const WriteUnit&) = delete;

  const Status& begin_status() const { return begin_status_; }
  // Commits; after this (success or failure) the destructor does nothing.
  Status Commit();

 private:
  Session& session_;
  Status begin_status_;
  bool done_ = false;
};

// Applies `mods` to `value` in memory exactly as Session::Modify applies them to a stored value
// (a document rebuilt from logged edits, as a rollback does).
void ApplyModifications(std::string& value, const std::vector<Session::Modification>& mods);

}  // namespace hourglass::storage
