// What each command needs of its caller when --auth is on: authentication, and the action types
// MongoDB checks for it on the cluster, a database or a namespace (a time-series collection's
// view namespace, as MongoDB resolves them). One table, by command name; a command missing from
// it is refused to everyone (registry_test.cc checks that every command is listed).
#include <functional>
#include <map>
#include <mutex>

#include "auth/privileges.h"
#include "base/logger.h"
#include "commands/auth_commands.h"
#include "commands/command_util.h"
#include "commands/operation_registry.h"

namespace hourglass::commands {

using auth::ActionType;
using auth::ResourceTarget;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using A = ActionType;

namespace {

struct Need {
  ResourceTarget target;
  ActionType action;
};
using Needs = std::vector<Need>;
using NeedsFn = std::function<StatusWith<Needs>(const CommandContext&, const BsonObj&)>;

// The collection a command names in its first field ("" when it names none, e.g. aggregate: 1).
ResourceTarget CommandNamespace(const CommandContext& ctx, const BsonObj& cmd) {
  BsonElement e = cmd.FirstElement();
  if (e.type() == BsonType::kString) return ResourceTarget::Namespace(ctx.db, std::string(e.Str()));
  return ResourceTarget::Database(ctx.db);
}

NeedsFn OnCluster(std::initializer_list<ActionType> actions) {
  Needs needs;
  for (ActionType a : actions) needs.push_back({ResourceTarget::Cluster(), a});
  return [needs](const CommandContext&, const BsonObj&) -> StatusWith<Needs> { return needs; };
}

NeedsFn OnDatabase(ActionType action) {
  return [action](const CommandContext& ctx, const BsonObj&) -> StatusWith<Needs> {
    return Needs{{ResourceTarget::Database(ctx.db), action}};
  };
}

NeedsFn OnNamespace(std::initializer_list<ActionType> actions) {
  std::vector<ActionType> list(actions);
  return [list](const CommandContext& ctx, const BsonObj& cmd) -> StatusWith<Needs> {
    Needs needs;
    for (ActionType a : list) needs.push_back({CommandNamespace(ctx, cmd), a});
    if (cmd["bypassDocumentValidation"].Truthy()) {
      needs.push_back({CommandNamespace(ctx, cmd), A::kBypassDocumentValidation});
    }
    return needs;
  };
}

NeedsFn AuthenticationOnly() {
  return [](const CommandContext&, const BsonObj&) -> StatusWith<Needs> { return Needs{}; };
}

// A stage's target collection: "name" or {db, coll} (of the command's database by default).
std::optional<ResourceTarget> StageTarget(const CommandContext& ctx, const BsonElement& e,
                                          std::string_view coll_field) {
  if (e.type() == BsonType::kString) return ResourceTarget::Namespace(ctx.db, std::string(e.Str()));
  if (e.type() == BsonType::kObject) {
    BsonObj o = e.Obj();
    BsonElement coll = o[coll_field];
    BsonElement db = o["db"];
    if (coll.type() == BsonType::kString) {
      return ResourceTarget::Namespace(
          db.type() == BsonType::kString ? std::string(db.Str()) : ctx.db, std::string(coll.Str()));
    }
  }
  return std::nullopt;
}

// The privileges the stages of `pipeline` need beyond reading the aggregated collection: reading
// what $lookup, $graphLookup and $unionWith join, writing what $out and $merge write, and the
// statistics stages' own actions. Sub-pipelines ($lookup, $unionWith, $facet) are walked too.
void PipelineNeeds(const CommandContext& ctx, const ResourceTarget& source, const BsonObj& pipeline,
                   Needs& needs, int depth = 0) {
  if (depth > 20) return;
  for (const BsonElement& stage_elem : pipeline) {
    if (stage_elem.type() != BsonType::kObject || stage_elem.Obj().IsEmpty()) continue;
    BsonElement stage = stage_elem.Obj().FirstElement();
    std::string_view name = stage.FieldName();
    if (name == "$lookup" || name == "$graphLookup") {
      if (stage.type() != BsonType::kObject) continue;
      if (auto t = StageTarget(ctx, stage.Obj()["from"], "coll")) needs.push_back({*t, A::kFind});
      BsonElement sub = stage.Obj()["pipeline"];
      if (sub.type() == BsonType::kArray) PipelineNeeds(ctx, source, sub.Obj(), needs, depth + 1);
    } else if (name == "$unionWith") {
      BsonElement target = stage.type() == BsonType::kObject ? stage.Obj()["coll"] : stage;
      if (auto t = StageTarget(ctx, target, "coll")) needs.push_back({*t, A::kFind});
      if (stage.type() == BsonType::kObject && stage.Obj()["pipeline"].type() == BsonType::kArray) {
        PipelineNeeds(ctx, source, stage.Obj()["pipeline"].Obj(), needs, depth + 1);
      }
    } else if (name == "$facet" && stage.type() == BsonType::kObject) {
      for (const BsonElement& sub : stage.Obj()) {
        if (sub.type() == BsonType::kArray) PipelineNeeds(ctx, source, sub.Obj(), needs, depth + 1);
      }
    } else if (name == "$out") {
      if (auto t = StageTarget(ctx, stage, "coll")) {
        needs.push_back({*t, A::kInsert});
        needs.push_back({*t, A::kRemove});
      }
    } else if (name == "$merge") {
      BsonElement into = stage.type() == BsonType::kObject ? stage.Obj()["into"] : stage;
      if (auto t = StageTarget(ctx, into, "coll")) {
        needs.push_back({*t, A::kInsert});
        needs.push_back({*t, A::kUpdate});
      }
    } else if (name == "$currentOp") {
      // Another user's operations need inprog; one's own none (allUsers: false, the default).
      if (stage.type() == BsonType::kObject && stage.Obj()["allUsers"].Truthy()) {
        needs.push_back({ResourceTarget::Cluster(), A::kInprog});
      }
    } else if (name == "$collStats") {
      needs.push_back({source, A::kCollStats});
    } else if (name == "$indexStats") {
      needs.push_back({source, A::kIndexStats});
    }
  }
}

StatusWith<Needs> AggregateNeeds(const CommandContext& ctx, const BsonObj& cmd) {
  ResourceTarget source = CommandNamespace(ctx, cmd);
  BsonElement pipeline = cmd["pipeline"];
  // A collectionless pipeline whose source is $currentOp or $documents reads no collection.
  std::string_view first;
  if (pipeline.type() == BsonType::kArray && !pipeline.Obj().IsEmpty() &&
      pipeline.Obj().FirstElement().type() == BsonType::kObject) {
    first = pipeline.Obj().FirstElement().Obj().FirstElement().FieldName();
  }
  const bool reads_no_collection =
      source.coll.empty() && (first == "$currentOp" || first == "$documents");
  Needs needs;
  if (!reads_no_collection) needs.push_back({source, A::kFind});
  if (pipeline.type() == BsonType::kArray) PipelineNeeds(ctx, source, pipeline.Obj(), needs);
  if (cmd["bypassDocumentValidation"].Truthy())
    needs.push_back({source, A::kBypassDocumentValidation});
  return needs;
}

bool AnyUpsert(const BsonObj& cmd) {
  BsonElement updates = cmd["updates"];
  if (updates.type() != BsonType::kArray) return false;
  for (const BsonElement& u : updates.Obj()) {
    if (u.type() == BsonType::kObject && u.Obj()["upsert"].Truthy()) return true;
  }
  return false;
}

StatusWith<Needs> UpdateNeeds(const CommandContext& ctx, const BsonObj& cmd) {
  ResourceTarget ns = CommandNamespace(ctx, cmd);
  Needs needs{{ns, A::kUpdate}};
  if (AnyUpsert(cmd)) needs.push_back({ns, A::kInsert});
  if (cmd["bypassDocumentValidation"].Truthy()) needs.push_back({ns, A::kBypassDocumentValidation});
  return needs;
}

StatusWith<Needs> FindAndModifyNeeds(const CommandContext& ctx, const BsonObj& cmd) {
  ResourceTarget ns = CommandNamespace(ctx, cmd);
  Needs needs{{ns, A::kFind}};
  needs.push_back({ns, cmd["remove"].Truthy() ? A::kRemove : A::kUpdate});
  if (cmd["upsert"].Truthy()) needs.push_back({ns, A::kInsert});
  if (cmd["bypassDocumentValidation"].Truthy()) needs.push_back({ns, A::kBypassDocumentValidation});
  return needs;
}

StatusWith<Needs> RenameNeeds(const CommandContext&, const BsonObj& cmd) {
  BsonElement from = cmd.FirstElement();
  BsonElement to = cmd["to"];
  if (from.type() != BsonType::kString || to.type() != BsonType::kString) return Needs{};
  auto from_ns = catalog::ParseNamespace(from.Str());
  auto to_ns = catalog::ParseNamespace(to.Str());
  if (!from_ns.ok() || !to_ns.ok()) return Needs{};  // the command reports the bad name
  ResourceTarget source = ResourceTarget::Namespace(from_ns.value().db, from_ns.value().coll);
  ResourceTarget target = ResourceTarget::Namespace(to_ns.value().db, to_ns.value().coll);
  if (from_ns.value().db == to_ns.value().db) {
    return Needs{{source, A::kRenameCollectionSameDB}, {target, A::kRenameCollectionSameDB}};
  }
  return Needs{{source, A::kFind},
               {source, A::kDropCollection},
               {target, A::kInsert},
               {target, A::kCreateCollection},
               {target, A::kCreateIndex}};
}

// The roles a user command grants or revokes, each needing `action` on the role's database.
StatusWith<Needs> RoleNeeds(const CommandContext& ctx, const BsonObj& cmd, ActionType action) {
  Needs needs;
  BsonElement roles = cmd["roles"];
  if (roles.type() != BsonType::kArray) return needs;
  for (const BsonElement& r : roles.Obj()) {
    auto role = auth::ParseRoleName(r, ctx.db, "roles");
    if (role.ok()) needs.push_back({ResourceTarget::Database(role.value().db), action});
  }
  return needs;
}

StatusWith<Needs> CreateUserNeeds(const CommandContext& ctx, const BsonObj& cmd) {
  HG_ASSIGN_OR_RETURN(Needs needs, RoleNeeds(ctx, cmd, A::kGrantRole));
  needs.push_back({ResourceTarget::Database(ctx.db), A::kCreateUser});
  return needs;
}

bool IsSelf(const CommandContext& ctx, const BsonObj& cmd) {
  BsonElement e = cmd.FirstElement();
  if (e.type() != BsonType::kString) return false;
  for (const auth::UserName& u : ctx.client.auth.users()) {
    if (u.user == e.Str() && u.db == ctx.db) return true;
  }
  return false;
}

StatusWith<Needs> UpdateUserNeeds(const CommandContext& ctx, const BsonObj& cmd) {
  Needs needs;
  ResourceTarget db = ResourceTarget::Database(ctx.db);
  const bool self = IsSelf(ctx, cmd);
  if (!cmd["pwd"].eoo()) needs.push_back({db, self ? A::kChangeOwnPassword : A::kChangePassword});
  if (!cmd["customData"].eoo()) {
    needs.push_back({db, self ? A::kChangeOwnCustomData : A::kChangeCustomData});
  }
  if (!cmd["roles"].eoo()) {
    HG_ASSIGN_OR_RETURN(Needs grants, RoleNeeds(ctx, cmd, A::kGrantRole));
    needs.insert(needs.end(), grants.begin(), grants.end());
    needs.push_back({db, A::kRevokeRole});
  }
  return needs;
}

StatusWith<Needs> UsersInfoNeeds(const CommandContext& ctx, const BsonObj& cmd) {
  BsonElement arg = cmd.FirstElement();
  if (arg.type() == BsonType::kObject && arg.Obj()["forAllDBs"].Truthy()) {
    return Needs{{ResourceTarget::Cluster(), A::kViewUser}};
  }
  // A user may always look at itself.
  if (arg.type() == BsonType::kString && IsSelf(ctx, cmd)) return Needs{};
  if (arg.type() == BsonType::kObject && arg.Obj()["user"].type() == BsonType::kString &&
      arg.Obj()["db"].type() == BsonType::kString) {
    std::string_view user = arg.Obj()["user"].Str();
    std::string_view db = arg.Obj()["db"].Str();
    for (const auth::UserName& u : ctx.client.auth.users()) {
      if (u.user == user && u.db == db) return Needs{};
    }
    return Needs{{ResourceTarget::Database(std::string(db)), A::kViewUser}};
  }
  return Needs{{ResourceTarget::Database(ctx.db), A::kViewUser}};
}

StatusWith<Needs> ExplainNeeds(const CommandContext& ctx, const BsonObj& cmd);

const std::map<std::string, NeedsFn, std::less<>>& NeedsTable() {
  static const auto* table = new std::map<std::string, NeedsFn, std::less<>>{
      {"aggregate", AggregateNeeds},
      {"authenticate", nullptr},
      {"buildInfo", nullptr},
      {"collMod", OnNamespace({A::kCollMod})},
      {"collStats", OnNamespace({A::kCollStats})},
      {"compact", OnNamespace({A::kCompact})},
      {"configureFailPoint", AuthenticationOnly()},
      {"connectionStatus", nullptr},
      {"count", OnNamespace({A::kFind})},
      {"create", OnNamespace({A::kCreateCollection})},
      {"createIndexes", OnNamespace({A::kCreateIndex})},
      {"createRole",
       [](const CommandContext& ctx, const BsonObj& cmd) -> StatusWith<Needs> {
         HG_ASSIGN_OR_RETURN(Needs needs, RoleNeeds(ctx, cmd, A::kGrantRole));
         needs.push_back({ResourceTarget::Database(ctx.db), A::kCreateRole});
         return needs;
       }},
      {"createUser", CreateUserNeeds},
      // Listing one's own operations needs no privilege ($ownOps), as in MongoDB.
      {"currentOp",
       [](const CommandContext&, const BsonObj& cmd) -> StatusWith<Needs> {
         if (cmd["$ownOps"].Truthy()) return Needs{};
         return Needs{{ResourceTarget::Cluster(), A::kInprog}};
       }},
      {"dbHash", OnDatabase(A::kDbHash)},
      {"dbStats", OnDatabase(A::kDbStats)},
      {"delete", OnNamespace({A::kRemove})},
      {"distinct", OnNamespace({A::kFind})},
      {"drop", OnNamespace({A::kDropCollection})},
      {"dropAllRolesFromDatabase", OnDatabase(A::kDropRole)},
      {"dropAllUsersFromDatabase", OnDatabase(A::kDropUser)},
      {"dropDatabase", OnDatabase(A::kDropDatabase)},
      {"dropIndexes", OnNamespace({A::kDropIndex})},
      {"dropRole", OnDatabase(A::kDropRole)},
      {"dropUser", OnDatabase(A::kDropUser)},
      {"endSessions", AuthenticationOnly()},
      {"explain", ExplainNeeds},
      {"features", AuthenticationOnly()},
      {"find", OnNamespace({A::kFind})},
      {"findAndModify", FindAndModifyNeeds},
      {"fsync", OnCluster({A::kFsync})},
      {"fsyncUnlock", OnCluster({A::kUnlock})},
      {"getCmdLineOpts", OnCluster({A::kGetCmdLineOpts})},
      {"getDefaultRWConcern", OnCluster({A::kGetDefaultRWConcern})},
      {"getDiagnosticData", OnCluster({A::kServerStatus})},
      {"getFreeMonitoringStatus", OnCluster({A::kCheckFreeMonitoringStatus})},
      {"getLog", OnCluster({A::kGetLog})},
      // A cursor is read on the privileges checked when it was opened.
      {"getMore", AuthenticationOnly()},
      {"getParameter", OnCluster({A::kGetParameter})},
      {"grantPrivilegesToRole", OnDatabase(A::kGrantRole)},
      {"grantRolesToRole", [](const CommandContext& ctx,
                              const BsonObj& cmd) { return RoleNeeds(ctx, cmd, A::kGrantRole); }},
      {"grantRolesToUser", [](const CommandContext& ctx,
                              const BsonObj& cmd) { return RoleNeeds(ctx, cmd, A::kGrantRole); }},
      {"hello", nullptr},
      // Internal: a member's copy of all the data, for its initial sync. Only a user with every
      // action on the cluster (root) until members authenticate to each other (keyFile).
      {"hgCloneSnapshot", OnCluster({A::kReplSetStateChange, A::kFind, A::kListCollections})},
      // Refused under --auth until members authenticate to each other (keyFile).
      {"hgRaftConnect", OnCluster({A::kReplSetStateChange})},
      {"hostInfo", OnCluster({A::kHostInfo})},
      {"insert", OnNamespace({A::kInsert})},
      // Naming only one's own users needs no privilege, as in MongoDB.
      {"killAllSessions",
       [](const CommandContext& ctx, const BsonObj& cmd) -> StatusWith<Needs> {
         BsonElement list = cmd.FirstElement();
         bool own = list.type() == BsonType::kArray && !list.Obj().IsEmpty();
         if (own) {
           for (BsonElement e : list.Obj()) {
             if (e.type() != BsonType::kObject) return Needs{};  // the command's error
             BsonElement user = e.Obj()["user"];
             BsonElement db = e.Obj()["db"];
             own &= user.type() == BsonType::kString && db.type() == BsonType::kString &&
                    ctx.client.auth.users() == std::vector<auth::UserName>{{std::string(user.Str()),
                                                                            std::string(db.Str())}};
           }
         }
         if (own) return Needs{};
         return Needs{{ResourceTarget::Cluster(), A::kKillAnySession}};
       }},
      {"killCursors", OnNamespace({A::kKillCursors})},
      // One's own operation needs no privilege, as in MongoDB.
      {"killOp",
       [](const CommandContext& ctx, const BsonObj& cmd) -> StatusWith<Needs> {
         BsonElement op = cmd["op"];
         bool own = false;
         if (op.IsNumber() && ctx.client.auth.IsAuthenticated()) {
           OperationRegistry::Get().ForEach([&](const RunningOperation& running) {
             if (running.opid == op.NumberLong() && running.users == ctx.client.auth.users()) {
               own = true;
             }
           });
         }
         if (own) return Needs{};
         return Needs{{ResourceTarget::Cluster(), A::kKillop}};
       }},
      // Kills only the caller's own sessions (admin_sessions.cc).
      {"killSessions", AuthenticationOnly()},
      {"listCollections", OnDatabase(A::kListCollections)},
      {"listCommands", AuthenticationOnly()},
      // Any authenticated user lists the databases it holds privileges on (authorizedDatabases).
      {"listDatabases", AuthenticationOnly()},
      {"listIndexes", OnNamespace({A::kListIndexes})},
      {"lockInfo", OnCluster({A::kServerStatus})},
      {"logout", AuthenticationOnly()},
      {"ping", nullptr},
      {"planCacheClear", OnNamespace({A::kPlanCacheWrite})},
      {"reIndex", OnNamespace({A::kReIndex})},
      {"refreshSessions", AuthenticationOnly()},
      {"renameCollection", RenameNeeds},
      {"replSetFreeze", OnCluster({A::kReplSetStateChange})},
      {"replSetGetConfig", OnCluster({A::kReplSetGetConfig})},
      {"replSetGetStatus", OnCluster({A::kReplSetGetStatus})},
      {"replSetInitiate", OnCluster({A::kReplSetConfigure})},
      {"replSetReconfig", OnCluster({A::kReplSetConfigure})},
      {"replSetResizeOplog", OnCluster({A::kReplSetConfigure})},
      {"replSetStepDown", OnCluster({A::kReplSetStateChange})},
      {"revokePrivilegesFromRole", OnDatabase(A::kRevokeRole)},
      {"revokeRolesFromRole",
       [](const CommandContext& ctx, const BsonObj& cmd) {
         return RoleNeeds(ctx, cmd, A::kRevokeRole);
       }},
      {"revokeRolesFromUser",
       [](const CommandContext& ctx, const BsonObj& cmd) {
         return RoleNeeds(ctx, cmd, A::kRevokeRole);
       }},
      {"rolesInfo", OnDatabase(A::kViewRole)},
      {"saslContinue", nullptr},
      {"saslStart", nullptr},
      {"serverStatus", OnCluster({A::kServerStatus})},
      {"setFeatureCompatibilityVersion", OnCluster({A::kSetFeatureCompatibilityVersion})},
      {"setParameter", OnCluster({A::kSetParameter})},
      {"shutdown", OnCluster({A::kShutdown})},
      {"startSession", AuthenticationOnly()},
      {"update", UpdateNeeds},
      {"updateRole",
       [](const CommandContext& ctx, const BsonObj& cmd) -> StatusWith<Needs> {
         HG_ASSIGN_OR_RETURN(Needs needs, RoleNeeds(ctx, cmd, A::kGrantRole));
         needs.push_back({ResourceTarget::Database(ctx.db), A::kGrantRole});
         needs.push_back({ResourceTarget::Database(ctx.db), A::kRevokeRole});
         return needs;
       }},
      {"updateUser", UpdateUserNeeds},
      {"usersInfo", UsersInfoNeeds},
      {"validate", OnNamespace({A::kValidate})},
      {"waitForFailPoint", AuthenticationOnly()},
      {"whatsmyuri", AuthenticationOnly()},
  };
  return *table;
}

StatusWith<Needs> ExplainNeeds(const CommandContext& ctx, const BsonObj& cmd) {
  BsonElement inner = cmd.FirstElement();
  if (inner.type() != BsonType::kObject || inner.Obj().IsEmpty()) return Needs{};
  BsonObj explained = inner.Obj();
  const auto& table = NeedsTable();
  auto it = table.find(explained.FirstElement().FieldName());
  if (it == table.end() || !it->second) return Needs{};  // the explain itself refuses it
  return it->second(ctx, explained);
}

// The localhost exception's privileges: creating the first user (of admin), with its roles,
// and initiating a replica set (MongoDB's manual has a set with a key file initiated this way,
// before its first user).
const auth::PrivilegeSet& LocalhostPrivileges() {
  static const auth::PrivilegeSet* set = [] {
    auto* s = new auth::PrivilegeSet();
    s->Add({{{auth::ResourcePattern::Kind::kDatabase, "admin", ""},
             auth::Actions({A::kCreateUser, A::kGrantRole})}});
    s->Add(
        {{{auth::ResourcePattern::Kind::kCluster, "", ""}, auth::Actions({A::kReplSetConfigure})}});
    return s;
  }();
  return *set;
}

std::string NotAuthorized(const CommandContext& ctx, const BsonObj& body) {
  return "not authorized on " + ctx.db + " to execute command " + body.ToJson();
}

}  // namespace

bool CommandHasAuthorizationEntry(std::string_view name) { return NeedsTable().contains(name); }

bool CommandRequiresAuth(std::string_view name) {
  auto it = NeedsTable().find(name);
  return it == NeedsTable().end() || it->second != nullptr;
}

Status CheckAuthorization(CommandContext& ctx, const Command& cmd, const BsonObj& body) {
  const auto& table = NeedsTable();
  auto it = table.find(cmd.Name());
  if (it != table.end() && !it->second) return Status::OK();  // needs no authentication
  if (ctx.client.internal) return Status::OK();
  HG_RETURN_IF_ERROR(ctx.client.auth.Refresh(*ctx.service.users));
  bool localhost_exception = false;
  if (!ctx.client.auth.IsAuthenticated()) {
    if (ctx.client.IsLocalhost()) {
      HG_ASSIGN_OR_RETURN(bool has_users, ctx.service.users->HasUsers());
      localhost_exception = !has_users;
    }
    if (localhost_exception) {
      static std::once_flag noted;
      std::call_once(noted, [] {
        LOGI("ACCESS", 20248,
             "note: no users configured in admin.system.users, allowing localhost access", "{}");
      });
    } else {
      return Status(ErrorCode::kUnauthorized,
                    "Command " + std::string(cmd.Name()) + " requires authentication");
    }
  }
  const auth::PrivilegeSet& held =
      localhost_exception ? LocalhostPrivileges() : ctx.client.auth.privileges();
  if (it == table.end()) {
    return Status(ErrorCode::kUnauthorized, NotAuthorized(ctx, body));
  }
  HG_ASSIGN_OR_RETURN(Needs needs, it->second(ctx, body));
  for (const Need& n : needs) {
    if (!held.Allows(n.target, n.action)) {
      LOGI("ACCESS", 20436, "Checking authorization failed",
           "{\"error\":" + JsonQuote("Unauthorized: " + NotAuthorized(ctx, body)) + "}");
      return Status(ErrorCode::kUnauthorized, NotAuthorized(ctx, body));
    }
  }
  return Status::OK();
}

}  // namespace hourglass::commands
