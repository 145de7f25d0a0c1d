#include "commands/read_concern.h"

#include <string>

#include "base/clock.h"
#include "bson/field_check.h"
#include "commands/dispatcher.h"
#include "repl/replication_coordinator.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// mongod's maxAcceptableLogicalClockDriftSecs default: a $clusterTime further ahead of this
// machine's clock than a year is refused.
constexpr int64_t kMaxClockDriftSecs = 365LL * 24 * 60 * 60;

std::string_view LevelName(ReadConcernLevel level) {
  switch (level) {
    case ReadConcernLevel::kLocal:
      return "local";
    case ReadConcernLevel::kAvailable:
      return "available";
    case ReadConcernLevel::kMajority:
      return "majority";
    case ReadConcernLevel::kLinearizable:
      return "linearizable";
    case ReadConcernLevel::kSnapshot:
      return "snapshot";
  }
  return "local";
}

// mongod's bsonExtract* wording for a field of the wrong type.
Status HadWrongType(std::string_view field, const BsonElement& e, std::string_view expected) {
  return Status(ErrorCode::kTypeMismatch,
                "\"" + std::string(field) + "\" had the wrong type. Expected " +
                    std::string(expected) + ", found " + std::string(bson::TypeName(e.type())));
}

Status MissingExpectedField(std::string_view field) {
  return Status(ErrorCode::kNoSuchKey, "Missing expected field \"" + std::string(field) + "\"");
}

StatusWith<uint64_t> NonNullTimestamp(const BsonElement& e) {
  if (e.type() != BsonType::kTimestamp) return HadWrongType(e.FieldName(), e, "timestamp");
  if (e.TimestampValue() == 0) {
    return Status(ErrorCode::kInvalidOptions,
                  std::string(e.FieldName()) + " cannot be a null timestamp");
  }
  return e.TimestampValue();
}

std::string TimestampText(uint64_t ts) {
  return "Timestamp(" + std::to_string(ts >> 32) + ", " + std::to_string(ts & 0xffffffffu) + ")";
}

// The request's $clusterTime moves this member's cluster time forward (mongod accepts it from
// any client when it signs nothing: Hourglass has no signing keys yet).
Status TakeClusterTime(repl::ReplicationCoordinator& repl, const BsonObj& body) {
  BsonElement gossip = body["$clusterTime"];
  if (gossip.eoo()) return Status::OK();
  if (gossip.type() != BsonType::kObject) return HadWrongType("$clusterTime", gossip, "object");
  BsonObj spec = gossip.Obj();
  BsonElement time = spec["clusterTime"];
  if (time.eoo()) return MissingExpectedField("clusterTime");
  if (time.type() != BsonType::kTimestamp) return HadWrongType("clusterTime", time, "timestamp");
  BsonElement signature = spec["signature"];
  if (signature.eoo()) return MissingExpectedField("signature");
  if (signature.type() != BsonType::kObject) {
    return HadWrongType("signature", signature, "object");
  }
  const uint64_t ts = time.TimestampValue();
  const int64_t now_secs = NowMillis() / 1000;
  if (static_cast<int64_t>(ts >> 32) > now_secs + kMaxClockDriftSecs) {
    return Status(ErrorCode::kClusterTimeFailsRateLimiter,
                  "New cluster time, " + std::to_string(ts >> 32) +
                      ", is too far from this node's wall clock time, " + std::to_string(now_secs) +
                      ".");
  }
  repl.AdvanceClusterTime(ts);
  return Status::OK();
}

Status NotSupported(const Command& cmd, const ReadConcernArgs& rc) {
  return Status(ErrorCode::kInvalidOptions,
                "Command " + std::string(cmd.Name()) +
                    " does not support { readConcern: { level: \"" +
                    std::string(LevelName(*rc.level)) +
                    "\", provenance: \"clientSupplied\" } } :: caused by :: read concern not "
                    "supported");
}

// The levels and options the command takes, as mongod's supportsReadConcern and
// allowsAfterClusterTime say.
Status CheckCommandTakes(const Command& cmd, const BsonObj& body, const ReadConcernArgs& rc) {
  if (rc.level && !rc.Is(ReadConcernLevel::kLocal)) {
    const Command::ReadLevels levels = cmd.ReadConcernLevels();
    if (levels == Command::ReadLevels::kLocalOnly) return NotSupported(cmd, rc);
    if (rc.Is(ReadConcernLevel::kSnapshot) && levels != Command::ReadLevels::kReadsAndSnapshot) {
      return NotSupported(cmd, rc);
    }
    if (rc.Is(ReadConcernLevel::kLinearizable) && WritesData(cmd, body)) {
      // An aggregate writing its results ($out, $merge): the stage is its pipeline's last.
      BsonElement last;
      for (BsonElement stage : body["pipeline"].Obj()) last = stage;
      std::string stage = last.type() == BsonType::kObject && !last.Obj().IsEmpty()
                              ? std::string(last.Obj().FirstElement().FieldName())
                              : "$out";
      return Status(ErrorCode::kInvalidOptions,
                    stage + " cannot be used with a 'linearizable' read concern level");
    }
  }
  if (rc.after_cluster_time != 0 && !rc.after_op_time && !cmd.AllowsAfterClusterTime()) {
    return Status(ErrorCode::kInvalidOptions, "afterClusterTime is not allowed for this command");
  }
  return Status::OK();
}

// What a standalone takes: its writes are all it has, so "majority" reads as "local"; the rest
// needs a replica set, as on mongod.
Status CheckStandalone(const ReadConcernArgs& rc) {
  if (rc.Is(ReadConcernLevel::kSnapshot)) {
    return Status(ErrorCode::kNotAReplicaSet,
                  "node needs to be a replica set member to use readConcern: snapshot");
  }
  if (rc.Is(ReadConcernLevel::kLinearizable) || rc.after_op_time) {
    return Status(ErrorCode::kNotAReplicaSet,
                  "node needs to be a replica set member to use read concern");
  }
  if (rc.after_cluster_time != 0) {
    return Status(ErrorCode::kIllegalOperation,
                  "Cannot specify afterClusterTime readConcern without replication enabled");
  }
  if (rc.at_cluster_time != 0) {
    return Status(ErrorCode::kIllegalOperation,
                  "Cannot specify atClusterTime readConcern without replication enabled");
  }
  return Status::OK();
}

}  // namespace

StatusWith<ReadConcernArgs> ParseReadConcern(const BsonObj& cmd) {
  ReadConcernArgs rc;
  BsonElement e = cmd["readConcern"];
  if (e.eoo()) return rc;
  if (e.type() != BsonType::kObject) {
    return Status(ErrorCode::kFailedToParse, "readConcern field should be an object");
  }
  BsonObj spec = e.Obj();
  rc.given = !spec.IsEmpty();
  bool after_cluster_time = false;  // given as such (afterOpTime also sets the timestamp)
  for (BsonElement f : spec) {
    std::string_view name = f.FieldName();
    if (name == "level") {
      if (f.type() != BsonType::kString) return HadWrongType("level", f, "string");
      static constexpr ReadConcernLevel kLevels[] = {
          ReadConcernLevel::kLocal, ReadConcernLevel::kMajority, ReadConcernLevel::kLinearizable,
          ReadConcernLevel::kAvailable, ReadConcernLevel::kSnapshot};
      rc.level.reset();
      for (ReadConcernLevel level : kLevels) {
        if (f.Str() == LevelName(level)) rc.level = level;
      }
      if (!rc.level) {
        return Status(ErrorCode::kFailedToParse,
                      "readConcern.level must be either 'local', 'majority', 'linearizable', "
                      "'available', or 'snapshot'");
      }
    } else if (name == "afterClusterTime") {
      HG_ASSIGN_OR_RETURN(rc.after_cluster_time, NonNullTimestamp(f));
      after_cluster_time = true;
    } else if (name == "atClusterTime") {
      HG_ASSIGN_OR_RETURN(rc.at_cluster_time, NonNullTimestamp(f));
    } else if (name == "afterOpTime") {
      // {ts, t}, as mongod's members send it to each other.
      if (f.type() != BsonType::kObject) return HadWrongType("afterOpTime", f, "object");
      BsonElement ts = f.Obj()["ts"];
      if (ts.eoo()) return MissingExpectedField("ts");
      if (ts.type() != BsonType::kTimestamp) return HadWrongType("ts", ts, "timestamp");
      BsonElement term = f.Obj()["t"];
      if (term.eoo()) return MissingExpectedField("t");
      if (!term.IsNumber()) return HadWrongType("t", term, "a number");
      rc.after_op_time = true;
      rc.after_cluster_time = ts.TimestampValue();
    } else if (name == "provenance") {
      if (f.type() != BsonType::kString) return HadWrongType("provenance", f, "string");
    } else {
      return Status(ErrorCode::kInvalidOptions,
                    "Unrecognized option in readConcern: " + std::string(name));
    }
  }
  if (after_cluster_time && rc.after_op_time) {
    return Status(ErrorCode::kInvalidOptions,
                  "Can not specify both afterClusterTime and afterOpTime");
  }
  if (after_cluster_time && rc.at_cluster_time != 0) {
    return Status(ErrorCode::kInvalidOptions,
                  "Specifying a timestamp for readConcern snapshot in a causally consistent "
                  "session is not allowed. See "
                  "https://docs.mongodb.com/manual/core/read-isolation-consistency-recency/"
                  "#causal-consistency");
  }
  if (rc.after_op_time && rc.Is(ReadConcernLevel::kSnapshot)) {
    return Status(ErrorCode::kInvalidOptions,
                  "afterOpTime field cannot be set if level is equal to snapshot");
  }
  if (after_cluster_time &&
      (rc.Is(ReadConcernLevel::kLinearizable) || rc.Is(ReadConcernLevel::kAvailable))) {
    return Status(ErrorCode::kInvalidOptions,
                  "afterClusterTime field can be set only if level is equal to majority, local, "
                  "or snapshot");
  }
  if (rc.at_cluster_time != 0 && !rc.Is(ReadConcernLevel::kSnapshot)) {
    return Status(ErrorCode::kInvalidOptions,
                  "atClusterTime field can be set only if level is equal to snapshot");
  }
  return rc;
}

Status BeginReadConcern(CommandContext& ctx, const Command& cmd, const BsonObj& body,
                        const ReadConcernArgs& rc) {
  repl::ReplicationCoordinator* repl = ctx.service.repl;
  if (repl != nullptr && repl->ClusterTime() != 0) HG_RETURN_IF_ERROR(TakeClusterTime(*repl, body));
  if (!rc.given) return Status::OK();
  HG_RETURN_IF_ERROR(CheckCommandTakes(cmd, body, rc));
  if (repl == nullptr) return CheckStandalone(rc);

  if (rc.Is(ReadConcernLevel::kSnapshot)) {
    return Status(ErrorCode::kCommandNotSupported,
                  "readConcern level 'snapshot' is not supported by Hourglass yet: reads at a "
                  "point in time need timestamped storage");
  }
  const bool waits = rc.after_cluster_time != 0 || rc.Is(ReadConcernLevel::kMajority) ||
                     rc.Is(ReadConcernLevel::kLinearizable);
  if (!waits) return Status::OK();
  const uint64_t cluster_time = repl->ClusterTime();
  if (cluster_time == 0) {
    return Status(ErrorCode::kNotYetInitialized,
                  "Cannot use non-local read concern until replica set is finished initializing.");
  }
  if (rc.Is(ReadConcernLevel::kLinearizable)) {
    if (rc.after_op_time) {
      return Status(ErrorCode::kFailedToParse,
                    "afterOpTime not compatible with linearizable read concern");
    }
    if (!repl->View().writable_primary) {
      return Status(ErrorCode::kNotWritablePrimary,
                    "cannot satisfy linearizable read concern on non-primary node");
    }
  }
  if (rc.after_cluster_time == 0) return Status::OK();
  if (!rc.after_op_time && rc.after_cluster_time > cluster_time) {
    return Status(ErrorCode::kInvalidOptions,
                  "readConcern afterClusterTime value must not be greater than the current "
                  "clusterTime. Requested clusterTime: { ts: " +
                      TimestampText(rc.after_cluster_time) +
                      " }; current clusterTime: { ts: " + TimestampText(cluster_time) + " }");
  }
  HG_RETURN_IF_ERROR(repl->AwaitVisible(rc.after_cluster_time));
  // A secondary applies only what the set committed; the primary's own writes wait for it.
  if (rc.Is(ReadConcernLevel::kMajority) && repl->View().writable_primary) {
    HG_RETURN_IF_ERROR(repl->AwaitCommitted(rc.after_cluster_time));
  }
  return Status::OK();
}

Status EndReadConcern(CommandContext& ctx, const ReadConcernArgs& rc) {
  repl::ReplicationCoordinator* repl = ctx.service.repl;
  if (repl == nullptr || !rc.given) return Status::OK();
  if (rc.Is(ReadConcernLevel::kMajority) && repl->View().writable_primary) {
    // What the read saw was committed here by the newest visible timestamp; once the set has
    // committed that, none of it can be rolled back.
    return repl->AwaitCommitted(repl->LastVisibleTimestamp());
  }
  if (rc.Is(ReadConcernLevel::kLinearizable)) {
    Status confirmed = repl->ConfirmPrimary();
    if (confirmed.code() == ErrorCode::kPrimarySteppedDown ||
        confirmed.code() == ErrorCode::kNotWritablePrimary) {
      return Status(ErrorCode::kNotWritablePrimary,
                    "No longer primary when waiting for linearizable read concern");
    }
    if (confirmed.code() == ErrorCode::kMaxTimeMSExpired) {
      return Status(ErrorCode::kLinearizableReadConcernError,
                    "Failed to confirm that read was linearizable.");
    }
    return confirmed;
  }
  return Status::OK();
}

bool HasClusterTime(const ServiceContext& service) {
  return service.repl != nullptr && service.repl->ClusterTime() != 0;
}

void AppendClusterTime(const ServiceContext& service, const ReadConcernArgs& rc,
                       BsonBuilder& reply) {
  repl::ReplicationCoordinator* repl = service.repl;
  if (repl == nullptr) return;
  const uint64_t cluster_time = repl->ClusterTime();
  if (cluster_time == 0) return;
  const uint64_t operation_time = rc.Is(ReadConcernLevel::kMajority)
                                      ? repl->LastCommittedTimestamp()
                                      : repl->LastVisibleTimestamp();
  size_t gossip = reply.OpenObject("$clusterTime");
  reply.AppendTimestamp("clusterTime", std::max(cluster_time, operation_time));
  size_t signature = reply.OpenObject("signature");
  reply.AppendBinData("hash", 0, std::string(20, '\0'));
  reply.AppendInt64("keyId", 0);
  reply.Close(signature);
  reply.Close(gossip);
  reply.AppendTimestamp("operationTime", operation_time);
}

}  // namespace hourglass::commands
