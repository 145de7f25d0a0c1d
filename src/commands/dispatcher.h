// Runs one command request: finds the command by its first field, checks the database, runs it,
// and shapes the reply ({..., ok: 1} or {ok: 0, errmsg, code, codeName, ...extra info}). Counts
// opcounters and logs slow operations. Before the command runs and after, it checks the
// failCommand fail point (fail_command.h), which may fail, delay or hang up on the command.
// Thread-safe; blocks for as long as the command runs.
#pragma once

#include "bson/bson.h"
#include "commands/command.h"

namespace hourglass::commands {

struct DispatchResult {
  bson::BsonObj reply;
  // False for hello/isMaster and auth commands, whose replies are never compressed.
  bool compressible = true;
  // Close the connection without sending `reply` (the failCommand fail point's closeConnection).
  bool close_connection = false;
};

// `request` is the command as received (body and document sequences); `db` is its $db (or, for
// OP_QUERY, the database of the "<db>.$cmd" namespace).
DispatchResult RunCommandRequest(ServiceContext& service, ClientState& client,
                                 const CommandRequest& request, std::string_view db);
// A command without document sequences (OP_QUERY, tests).
DispatchResult RunCommandRequest(ServiceContext& service, ClientState& client,
                                 const bson::BsonObj& body, std::string_view db);

// Runs `cmd` on `db` as `client` for the server's own use (the HTTP port, rollup maintenance):
// the reply when it says ok: 1 without a writeConcernError, else the error it answered (its
// writeConcernError's, UnknownError without a code).
StatusWith<bson::BsonObj> RunCommandForReply(ServiceContext& service, ClientState& client,
                                             const bson::BsonObj& cmd, std::string_view db);

// Whether `cmd` with `body` changes data, and so waits while the fsync lock is held (base/
// write_gate.h) and runs only on a replica set's primary: the CRUD writes, DDL, and aggregates
// ending in $out or $merge.
bool WritesData(const Command& cmd, const bson::BsonObj& body);

// {ok: 0, errmsg, code, codeName} plus the status's extra info fields.
bson::BsonObj ErrorReply(const Status& status);

}  // namespace hourglass::commands
