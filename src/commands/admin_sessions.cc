// Logical session commands. Hourglass keeps no server-side session state yet (no transactions,
// no retryable-write history), so startSession only mints an id and the others validate their
// arguments and succeed, which is what drivers need: they send endSessions on close and
// refreshSessions from long-running work.
#include <string>

#include "base/uuid.h"
#include "commands/admin_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"

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
      RunSessionList);
}

std::unique_ptr<Command> MakeKillAllSessionsCommand() {
  return std::make_unique<FnCommand>(
      "killAllSessions",
      FnCommand::Options{.help = "kill all logical sessions, for a user, and their operations"},
      RunSessionList);
}

std::unique_ptr<Command> MakeRefreshSessionsCommand() {
  return std::make_unique<FnCommand>("refreshSessions",
                                     FnCommand::Options{.help = "renew a set of logical sessions"},
                                     RunSessionList);
}

}  // namespace hourglass::commands
