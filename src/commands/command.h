// The Command interface and the registry of commands. One Command subclass per command (or small
// family) in its own file, made by a factory (command_factories.h) that registry.cc's one
// alphabetical table lists by command name. The dispatcher alone turns a command's Status into
// {ok: 0, errmsg, code, codeName}; a command only appends its own reply fields (never `ok`).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "commands/command_request.h"
#include "commands/service_context.h"

namespace hourglass::commands {

// Everything a command invocation may use. Lives for one command.
struct CommandContext {
  ServiceContext& service;
  ClientState& client;
  std::string db;  // the request's $db
  // The request's logical session id (lsid.id, 16 bytes), empty without one.
  std::string lsid = {};
};

// Which serverStatus.opcounters entry a command counts under.
enum class OpCounter { kCommand, kQuery, kGetMore, kInsert, kUpdate, kDelete, kNone };

class Command {
 public:
  virtual ~Command() = default;
  virtual std::string_view Name() const = 0;
  // Other spellings (isMaster/ismaster, ...).
  virtual std::vector<std::string_view> Aliases() const { return {}; }
  virtual std::string_view Help() const { return ""; }
  // Must be run against the admin database (Unauthorized 13 otherwise).
  virtual bool AdminOnly() const { return false; }
  // A test-only command (configureFailPoint, ...): it exists only when the startup parameter
  // enableTestCommands is true (CommandEnabled).
  virtual bool TestOnly() const { return false; }
  // hello/isMaster and authentication commands are never compressed (OP_COMPRESSED spec).
  virtual bool Compressible() const { return true; }
  virtual OpCounter Counter() const { return OpCounter::kCommand; }
  // The readConcern levels the command takes besides "local" (mongod's supportsReadConcern):
  // none by default; "available", "majority" and "linearizable" for reads; "snapshot" too for
  // find, aggregate and distinct.
  enum class ReadLevels { kLocalOnly, kReads, kReadsAndSnapshot };
  virtual ReadLevels ReadConcernLevels() const { return ReadLevels::kLocalOnly; }
  // Whether readConcern.afterClusterTime may be given (mongod refuses it for a few commands about
  // the server: ping, serverStatus, currentOp, getMore, validate, dbHash).
  virtual bool AllowsAfterClusterTime() const { return true; }
  // Runs the command. `cmd` is the full command document (document sequences merged in as
  // arrays). Appends reply fields to `reply`; on error, returns the Status and the dispatcher
  // discards `reply`.
  virtual Status Run(CommandContext& ctx, const bson::BsonObj& cmd,
                     bson::BsonBuilder& reply) const = 0;
  // Runs the command as received; the dispatcher's entry point. The default merges the document
  // sequences into the body (a copy, only if there are sequences) and calls Run; commands that
  // take a sequence (insert, update, delete) override it to read theirs in place.
  virtual Status RunRequest(CommandContext& ctx, const CommandRequest& request,
                            bson::BsonBuilder& reply) const {
    return Run(ctx, request.Merged(), reply);
  }
};

// Whether `command` exists in this process: every command but the test-only ones, which exist only
// with enableTestCommands. A command that does not exist answers as an unknown name does
// (CommandNotFound 59) and listCommands leaves it out.
bool CommandEnabled(const Command& command);

class CommandRegistry {
 public:
  static const CommandRegistry& Get();
  // nullptr if no command has that name or alias.
  const Command* Find(std::string_view name) const;
  // Every command, sorted by name.
  std::vector<const Command*> All() const;

 private:
  std::vector<std::unique_ptr<Command>> commands_;  // in the table's order: sorted by name
  // Every name and alias → its command, built once after registration: looked up per request.
  std::map<std::string, const Command*, std::less<>> by_name_;
};

}  // namespace hourglass::commands
