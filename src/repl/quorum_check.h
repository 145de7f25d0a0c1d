// CheckQuorum: before replSetInitiate or a replSetReconfig stores a configuration, this member
// asks each other member the configuration names whether it can be one, as mongod's quorum check
// does with heartbeats: a `hello` (after the internal login when there is a key file) that
// answers from a server started with --replSet, not initiated with another configuration.
// An initiate needs every member to answer so; a reconfig a majority of the new configuration's
// voting members (this one counted). Otherwise NodeNotFound (74) naming each member that did
// not, and why. Blocking: at most `limit_secs` per member, asked one after another.
#pragma once

#include <string>

#include "base/status.h"
#include "repl/replica_set_config.h"

namespace hourglass::repl {

enum class QuorumFor { kInitiate, kReconfig };

Status CheckQuorum(const ReplicaSetConfig& config, int self, const std::string& key, QuorumFor why,
                   int limit_secs = 10);

}  // namespace hourglass::repl
