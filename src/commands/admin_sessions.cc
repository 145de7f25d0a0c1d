// Logical session commands. Hourglass keeps no server-side session state yet (no transactions,
// no retryable-write history), so startSession only mints an id and the others validate their
// arguments and succeed, which is what drivers need: they send endSessions on close and
// refreshSessions from long-running work.
#include <random>
#include <string>

#include "commands/admin_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// A random (version 4, RFC 4122 variant) UUID's 16 bytes.
std::string RandomUuid() {
  thread_local std::mt19937_64 gen{std::random_device{}() ^
                                   (static_cast<uint64_t>(std::random_device{}()) << 32)};
  std::string bytes(16, '\0');
  for (int i = 0; i < 16; i += 8) {
    uint64_t v = gen();
    for (int j = 0; j < 8; ++j) bytes[i + j] = static_cast<char>(v >> (8 * j));
  }
  bytes[6] = static_cast<char>((bytes[6] & 0x0f) | 0x40);
  bytes[8] = static_cast<char>((bytes[8] & 0x3f) | 0x80);
  return bytes;
}

Status RunStartSession(CommandContext&, const BsonObj&, BsonBuilder& reply) {
  size_t id = reply.OpenObject("id");
  reply.AppendBinData("id", 4, RandomUuid());
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
