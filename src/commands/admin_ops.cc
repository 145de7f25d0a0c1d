// Operation and process control: shutdown, fsync, currentOp, killOp, and the small commands tools
// probe (logout, getFreeMonitoringStatus, getDefaultRWConcern, lockInfo, getDiagnosticData).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <string>

#include "base/clock.h"
#include "base/interrupt.h"
#include "base/logger.h"
#include "base/write_gate.h"
#include "commands/admin_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/operation_registry.h"
#include "query/matcher.h"
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

// What currentOp reports of one running operation, as mongod's fields.
BsonObj DescribeOperation(const CommandContext& ctx, const RunningOperation& op) {
  BsonBuilder b;
  b.AppendString("type", "op");
  b.AppendString("host", HostAndPort(ctx.service));
  b.AppendString("desc", "conn" + std::to_string(op.connection_id));
  b.AppendInt32("connectionId", static_cast<int32_t>(op.connection_id));
  b.AppendString("client", op.client);
  if (!op.client_metadata.IsEmpty()) b.AppendObject("clientMetadata", op.client_metadata);
  if (!op.users.empty()) {
    bson::BsonArrayBuilder users;
    for (const auth::UserName& u : op.users) {
      BsonBuilder one;
      one.AppendString("user", u.user);
      one.AppendString("db", u.db);
      users.AppendObject(one.Obj());
    }
    b.AppendArray("effectiveUsers", users.Obj());
  }
  if (!op.lsid.empty()) {
    size_t lsid = b.OpenObject("lsid");
    b.AppendBinData("id", 4, op.lsid);
    b.Close(lsid);
  }
  b.AppendBool("active", true);
  b.AppendString("currentOpTime", FormatIsoDate(NowMillis()));
  b.AppendInt32("opid", static_cast<int32_t>(op.opid));
  const int64_t micros = std::chrono::duration_cast<std::chrono::microseconds>(
                             OperationControl::Clock::now() - op.started)
                             .count();
  b.AppendInt64("secs_running", micros / 1000000);
  b.AppendInt64("microsecs_running", micros);
  b.AppendString("op", op.op);
  b.AppendString("ns", op.ns);
  // A command of over a megabyte shows as the start of its JSON (mongod truncates too).
  constexpr int kMaxCommandBytes = 1 << 20;
  if (op.command.size() <= kMaxCommandBytes) {
    b.AppendObject("command", op.command);
  } else {
    BsonBuilder truncated;
    truncated.AppendString("$truncated", op.command.ToJson().substr(0, 1024));
    if (bson::BsonElement c = op.command["comment"]; !c.eoo()) truncated.AppendElement(c);
    b.AppendObject("command", truncated.Obj());
  }
  if (std::string plan = op.control->plan_summary(); !plan.empty()) {
    b.AppendString("planSummary", plan);
  }
  b.AppendInt32("numYields", 0);
  b.AppendObject("locks", BsonObj());
  b.AppendBool("waitingForLock", false);
  b.AppendObject("lockStats", BsonObj());
  if (op.control->killed()) b.AppendBool("killPending", true);
  return b.Obj();
}

}  // namespace

std::vector<BsonObj> CurrentOperations(const CommandContext& ctx, bool own_only) {
  const bool filter = own_only && ctx.service.options.auth;
  std::vector<BsonObj> out;
  OperationRegistry::Get().ForEach([&](const RunningOperation& op) {
    if (filter && op.users != ctx.client.auth.users()) return;
    out.push_back(DescribeOperation(ctx, op));
  });
  return out;
}

namespace {

// currentOp: every operation running now (each command while it runs, this one too), those that
// match the filter made of its other fields, as mongod's. `$ownOps` (with --auth) keeps those of
// the caller's users; `$all` changes nothing: there are no idle operations to add.
Status RunCurrentOp(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  BsonBuilder filter;
  bool first = true;
  for (BsonElement e : cmd) {
    if (first) {
      first = false;
      continue;
    }
    std::string_view f = e.FieldName();
    if (f == "$ownOps" || f == "$all" || IsGenericArgument(f)) continue;
    filter.AppendElement(e);
  }
  HG_ASSIGN_OR_RETURN(query::Matcher matcher, query::Matcher::Parse(filter.Obj()));
  BsonArrayBuilder inprog;
  for (const BsonObj& described : CurrentOperations(ctx, cmd["$ownOps"].Truthy())) {
    if (matcher.Matches(described)) inprog.AppendObject(described);
  }
  reply.AppendArray("inprog", inprog.Obj());
  // As mongod: the fsync lock shows at the top level while it is held.
  if (WriteGate::Get().LockCount() > 0) reply.AppendBool("fsyncLock", true);
  return Status::OK();
}

// killOp: marks the operation killed (Interrupted 11601 at its next check). As mongod, the reply
// is the same whether or not the operation exists.
Status RunKillOp(CommandContext&, const BsonObj& cmd, BsonBuilder& reply) {
  BsonElement op = cmd.GetField("op");
  if (op.eoo()) return Status(ErrorCode::kBadValue, "Did not provide \"op\" field");
  if (!op.IsNumber()) return WrongType("killOp", op, "number");
  const bool found = OperationRegistry::Get().Kill(op.NumberLong());
  LOGI("COMMAND", 22049, "Going to kill op",
       "{\"opId\":" + std::to_string(op.NumberLong()) + ",\"found\":" + (found ? "true" : "false") +
           "}");
  reply.AppendString("info", "attempting to kill op");
  return Status::OK();
}

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
  return std::make_unique<FnCommand>("currentOp",
                                     FnCommand::Options{.help = "report operations in progress",
                                                        .admin_only = true,
                                                        .allows_after_cluster_time = false},
                                     RunCurrentOp);
}

std::unique_ptr<Command> MakeKillOpCommand() {
  return std::make_unique<FnCommand>(
      "killOp", FnCommand::Options{.help = "kill an operation by its opid", .admin_only = true},
      RunKillOp);
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
