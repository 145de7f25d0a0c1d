// Operation and process control: shutdown, fsync, currentOp, killOp, and the small commands tools
// probe (logout, getFreeMonitoringStatus, getDefaultRWConcern, lockInfo, getDiagnosticData).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <string>

#include "base/clock.h"
#include "base/logger.h"
#include "base/write_gate.h"
#include "commands/admin_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "storage/kv_engine.h"
#include "timeseries/bucket_catalog.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

Status RunShutdown(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"force", "timeoutSecs"}));
  HG_ASSIGN_OR_RETURN(bool force, GetBool("shutdown", cmd, "force", false));
  HG_ASSIGN_OR_RETURN(auto timeout, GetInt64("shutdown", cmd, "timeoutSecs"));
  if (timeout && *timeout < 0) {
    return Status(ErrorCode::kBadValue, "timeoutSecs must be a non-negative number");
  }
  LOGI("COMMAND", 4695400, "Terminating via shutdown command",
       "{\"force\":" + std::string(force ? "true" : "false") +
           ",\"timeoutSecs\":" + std::to_string(timeout.value_or(15)) + "}");
  // Replying is harmless: the server closes connections as it stops, and drivers treat either
  // a reply or a closed socket as success for shutdown.
  if (ctx.service.request_shutdown) ctx.service.request_shutdown();
  return Status::OK();
}

// fsync: the measurements the bucket catalog holds only in its journal go to their buckets, then
// a checkpoint writes every committed write to the data files (which it syncs). With lock: true
// the fsync lock is taken first (base/write_gate.h): writes that started finish, new ones wait
// until fsyncUnlock, and the files stay as the checkpoint left them, for a file-copy backup.
Status RunFsync(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(
      CheckKnownFields(cmd, {"lock", "async", "forBackup", "fsyncLockAcquisitionTimeoutMillis"}));
  HG_ASSIGN_OR_RETURN(bool lock, GetBool("fsync", cmd, "lock", false));
  HG_ASSIGN_OR_RETURN(bool async, GetBool("fsync", cmd, "async", false));
  if (async) {
    return Status(ErrorCode::kCommandNotSupported, "fsync with async: true is not supported");
  }
  std::optional<int64_t> lock_count;
  if (lock) lock_count = WriteGate::Get().Lock();
  Status synced = Status::OK();
  if (ctx.service.bucket_catalog) synced = ctx.service.bucket_catalog->FlushAll();
  if (synced.ok()) synced = ctx.service.engine->Checkpoint();
  if (!synced.ok()) {
    if (lock) (void)WriteGate::Get().Unlock();  // a lock whose files are not synced is no use
    return synced;
  }
  if (!lock) {
    reply.AppendInt32("numFiles", 1);
    return Status::OK();
  }
  reply.AppendString("info", "now locked against writes, use db.fsyncUnlock() to unlock");
  reply.AppendInt64("lockCount", *lock_count);
  reply.AppendString("seeAlso", "http://dochub.mongodb.org/core/fsynccommand");
  return Status::OK();
}

// Releases the fsync lock once; writes go on when no lock is left.
Status RunFsyncUnlock(CommandContext&, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {}));
  std::optional<int64_t> left = WriteGate::Get().Unlock();
  if (!left) return Status(ErrorCode::kIllegalOperation, "fsyncUnlock called when not locked");
  reply.AppendString("info", "fsyncUnlock completed");
  reply.AppendInt64("lockCount", *left);
  return Status::OK();
}

// Hourglass tracks no in-progress operations across connections yet, so currentOp reports the
// one operation it can see: itself. Filters would need the query engine; with any filter the
// list is empty rather than wrong.
Status RunCurrentOp(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  static std::atomic<int32_t> next_opid{1};
  bool filtered = false;
  bool first = true;
  for (BsonElement e : cmd) {
    if (first) {
      first = false;
      continue;
    }
    std::string_view f = e.FieldName();
    if (f == "$ownOps" || f == "$all" || IsGenericArgument(f)) continue;
    filtered = true;
  }
  BsonArrayBuilder inprog;
  if (!filtered) {
    BsonBuilder& op = inprog.builder();
    size_t t = op.OpenObject(inprog.NextKey());
    op.AppendString("type", "op");
    op.AppendString("host", HostAndPort(ctx.service));
    op.AppendString("desc", "conn" + std::to_string(ctx.client.connection_id));
    op.AppendInt32("connectionId", static_cast<int32_t>(ctx.client.connection_id));
    op.AppendString("client", ctx.client.remote);
    if (!ctx.client.client_metadata.IsEmpty()) {
      op.AppendObject("clientMetadata", ctx.client.client_metadata);
    }
    op.AppendBool("active", true);
    op.AppendString("currentOpTime", FormatIsoDate(NowMillis()));
    op.AppendInt32("opid", next_opid.fetch_add(1));
    op.AppendInt64("secs_running", 0);
    op.AppendInt64("microsecs_running", 0);
    op.AppendString("op", "command");
    op.AppendString("ns", ctx.db + ".$cmd");
    op.AppendObject("command", cmd);
    op.AppendInt32("numYields", 0);
    op.AppendObject("locks", BsonObj());
    op.AppendBool("waitingForLock", false);
    op.AppendObject("lockStats", BsonObj());
    op.Close(t);
  }
  reply.AppendArray("inprog", inprog.Obj());
  // As mongod: the fsync lock shows at the top level while it is held.
  if (WriteGate::Get().LockCount() > 0) reply.AppendBool("fsyncLock", true);
  return Status::OK();
}

Status RunKillOp(CommandContext&, const BsonObj& cmd, BsonBuilder& reply) {
  BsonElement op = cmd.GetField("op");
  if (op.eoo()) return Status(ErrorCode::kBadValue, "Did not provide \"op\" field");
  if (!op.IsNumber()) return WrongType("killOp", op, "number");
  // No operation other than the caller's own is tracked, so there is nothing to interrupt.
  reply.AppendString("info", "attempting to kill op");
  return Status::OK();
}

Status RunEmpty(CommandContext&, const BsonObj&, BsonBuilder&) { return Status::OK(); }

Status RunFreeMonitoringStatus(CommandContext&, const BsonObj&, BsonBuilder& reply) {
  reply.AppendString("state", "disabled");
  return Status::OK();
}

Status RunGetDefaultRwConcern(CommandContext&, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"inMemory"}));
  size_t rc = reply.OpenObject("defaultReadConcern");
  reply.AppendString("level", "local");
  reply.Close(rc);
  size_t wc = reply.OpenObject("defaultWriteConcern");
  reply.AppendInt32("w", 1);
  reply.AppendInt32("wtimeout", 0);
  reply.Close(wc);
  reply.AppendString("defaultWriteConcernSource", "implicit");
  reply.AppendString("defaultReadConcernSource", "implicit");
  reply.AppendDate("localUpdateWallClockTime", NowMillis());
  return Status::OK();
}

Status RunLockInfo(CommandContext&, const BsonObj&, BsonBuilder& reply) {
  reply.AppendArray("lockInfo", BsonObj());
  return Status::OK();
}

Status RunGetDiagnosticData(CommandContext&, const BsonObj&, BsonBuilder&) {
  return Status(ErrorCode::kCommandNotSupported,
                "getDiagnosticData is not supported: Hourglass does not collect FTDC data");
}

}  // namespace

std::unique_ptr<Command> MakeShutdownCommand() {
  return std::make_unique<FnCommand>(
      "shutdown",
      FnCommand::Options{.help = "shutdown the database.  must be ran against admin db",
                         .admin_only = true},
      RunShutdown);
}

std::unique_ptr<Command> MakeFsyncCommand() {
  return std::make_unique<FnCommand>(
      "fsync",
      FnCommand::Options{.help = "write every committed write to the data files",
                         .admin_only = true},
      RunFsync);
}

std::unique_ptr<Command> MakeFsyncUnlockCommand() {
  return std::make_unique<FnCommand>(
      "fsyncUnlock", FnCommand::Options{.help = "release an fsync lock", .admin_only = true},
      RunFsyncUnlock);
}

std::unique_ptr<Command> MakeCurrentOpCommand() {
  return std::make_unique<FnCommand>(
      "currentOp", FnCommand::Options{.help = "report operations in progress", .admin_only = true},
      RunCurrentOp);
}

std::unique_ptr<Command> MakeKillOpCommand() {
  return std::make_unique<FnCommand>(
      "killOp", FnCommand::Options{.help = "kill an operation by its opid", .admin_only = true},
      RunKillOp);
}

std::unique_ptr<Command> MakeLogoutCommand() {
  return std::make_unique<FnCommand>("logout", FnCommand::Options{.help = "de-authenticate"},
                                     RunEmpty);
}

std::unique_ptr<Command> MakeGetFreeMonitoringStatusCommand() {
  return std::make_unique<FnCommand>(
      "getFreeMonitoringStatus",
      FnCommand::Options{.help = "get free monitoring status (always disabled)",
                         .admin_only = true},
      RunFreeMonitoringStatus);
}

std::unique_ptr<Command> MakeGetDefaultRWConcernCommand() {
  return std::make_unique<FnCommand>(
      "getDefaultRWConcern",
      FnCommand::Options{.help = "get the cluster-wide default read and write concern",
                         .admin_only = true},
      RunGetDefaultRwConcern);
}

std::unique_ptr<Command> MakeLockInfoCommand() {
  return std::make_unique<FnCommand>(
      "lockInfo",
      FnCommand::Options{.help = "show all lock info on the server", .admin_only = true},
      RunLockInfo);
}

std::unique_ptr<Command> MakeGetDiagnosticDataCommand() {
  return std::make_unique<FnCommand>(
      "getDiagnosticData",
      FnCommand::Options{.help = "get diagnostic data (not supported)", .admin_only = true},
      RunGetDiagnosticData);
}

}  // namespace hourglass::commands
