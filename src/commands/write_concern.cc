#include "commands/write_concern.h"

#include "bson/field_check.h"
#include "commands/dispatcher.h"
#include "repl/replica_set_config.h"
#include "repl/replication_coordinator.h"
#include "storage/kv_engine.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// The wait itself: OK, or why the write concern is not satisfied.
Status Wait(CommandContext& ctx, const WriteConcernArgs& wc) {
  if (wc.j.value_or(false) || wc.fsync) HG_RETURN_IF_ERROR(ctx.service.engine->WaitForJournal());
  repl::ReplicationCoordinator* repl = ctx.service.repl;
  if (repl == nullptr) return Status::OK();
  // A replica set member: `w` counts members; without one, "majority" (MongoDB's implicit
  // default since 5.0).
  const int64_t wait_ms = wc.wtimeout_ms.value_or(0);
  if (wc.w_count) {
    if (*wc.w_count <= 1) return Status::OK();
    repl::ReplicaSetView view = repl->View();
    if (!view.config || *wc.w_count > static_cast<int64_t>(view.config->members.size())) {
      return Status(ErrorCode::kUnsatisfiableWriteConcern, "Not enough data-bearing nodes");
    }
    return repl->AwaitMembers(repl->LastWriteOpTime(), *wc.w_count, wait_ms);
  }
  if (wc.w_mode && *wc.w_mode != "majority") {
    return Status(
        ErrorCode::kUnknownReplWriteConcern,
        "No write concern mode named '" + *wc.w_mode + "' found in replica set configuration");
  }
  return repl->AwaitMajority(repl->LastWriteOpTime(), wait_ms);
}

}  // namespace

bool TakesWriteConcern(const Command& cmd, const BsonObj& body) {
  return WritesData(cmd, body) || cmd.Name() == "setFeatureCompatibilityVersion";
}

StatusWith<WriteConcernArgs> ParseWriteConcern(const CommandContext& ctx, const BsonObj& cmd) {
  WriteConcernArgs wc;
  BsonElement given = cmd["writeConcern"];
  if (given.eoo() || given.type() == BsonType::kNull) return wc;
  if (given.type() != BsonType::kObject)
    return bson::WrongTypeAtPath("writeConcern", given, "object");
  BsonObj concern = given.Obj();
  BsonElement w = concern["w"];
  if (w.IsNumber()) {
    if (w.NumberLong() < 0 || w.NumberLong() > repl::kMaxMembers) {
      return Status(ErrorCode::kFailedToParse,
                    "w has to be a non-negative number and not greater than " +
                        std::to_string(repl::kMaxMembers) +
                        "; found: " + std::to_string(w.NumberLong()));
    }
    wc.w_count = w.NumberLong();
  } else if (w.type() == BsonType::kString) {
    wc.w_mode = std::string(w.Str());
  } else if (!w.eoo()) {
    return bson::WrongTypeAtPath("writeConcern.w", w, "number or string");
  }
  BsonElement wtimeout = concern["wtimeout"];
  if (!wtimeout.eoo()) {
    if (!wtimeout.IsNumber())
      return bson::WrongTypeAtPath("writeConcern.wtimeout", wtimeout, "number");
    wc.wtimeout_ms = wtimeout.NumberLong();
  }
  if (BsonElement j = concern["j"]; !j.eoo() && j.type() != BsonType::kNull) wc.j = j.Truthy();
  if (BsonElement fsync = concern["fsync"]; !fsync.eoo()) wc.fsync = fsync.Truthy();
  if (ctx.service.repl == nullptr) {
    // What only a replica set can satisfy, refused before anything is written (mongod's
    // standalone checks).
    if (wc.w_count && *wc.w_count > 1) {
      return Status(ErrorCode::kBadValue, "cannot use 'w' > 1 when a host is not replicated");
    }
    if (wc.w_mode && *wc.w_mode != "majority") {
      return Status(ErrorCode::kBadValue, "cannot use non-majority 'w' mode \"" + *wc.w_mode +
                                              "\" when a host is not a member of a replica set");
    }
  }
  return wc;
}

void WaitForWriteConcern(CommandContext& ctx, const WriteConcernArgs& wc, BsonBuilder& reply) {
  Status st = Wait(ctx, wc);
  if (st.ok()) return;
  size_t error = reply.OpenObject("writeConcernError");
  reply.AppendInt32("code", static_cast<int32_t>(st.code()));
  reply.AppendString("codeName", st.code_name());
  reply.AppendString("errmsg", st.reason());
  size_t info = reply.OpenObject("errInfo");
  if (st.code() == ErrorCode::kWriteConcernFailed) reply.AppendBool("wtimeout", true);
  // The write concern that was waited for, as mongod reports it.
  const bool client_supplied = wc.w_count || wc.w_mode;
  size_t spec = reply.OpenObject("writeConcern");
  if (wc.w_count) {
    reply.AppendInt32("w", static_cast<int32_t>(*wc.w_count));
  } else {
    reply.AppendString("w", wc.w_mode.value_or("majority"));
  }
  if (wc.j) reply.AppendBool("j", *wc.j);
  reply.AppendInt32("wtimeout", static_cast<int32_t>(wc.wtimeout_ms.value_or(0)));
  reply.AppendString("provenance", client_supplied ? "clientSupplied" : "implicitDefault");
  reply.Close(spec);
  reply.Close(info);
  reply.Close(error);
}

}  // namespace hourglass::commands
