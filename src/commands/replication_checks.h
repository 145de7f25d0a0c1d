// What a replica set member's state allows (docs/replication.md): writes only on the writable
// primary, reads on the primary or — when the client allows it (secondaryOk) — on a secondary;
// and hello's replica set fields. Only for servers started with --replSet (service.repl).
#pragma once

#include "base/status.h"
#include "bson/bson.h"
#include "commands/command.h"

namespace hourglass::commands {

// NotWritablePrimary (10107) for a write off the writable primary; NotPrimaryNoSecondaryOk
// (13435) for a read off it without secondaryOk; NotPrimaryOrSecondary (13436) for a read with
// it on a member that is neither. Commands about the server or the set itself, and everything on
// the `local` database, run in any state.
Status CheckReplicationState(const CommandContext& ctx, const Command& cmd,
                             const bson::BsonObj& body);

// hello's fields between isWritablePrimary and maxBsonObjectSize for a --replSet server.
void AppendReplicaSetHello(const CommandContext& ctx, bool legacy, bson::BsonBuilder& reply);
// hello's topologyVersion: this process and the topology's change counter.
void AppendTopologyVersion(const CommandContext& ctx, int64_t counter, bson::BsonBuilder& reply);

}  // namespace hourglass::commands
