// Administrative and diagnostic commands: the handshake (hello/isMaster), buildInfo, serverStatus,
// getParameter/setParameter, getLog, hostInfo, listCommands, sessions, shutdown and the small
// commands that mongosh, the drivers, Compass and monitoring tools call on connect. Reply shapes
// follow MongoDB 7.0; each command only appends its own fields (the dispatcher adds `ok`).
//
// Each admin_*.cc file exposes its commands' factories (command_factories.h), which registry.cc's
// table lists. The commands keep no state
// of their own: per-connection state lives in ClientState, process state in ServiceContext and the
// ServerParameterRegistry, so every command is as thread-safe as those are.
#pragma once

#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "bson/bson.h"
#include "commands/command.h"

namespace hourglass::commands {

// The version Hourglass reports to clients (buildInfo.version): a MongoDB 7.0 release, because
// drivers and tools gate features on it. maxWireVersion 21 matches it.
inline constexpr std::string_view kReportedMongoVersion = "7.0.14";
inline constexpr int kReportedVersionArray[4] = {7, 0, 14, 0};
inline constexpr std::string_view kHourglassVersion = "0.1.0";
inline constexpr int32_t kMaxBsonObjectSize = 16 * 1024 * 1024;
inline constexpr int32_t kMaxMessageSizeBytes = 48000000;
inline constexpr int32_t kMaxWriteBatchSize = 100000;
inline constexpr int32_t kMinWireVersion = 0;
inline constexpr int32_t kMaxWireVersion = 21;
inline constexpr int32_t kLogicalSessionTimeoutMinutes = 30;

// A command defined by a function, for the many admin commands that need no state of their own.
class FnCommand : public Command {
 public:
  using RunFn = std::function<Status(CommandContext&, const bson::BsonObj&, bson::BsonBuilder&)>;
  struct Options {
    std::vector<std::string_view> aliases = {};
    std::string_view help = {};
    bool admin_only = false;
    bool test_only = false;
    bool compressible = true;
    ReadLevels read_levels = ReadLevels::kLocalOnly;
    bool allows_after_cluster_time = true;
  };

  FnCommand(std::string_view name, Options options, RunFn run)
      : name_(name), options_(std::move(options)), run_(std::move(run)) {}

  std::string_view Name() const override { return name_; }
  std::vector<std::string_view> Aliases() const override { return options_.aliases; }
  std::string_view Help() const override { return options_.help; }
  bool AdminOnly() const override { return options_.admin_only; }
  bool TestOnly() const override { return options_.test_only; }
  bool Compressible() const override { return options_.compressible; }
  ReadLevels ReadConcernLevels() const override { return options_.read_levels; }
  bool AllowsAfterClusterTime() const override { return options_.allows_after_cluster_time; }
  Status Run(CommandContext& ctx, const bson::BsonObj& cmd,
             bson::BsonBuilder& reply) const override {
    return run_(ctx, cmd, reply);
  }

 private:
  std::string_view name_;
  Options options_;
  RunFn run_;
};

// What currentOp and $currentOp list: every running operation, as mongod describes it, or (with
// `own_only` under --auth) those of the caller's users.
std::vector<bson::BsonObj> CurrentOperations(const CommandContext& ctx, bool own_only);

// Registers the general parameters users expect of mongod (cursorTimeoutMillis, logLevel, quiet,
// enableTestCommands); idempotent. Other modules register their own parameters.
void RegisterBasicServerParameters();

}  // namespace hourglass::commands
