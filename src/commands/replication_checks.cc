#include "commands/replication_checks.h"

#include <string_view>

#include "commands/dispatcher.h"
#include "repl/replication_coordinator.h"

namespace hourglass::commands {

namespace {

// Commands a member runs whatever its state (MongoDB's AllowedOnSecondary::kAlways): the
// handshake, authentication, sessions, diagnostics, parameters, the replica set commands, and
// getMore (its cursor was opened by a command that was allowed).
bool AlwaysAllowed(std::string_view name) {
  static constexpr std::string_view kAlways[] = {"authenticate",
                                                 "buildInfo",
                                                 "configureFailPoint",
                                                 "connectionStatus",
                                                 "currentOp",
                                                 "dbHash",
                                                 "endSessions",
                                                 "features",
                                                 "fsync",
                                                 "fsyncUnlock",
                                                 "getCmdLineOpts",
                                                 "getDefaultRWConcern",
                                                 "getDiagnosticData",
                                                 "getFreeMonitoringStatus",
                                                 "getLog",
                                                 "getMore",
                                                 "getParameter",
                                                 "hello",
                                                 "hgCloneSnapshot",
                                                 "hgRaftConnect",
                                                 "hostInfo",
                                                 "killAllSessions",
                                                 "killCursors",
                                                 "killOp",
                                                 "killSessions",
                                                 "listCommands",
                                                 "lockInfo",
                                                 "logout",
                                                 "ping",
                                                 "refreshSessions",
                                                 "replSetFreeze",
                                                 "replSetGetConfig",
                                                 "replSetGetStatus",
                                                 "replSetInitiate",
                                                 "replSetReconfig",
                                                 "replSetResizeOplog",
                                                 "replSetStepDown",
                                                 "saslContinue",
                                                 "saslStart",
                                                 "serverStatus",
                                                 "setParameter",
                                                 "shutdown",
                                                 "startSession",
                                                 "waitForFailPoint",
                                                 "whatsmyuri",
                                                 "compact",
                                                 "validate"};
  for (std::string_view a : kAlways) {
    if (a == name) return true;
  }
  return false;
}

// Writes beyond the data commands WritesData lists: users, roles and the feature version live
// in the replicated admin database.
bool WritesAdminData(std::string_view name) {
  static constexpr std::string_view kWriters[] = {"createRole",
                                                  "createUser",
                                                  "dropAllRolesFromDatabase",
                                                  "dropAllUsersFromDatabase",
                                                  "dropRole",
                                                  "dropUser",
                                                  "grantPrivilegesToRole",
                                                  "grantRolesToRole",
                                                  "grantRolesToUser",
                                                  "revokePrivilegesFromRole",
                                                  "revokeRolesFromRole",
                                                  "revokeRolesFromUser",
                                                  "setFeatureCompatibilityVersion",
                                                  "updateRole",
                                                  "updateUser"};
  for (std::string_view w : kWriters) {
    if (w == name) return true;
  }
  return false;
}

// secondaryOk: a $readPreference other than primary, or OP_QUERY's secondaryOk bit.
bool SecondaryOk(const CommandContext& ctx, const bson::BsonObj& body) {
  if (ctx.client.op_query_secondary_ok) return true;
  bson::BsonElement pref = body["$readPreference"];
  if (pref.type() != bson::BsonType::kObject) return false;
  bson::BsonElement mode = pref.Obj()["mode"];
  return mode.type() == bson::BsonType::kString && mode.Str() != "primary";
}

}  // namespace

Status CheckReplicationState(const CommandContext& ctx, const Command& cmd,
                             const bson::BsonObj& body) {
  if (ctx.service.repl == nullptr || ctx.db == "local" || AlwaysAllowed(cmd.Name())) {
    return Status::OK();
  }
  repl::ReplicaSetView view = ctx.service.repl->View();
  if (view.writable_primary) {
    // Flow control: a primary whose log runs far ahead of what its set has committed (cut off
    // from it) holds writes back, then refuses them once it has stepped down. (The cheap check
    // first: most commands on a primary with room are not looked at.)
    if (ctx.service.repl->HasWriteRoom() || !WritesData(cmd, body)) return Status::OK();
    if (ctx.service.repl->AwaitWriteRoom()) return Status::OK();
    return Status(ErrorCode::kNotWritablePrimary, "not primary");
  }
  if (WritesData(cmd, body) || WritesAdminData(cmd.Name())) {
    return Status(ErrorCode::kNotWritablePrimary, "not primary");
  }
  if (!SecondaryOk(ctx, body)) {
    return Status(ErrorCode::kNotPrimaryNoSecondaryOk, "not primary and secondaryOk=false");
  }
  if (view.state != repl::MemberState::kSecondary && view.state != repl::MemberState::kPrimary) {
    return Status(ErrorCode::kNotPrimaryOrSecondary, "node is not in primary or recovering state");
  }
  return Status::OK();
}

}  // namespace hourglass::commands
