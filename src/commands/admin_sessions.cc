// Logical session commands. Hourglass keeps no server-side session records yet (no
// transactions, no retryable-write history): startSession only mints an id, endSessions and
// refreshSessions validate their arguments and succeed (drivers send them on close and from
// long-running work). A session lives in what runs in it: killSessions and killAllSessions stop
// the operations running in the sessions they name and close the cursors opened in them.
#include <algorithm>
#include <string>

#include "base/uuid.h"
#include "commands/admin_commands.h"
#include "commands/auth_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/operation_registry.h"
#include "exec/cursor_manager.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

Status RunStartSession(CommandContext&, const BsonObj&, BsonBuilder& reply) {
  size_t id = reply.OpenObject("id");
  reply.AppendBinData("id", 4, NewUuid());
  reply.Close(id);
  reply.AppendInt32("timeoutMinutes", kLogicalSessionTimeoutMinutes);
  return Status::OK();
}

// endSessions, killSessions, refreshSessions and killAllSessions all take an array of documents
// as their first field.
Status RunSessionList(CommandContext&, const BsonObj& cmd, BsonBuilder&) {
  BsonElement list = cmd.FirstElement();
  std::string name(list.FieldName());
  if (list.type() != BsonType::kArray) return WrongType(name, list, "array");
  for (BsonElement e : list.Obj()) {
    if (e.type() != BsonType::kObject) {
      return WrongTypeAtPath(name + "." + name, e, "object");
    }
  }
  return Status::OK();
}

// Which sessions to kill: those of the listed ids (all when `ids` is empty) that belong to one
// of `owners` (anyone's when `owners` is empty). A session belongs to the users its operation or
// cursor ran as, as MongoDB's session ids carry their user.
struct SessionPattern {
  std::vector<std::string> ids;
  std::vector<std::vector<std::string>> owners;  // each: the "user@db" names of one owner

  bool Matches(const std::string& lsid, const std::vector<std::string>& users) const {
    if (lsid.empty()) return false;
    if (!ids.empty() && std::find(ids.begin(), ids.end(), lsid) == ids.end()) return false;
    return owners.empty() || std::find(owners.begin(), owners.end(), users) != owners.end();
  }
};

// Kills what runs in the matching sessions: operations (Interrupted, 11601) and open cursors.
void KillSessions(CommandContext& ctx, const SessionPattern& pattern) {
  OperationRegistry::Get().KillMatching([&](const RunningOperation& op) {
    std::vector<std::string> users;
    for (const auth::UserName& u : op.users) users.push_back(u.Display());
    return pattern.Matches(op.lsid, users);
  });
  if (ctx.service.cursors == nullptr) return;  // a server without cursors (unit tests)
  ctx.service.cursors->KillMatching(
      [&](const exec::ClientCursor& c) { return pattern.Matches(c.lsid, c.owners); });
}

// killSessions: [{id: UUID}, ...], the caller's own sessions with those ids ([] : all of them).
Status RunKillSessions(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(RunSessionList(ctx, cmd, reply));
  SessionPattern pattern;
  for (BsonElement e : cmd.FirstElement().Obj()) {
    BsonElement id = e.Obj()["id"];
    if (id.eoo()) {
      return Status(ErrorCode::kLocation40414,
                    "BSON field 'KillSessionsCmdFromClient.killSessions.id' is missing but a "
                    "required field");
    }
    if (id.type() != BsonType::kBinData || id.BinSubtype() != 4 || id.BinData().size() != 16) {
      return Status(ErrorCode::kTypeMismatch,
                    "BSON field 'KillSessionsCmdFromClient.killSessions.id' must be a UUID");
    }
    pattern.ids.emplace_back(id.BinData());
  }
  // Without --auth every session has the same (no) user: the caller's are all of them.
  if (ctx.service.options.auth) pattern.owners.push_back(AuthenticatedUserNames(ctx.client));
  KillSessions(ctx, pattern);
  return Status::OK();
}

// killAllSessions: [{user, db}, ...], every session of those users ([]: everyone's).
Status RunKillAllSessions(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(RunSessionList(ctx, cmd, reply));
  SessionPattern pattern;
  for (BsonElement e : cmd.FirstElement().Obj()) {
    BsonElement user = e.Obj()["user"];
    BsonElement db = e.Obj()["db"];
    for (auto [name, v] : {std::pair{"user", user}, std::pair{"db", db}}) {
      if (v.eoo()) {
        return Status(ErrorCode::kLocation40414, std::string("BSON field 'KillAllSessionsUser.") +
                                                     name + "' is missing but a required field");
      }
      if (v.type() != BsonType::kString) {
        return WrongTypeAtPath(std::string("KillAllSessionsUser.") + name, v, "string");
      }
    }
    pattern.owners.push_back(
        {auth::UserName{std::string(user.Str()), std::string(db.Str())}.Display()});
  }
  KillSessions(ctx, pattern);
  return Status::OK();
}

}  // namespace

std::unique_ptr<Command> MakeStartSessionCommand() {
  return std::make_unique<FnCommand>(
      "startSession", FnCommand::Options{.help = "start a logical session"}, RunStartSession);
}

std::unique_ptr<Command> MakeEndSessionsCommand() {
  return std::make_unique<FnCommand>(
      "endSessions", FnCommand::Options{.help = "end a set of logical sessions"}, RunSessionList);
}

std::unique_ptr<Command> MakeKillSessionsCommand() {
  return std::make_unique<FnCommand>(
      "killSessions", FnCommand::Options{.help = "kill a logical session and its operations"},
      RunKillSessions);
}

std::unique_ptr<Command> MakeKillAllSessionsCommand() {
  return std::make_unique<FnCommand>(
      "killAllSessions",
      FnCommand::Options{.help = "kill all logical sessions, for a user, and their operations"},
      RunKillAllSessions);
}

std::unique_ptr<Command> MakeRefreshSessionsCommand() {
  return std::make_unique<FnCommand>("refreshSessions",
                                     FnCommand::Options{.help = "renew a set of logical sessions"},
                                     RunSessionList);
}

}  // namespace hourglass::commands
