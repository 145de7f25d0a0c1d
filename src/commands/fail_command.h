// The failCommand fail point (MongoDB's CommandHelpers::evaluateFailCommandFailPoint), with which
// the drivers' test suites make chosen commands fail, stall or lose their connection. The
// dispatcher checks it before each command runs and, for writeConcernError, after. Its data:
//   failCommands: [names]        the commands it applies to (a command's name or an alias);
//   failAllCommands: <any>       or every command
//   appName: "a"                 only on connections whose handshake named application "a"
//   threadName: "conn12"         only on that connection
//   namespace: "db.coll"         only for commands on that namespace
//   errorCode: n                 answer {ok: 0, code: n, errmsg: "Failing command via
//                                'failCommand' failpoint"} instead of running the command
//   errorExtraInfo: {...}        fields added to that error reply
//   errorLabels: [...]           the errorLabels of the command's error reply
//   closeConnection: true        close the connection without a reply
//   blockConnection: true,       wait blockTimeMS first (InvalidOptions without it)
//     blockTimeMS: ms
//   writeConcernError: {...}     added to the reply of a command that takes a write concern, once
//                                it ran (a separate check, counted on its own)
//   failInternalCommands, failLocalClients: accepted; Hourglass has no internal or local clients.
// configureFailPoint itself is never failed. A check activates the fail point (and counts as an
// entry) only for a command it applies to that it has something to do to (errorCode,
// closeConnection or blockConnection).
#pragma once

#include <optional>

#include "base/status.h"
#include "bson/bson.h"
#include "commands/command.h"

namespace hourglass::commands {

// What failCommand did to one command.
struct FailCommandOutcome {
  // Close the connection and send no reply.
  bool close_connection = false;
  // Not OK: answer this error instead of running the command.
  Status error = Status::OK();
  // The errorLabels array for the command's reply, if it fails (or gets a writeConcernError).
  std::optional<bson::BsonObj> error_labels;
  // A writeConcernError was appended to the reply.
  bool write_concern_error = false;
};

// The check before `command` (whose request body is `body`) runs. Blocks for blockTimeMS when the
// fail point says so.
FailCommandOutcome CheckFailCommand(const CommandContext& ctx, const Command& command,
                                    const bson::BsonObj& body);

// The check once `command` ran, whether it succeeded or failed: when writeConcernError applies
// and the command takes a write concern, appends it to `reply` (the command's fields or its error
// reply) and records that, with the fail point's errorLabels, in `outcome`.
void CheckFailCommandWriteConcernError(const CommandContext& ctx, const Command& command,
                                       const bson::BsonObj& body, bson::BsonBuilder& reply,
                                       FailCommandOutcome& outcome);

}  // namespace hourglass::commands
