// The registry: every command the server answers, in one alphabetical table.
#include "base/server_parameters.h"
#include "commands/admin_commands.h"
#include "commands/command.h"
#include "commands/command_factories.h"

namespace hourglass::commands {

namespace {

// Every command by name, next to the factory that makes it; aliases are the commands' own
// (Command::Aliases()). Keep it sorted: registry_test.cc checks the order and that each factory
// makes the command named on its row.
constexpr CommandTableEntry kCommandTable[] = {
    {"aggregate", &MakeAggregateCommand},
    {"authenticate", &MakeAuthenticateCommand},
    {"buildInfo", &MakeBuildInfoCommand},
    {"collMod", &MakeCollModCommand},
    {"collStats", &MakeCollStatsCommand},
    {"compact", &MakeCompactCommand},
    {"configureFailPoint", &MakeConfigureFailPointCommand},
    {"connectionStatus", &MakeConnectionStatusCommand},
    {"count", &MakeCountCommand},
    {"create", &MakeCreateCommand},
    {"createIndexes", &MakeCreateIndexesCommand},
    {"createRole", &MakeCreateRoleCommand},
    {"createUser", &MakeCreateUserCommand},
    {"currentOp", &MakeCurrentOpCommand},
    {"dbHash", &MakeDbHashCommand},
    {"dbStats", &MakeDbStatsCommand},
    {"delete", &MakeDeleteCommand},
    {"distinct", &MakeDistinctCommand},
    {"drop", &MakeDropCommand},
    {"dropAllRolesFromDatabase", &MakeDropAllRolesFromDatabaseCommand},
    {"dropAllUsersFromDatabase", &MakeDropAllUsersFromDatabaseCommand},
    {"dropDatabase", &MakeDropDatabaseCommand},
    {"dropIndexes", &MakeDropIndexesCommand},
    {"dropRole", &MakeDropRoleCommand},
    {"dropUser", &MakeDropUserCommand},
    {"endSessions", &MakeEndSessionsCommand},
    {"explain", &MakeExplainCommand},
    {"features", &MakeFeaturesCommand},
    {"find", &MakeFindCommand},
    {"findAndModify", &MakeFindAndModifyCommand},
    {"fsync", &MakeFsyncCommand},
    {"fsyncUnlock", &MakeFsyncUnlockCommand},
    {"getCmdLineOpts", &MakeGetCmdLineOptsCommand},
    {"getDefaultRWConcern", &MakeGetDefaultRWConcernCommand},
    {"getDiagnosticData", &MakeGetDiagnosticDataCommand},
    {"getFreeMonitoringStatus", &MakeGetFreeMonitoringStatusCommand},
    {"getLog", &MakeGetLogCommand},
    {"getMore", &MakeGetMoreCommand},
    {"getParameter", &MakeGetParameterCommand},
    {"grantPrivilegesToRole", &MakeGrantPrivilegesToRoleCommand},
    {"grantRolesToRole", &MakeGrantRolesToRoleCommand},
    {"grantRolesToUser", &MakeGrantRolesToUserCommand},
    {"hello", &MakeHelloCommand},
    {"hgCloneSnapshot", &MakeHgCloneSnapshotCommand},
    {"hgRaftConnect", &MakeHgRaftConnectCommand},
    {"hostInfo", &MakeHostInfoCommand},
    {"insert", &MakeInsertCommand},
    {"killAllSessions", &MakeKillAllSessionsCommand},
    {"killCursors", &MakeKillCursorsCommand},
    {"killOp", &MakeKillOpCommand},
    {"killSessions", &MakeKillSessionsCommand},
    {"listCollections", &MakeListCollectionsCommand},
    {"listCommands", &MakeListCommandsCommand},
    {"listDatabases", &MakeListDatabasesCommand},
    {"listIndexes", &MakeListIndexesCommand},
    {"lockInfo", &MakeLockInfoCommand},
    {"logout", &MakeLogoutCommand},
    {"ping", &MakePingCommand},
    {"planCacheClear", &MakePlanCacheClearCommand},
    {"reIndex", &MakeReIndexCommand},
    {"refreshSessions", &MakeRefreshSessionsCommand},
    {"renameCollection", &MakeRenameCollectionCommand},
    {"replSetFreeze", &MakeReplSetFreezeCommand},
    {"replSetGetConfig", &MakeReplSetGetConfigCommand},
    {"replSetGetStatus", &MakeReplSetGetStatusCommand},
    {"replSetInitiate", &MakeReplSetInitiateCommand},
    {"replSetReconfig", &MakeReplSetReconfigCommand},
    {"replSetResizeOplog", &MakeReplSetResizeOplogCommand},
    {"replSetStepDown", &MakeReplSetStepDownCommand},
    {"revokePrivilegesFromRole", &MakeRevokePrivilegesFromRoleCommand},
    {"revokeRolesFromRole", &MakeRevokeRolesFromRoleCommand},
    {"revokeRolesFromUser", &MakeRevokeRolesFromUserCommand},
    {"rolesInfo", &MakeRolesInfoCommand},
    {"saslContinue", &MakeSaslContinueCommand},
    {"saslStart", &MakeSaslStartCommand},
    {"serverStatus", &MakeServerStatusCommand},
    {"setFeatureCompatibilityVersion", &MakeSetFeatureCompatibilityVersionCommand},
    {"setParameter", &MakeSetParameterCommand},
    {"shutdown", &MakeShutdownCommand},
    {"startSession", &MakeStartSessionCommand},
    {"update", &MakeUpdateCommand},
    {"updateRole", &MakeUpdateRoleCommand},
    {"updateUser", &MakeUpdateUserCommand},
    {"usersInfo", &MakeUsersInfoCommand},
    {"validate", &MakeValidateCommand},
    {"waitForFailPoint", &MakeWaitForFailPointCommand},
    {"whatsmyuri", &MakeWhatsMyUriCommand},
};

}  // namespace

std::span<const CommandTableEntry> CommandTable() { return kCommandTable; }

const CommandRegistry& CommandRegistry::Get() {
  static const CommandRegistry* registry = [] {
    // getParameter/setParameter serve these, so they exist once any command can run.
    RegisterBasicServerParameters();
    auto* r = new CommandRegistry();
    for (const CommandTableEntry& entry : kCommandTable) {
      std::unique_ptr<Command> c = entry.make();
      invariant(c->Name() == entry.name);
      r->commands_.push_back(std::move(c));
    }
    for (const auto& c : r->commands_) {
      r->by_name_.emplace(std::string(c->Name()), c.get());
      for (auto alias : c->Aliases()) r->by_name_.emplace(std::string(alias), c.get());
    }
    return r;
  }();
  return *registry;
}

bool CommandEnabled(const Command& command) { return !command.TestOnly() || TestCommandsEnabled(); }

const Command* CommandRegistry::Find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<const Command*> CommandRegistry::All() const {
  std::vector<const Command*> out;
  for (const auto& c : commands_) out.push_back(c.get());
  return out;
}

}  // namespace hourglass::commands
