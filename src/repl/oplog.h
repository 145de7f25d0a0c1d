// Oplog: the replicated log's entries as the data sees them. On the primary it is the
// catalog::OpObserver: each transaction's writes become oplog entries ({op, ns, ui, o, o2, ts, t,
// v, wall}, as MongoDB's), written to `local.oplog.rs` in that same transaction and handed, in
// timestamp order, to the Raft log as one batch. On every member it applies the batches Raft
// commits (Apply): the operations this member does not hold yet — all of them on a secondary,
// none of its own on the primary — each with its `local.oplog.rs` row. docs/replication.md has
// the design.
//
// Thread-safety: every method may be called from any thread. Entries get their timestamps and
// reach the Raft log under one mutex held from a transaction's pre-commit to its commit, so the
// log's order is the commit order.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/catalog.h"
#include "catalog/op_observer.h"
#include "catalog/transaction_table.h"
#include "storage/kv_engine.h"

namespace hourglass::repl {

class Oplog final : public catalog::OpObserver {
 public:
  // What the replication coordinator provides.
  struct Hooks {
    // Whether this member may write now (the writable primary) and, if so, its term.
    std::function<bool(int64_t* term)> may_write;
    // Takes a batch ({ts, t, wall, ops: [entries]}) for the Raft log; called in timestamp order,
    // under the oplog's mutex, after the batch's transaction committed. Must not block.
    std::function<void(bson::BsonObj batch)> append;
    // Where rollback files go now (<dbpath>/rollback); empty: none are written.
    std::function<std::string()> rollback_dir;
  };

  // `transactions`: where the retryable-write records that come with applied writes go (may be
  // null in tests that apply none).
  Oplog(storage::KvEngine* engine, catalog::Catalog* catalog,
        catalog::TransactionTable* transactions);

  // Creates `local.oplog.rs` when missing and reads its newest timestamp. Call once, first.
  Status Open(Hooks hooks);

  // Runs `fn` with the next timestamp under the oplog's mutex, for an entry the coordinator
  // writes to the Raft log itself (no-ops, configurations), so that it is ordered with the
  // writes' batches.
  void WithNextTimestamp(const std::function<void(uint64_t ts)>& fn);
  // The timestamp of the newest batch handed to the Raft log (what a write concern waits for).
  uint64_t last_appended_ts() const;
  // The timestamp of the newest entry this member's oplog holds (what catch-up starts after).
  uint64_t NewestTimestamp() const;
  // The newest timestamp given out, written or heard of (AdvanceTo): the member's clock, which
  // later entries pass.
  uint64_t ClockTimestamp() const;
  // Later timestamps given out are greater than `ts` (a cluster time heard from a client).
  void AdvanceTo(uint64_t ts);

  // The size the oplog is kept under, in bytes (--oplogSize, replSetResizeOplog), and the hours
  // its entries are kept whatever the size (replSetResizeOplog's minRetentionHours; 0: none).
  void SetLimits(int64_t max_bytes, double min_retention_hours);
  int64_t max_bytes() const { return max_bytes_.load(); }
  double min_retention_hours() const { return min_retention_hours_.load(); }
  // The bytes of the entries `local.oplog.rs` holds.
  int64_t DataSize() const;
  // Removes the oldest entries while the oplog holds more than max_bytes(): only entries older
  // than `keep_from` (what this member or the set may still need) and than the retention
  // period. Returns how many it removed.
  StatusWith<int64_t> Truncate(uint64_t keep_from);

  // Applies a Raft log entry on this member: a batch's operations not yet here (in order, each
  // with its `local.oplog.rs` row), or an entry that is itself one oplog entry (a no-op). Its
  // writes are not reported again. An operation that cannot be applied is an error (the member
  // no longer matches the primary).
  //
  // Before it applies an entry this member does not hold, it rolls back the entries of earlier
  // terms it holds past the last entry handed to Apply (RollBack): the set's log will never hold
  // them (they come after an entry of a later term in it, or not at all).
  Status Apply(const bson::BsonObj& entry);

  // Whether `local.oplog.rs` holds the oplog entry `op`: its timestamp, in its term.
  bool HoldsEntry(const bson::BsonObj& op);

  // Initial sync (repl/initial_sync.h): runs `copy` as entries are applied (its writes are not
  // logged), then writes the oplog entries it returns — the copy's place in the set's log — as
  // this member's rows.
  Status InstallCopy(const std::function<StatusWith<std::vector<bson::BsonObj>>()>& copy);

  // Undoes the entries of `local.oplog.rs` after `after_ts` written in terms below `below_term`
  // (repl/rollback.h), writing rollback files, and logs what it did.
  Status RollBack(uint64_t after_ts, int64_t below_term);
  // The timestamp of the newest entry the set's log handed to Apply, or of the snapshot that
  // stands for them (MarkHandled); 0 when unknown (a restart before either).
  uint64_t handled_ts() const { return handled_ts_.load(); }
  void MarkHandled(uint64_t ts);

  // catalog::OpObserver
  Status OnInsert(storage::Session& s, const catalog::Collection& coll,
                  const bson::BsonObj& doc) override;
  Status OnUpdate(storage::Session& s, const catalog::Collection& coll, const bson::BsonObj& doc,
                  const bson::BsonObj* before) override;
  Status OnUpdateDiff(storage::Session& s, const catalog::Collection& coll,
                      const bson::BsonElement& id, const bson::BsonObj& diff) override;
  Status OnDelete(storage::Session& s, const catalog::Collection& coll,
                  const bson::BsonObj& doc) override;
  Status OnStatements(storage::Session& s, const bson::BsonObj& record) override;
  bool AcceptsWrites() const override;
  Status OnCommand(storage::Session& s, const std::string& db, const std::string& uuid,
                   const bson::BsonObj& o, const bson::BsonObj& o2) override;

 private:
  struct Pending;
  struct Transaction;
  // Adds an operation to the transaction open in `s`, registering its commit hooks first.
  Status Add(storage::Session& s, Pending op);
  // The transaction open in `s`, its commit hooks registered when it is new.
  Transaction& TransactionOf(storage::Session& s);
  // In the transaction, before it commits: timestamps, `local.oplog.rs` rows, the batch.
  Status PrepareCommit(storage::Session& s, Transaction& txn);
  uint64_t NextTimestampLocked();
  // Whether `local.oplog.rs` holds the oplog entry `op` (its timestamp, in its term).
  // OplogStartMissing (120) when it holds another term's entry under that timestamp.
  StatusWith<bool> Holds(storage::Session& s, const bson::BsonObj& op);
  // Applies a batch's operations this member does not hold, each with its row.
  Status ApplyOps(storage::Session& s, const std::vector<bson::BsonObj>& ops);
  Status ApplyCrud(storage::Session& s, const bson::BsonObj& op);
  Status ApplyCommand(const bson::BsonObj& op);
  // Byte-range edits of record `rid` of `coll`, whose `_id` is `id`: an update applied in place.
  Status ApplyEdits(storage::Session& s, const std::vector<storage::Session::Modification>& edits,
                    const std::shared_ptr<catalog::Collection>& coll, int64_t rid,
                    const bson::BsonElement& id);
  Status WriteRow(storage::Session& s, const bson::BsonObj& op);
  // The retryable-write records an applied operation carries (kStatementsField).
  Status ApplyStatements(storage::Session& s, const bson::BsonObj& op);

  storage::KvEngine* engine_;
  catalog::Catalog* catalog_;
  catalog::TransactionTable* transactions_;
  Hooks hooks_;
  std::shared_ptr<catalog::Collection> oplog_;  // local.oplog.rs
  mutable std::mutex mu_;
  // Written under mu_, read without it (every reply of a replica set member reads them, and mu_
  // is held across each replicated commit).
  std::atomic<uint64_t> last_ts_{0};  // the newest timestamp given out
  std::atomic<uint64_t> last_appended_ts_{0};
  std::atomic<uint64_t> newest_row_ts_{0};  // the newest row of local.oplog.rs
  std::atomic<uint64_t> handled_ts_{0};
  std::atomic<int64_t> max_bytes_{0};  // 0: not capped
  std::atomic<double> min_retention_hours_{0};
};

}  // namespace hourglass::repl
