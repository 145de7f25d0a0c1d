#include "commands/retryable_write.h"

#include <string_view>

#include "bson/field_check.h"
#include "repl/replication_coordinator.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// The commands a driver retries (mongod's supportsRetryableWrite, without the internal ones).
bool IsRetryableWriteCommand(std::string_view name) {
  return name == "insert" || name == "update" || name == "delete" || name == "findAndModify" ||
         name == "findandmodify";
}

}  // namespace

Status CheckTransactionArguments(const ServiceContext& service, const Command& cmd,
                                 const BsonObj& body) {
  if (body.HasField("autocommit") || body.HasField("startTransaction")) {
    if (service.repl == nullptr) {
      return Status(ErrorCode::kIllegalOperation,
                    "Transaction numbers are only allowed on a replica set member or mongos");
    }
    return Status(ErrorCode::kCommandNotSupported,
                  "multi-document transactions are not supported yet");
  }
  if (service.repl != nullptr && body.HasField("txnNumber") &&
      !IsRetryableWriteCommand(cmd.Name())) {
    return Status(ErrorCode::kNotARetryableWriteCommand,
                  "txnNumber may only be provided for multi-document transactions and retryable "
                  "write commands. autocommit:false was not provided, and " +
                      std::string(cmd.Name()) + " is not a retryable write command.");
  }
  return Status::OK();
}

StatusWith<std::unique_ptr<RetryableWrite>> RetryableWrite::Begin(CommandContext& ctx,
                                                                  const BsonObj& body) {
  BsonElement txn = body["txnNumber"];
  if (txn.eoo() || ctx.service.transactions == nullptr) return std::unique_ptr<RetryableWrite>();
  if (txn.type() != BsonType::kInt64) {
    return bson::WrongTypeAtPath("OperationSessionInfo.txnNumber", txn, "long");
  }
  if (ctx.lsid.size() != 16) {
    return Status(ErrorCode::kInvalidOptions,
                  "Transaction number requires a session ID to also be specified");
  }
  if (txn.NumberLong() < 0) {
    return Status(ErrorCode::kInvalidOptions, "Transaction number cannot be negative");
  }
  std::vector<int32_t> stmt_ids;
  if (BsonElement ids = body["stmtIds"]; !ids.eoo()) {
    if (ids.type() != BsonType::kArray)
      return bson::WrongType(body.FirstElement().FieldName(), ids, "array");
    for (BsonElement id : ids.Obj()) {
      if (id.type() != BsonType::kInt32) {
        return bson::WrongTypeAtPath(std::string(body.FirstElement().FieldName()) + ".stmtIds", id,
                                     "int");
      }
      stmt_ids.push_back(static_cast<int32_t>(id.NumberLong()));
    }
  }
  int32_t first = 0;
  if (BsonElement id = body["stmtId"]; !id.eoo()) {
    if (id.type() != BsonType::kInt32)
      return bson::WrongType(body.FirstElement().FieldName(), id, "int");
    first = static_cast<int32_t>(id.NumberLong());
  }
  // A replica set member's memory of a session holds for one term as primary: in another, other
  // members may have run its statements (their records arrived with the log). Off the primary
  // the write fails at its commit anyway.
  const int64_t epoch = ctx.service.repl != nullptr ? ctx.service.repl->WritableTerm() : 0;
  HG_ASSIGN_OR_RETURN(auto checkout,
                      ctx.service.transactions->CheckOut(ctx.lsid, txn.NumberLong(), epoch));
  return std::unique_ptr<RetryableWrite>(new RetryableWrite(
      ctx.service.transactions, std::move(checkout), std::move(stmt_ids), first));
}

RetryableWrite::~RetryableWrite() {
  if (!retried_.empty()) ++table_->counters().retried_commands;
}

int32_t RetryableWrite::StmtId(int index) const {
  if (!stmt_ids_.empty()) {
    return index < static_cast<int>(stmt_ids_.size()) ? stmt_ids_[static_cast<size_t>(index)]
                                                      : stmt_ids_.back() + index;
  }
  return first_stmt_id_ + index;
}

std::optional<BsonObj> RetryableWrite::Retried(int index) {
  const int32_t id = StmtId(index);
  std::optional<BsonObj> result = checkout_->Executed(id);
  if (result) {
    retried_.push_back(id);
    ++table_->counters().retried_statements;
  }
  return result;
}

catalog::StatementRecord RetryableWrite::RecordOf(const std::vector<int>& indexes,
                                                  const BsonObj& result) const {
  catalog::StatementRecord rec;
  rec.session = checkout_->session();
  rec.txn_number = checkout_->txn_number();
  for (int i : indexes) rec.stmt_ids.push_back(StmtId(i));
  rec.result = result;
  return rec;
}

Status RetryableWrite::Record(storage::Session& s, const std::vector<int>& indexes,
                              const BsonObj& result) const {
  return table_->Record(s, RecordOf(indexes, result));
}

void RetryableWrite::AppendRetriedStmtIds(BsonBuilder& reply) const {
  if (retried_.empty()) return;
  size_t arr = reply.OpenArray("retriedStmtIds");
  for (size_t i = 0; i < retried_.size(); ++i) reply.AppendInt32(std::to_string(i), retried_[i]);
  reply.Close(arr);
}

}  // namespace hourglass::commands
