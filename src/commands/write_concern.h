// Write concerns, as mongod applies them to every command that writes: the writeConcern argument
// checked before the command runs (a malformed one refuses the command, nothing written), and
// after it succeeded the wait it asks for — the journal for `j`/`fsync`, on a replica set member
// the members for `w`. A wait that fails does not fail the command, whose writes happened: the
// reply says ok: 1 with MongoDB's `writeConcernError` ({code, codeName, errmsg, errInfo:
// {writeConcern, [wtimeout: true]}}), which the drivers raise as a write concern error.
//
// Stateless functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "bson/bson.h"
#include "commands/command.h"

namespace hourglass::commands {

struct WriteConcernArgs {
  std::optional<int64_t> w_count;     // w: <n>
  std::optional<std::string> w_mode;  // w: "majority" or a tag; neither: the default
  std::optional<int64_t> wtimeout_ms;
  std::optional<bool> j;
  bool fsync = false;
};

// Whether the command takes a write concern (mongod's supportsWriteConcern): the commands that
// change data (WritesData) and setFeatureCompatibilityVersion.
bool TakesWriteConcern(const Command& cmd, const bson::BsonObj& body);

// The request's writeConcern, checked as mongod checks it on every server: not an object or a
// field of the wrong type → TypeMismatch (14); `w` outside 0..50 → FailedToParse (9); on a
// standalone, `w` above 1 or a mode other than "majority" → BadValue (2).
StatusWith<WriteConcernArgs> ParseWriteConcern(const CommandContext& ctx, const bson::BsonObj& cmd);

// After the command succeeded: waits as `wc` asks; a failed wait (WriteConcernFailed 64 with
// errInfo.wtimeout, UnsatisfiableWriteConcern 100, UnknownReplWriteConcern 79,
// PrimarySteppedDown 189, MaxTimeMSExpired 50, ...) is appended to `reply` as writeConcernError.
void WaitForWriteConcern(CommandContext& ctx, const WriteConcernArgs& wc, bson::BsonBuilder& reply);

}  // namespace hourglass::commands
