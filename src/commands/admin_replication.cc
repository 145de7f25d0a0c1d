// The replica set commands (rs.initiate(), rs.status(), rs.conf(), rs.stepDown(), rs.freeze())
// over repl::ReplicationCoordinator, and the check that keeps writes on the primary and reads off
// members that may not serve them (CheckReplicationState). docs/replication.md has the design.
#include <chrono>
#include <sstream>
#include <string>

#include "base/clock.h"
#include "commands/admin_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/crud_util.h"
#include "commands/replication_checks.h"
#include "repl/initial_sync.h"
#include "repl/replication_coordinator.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using repl::MemberState;
using repl::OpTime;
using repl::ReplicaSetView;

namespace {

// The coordinator of a --replSet server; NoReplicationEnabled (76) on a standalone, with the
// words mongod uses for the command at hand.
StatusWith<repl::ReplicationCoordinator*> Coordinator(const CommandContext& ctx,
                                                      std::string_view standalone_message) {
  if (ctx.service.repl == nullptr) {
    return Status(ErrorCode::kNoReplicationEnabled, std::string(standalone_message));
  }
  return ctx.service.repl;
}

// The view of a member that has a configuration: NotYetInitialized (94) before replSetInitiate.
StatusWith<ReplicaSetView> ConfiguredView(const repl::ReplicationCoordinator& coordinator) {
  ReplicaSetView view = coordinator.View();
  if (!view.config) {
    return Status(ErrorCode::kNotYetInitialized, "no replset config has been received");
  }
  if (view.self < 0) {
    return Status(ErrorCode::kInvalidReplicaSetConfig,
                  "Our replica set config is invalid or we are not a member of it");
  }
  return view;
}

void AppendOpTime(BsonBuilder& b, std::string_view name, const OpTime& at) {
  size_t o = b.OpenObject(name);
  b.AppendTimestamp("ts", at.ts);
  b.AppendInt64("t", at.term);
  b.Close(o);
}

int64_t UptimeSeconds(const ServiceContext& service) {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                          service.start_time)
      .count();
}

Status RunReplSetInitiate(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_ASSIGN_OR_RETURN(auto* coordinator,
                      Coordinator(ctx, "This node was not started with replication enabled."));
  BsonElement given = cmd.FirstElement();
  std::optional<BsonObj> config;
  if (given.type() == BsonType::kObject) {
    config = given.Obj();
  } else if (!given.IsNumber() && given.type() != BsonType::kNull &&
             given.type() != BsonType::kUndefined && given.type() != BsonType::kBool) {
    return WrongTypeAtPath("replSetInitiate", given, "object");
  }
  HG_RETURN_IF_ERROR(coordinator->Initiate(config ? &*config : nullptr));
  if (!config || config->IsEmpty()) {
    reply.AppendString("info2",
                       "no configuration specified. Using a default configuration for "
                       "the set");
    reply.AppendString("me", coordinator->View().config->members[0].host);
  }
  return Status::OK();
}

Status RunReplSetGetConfig(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"commitmentStatus", "includeNewlyAdded"}));
  HG_ASSIGN_OR_RETURN(bool commitment, GetBool("replSetGetConfig", cmd, "commitmentStatus", false));
  HG_ASSIGN_OR_RETURN(auto* coordinator, Coordinator(ctx, "not running with --replSet"));
  HG_ASSIGN_OR_RETURN(ReplicaSetView view, ConfiguredView(*coordinator));
  if (commitment && view.state != MemberState::kPrimary) {
    return Status(ErrorCode::kNotWritablePrimary, "commitmentStatus is only supported on primary.");
  }
  reply.AppendObject("config", view.config->ToBson());
  // A configuration is in force once the log that carries it has committed it.
  if (commitment) reply.AppendBool("commitmentStatus", view.writable_primary);
  return Status::OK();
}

void AppendMember(const ServiceContext& service, const ReplicaSetView& view, int index,
                  BsonArrayBuilder& members) {
  const repl::MemberConfig& m = view.config->members[index];
  const bool self = index == view.self;
  MemberState state = view.member_states.at(index);
  BsonBuilder b;
  b.AppendInt32("_id", m.id);
  b.AppendString("name", m.host);
  b.AppendDouble("health", state == MemberState::kDown ? 0.0 : 1.0);
  b.AppendInt32("state", static_cast<int>(state));
  b.AppendString("stateStr", state == MemberState::kDown ? "(not reachable/healthy)"
                                                         : repl::MemberStateName(state));
  if (!self) {
    // What this member knows of another: its state from the Raft configuration (and, on the
    // primary, whether it answers and how far its log goes: Raft's replication progress).
    if (static_cast<size_t>(index) < view.member_optimes.size() &&
        view.member_optimes[index].ts > 0) {
      const OpTime& at = view.member_optimes[index];
      AppendOpTime(b, "optime", at);
      AppendOpTime(b, "optimeDurable", at);
      b.AppendDate("optimeDate", static_cast<int64_t>(at.ts >> 32) * 1000);
      b.AppendDate("optimeDurableDate", static_cast<int64_t>(at.ts >> 32) * 1000);
    }
    b.AppendString("lastHeartbeatMessage", "");
    b.AppendString("syncSourceHost", "");
    b.AppendInt32("syncSourceId", -1);
    b.AppendString("infoMessage", "");
    b.AppendInt32("configVersion", static_cast<int32_t>(view.config->version));
    b.AppendInt32("configTerm", static_cast<int32_t>(view.config->term));
    members.AppendObject(b.Obj());
    return;
  }
  b.AppendInt32("uptime", static_cast<int32_t>(UptimeSeconds(service)));
  AppendOpTime(b, "optime", view.last_applied);
  b.AppendDate("optimeDate", static_cast<int64_t>(view.last_applied.ts >> 32) * 1000);
  b.AppendDate("lastAppliedWallTime", view.last_applied_wall_ms);
  b.AppendDate("lastDurableWallTime", view.last_applied_wall_ms);
  b.AppendString("syncSourceHost", "");
  b.AppendInt32("syncSourceId", -1);
  b.AppendString("infoMessage", "");
  if (state == MemberState::kPrimary) {
    b.AppendTimestamp("electionTime", view.election_optime.ts);
    b.AppendDate("electionDate", view.election_wall_ms);
  }
  b.AppendInt32("configVersion", static_cast<int32_t>(view.config->version));
  b.AppendInt32("configTerm", static_cast<int32_t>(view.config->term));
  b.AppendBool("self", true);
  b.AppendString("lastHeartbeatMessage", "");
  members.AppendObject(b.Obj());
}

Status RunReplSetGetStatus(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"initialSync"}));
  HG_ASSIGN_OR_RETURN(auto* coordinator, Coordinator(ctx, "not running with --replSet"));
  HG_ASSIGN_OR_RETURN(ReplicaSetView view, ConfiguredView(*coordinator));
  const repl::ReplicaSetConfig& config = *view.config;
  reply.AppendString("set", config.set_name);
  reply.AppendDate("date", NowMillis());
  reply.AppendInt32("myState", static_cast<int>(view.state));
  reply.AppendInt64("term", view.term);
  reply.AppendString("syncSourceHost", "");
  reply.AppendInt32("syncSourceId", -1);
  reply.AppendInt64("heartbeatIntervalMillis", config.settings.heartbeat_interval_millis);
  reply.AppendInt32("majorityVoteCount", config.MajorityVoteCount());
  reply.AppendInt32("writeMajorityCount", config.WriteMajorityCount());
  reply.AppendInt32("votingMembersCount", config.VotingMembers());
  int writable_voting = 0;
  for (const auto& m : config.members) writable_voting += m.votes > 0 && !m.arbiter_only;
  reply.AppendInt32("writableVotingMembersCount", writable_voting);
  size_t optimes = reply.OpenObject("optimes");
  AppendOpTime(reply, "lastCommittedOpTime", view.last_committed);
  reply.AppendDate("lastCommittedWallTime", view.last_committed_wall_ms);
  AppendOpTime(reply, "readConcernMajorityOpTime", view.last_committed);
  AppendOpTime(reply, "appliedOpTime", view.last_applied);
  AppendOpTime(reply, "durableOpTime", view.last_applied);
  reply.AppendDate("lastAppliedWallTime", view.last_applied_wall_ms);
  reply.AppendDate("lastDurableWallTime", view.last_applied_wall_ms);
  reply.Close(optimes);
  BsonArrayBuilder members;
  for (size_t i = 0; i < config.members.size(); ++i) {
    AppendMember(ctx.service, view, static_cast<int>(i), members);
  }
  reply.AppendArray("members", members.Obj());
  return Status::OK();
}

Status RunReplSetStepDown(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"secondaryCatchUpPeriodSecs", "force"}));
  HG_ASSIGN_OR_RETURN(auto* coordinator, Coordinator(ctx, "not running with --replSet"));
  BsonElement first = cmd.FirstElement();
  int64_t step_down_secs = 60;
  if (first.IsNumber()) {
    step_down_secs = first.NumberLong();
  } else if (first.type() != BsonType::kBool) {
    return WrongTypeAtPath("replSetStepDown", first, "number");
  }
  HG_ASSIGN_OR_RETURN(auto catch_up,
                      GetInt64("replSetStepDown", cmd, "secondaryCatchUpPeriodSecs"));
  HG_ASSIGN_OR_RETURN(bool force, GetBool("replSetStepDown", cmd, "force", false));
  int64_t catch_up_secs = catch_up.value_or(10);
  if (step_down_secs < 0 || catch_up_secs < 0) {
    return Status(ErrorCode::kBadValue,
                  "stepdown period and secondaryCatchUpPeriodSecs must not "
                  "be negative");
  }
  if (catch_up_secs > step_down_secs) {
    return Status(ErrorCode::kBadValue,
                  "stepdown period must be longer than secondaryCatchUpPeriodSecs");
  }
  HG_ASSIGN_OR_RETURN(ReplicaSetView view, ConfiguredView(*coordinator));
  (void)view;
  return coordinator->StepDown(step_down_secs, catch_up_secs, force);
}

Status RunReplSetFreeze(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_ASSIGN_OR_RETURN(auto* coordinator, Coordinator(ctx, "not running with --replSet"));
  BsonElement first = cmd.FirstElement();
  if (!first.IsNumber()) return WrongTypeAtPath("replSetFreeze", first, "number");
  int64_t secs = first.NumberLong();
  if (secs < 0) return Status(ErrorCode::kBadValue, "replSetFreeze's seconds must not be negative");
  std::string info;
  HG_RETURN_IF_ERROR(coordinator->Freeze(secs, &info));
  if (!info.empty()) reply.AppendString("info", info);
  if (secs == 1) reply.AppendString("warning", "you really want to freeze for only 1 second?");
  return Status::OK();
}

// An IDL range check's failure as mongod 7.0 words it (51024), the value printed as a stream
// prints a double.
Status OutOfRange(std::string_view field, std::string_view bound, double value) {
  std::ostringstream out;
  out << "BSON field 'replSetResizeOplog." << field << "' value must be " << bound
      << ", actual value '" << value << "'";
  return Status(ErrorCode::kLocation51024, out.str());
}

Status RunReplSetResizeOplog(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"size", "minRetentionHours"}));
  std::optional<int64_t> max_bytes;
  std::optional<double> hours;
  if (BsonElement size = cmd["size"]; !size.eoo()) {
    if (!size.IsNumber()) return WrongTypeAtPath("replSetResizeOplog.size", size, "double");
    const double mb = size.NumberDouble();
    if (!(mb >= 990)) return OutOfRange("size", ">= 990", mb);
    if (mb > 1073741824) return OutOfRange("size", "<= 1073741824", mb);
    max_bytes = static_cast<int64_t>(mb * 1024 * 1024);
  }
  if (BsonElement retention = cmd["minRetentionHours"]; !retention.eoo()) {
    if (!retention.IsNumber()) {
      return WrongTypeAtPath("replSetResizeOplog.minRetentionHours", retention, "double");
    }
    hours = retention.NumberDouble();
    if (!(*hours >= 0)) return OutOfRange("minRetentionHours", ">= 0", *hours);
  }
  // A standalone has no oplog, as mongod answers.
  if (ctx.service.repl == nullptr) {
    return Status(ErrorCode::kNamespaceNotFound, "oplog does not exist");
  }
  return ctx.service.repl->ResizeOplog(max_bytes, hours);
}

Status RunReplSetReconfig(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"force"}));
  HG_ASSIGN_OR_RETURN(auto* coordinator, Coordinator(ctx, "not running with --replSet"));
  BsonElement config = cmd.FirstElement();
  if (config.type() != BsonType::kObject) {
    return WrongTypeAtPath("replSetReconfig", config, "object");
  }
  HG_ASSIGN_OR_RETURN(bool force, GetBool("replSetReconfig", cmd, "force", false));
  return coordinator->Reconfig(config.Obj(), force);
}

// hgRaftConnect: another member's Raft connection (repl/wire_transport.h). Once answered, the
// connection belongs to this member's Raft instance.
Status RunHgRaftConnect(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"setName", "from", "fromAddress", "to", "toAddress"}));
  HG_ASSIGN_OR_RETURN(auto* coordinator, Coordinator(ctx, "not running with --replSet"));
  // Under --auth only with a key file: the members log in to each other as its internal user
  // first (the command's privileges are checked before). Raft takes the socket over as it is,
  // so not over TLS.
  if ((ctx.service.options.auth && ctx.service.options.internal_key.empty()) || ctx.client.tls) {
    return Status(ErrorCode::kCommandNotSupported,
                  ctx.client.tls ? "replica set members do not connect to each other over TLS yet"
                                 : "replica set members connect to each other under --auth only "
                                   "with --keyFile");
  }
  HG_ASSIGN_OR_RETURN(auto set_name, GetString("hgRaftConnect", cmd, "setName"));
  HG_ASSIGN_OR_RETURN(auto from, GetInt64("hgRaftConnect", cmd, "from"));
  HG_ASSIGN_OR_RETURN(auto from_address, GetString("hgRaftConnect", cmd, "fromAddress"));
  HG_ASSIGN_OR_RETURN(auto to, GetInt64("hgRaftConnect", cmd, "to"));
  HG_ASSIGN_OR_RETURN(auto to_address, GetString("hgRaftConnect", cmd, "toAddress"));
  if (!set_name || !from || !from_address || !to || !to_address) {
    return Status(ErrorCode::kBadValue,
                  "hgRaftConnect needs setName, from, fromAddress, to and toAddress");
  }
  HG_RETURN_IF_ERROR(coordinator->PrepareRaftConnection(*set_name, *from, *to, *to_address));
  ctx.client.take_over_connection = [coordinator, from = *from, address = *from_address](int fd) {
    coordinator->AdoptRaftConnection(fd, from, address);
  };
  return Status::OK();
}

// The copy SnapshotClone reads, as a client cursor's stream.
class CopyStream : public pipeline::DocumentStream {
 public:
  explicit CopyStream(std::unique_ptr<repl::SnapshotClone> copy) : copy_(std::move(copy)) {}
  StatusWith<std::optional<BsonObj>> Next() override { return copy_->Next(); }

 private:
  std::unique_ptr<repl::SnapshotClone> copy_;
};

// Internal: a member's initial sync reads this member's data through it (repl/initial_sync.h).
Status RunHgCloneSnapshot(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"from"}));
  HG_RETURN_IF_ERROR(Coordinator(ctx, "not running with --replSet").status());
  BsonElement from = cmd["from"];
  if (from.type() != BsonType::kTimestamp) {
    return bson::WrongTypeAtPath("from", from, "timestamp");
  }
  HG_ASSIGN_OR_RETURN(auto copy,
                      repl::SnapshotClone::Open(ctx.service.engine, from.TimestampValue()));
  // An empty first batch: the getMores carry the copy, 16 MiB at a time.
  return ReplyWithCursor(ctx, ctx.db + ".$cmd.hgCloneSnapshot",
                         std::make_unique<CopyStream>(std::move(copy)), 0, false, reply, false);
}

}  // namespace

void AppendReplicaSetHello(const CommandContext& ctx, bool legacy, BsonBuilder& reply) {
  ReplicaSetView view = ctx.service.repl->View();
  const char* primary_field = legacy ? "ismaster" : "isWritablePrimary";
  if (!view.config) {
    reply.AppendBool(primary_field, false);
    reply.AppendBool("secondary", false);
    reply.AppendString("info", "Does not have a valid replica set config");
    reply.AppendBool("isreplicaset", true);
    AppendTopologyVersion(ctx, view.topology_counter, reply);
    return;
  }
  const repl::ReplicaSetConfig& config = *view.config;
  AppendTopologyVersion(ctx, view.topology_counter, reply);
  if (view.self < 0) {
    // A configuration that does not name this member (mongod's REMOVED state).
    reply.AppendBool(primary_field, false);
    reply.AppendBool("secondary", false);
    reply.AppendString("info", "Does not have a valid replica set config");
    reply.AppendBool("isreplicaset", true);
    return;
  }
  BsonArrayBuilder hosts, passives, arbiters;
  bool any_passive = false, any_arbiter = false;
  for (const auto& m : config.members) {
    if (m.hidden) continue;
    if (m.arbiter_only) {
      arbiters.AppendString(m.host);
      any_arbiter = true;
    } else if (m.priority == 0) {
      passives.AppendString(m.host);
      any_passive = true;
    } else {
      hosts.AppendString(m.host);
    }
  }
  reply.AppendArray("hosts", hosts.Obj());
  if (any_passive) reply.AppendArray("passives", passives.Obj());
  if (any_arbiter) reply.AppendArray("arbiters", arbiters.Obj());
  reply.AppendString("setName", config.set_name);
  reply.AppendInt32("setVersion", static_cast<int32_t>(config.version));
  reply.AppendBool(primary_field, view.writable_primary);
  reply.AppendBool("secondary", view.state == MemberState::kSecondary);
  if (view.primary >= 0) reply.AppendString("primary", config.members[view.primary].host);
  const repl::MemberConfig& self = config.members[view.self];
  if (self.priority == 0 && !self.arbiter_only) reply.AppendBool("passive", true);
  if (self.hidden) reply.AppendBool("hidden", true);
  if (!self.tags.IsEmpty()) reply.AppendObject("tags", self.tags);
  reply.AppendString("me", self.host);
  if (view.state == MemberState::kPrimary) {
    reply.AppendObjectId("electionId", repl::ElectionIdForTerm(view.term));
  }
  size_t last_write = reply.OpenObject("lastWrite");
  AppendOpTime(reply, "opTime", view.last_applied);
  reply.AppendDate("lastWriteDate", static_cast<int64_t>(view.last_applied.ts >> 32) * 1000);
  AppendOpTime(reply, "majorityOpTime", view.last_committed);
  reply.AppendDate("majorityWriteDate", static_cast<int64_t>(view.last_committed.ts >> 32) * 1000);
  reply.Close(last_write);
}

std::unique_ptr<Command> MakeHgRaftConnectCommand() {
  return std::make_unique<FnCommand>(
      "hgRaftConnect",
      FnCommand::Options{.help = "Internal: a replica set member's Raft connection",
                         .admin_only = true},
      RunHgRaftConnect);
}

std::unique_ptr<Command> MakeHgCloneSnapshotCommand() {
  return std::make_unique<FnCommand>(
      "hgCloneSnapshot",
      FnCommand::Options{.help = "Internal: a replica set member's copy of this member's data",
                         .admin_only = true},
      RunHgCloneSnapshot);
}

std::unique_ptr<Command> MakeReplSetInitiateCommand() {
  return std::make_unique<FnCommand>("replSetInitiate",
                                     FnCommand::Options{.help = "Initiate/christen a replica set.\n"
                                                                "{ replSetInitiate : <config> }",
                                                        .admin_only = true},
                                     RunReplSetInitiate);
}

std::unique_ptr<Command> MakeReplSetGetConfigCommand() {
  return std::make_unique<FnCommand>(
      "replSetGetConfig",
      FnCommand::Options{.help = "Returns the current replica set configuration\n"
                                 "{ replSetGetConfig : 1 }",
                         .admin_only = true},
      RunReplSetGetConfig);
}

std::unique_ptr<Command> MakeReplSetGetStatusCommand() {
  return std::make_unique<FnCommand>(
      "replSetGetStatus",
      FnCommand::Options{.help = "Report status of a replica set from the POV of this server\n"
                                 "{ replSetGetStatus : 1 }",
                         .admin_only = true},
      RunReplSetGetStatus);
}

std::unique_ptr<Command> MakeReplSetReconfigCommand() {
  return std::make_unique<FnCommand>(
      "replSetReconfig",
      FnCommand::Options{.help = "Adjust configuration of a replica set\n"
                                 "{ replSetReconfig : config_object }",
                         .admin_only = true},
      RunReplSetReconfig);
}

std::unique_ptr<Command> MakeReplSetStepDownCommand() {
  return std::make_unique<FnCommand>("replSetStepDown",
                                     FnCommand::Options{.help = "Step down as primary.\n"
                                                                "{ replSetStepDown : <seconds> }",
                                                        .admin_only = true},
                                     RunReplSetStepDown);
}

std::unique_ptr<Command> MakeReplSetResizeOplogCommand() {
  return std::make_unique<FnCommand>(
      "replSetResizeOplog",
      FnCommand::Options{
          .help = "Resize oplog using size (in MBs) and minimum retention (in hours)",
          .admin_only = true},
      RunReplSetResizeOplog);
}

std::unique_ptr<Command> MakeReplSetFreezeCommand() {
  return std::make_unique<FnCommand>(
      "replSetFreeze",
      FnCommand::Options{.help = "{ replSetFreeze : <seconds> }\n"
                                 "'freeze' state of member to the extent we can do that.",
                         .admin_only = true},
      RunReplSetFreeze);
}

}  // namespace hourglass::commands
