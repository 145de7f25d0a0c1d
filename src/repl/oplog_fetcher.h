// FetchOplog: reads another member's `local.oplog.rs` over its wire port (find, then getMores),
// for a member that fell behind the Raft log's snapshots and catches up from the primary's oplog
// instead, as a mongod secondary does; FetchCopy: reads its copy of the data for an initial
// sync. Blocking, with a 30-second limit per reply.
// Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::repl {

// Calls `fn` with the entries of `host`'s (a member's "host:port") oplog whose timestamps lie
// in [from_ts, to_ts], in order, a batch at a time; stops at fn's first error and returns it.
// HostUnreachable (6) when the member cannot be reached or answers otherwise than a server does.
// `key`: the --keyFile key to log in with as the internal user first (empty: none).
Status FetchOplog(const std::string& host, const std::string& key, uint64_t from_ts, uint64_t to_ts,
                  const std::function<Status(const std::vector<bson::BsonObj>&)>& fn);

// Calls `fn` with the pieces of `host`'s copy of its data for an initial sync (hgCloneSnapshot:
// repl/initial_sync.h's SnapshotClone, its oplog entries from the newest at or before
// `from_ts`), in order, a batch at a time. Errors as FetchOplog.
Status FetchCopy(const std::string& host, const std::string& key, uint64_t from_ts,
                 const std::function<Status(const std::vector<bson::BsonObj>&)>& fn);

}  // namespace hourglass::repl
