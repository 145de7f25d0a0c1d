// hello / isMaster / ismaster: the connection handshake and the drivers' monitoring heartbeat
// (mongodb/specifications source/mongodb-handshake/handshake.md and the SDAM monitoring spec).
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "base/logger.h"
#include "commands/admin_commands.h"
#include "commands/auth_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/replication_checks.h"
#include "repl/replication_coordinator.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// The agreed compressors: the client's names, in the client's order, that this server accepts.
// Unknown names are ignored (clients list what they support; the server answers the subset).
// nullopt when the request has no `compression` field.
StatusWith<std::optional<std::vector<wire::Compressor>>> NegotiateCompressors(
    const ServiceContext& service, std::string_view cmd_name, const BsonObj& cmd) {
  std::vector<wire::Compressor> agreed;
  HG_ASSIGN_OR_RETURN(auto requested, GetArray(cmd_name, cmd, "compression"));
  if (!requested) return std::optional<std::vector<wire::Compressor>>();
  for (BsonElement e : *requested) {
    if (e.type() != BsonType::kString) {
      return WrongTypeAtPath(std::string(cmd_name) + ".compression", e, "string");
    }
    auto c = wire::CompressorFromName(e.Str());
    if (!c) continue;
    bool supported = false;
    for (auto s : service.compressors) supported = supported || s == *c;
    bool duplicate = false;
    for (auto a : agreed) duplicate = duplicate || a == *c;
    if (supported && !duplicate) agreed.push_back(*c);
  }
  return std::optional<std::vector<wire::Compressor>>(std::move(agreed));
}

BsonObj CompressorNames(const std::vector<wire::Compressor>& list) {
  BsonArrayBuilder names;
  for (auto c : list) names.AppendString(wire::CompressorName(c));
  return names.Obj();
}

void LogClientMetadata(const CommandContext& ctx, const BsonObj& metadata) {
  BsonBuilder attr;
  attr.AppendString("remote", ctx.client.remote);
  attr.AppendString("client", "conn" + std::to_string(ctx.client.connection_id));
  attr.AppendArray("negotiatedCompressors", CompressorNames(ctx.client.compressors));
  attr.AppendObject("doc", metadata);
  LOGI("NETWORK", 51800, "client metadata", attr.Obj().ToJson());
}

// The topology's change counter: a replica set member's, or 0 for a standalone's, which never
// changes.
int64_t TopologyCounter(const CommandContext& ctx) {
  return ctx.service.repl == nullptr ? 0 : ctx.service.repl->View().topology_counter;
}

// An awaitable hello (SDAM streaming protocol): when the client already knows our current
// topologyVersion, the reply is held back until the topology changes or maxAwaitTimeMS passes.
// A standalone's topology never changes, so this simply waits, waking early at shutdown.
Status MaybeAwaitTopologyChange(const CommandContext& ctx, std::string_view cmd_name,
                                const BsonObj& cmd) {
  HG_ASSIGN_OR_RETURN(auto topology, GetObject(cmd_name, cmd, "topologyVersion"));
  HG_ASSIGN_OR_RETURN(auto max_await, GetInt64(cmd_name, cmd, "maxAwaitTimeMS"));
  if (!topology && !max_await) return Status::OK();
  if (!topology) {
    return Status(ErrorCode::kBadValue,
                  "A request with 'maxAwaitTimeMS' must include a 'topologyVersion'");
  }
  if (!max_await) {
    return Status(ErrorCode::kBadValue,
                  "A request with a 'topologyVersion' must include 'maxAwaitTimeMS'");
  }
  if (*max_await < 0) {
    return Status(ErrorCode::kBadValue, "maxAwaitTimeMS must be a non-negative integer");
  }
  BsonElement pid = topology->GetField("processId");
  BsonElement counter = topology->GetField("counter");
  if (pid.type() != BsonType::kObjectId || !counter.IsNumber()) {
    return Status(ErrorCode::kTypeMismatch,
                  "topologyVersion must be {processId: ObjectId, counter: long}");
  }
  // A different process id means the client saw an earlier incarnation: answer at once.
  if (!(pid.Oid() == ctx.service.process_id)) return Status::OK();
  const int64_t current = TopologyCounter(ctx);
  if (counter.NumberLong() > current) {
    return Status(ErrorCode::kBadValue,
                  "Received a topology version with the same process ID and a higher counter "
                  "than the server's");
  }
  // A client behind on the topology hears the news at once.
  if (counter.NumberLong() < current) return Status::OK();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(*max_await);
  if (ctx.service.repl != nullptr) {
    ctx.service.repl->AwaitTopologyChange(current, deadline, ctx.service.shutting_down);
    return Status::OK();
  }
  while (!ctx.service.shutting_down.load() && std::chrono::steady_clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(50)));
  }
  return Status::OK();
}

Status RunHello(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  std::string cmd_name(cmd.FirstElement().FieldName());
  bool legacy = cmd_name != "hello";

  HG_ASSIGN_OR_RETURN(bool hello_ok, GetBool(cmd_name, cmd, "helloOk", false));
  HG_ASSIGN_OR_RETURN(auto metadata, GetObject(cmd_name, cmd, "client"));
  HG_ASSIGN_OR_RETURN(auto sasl_mechs, GetString(cmd_name, cmd, "saslSupportedMechs"));
  HG_ASSIGN_OR_RETURN(auto agreed, NegotiateCompressors(ctx.service, cmd_name, cmd));
  HG_RETURN_IF_ERROR(MaybeAwaitTopologyChange(ctx, cmd_name, cmd));

  // As in MongoDB, a hello carrying `compression` (re)negotiates, and one without it (a
  // monitoring heartbeat) is answered with the list already agreed. Client metadata is taken
  // from the first hello of the connection only.
  if (agreed) ctx.client.compressors = std::move(*agreed);
  if (!ctx.client.sent_handshake) {
    ctx.client.sent_handshake = true;
    if (metadata) {
      ctx.client.client_metadata = metadata->Owned();
      LogClientMetadata(ctx, ctx.client.client_metadata);
    }
  }

  if (hello_ok) reply.AppendBool("helloOk", true);
  if (ctx.service.repl != nullptr) {
    AppendReplicaSetHello(ctx, legacy, reply);
  } else {
    reply.AppendBool(legacy ? "ismaster" : "isWritablePrimary", true);
    AppendTopologyVersion(ctx, 0, reply);
  }
  reply.AppendInt32("maxBsonObjectSize", kMaxBsonObjectSize);
  reply.AppendInt32("maxMessageSizeBytes", kMaxMessageSizeBytes);
  reply.AppendInt32("maxWriteBatchSize", kMaxWriteBatchSize);
  reply.AppendDate("localTime", NowMillis());
  reply.AppendInt32("logicalSessionTimeoutMinutes", kLogicalSessionTimeoutMinutes);
  reply.AppendInt32("connectionId", static_cast<int32_t>(ctx.client.connection_id));
  reply.AppendInt32("minWireVersion", kMinWireVersion);
  reply.AppendInt32("maxWireVersion", kMaxWireVersion);
  reply.AppendBool("readOnly", false);
  if (!ctx.client.compressors.empty()) {
    reply.AppendArray("compression", CompressorNames(ctx.client.compressors));
  }
  // The handshake's authentication fields come last, as mongod appends them.
  if (sasl_mechs) {
    HG_ASSIGN_OR_RETURN(std::optional<BsonObj> mechanisms, SupportedMechanisms(ctx, *sasl_mechs));
    if (mechanisms) reply.AppendArray("saslSupportedMechs", *mechanisms);
  }
  if (BsonElement speculative = cmd["speculativeAuthenticate"]; !speculative.eoo()) {
    HG_ASSIGN_OR_RETURN(std::optional<BsonObj> first, SpeculativeAuthenticate(ctx, speculative));
    if (first) reply.AppendObject("speculativeAuthenticate", *first);
  }
  return Status::OK();
}

}  // namespace

void AppendTopologyVersion(const CommandContext& ctx, int64_t counter, BsonBuilder& reply) {
  size_t tv = reply.OpenObject("topologyVersion");
  reply.AppendObjectId("processId", ctx.service.process_id);
  reply.AppendInt64("counter", counter);
  reply.Close(tv);
}

std::unique_ptr<Command> MakeHelloCommand() {
  return std::make_unique<FnCommand>(
      "hello",
      FnCommand::Options{.aliases = {"isMaster", "ismaster"},
                         .help = "Check if this server is primary for a replica set\n"
                                 "{ hello : 1 }",
                         .admin_only = false,
                         .compressible = false},
      RunHello);
}

}  // namespace hourglass::commands
