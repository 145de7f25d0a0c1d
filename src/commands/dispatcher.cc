#include "commands/dispatcher.h"

#include <chrono>
#include <climits>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "base/interrupt.h"
#include "base/logger.h"
#include "base/server_parameters.h"
#include "base/write_gate.h"
#include "catalog/collection.h"
#include "commands/aggregate_collections.h"
#include "commands/auth_commands.h"
#include "commands/fail_command.h"
#include "commands/op_latencies.h"
#include "commands/operation_registry.h"
#include "commands/read_concern.h"
#include "commands/replication_checks.h"
#include "commands/retryable_write.h"
#include "commands/write_concern.h"
#include "exec/cursor_manager.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonObj;

bool WritesData(const Command& cmd, const BsonObj& body) {
  static constexpr std::string_view kWriters[] = {
      "insert",      "update",  "delete",           "findAndModify",
      "create",      "drop",    "dropDatabase",     "createIndexes",
      "dropIndexes", "collMod", "renameCollection", "reIndex"};
  for (std::string_view w : kWriters) {
    if (cmd.Name() == w) return true;
  }
  return cmd.Name() == "aggregate" && body["pipeline"].type() == bson::BsonType::kArray &&
         PipelineWritesOutput(body["pipeline"].Obj());
}

namespace {

// The command's maxTimeMS (generic argument): none or 0 is no limit.
StatusWith<int64_t> MaxTimeMillis(const BsonObj& body) {
  bson::BsonElement e = body["maxTimeMS"];
  if (e.eoo()) return int64_t{0};
  if (!e.IsNumber()) return Status(ErrorCode::kBadValue, "maxTimeMS must be a number");
  const double d = e.NumberDouble();
  if (e.type() == bson::BsonType::kDouble && d != std::floor(d)) {
    return Status(ErrorCode::kBadValue, "maxTimeMS has non-integral value");
  }
  if (d < 0 || d > INT_MAX) {
    std::ostringstream value;
    value << std::setprecision(17) << d;
    return Status(ErrorCode::kBadValue, value.str() + " value for maxTimeMS is out of range [0, " +
                                            std::to_string(INT_MAX) + "]");
  }
  return static_cast<int64_t>(d);
}

// currentOp's `op` of a command.
const char* OpName(OpCounter counter) {
  switch (counter) {
    case OpCounter::kQuery:
      return "query";
    case OpCounter::kGetMore:
      return "getmore";
    case OpCounter::kInsert:
      return "insert";
    case OpCounter::kUpdate:
      return "update";
    case OpCounter::kDelete:
      return "remove";
    case OpCounter::kCommand:
    case OpCounter::kNone:
      break;
  }
  return "command";
}

void AppendErrorReply(BsonBuilder& b, const Status& status) {
  b.AppendDouble("ok", 0.0);
  b.AppendString("errmsg", status.reason());
  b.AppendInt32("code", status.code_number());
  b.AppendString("codeName", status.code_name());
  if (!status.extra_info().empty()) b.AppendElementsOf(BsonObj(status.extra_info().data()));
}
}  // namespace

BsonObj ErrorReply(const Status& status) {
  BsonBuilder b;
  AppendErrorReply(b, status);
  return b.Obj();
}

namespace {

void Count(ServerCounters& c, OpCounter which) {
  switch (which) {
    case OpCounter::kCommand:
      ++c.op_command;
      break;
    case OpCounter::kQuery:
      ++c.op_query;
      break;
    case OpCounter::kGetMore:
      ++c.op_getmore;
      break;
    case OpCounter::kInsert:
      break;  // counted per document by the insert command
    case OpCounter::kUpdate:
      break;  // counted per statement
    case OpCounter::kDelete:
      break;
    case OpCounter::kNone:
      break;
  }
}

// failCommand's errorLabels, on a reply it failed or gave a writeConcernError.
void AppendErrorLabels(BsonBuilder& reply, const FailCommandOutcome& fail_command) {
  if (fail_command.error_labels) reply.AppendArray("errorLabels", *fail_command.error_labels);
}

// ErrorReply's fields, with failCommand's errorLabels when the fail point acted on the command.
BsonObj FailedReply(const Status& status, const FailCommandOutcome& fail_command) {
  BsonBuilder b;
  AppendErrorReply(b, status);
  AppendErrorLabels(b, fail_command);
  return b.Obj();
}

ServerParameter* SlowMs() {
  static ServerParameter* p =
      ServerParameterRegistry::Get().Register("slowOpThresholdMs", int32_t{100}, true, true);
  return p;
}

}  // namespace

DispatchResult RunCommandRequest(ServiceContext& service, ClientState& client, const BsonObj& body,
                                 std::string_view db) {
  return RunCommandRequest(service, client, CommandRequest{body, {}}, db);
}

namespace {

// RunCommandRequest without the cluster time of the replies that end before the command runs.
DispatchResult Dispatch(ServiceContext& service, ClientState& client, const CommandRequest& request,
                        std::string_view db) {
  // The command is named by the first field of the body merged with its sequences: a sequence's
  // name only when the body is empty.
  if (request.body.IsEmpty() && !request.sequences.empty()) {
    return RunCommandRequest(service, client, request.Merged(), db);
  }
  const BsonObj& body = request.body;
  DispatchResult result;
  if (body.IsEmpty()) {
    result.reply = ErrorReply(Status(ErrorCode::kFailedToParse, "Empty command object"));
    return result;
  }
  std::string name(body.FirstElement().FieldName());
  const Command* cmd = CommandRegistry::Get().Find(name);
  if (cmd == nullptr || !CommandEnabled(*cmd)) {
    ++service.counters.op_command;
    result.reply =
        ErrorReply(Status(ErrorCode::kCommandNotFound, "no such command: '" + name + "'"));
    return result;
  }
  result.compressible = cmd->Compressible();
  Count(service.counters, cmd->Counter());
  if (db.empty()) {
    result.reply =
        ErrorReply(Status(ErrorCode::kLocation40571, "OP_MSG requests require a $db argument"));
    return result;
  }
  CommandContext ctx{service, client, std::string(db)};
  if (bson::BsonElement lsid = body["lsid"]; lsid.type() == bson::BsonType::kObject) {
    bson::BsonElement id = lsid.Obj()["id"];
    if (id.type() == bson::BsonType::kBinData) ctx.lsid = std::string(id.BinData());
  }
  // As in MongoDB, failCommand comes before the authorization checks (the admin database's).
  FailCommandOutcome fail_command = CheckFailCommand(ctx, *cmd, body);
  if (fail_command.close_connection) {
    result.close_connection = true;
    return result;
  }
  if (!fail_command.error.ok()) {
    result.reply = FailedReply(fail_command.error, fail_command);
    return result;
  }
  if (cmd->AdminOnly() && db != "admin") {
    result.reply = FailedReply(
        Status(ErrorCode::kUnauthorized, name + " may only be run against the admin database."),
        fail_command);
    return result;
  }
  if (service.options.auth) {
    // update's statements may come as a document sequence: upserts need insert too.
    BsonObj checked =
        request.sequences.empty() || cmd->Name() != "update" ? body : request.Merged();
    Status allowed = CheckAuthorization(ctx, *cmd, checked);
    if (!allowed.ok()) {
      result.reply = FailedReply(allowed, fail_command);
      return result;
    }
  }
  StatusWith<int64_t> max_time_ms = MaxTimeMillis(body);
  if (!max_time_ms.ok()) {
    result.reply = FailedReply(max_time_ms.status(), fail_command);
    return result;
  }
  if (Status allowed = CheckReplicationState(ctx, *cmd, body); !allowed.ok()) {
    // As mongod: a retryable write (it carries txnNumber) refused off the primary is labelled
    // for the drivers, which then retry it on the new primary.
    if (allowed.code() == ErrorCode::kNotWritablePrimary && !body["txnNumber"].eoo()) {
      BsonBuilder b;
      AppendErrorReply(b, allowed);
      bson::BsonArrayBuilder labels;
      labels.AppendString("RetryableWriteError");
      b.AppendArray("errorLabels", labels.Obj());
      result.reply = b.Obj();
    } else {
      result.reply = FailedReply(allowed, fail_command);
    }
    return result;
  }
  if (Status st = CheckTransactionArguments(service, *cmd, body); !st.ok()) {
    result.reply = FailedReply(st, fail_command);
    return result;
  }
  // The concerns, checked before anything runs: a malformed one refuses the command.
  StatusWith<ReadConcernArgs> rc = ParseReadConcern(body);
  if (!rc.ok()) {
    result.reply = FailedReply(rc.status(), fail_command);
    return result;
  }
  const bool takes_write_concern = TakesWriteConcern(*cmd, body);
  StatusWith<WriteConcernArgs> wc =
      takes_write_concern ? ParseWriteConcern(ctx, body) : WriteConcernArgs{};
  if (!wc.ok()) {
    result.reply = FailedReply(wc.status(), fail_command);
    return result;
  }
  BsonBuilder reply;
  auto start = std::chrono::steady_clock::now();
  Status st = Status::OK();
  std::string plan_summary;  // for the slow-operation line
  {
    // Registered for currentOp and killOp while it runs; its body outlives the registration.
    auto running = std::make_shared<RunningOperation>();
    running->connection_id = client.connection_id;
    running->client = client.remote;
    running->client_metadata = client.client_metadata;
    running->op = OpName(cmd->Counter());
    bson::BsonElement target = body.FirstElement();
    running->ns = std::string(db) + "." +
                  (target.type() == bson::BsonType::kString ? std::string(target.Str()) : "$cmd");
    running->command = body;
    running->users = client.auth.users();
    running->lsid = ctx.lsid;
    running->client_fd = client.socket_fd;
    running->started = start;
    if (max_time_ms.value() > 0) {
      running->control->SetDeadline(start + std::chrono::milliseconds(max_time_ms.value()));
    }
    auto registration = OperationRegistry::Get().Start(running);
    OperationControl::Scope current(running->control);
    // As MongoDB, an operation past its deadline (or killed) before it starts does not start.
    st = running->control->Check();
    if (st.ok()) st = BeginReadConcern(ctx, *cmd, body, rc.value());
    if (st.ok()) {
      std::optional<WriteGate::Token> writing;
      if (WritesData(*cmd, body)) writing.emplace(WriteGate::Get().Enter());
      catalog::ReadBarrier::OperationScope operation;  // its reads flush the write-back once
      st = cmd->RunRequest(ctx, request, reply);
    }
    if (st.ok()) {
      st = EndReadConcern(ctx, rc.value());
      if (!st.ok() && service.cursors != nullptr) {
        // The read is refused after it ran: the cursor it opened goes with its reply.
        const BsonObj refused = reply.Obj();
        bson::BsonElement cursor = refused["cursor"];
        if (cursor.type() == bson::BsonType::kObject && cursor.Obj()["id"].NumberLong() != 0) {
          service.cursors->Kill(cursor.Obj()["id"].NumberLong());
        }
      }
    }
    // The write concern is waited for while the operation is registered: currentOp lists it,
    // and killOp and maxTimeMS end the wait (a writeConcernError then, the write being done).
    if (st.ok() && takes_write_concern && !fail_command.write_concern_error) {
      WaitForWriteConcern(ctx, wc.value(), reply);
    }
    plan_summary = running->control->plan_summary();
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  OpLatencies::Get().Record(
      LatencyKindOf(cmd->Name(), cmd->Counter()),
      static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count()));
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
  // An awaitable hello (maxAwaitTimeMS) waits on purpose; MongoDB does not log it as slow.
  if (millis >= SlowMs()->GetInt() && !request.HasField("maxAwaitTimeMS")) {
    BsonBuilder attr;
    attr.AppendString("type", "command");
    attr.AppendString("ns", std::string(db) + ".$cmd");
    attr.AppendString("command", name);
    if (!plan_summary.empty()) attr.AppendString("planSummary", plan_summary);
    attr.AppendInt64("durationMillis", millis);
    if (!st.ok()) attr.AppendString("error", st.ToString());
    LOGI("COMMAND", 51803, "Slow query", attr.Obj().ToJson());
  }
  if (!st.ok()) {
    BsonBuilder failed;
    AppendErrorReply(failed, st);
    CheckFailCommandWriteConcernError(ctx, *cmd, body, failed, fail_command);
    AppendErrorLabels(failed, fail_command);
    AppendClusterTime(service, rc.value(), failed);
    result.reply = failed.Obj();
    return result;
  }
  CheckFailCommandWriteConcernError(ctx, *cmd, body, reply, fail_command);
  if (fail_command.write_concern_error) AppendErrorLabels(reply, fail_command);
  reply.AppendDouble("ok", 1.0);
  AppendClusterTime(service, rc.value(), reply);
  result.reply = reply.Obj();
  return result;
}

}  // namespace

DispatchResult RunCommandRequest(ServiceContext& service, ClientState& client,
                                 const CommandRequest& request, std::string_view db) {
  DispatchResult result = Dispatch(service, client, request, db);
  // A replica set member's replies all carry the cluster time, as mongod's do, those of
  // commands refused before they ran too.
  if (!result.close_connection && HasClusterTime(service) &&
      !result.reply.HasField("operationTime")) {
    BsonBuilder b;
    for (bson::BsonElement e : result.reply) b.AppendElement(e);
    AppendClusterTime(service, ReadConcernArgs{}, b);
    result.reply = b.Obj();
  }
  return result;
}

StatusWith<bson::BsonObj> RunCommandForReply(ServiceContext& service, ClientState& client,
                                             const bson::BsonObj& cmd, std::string_view db) {
  bson::BsonObj reply = RunCommandRequest(service, client, cmd, db).reply;
  // A write whose write concern failed is no success for the server's own callers (an HTTP
  // write must not be acknowledged as majority-committed when it is not).
  bson::BsonElement wce = reply["writeConcernError"];
  const bool wc_failed = wce.type() == bson::BsonType::kObject;
  if (!wc_failed && reply["ok"].IsNumber() && reply["ok"].NumberDouble() == 1) return reply;
  const bson::BsonObj failed = wc_failed ? wce.Obj() : reply;
  const int64_t code = failed["code"].NumberLong();
  return Status(code == 0 ? ErrorCode::kUnknownError : static_cast<ErrorCode>(code),
                failed["errmsg"].type() == bson::BsonType::kString
                    ? std::string(failed["errmsg"].Str())
                    : "command failed");
}

}  // namespace hourglass::commands
