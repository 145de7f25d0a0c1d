// ReplicationCoordinator: this server's part in a replica set (--replSet). It keeps the set's
// configuration (stored in WiredTiger, so it survives restarts), runs the Raft member
// (canonical/raft over libuv, on a thread of its own) that elects the primary, and publishes one
// consistent view of the topology — the member's state, term, primary, configuration — for hello,
// rs.status() and the checks that refuse writes off the primary. docs/replication.md has the
// design. Thread-safe: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "repl/replica_set_config.h"

namespace hourglass::storage {
class KvEngine;
}
namespace hourglass::catalog {
class Catalog;
class TransactionTable;
}  // namespace hourglass::catalog

namespace hourglass::repl {

// MongoDB's member states (rs.status().members[n].state) and their names.
enum class MemberState : int {
  kStartup = 0,
  kPrimary = 1,
  kSecondary = 2,
  kRecovering = 3,
  kStartup2 = 5,
  kUnknown = 6,
  kArbiter = 7,
  kDown = 8,
  kRollback = 9,
  kRemoved = 10,
};
std::string_view MemberStateName(MemberState state);  // "PRIMARY", ...

// A position in the replicated log as MongoDB names one: a Timestamp (seconds << 32 | increment)
// and the term that wrote it.
struct OpTime {
  uint64_t ts = 0;
  int64_t term = -1;
  bool operator==(const OpTime&) const = default;
};

// One consistent picture of the set, as this member sees it.
struct ReplicaSetView {
  MemberState state = MemberState::kStartup;
  std::optional<ReplicaSetConfig> config;  // absent until replSetInitiate
  int self = -1;                           // this member's index in config->members
  int primary = -1;                        // the primary's index, -1 when none is known
  int64_t term = 0;
  bool writable_primary = false;  // primary, and done applying the previous terms' entries
  OpTime last_applied;
  int64_t last_applied_wall_ms = 0;
  OpTime last_committed;
  int64_t last_committed_wall_ms = 0;
  OpTime election_optime;  // when this member last won an election
  int64_t election_wall_ms = 0;
  int64_t topology_counter = 0;  // hello's topologyVersion.counter: bumped on every change
  int64_t step_down_until_ms = 0;
  // Each configured member's state as this member knows it (parallel to config->members): the
  // primary; members in Raft's configuration as SECONDARY — or DOWN when this member is the
  // primary and has not heard from them within an election timeout; STARTUP until added.
  std::vector<MemberState> member_states;
  // On the primary, each configured member's newest entry in its log (parallel to
  // config->members; ts 0 when unknown); empty on other members.
  std::vector<OpTime> member_optimes;
};

// The electionId of a term, as MongoDB's protocol version 1 makes it: 0x7fffffff then the term.
bson::ObjectId ElectionIdForTerm(int64_t term);

class ReplicationCoordinator {
 public:
  struct Options {
    std::string set_name;
    std::string dbpath;
    int port = 27017;
    std::string bind_ip;  // --bind_ip: comma-separated addresses
    // Called (on the Raft loop thread) when this member stops being the writable primary, and
    // when it is about to become one (before it takes writes): what it held in memory of the
    // data it wrote (open time-series buckets) is forgotten either way.
    std::function<void()> on_role_change;
    // --oplogSize (MB) for an oplog not sized yet; 0: 5% of the dbpath's free disk space, at
    // least 990 MB and at most 50 GB, as mongod chooses.
    int64_t oplog_size_mb = 0;
    // --oplogMinRetentionHours: entries younger than this stay whatever the size (0: none).
    double oplog_min_retention_hours = 0;
    // Where the retryable-write records that come with applied writes go.
    catalog::TransactionTable* transactions = nullptr;
    // --keyFile's key: this member logs in to the others with it (empty: no key file).
    std::string internal_key{};
  };

  // Writes to `catalog`'s collections are logged (repl/oplog.h) once Start ran.
  ReplicationCoordinator(Options options, storage::KvEngine* engine, catalog::Catalog* catalog);
  ~ReplicationCoordinator();
  ReplicationCoordinator(const ReplicationCoordinator&) = delete;
  ReplicationCoordinator& operator=(const ReplicationCoordinator&) = delete;

  // Registers the module's server parameters (before --setParameter is applied).
  static void RegisterParameters();

  // Reads the stored configuration and, when there is one, starts the Raft member. Call once.
  Status Start();
  // Ends the waits of commands in progress (initiate, step-down) so that their connections can
  // close; call before the listener's shutdown. Idempotent.
  void BeginShutdown();
  // Stops the Raft member (no more elections, no more state changes). Idempotent.
  void Shutdown();

  const std::string& set_name() const;
  ReplicaSetView View() const;

  // replSetInitiate: `config` is the command's document, or nullptr for the default one-member
  // configuration. Validates it as MongoDB does, stores it and starts the member; returns once
  // this member is primary (or with the reason it could not be).
  Status Initiate(const bson::BsonObj* config);
  // replSetReconfig on the primary: validates `config` against the current one as MongoDB does
  // (a higher version, the same name and replicaSetId, this member in it, at most one voter
  // added or removed without `force`), appends it to the log and returns once it is applied
  // here. Members it adds join, members it drops leave Raft's configuration.
  Status Reconfig(const bson::BsonObj& config, bool force);
  // replSetStepDown: stop being primary for `step_down_secs`. Without `force`, waits up to
  // `catch_up_secs` for an electable secondary that has caught up.
  Status StepDown(int64_t step_down_secs, int64_t catch_up_secs, bool force);
  // replSetFreeze: a secondary does not stand for election for `secs` (0 unfreezes). Sets
  // `info` to the message mongod gives.
  Status Freeze(int64_t secs, std::string* info);

  // The time and term of the newest write logged here (the oplog entry a write concern waits
  // for); ts 0 before any.
  OpTime LastWriteOpTime() const;
  // The term while this member is the writable primary, -1 otherwise (a cheap read).
  int64_t WritableTerm() const;
  // w: "majority": blocks until the set's log has committed the write at `write`.
  // WriteConcernFailed (64) after `wtimeout_ms` (0: no limit), PrimarySteppedDown (189) when this
  // member is no longer the writable primary of the write's term before that is known,
  // ShutdownInProgress (91).
  Status AwaitMajority(OpTime write, int64_t wtimeout_ms);
  // Flow control: on the writable primary, waits (up to a second) while more than a bounded
  // number of its Raft log entries are not yet committed, so that a primary cut off from its set
  // stops taking writes before its log runs far ahead of what the set will keep (a deposed
  // primary's uncommitted entries are undone one at a time when it rejoins). Whether this member
  // is still the writable primary.
  bool AwaitWriteRoom();
  // Whether a write would go through AwaitWriteRoom without waiting (one atomic load).
  bool HasWriteRoom() const;
  // w: <n>: blocks until `n` members (this one included) hold the write at `write` in their
  // logs. Errors as AwaitMajority.
  Status AwaitMembers(OpTime write, int64_t n, int64_t wtimeout_ms);

  // --- Read concerns and cluster time (docs/replication.md, "Read concerns") ---------------

  // This member's cluster time: the newest oplog timestamp it wrote, applied or heard of (from a
  // client's $clusterTime, AdvanceClusterTime). 0 before replSetInitiate.
  uint64_t ClusterTime() const;
  // Gossip: a request's $clusterTime moves this member's cluster time forward, and the writes it
  // logs afterwards are later than `ts` (causal order across members).
  void AdvanceClusterTime(uint64_t ts);
  // The newest timestamp whose writes, and all before them, a read here sees: on the primary
  // its logged commits, on a secondary what it applied (operationTime of a "local" read).
  uint64_t LastVisibleTimestamp() const;
  // The newest timestamp the set has committed (operationTime of a "majority" read).
  uint64_t LastCommittedTimestamp() const;
  // afterClusterTime: blocks until reads here see every write up to `ts`. On the writable
  // primary a no-op entry is logged when no write reached `ts` yet, as mongod does. Stops with
  // the running operation's interruption (maxTimeMS, killOp) or ShutdownInProgress.
  Status AwaitVisible(uint64_t ts);
  // readConcern "majority" on the primary: blocks until the set has committed every write up to
  // `ts` (what a read saw). Secondaries apply only committed entries and never wait. Errors: the
  // operation's interruption, PrimarySteppedDown (189), ShutdownInProgress (91).
  Status AwaitCommitted(uint64_t ts);
  // readConcern "linearizable": confirms that this member is still the primary of a majority by
  // committing a no-op entry ({msg: "linearizable read"}) after the read. NotWritablePrimary
  // (10107) off the writable primary; the operation's interruption; PrimarySteppedDown.
  Status ConfirmPrimary();

  // --- The oplog's size ---------------------------------------------------------------------

  // The size `local.oplog.rs` is kept under, in bytes; the oldest entries beyond it are removed
  // about every second, but never one this member or the set may still need (newer than Raft's
  // next-to-last snapshot, than the set's commit point or than what this member applied).
  int64_t OplogMaxBytes() const;
  // replSetResizeOplog: a new size (bytes, stored with the member) and/or retention period
  // (hours, kept until restart, as mongod keeps it); absent ones stay as they are.
  Status ResizeOplog(std::optional<int64_t> max_bytes, std::optional<double> min_retention_hours);
  // serverStatus's oplogTruncation: the passes that removed entries and the time they took.
  struct OplogTruncationStats {
    int64_t truncate_count = 0;
    int64_t truncating_micros = 0;
    double min_retention_hours = 0;
  };
  OplogTruncationStats OplogTruncation() const;

  // Blocks until the topology counter differs from `counter`, `deadline` passes or `stop` is set.
  void AwaitTopologyChange(int64_t counter, std::chrono::steady_clock::time_point deadline,
                           const std::atomic<bool>& stop) const;

  // hgRaftConnect (WireTransport): member `from` of set `set_name` opens a Raft connection to
  // member `to` at `to_address`, which should be this server. A server not configured yet joins
  // the set as that member. OK: the caller hands the connection over with AdoptRaftConnection.
  Status PrepareRaftConnection(std::string_view set_name, int64_t from, int64_t to,
                               std::string_view to_address);
  // Takes the connected socket `fd` (this object closes it) for the Raft member.
  void AdoptRaftConnection(int fd, int64_t from, std::string from_address);

  // Whether host:port names this server: its port and an address of this machine (or its name).
  bool IsSelf(std::string_view host_and_port) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hourglass::repl
