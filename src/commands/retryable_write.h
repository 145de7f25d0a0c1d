// RetryableWrite: a write command's part in a retryable write (an `lsid` and a `txnNumber`, which
// drivers add to insert, update, delete and findAndModify so that they may send them again after
// a network error or a failover). It gives each statement its id (the command's `stmtIds`, else
// its `stmtId` plus the statement's index, else the index, as mongod), says which ran before under
// the same txnNumber and what they answered, and records those that run now in the transaction of
// their writes (catalog/transaction_table.h), so that each statement runs once.
//
// Lifetime: one per command, holding the session (another write of it waits) until destroyed.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/transaction_table.h"
#include "commands/command.h"
#include "storage/session.h"

namespace hourglass::commands {

// The checks every command's transaction arguments get before it runs: `autocommit` or
// `startTransaction` (multi-document transactions: IllegalOperation 20 on a standalone, as
// mongod's refusal of transaction numbers there; CommandNotSupported 115 on a replica set member
// until they exist) and, on a member, a `txnNumber` on a command that is not a retryable write
// (NotARetryableWriteCommand 50768, mongod's message).
Status CheckTransactionArguments(const ServiceContext& service, const Command& cmd,
                                 const bson::BsonObj& body);

class RetryableWrite {
 public:
  // The retryable write `body` asks for, holding its session; nullptr when it asks for none (no
  // txnNumber) or the server keeps no record of them. InvalidOptions (72) for a txnNumber without
  // a session id or below 0, TypeMismatch (14) for one not a long, TransactionTooOld (225) when
  // the session has begun a later one; waits (interruptibly) while another write of the session
  // runs.
  static StatusWith<std::unique_ptr<RetryableWrite>> Begin(CommandContext& ctx,
                                                           const bson::BsonObj& body);
  ~RetryableWrite();

  int32_t StmtId(int index) const;
  // The answer recorded when statement `index` ran before; counted as retried.
  std::optional<bson::BsonObj> Retried(int index);
  // Records statements `indexes` as run in `s`'s open transaction, with what a retry answers.
  Status Record(storage::Session& s, const std::vector<int>& indexes,
                const bson::BsonObj& result = bson::BsonObj()) const;
  // The record of statements `indexes` (Record writes it; a time-series measurement carries its
  // own into its bucket's commit, which may hold measurements of several writes).
  catalog::StatementRecord RecordOf(const std::vector<int>& indexes,
                                    const bson::BsonObj& result = bson::BsonObj()) const;

  // insert, update and delete: `retriedStmtIds` when a statement was retried.
  void AppendRetriedStmtIds(bson::BsonBuilder& reply) const;
  const std::vector<int32_t>& retried() const { return retried_; }

 private:
  RetryableWrite(catalog::TransactionTable* table,
                 std::unique_ptr<catalog::TransactionTable::Checkout> checkout,
                 std::vector<int32_t> stmt_ids, int32_t first_stmt_id)
      : table_(table),
        checkout_(std::move(checkout)),
        stmt_ids_(std::move(stmt_ids)),
        first_stmt_id_(first_stmt_id) {}

  catalog::TransactionTable* table_;
  std::unique_ptr<catalog::TransactionTable::Checkout> checkout_;
  std::vector<int32_t> stmt_ids_;  // the command's stmtIds, if given
  int32_t first_stmt_id_;          // else its stmtId (0 without)
  std::vector<int32_t> retried_;
};

}  // namespace hourglass::commands
