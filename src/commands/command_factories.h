// The factory of every command, grouped by the file that defines it. registry.cc lists them all,
// by command name, in one alphabetical table (CommandTable()); the command classes themselves stay
// in their files' anonymous namespaces. Each factory returns a new, stateless instance: the
// registry makes one of each, once, and shares it among all connections.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "commands/command.h"

namespace hourglass::commands {

using CommandFactory = std::unique_ptr<Command> (*)();

// One row of registry.cc's table: a command's name (its Name(), not an alias) and its factory.
struct CommandTableEntry {
  std::string_view name;
  CommandFactory make;
};

// Every command, sorted by name (registry_test.cc checks the order and the names).
std::span<const CommandTableEntry> CommandTable();

// admin_fail_points.cc
std::unique_ptr<Command> MakeConfigureFailPointCommand();
std::unique_ptr<Command> MakeWaitForFailPointCommand();

// admin_hello.cc
std::unique_ptr<Command> MakeHelloCommand();

// admin_info.cc
std::unique_ptr<Command> MakePingCommand();
std::unique_ptr<Command> MakeBuildInfoCommand();
std::unique_ptr<Command> MakeHostInfoCommand();
std::unique_ptr<Command> MakeGetCmdLineOptsCommand();
std::unique_ptr<Command> MakeGetLogCommand();
std::unique_ptr<Command> MakeWhatsMyUriCommand();
std::unique_ptr<Command> MakeConnectionStatusCommand();
std::unique_ptr<Command> MakeListCommandsCommand();
std::unique_ptr<Command> MakeFeaturesCommand();

// ddl_dbhash.cc
std::unique_ptr<Command> MakeDbHashCommand();

// admin_replication.cc
std::unique_ptr<Command> MakeHgRaftConnectCommand();
std::unique_ptr<Command> MakeHgCloneSnapshotCommand();
std::unique_ptr<Command> MakeReplSetFreezeCommand();
std::unique_ptr<Command> MakeReplSetResizeOplogCommand();
std::unique_ptr<Command> MakeReplSetGetConfigCommand();
std::unique_ptr<Command> MakeReplSetGetStatusCommand();
std::unique_ptr<Command> MakeReplSetInitiateCommand();
std::unique_ptr<Command> MakeReplSetReconfigCommand();
std::unique_ptr<Command> MakeReplSetStepDownCommand();

// admin_ops.cc
std::unique_ptr<Command> MakeShutdownCommand();
std::unique_ptr<Command> MakeFsyncCommand();
std::unique_ptr<Command> MakeFsyncUnlockCommand();
std::unique_ptr<Command> MakeCurrentOpCommand();
std::unique_ptr<Command> MakeKillOpCommand();
std::unique_ptr<Command> MakeGetFreeMonitoringStatusCommand();
std::unique_ptr<Command> MakeGetDefaultRWConcernCommand();
std::unique_ptr<Command> MakeLockInfoCommand();
std::unique_ptr<Command> MakeGetDiagnosticDataCommand();

// auth_commands.cc
std::unique_ptr<Command> MakeSaslStartCommand();
std::unique_ptr<Command> MakeSaslContinueCommand();
std::unique_ptr<Command> MakeAuthenticateCommand();
std::unique_ptr<Command> MakeLogoutCommand();

// user_management.cc
std::unique_ptr<Command> MakeCreateUserCommand();
std::unique_ptr<Command> MakeUpdateUserCommand();
std::unique_ptr<Command> MakeDropUserCommand();
std::unique_ptr<Command> MakeDropAllUsersFromDatabaseCommand();
std::unique_ptr<Command> MakeUsersInfoCommand();
std::unique_ptr<Command> MakeGrantRolesToUserCommand();
std::unique_ptr<Command> MakeRevokeRolesFromUserCommand();

// role_management.cc
std::unique_ptr<Command> MakeCreateRoleCommand();
std::unique_ptr<Command> MakeUpdateRoleCommand();
std::unique_ptr<Command> MakeDropRoleCommand();
std::unique_ptr<Command> MakeDropAllRolesFromDatabaseCommand();
std::unique_ptr<Command> MakeRolesInfoCommand();
std::unique_ptr<Command> MakeGrantPrivilegesToRoleCommand();
std::unique_ptr<Command> MakeRevokePrivilegesFromRoleCommand();
std::unique_ptr<Command> MakeGrantRolesToRoleCommand();
std::unique_ptr<Command> MakeRevokeRolesFromRoleCommand();

// admin_parameters.cc
std::unique_ptr<Command> MakeGetParameterCommand();
std::unique_ptr<Command> MakeSetParameterCommand();
std::unique_ptr<Command> MakeSetFeatureCompatibilityVersionCommand();

// admin_server_status.cc
std::unique_ptr<Command> MakeServerStatusCommand();

// admin_sessions.cc
std::unique_ptr<Command> MakeStartSessionCommand();
std::unique_ptr<Command> MakeEndSessionsCommand();
std::unique_ptr<Command> MakeKillSessionsCommand();
std::unique_ptr<Command> MakeKillAllSessionsCommand();
std::unique_ptr<Command> MakeRefreshSessionsCommand();

// aggregate.cc
std::unique_ptr<Command> MakeAggregateCommand();
std::unique_ptr<Command> MakeCountCommand();
std::unique_ptr<Command> MakeDistinctCommand();

// crud_find.cc
std::unique_ptr<Command> MakeFindCommand();
std::unique_ptr<Command> MakeGetMoreCommand();
std::unique_ptr<Command> MakeKillCursorsCommand();

// crud_write.cc
std::unique_ptr<Command> MakeDeleteCommand();
std::unique_ptr<Command> MakeFindAndModifyCommand();
std::unique_ptr<Command> MakeInsertCommand();
std::unique_ptr<Command> MakeUpdateCommand();

// ddl_create.cc
std::unique_ptr<Command> MakeCreateCommand();
std::unique_ptr<Command> MakeCollModCommand();

// ddl_drop.cc
std::unique_ptr<Command> MakeDropCommand();
std::unique_ptr<Command> MakeDropDatabaseCommand();
std::unique_ptr<Command> MakeRenameCollectionCommand();

// ddl_indexes.cc
std::unique_ptr<Command> MakeCreateIndexesCommand();
std::unique_ptr<Command> MakeDropIndexesCommand();
std::unique_ptr<Command> MakeReIndexCommand();

// ddl_list.cc
std::unique_ptr<Command> MakeListCollectionsCommand();
std::unique_ptr<Command> MakeListDatabasesCommand();
std::unique_ptr<Command> MakeListIndexesCommand();

// ddl_compact.cc
std::unique_ptr<Command> MakeCompactCommand();

// ddl_validate.cc
std::unique_ptr<Command> MakeValidateCommand();

// ddl_stats.cc
std::unique_ptr<Command> MakeDbStatsCommand();
std::unique_ptr<Command> MakeCollStatsCommand();

// explain.cc
std::unique_ptr<Command> MakeExplainCommand();

// plan_cache_commands.cc
std::unique_ptr<Command> MakePlanCacheClearCommand();

}  // namespace hourglass::commands
