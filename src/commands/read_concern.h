// Read concerns and cluster time, as mongod applies them to every command (docs/replication.md,
// "Read concerns"): the readConcern argument parsed and checked as MongoDB 7.0 does, the waits it
// asks for on a replica set member (afterClusterTime before the read, "majority" and
// "linearizable" after it), the gossip of $clusterTime from requests, and the $clusterTime and
// operationTime fields of a member's replies. A standalone takes "local", "available" and
// "majority" (its writes are all it has) and refuses the rest as mongod does.
//
// Stateless functions over the service's replication coordinator; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "bson/bson.h"
#include "commands/command.h"

namespace hourglass::commands {

enum class ReadConcernLevel { kLocal, kAvailable, kMajority, kLinearizable, kSnapshot };

// A parsed readConcern. `level` is absent when the request names none (the default, "local").
struct ReadConcernArgs {
  std::optional<ReadConcernLevel> level;
  uint64_t after_cluster_time = 0;  // 0: none (afterOpTime's ts too)
  bool after_op_time = false;       // afterOpTime (internal to mongod) rather than afterClusterTime
  uint64_t at_cluster_time = 0;     // 0: none; only with "snapshot"
  bool given = false;               // the request had a non-empty readConcern

  bool Is(ReadConcernLevel l) const { return level == l; }
};

// The request's readConcern, checked as mongod 7.0 checks it: not an object → FailedToParse (9);
// `level` not a string → TypeMismatch (14); an unknown level → FailedToParse; an unknown field,
// a null timestamp, or an invalid combination (atClusterTime without "snapshot",
// afterClusterTime with "linearizable" or "available", ...) → InvalidOptions (72).
StatusWith<ReadConcernArgs> ParseReadConcern(const bson::BsonObj& cmd);

// Before the command runs: whether `cmd` takes `rc` here (InvalidOptions 72 for a level or an
// afterClusterTime the command does not take; NotAReplicaSet 76 / IllegalOperation 20 on a
// standalone; NotYetInitialized 94 before replSetInitiate; NotWritablePrimary 10107 for
// "linearizable" off the primary; CommandNotSupported 115 for "snapshot", which Hourglass does
// not read at yet), then the wait afterClusterTime asks for. Also takes the request's
// $clusterTime (gossip) first.
Status BeginReadConcern(CommandContext& ctx, const Command& cmd, const bson::BsonObj& body,
                        const ReadConcernArgs& rc);

// After the command succeeded: "majority" on the primary waits until the set has committed what
// the read saw; "linearizable" confirms this member is still the primary (a committed no-op).
Status EndReadConcern(CommandContext& ctx, const ReadConcernArgs& rc);

// On a replica set member with a configuration: appends $clusterTime ({clusterTime, signature:
// {hash: 20 zero bytes, keyId: 0}}) and operationTime (the committed timestamp for a "majority"
// read, otherwise the newest visible one) to a reply. Nothing on a standalone.
void AppendClusterTime(const ServiceContext& service, const ReadConcernArgs& rc,
                       bson::BsonBuilder& reply);
// Whether AppendClusterTime would append anything for this server.
bool HasClusterTime(const ServiceContext& service);

}  // namespace hourglass::commands
