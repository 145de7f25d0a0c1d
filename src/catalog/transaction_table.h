// TransactionTable: which statements of retryable writes have run, per logical session, so that a
// driver's retry of a write (the same lsid and txnNumber, after a network error or a failover)
// runs each statement once — what mongod keeps in config.transactions and the oplog entries it
// points to.
//
// Storage: WiredTiger table "_transactions", one row per storage transaction that ran statements,
// committed with the writes it stands for: key = session id (16 bytes) + txnNumber (8, big-endian)
// + a sequence number (8); value = a StatementRecord as BSON. A replica set member's oplog carries
// each record to the other members with the writes (OpObserver::OnStatements), which write the
// same record as they apply them (ApplyRecord), so a new primary knows what ran before.
// In memory: each session's newest txnNumber and the statements of it that ran, with the answers
// a retry gets, loaded from the table on first use (after a restart, or in a new term).
//
// Thread-safety: every method may be called from any thread. One write at a time holds a session
// (CheckOut); others of the same session wait for it, as mongod's session checkout makes them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "storage/kv_engine.h"
#include "storage/session.h"

namespace hourglass::catalog {

// Statements of one retryable write that ran in one storage transaction.
struct StatementRecord {
  std::string session;  // lsid.id: 16 bytes
  int64_t txn_number = 0;
  std::vector<int32_t> stmt_ids;
  // What a retry of the statement answers (an update's counts, findAndModify's document); empty
  // for inserts, whose retry answers only that they are done.
  bson::BsonObj result;

  // {lsid: {id: UUID}, txnNumber, stmtId: [int], wall: Date, [result]}: the table's value, and
  // what the oplog carries.
  bson::BsonObj ToBson() const;
  // BadValue naming the field when `doc` is not one.
  static StatusWith<StatementRecord> FromBson(const bson::BsonObj& doc);
};

struct TransactionTableCounters {
  std::atomic<int64_t> retried_commands{0};    // commands that found a statement done before
  std::atomic<int64_t> retried_statements{0};  // statements answered without running again
  std::atomic<int64_t> records_written{0};     // rows written (transactionsCollectionWriteCount)
};

class TransactionTable {
 public:
  static constexpr std::string_view kTable = "_transactions";

  // Creates the table on a new dbpath.
  static StatusWith<std::unique_ptr<TransactionTable>> Open(storage::KvEngine* engine);

  // One retryable write's hold on its session; released on destruction.
  class Checkout {
   public:
    ~Checkout();
    Checkout(const Checkout&) = delete;
    Checkout& operator=(const Checkout&) = delete;

    // The answer recorded for `stmt_id` when it ran before this write under its txnNumber. Read
    // without a lock: a snapshot taken at checkout (a measurement asks once each).
    std::optional<bson::BsonObj> Executed(int32_t stmt_id) const;
    const std::string& session() const { return session_; }
    int64_t txn_number() const { return txn_number_; }

   private:
    friend class TransactionTable;
    Checkout(TransactionTable* table, std::string session, int64_t txn_number,
             std::map<int32_t, bson::BsonObj> executed)
        : table_(table),
          session_(std::move(session)),
          txn_number_(txn_number),
          executed_(std::move(executed)) {}
    TransactionTable* table_;
    std::string session_;
    int64_t txn_number_;
    std::map<int32_t, bson::BsonObj> executed_;
  };

  // Holds `session` (16 bytes) for a write numbered `txn_number`, waiting (interruptibly) while
  // another write holds it. TransactionTooOld (225) when the session has begun a later number.
  // `epoch` names what the session's memory is valid for (a replica set member's term): memory
  // from another epoch is read again from the table, where every member's writes arrive.
  StatusWith<std::unique_ptr<Checkout>> CheckOut(const std::string& session, int64_t txn_number,
                                                 int64_t epoch);

  // Writes `rec` in `s`'s open transaction and tells the op observer, so the record travels with
  // the transaction's writes. Once the transaction commits, the session's memory has it.
  Status Record(storage::Session& s, const StatementRecord& rec);
  // A record that arrived with replicated writes: written in `s`'s open transaction, with the
  // session's records of earlier txnNumbers removed (a session runs one at a time).
  Status ApplyRecord(storage::Session& s, const bson::BsonObj& rec);

  // Removes, in `s`'s open transaction, the rows holding exactly record `doc` (a rollback of the
  // writes it came with); the session's memory is read again from the table once it commits.
  Status Forget(storage::Session& s, const bson::BsonObj& doc);
  // Forgets sessions (rows and memory) whose newest record is older than `before_ms`.
  StatusWith<int64_t> Reap(int64_t before_ms);

  TransactionTableCounters& counters() { return counters_; }

 private:
  struct SessionState {
    int64_t txn_number = -1;  // the newest begun; -1: none
    int64_t epoch = 0;
    bool loaded = false;
    bool checked_out = false;
    int64_t last_used_ms = 0;
    std::map<int32_t, bson::BsonObj> executed;  // of txn_number
    // Every row of the session in the table has a txnNumber at or above this one (a removal of
    // the older ones committed). A removal starts there: the rows removed before stay in the
    // storage engine as deleted entries for a while, which a walk from the session's first key
    // would step over one by one, once per write of the session.
    int64_t rows_from_txn = 0;
  };

  explicit TransactionTable(storage::KvEngine* engine);
  static std::string Key(const std::string& session, int64_t txn_number, uint64_t seq);
  // Reads the session's newest txnNumber and its statements into `state` (mu_ not held).
  Status Load(const std::string& session, SessionState* state);
  // Removes the session's rows of txnNumbers below `txn_number`, in `s`'s transaction (once per
  // session and txnNumber in a transaction: a batch of the log brings a record per bucket).
  Status RemoveOlder(storage::Session& s, const std::string& session, int64_t txn_number);
  void Release(const std::string& session);
  // After a record's commit: the session's memory learns its statements.
  void Learn(const StatementRecord& rec);

  storage::KvEngine* engine_;
  std::atomic<uint64_t> next_seq_;
  std::mutex mu_;
  std::condition_variable released_;
  std::unordered_map<std::string, SessionState> sessions_;
  TransactionTableCounters counters_;
};

}  // namespace hourglass::catalog
