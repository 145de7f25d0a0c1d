// The role management commands: createRole, updateRole, dropRole, dropAllRolesFromDatabase,
// rolesInfo, grantPrivilegesToRole, revokePrivilegesFromRole, grantRolesToRole and
// revokeRolesFromRole, over the user-defined roles of admin.system.roles (auth/user_store.h), with
// MongoDB's arguments, replies and errors.
#include <algorithm>

#include "auth/privileges.h"
#include "auth/role.h"
#include "commands/admin_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/user_management.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

StatusWith<auth::RoleName> CommandRole(std::string_view cmd_name, const BsonObj& cmd,
                                       const std::string& db) {
  BsonElement e = cmd.FirstElement();
  if (e.type() != BsonType::kString) return WrongType(cmd_name, e, "string");
  if (e.Str().empty()) return Status(ErrorCode::kBadValue, "Role names must be non-empty");
  return auth::RoleName{std::string(e.Str()), db};
}

StatusWith<std::vector<auth::Privilege>> ParsePrivileges(std::string_view cmd_name,
                                                         const BsonElement& e) {
  if (e.type() != BsonType::kArray) {
    return Status(ErrorCode::kTypeMismatch,
                  "BSON field '" + std::string(cmd_name) + ".privileges' is the wrong type '" +
                      std::string(bson::TypeName(e.type())) + "', expected type 'array'");
  }
  std::vector<auth::Privilege> out;
  for (const BsonElement& p : e.Obj()) {
    HG_ASSIGN_OR_RETURN(auth::Privilege parsed, auth::ParsePrivilege(p));
    out.push_back(std::move(parsed));
  }
  return auth::MergePrivileges(std::move(out));
}

// A role outside admin may hold privileges only on its own database, and inherit only roles of
// its own database, as in MongoDB.
Status CheckRoleScope(const auth::RoleName& role, const std::vector<auth::Privilege>& privileges,
                      const std::vector<auth::RoleName>& roles) {
  if (role.db == "admin") return Status::OK();
  using Kind = auth::ResourcePattern::Kind;
  for (const auth::Privilege& p : privileges) {
    const auth::ResourcePattern& r = p.resource;
    bool own = (r.kind == Kind::kDatabase || r.kind == Kind::kExactNamespace) && r.db == role.db;
    if (!own) {
      return Status(ErrorCode::kInvalidRoleModification,
                    "Roles on the '" + role.db +
                        "' database cannot be granted privileges that target other databases or "
                        "the cluster");
    }
  }
  for (const auth::RoleName& r : roles) {
    if (r.db != role.db) {
      return Status(ErrorCode::kInvalidRoleModification,
                    "Roles on the '" + role.db +
                        "' database cannot be granted roles from other "
                        "databases");
    }
  }
  return Status::OK();
}

// Whether `role` inheriting `roles` would make it inherit itself.
StatusWith<bool> MakesCycle(const auth::UserStore& store, const auth::RoleName& role,
                            const std::vector<auth::RoleName>& roles) {
  HG_ASSIGN_OR_RETURN(auth::ResolvedRoles reached, auth::ResolveRoles(store, roles));
  return std::find(reached.roles.begin(), reached.roles.end(), role) != reached.roles.end();
}

// What MongoDB checks before `role` inherits `roles`: not itself, roles that exist, no cycle.
Status CheckOkayToGrantRoles(const auth::UserStore& store, const auth::RoleName& role,
                             const std::vector<auth::RoleName>& roles) {
  for (const auth::RoleName& r : roles) {
    if (r == role) {
      return Status(ErrorCode::kInvalidRoleModification,
                    "Cannot grant role " + role.Display() + " to itself.");
    }
  }
  HG_RETURN_IF_ERROR(CheckRoleScope(role, {}, roles));
  Status exist = CheckRolesExist(store, roles);
  if (!exist.ok()) return exist.WithContext("Cannot grant roles to '" + role.Display() + "': ");
  HG_ASSIGN_OR_RETURN(bool cycle, MakesCycle(store, role, roles));
  if (cycle) {
    return Status(
        ErrorCode::kInvalidRoleModification,
        "Granting roles to " + role.Display() + " would introduce a cycle in the role graph");
  }
  return Status::OK();
}

// The user-defined role a command changes. MongoDB words a missing role two ways: dropRole and
// updateRole "Could not find role: r@db", the grant and revoke commands "Role r@db not found".
enum class Missing { kCouldNotFind, kNotFound };
StatusWith<auth::RoleDocument> ExistingRole(const auth::UserStore& store,
                                            const auth::RoleName& name, Missing wording) {
  if (auth::IsBuiltinRole(name)) {
    return Status(ErrorCode::kBadValue,
                  name.Display() + " is a built-in role and cannot be modified");
  }
  HG_ASSIGN_OR_RETURN(std::optional<auth::RoleDocument> found, store.FindRole(name));
  if (!found) {
    return Status(ErrorCode::kRoleNotFound, wording == Missing::kCouldNotFind
                                                ? "Could not find role: " + name.Display()
                                                : "Role " + name.Display() + " not found");
  }
  return std::move(*found);
}

Status RunCreateRole(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"privileges", "roles", "authenticationRestrictions"}));
  HG_ASSIGN_OR_RETURN(auth::RoleName name, CommandRole("createRole", cmd, ctx.db));
  if (ctx.db == "local") {
    return Status(ErrorCode::kBadValue, "Cannot create roles in the local database");
  }
  if (auth::IsBuiltinRole(name)) {
    return Status(ErrorCode::kBadValue,
                  "Cannot create roles with the same name as a built-in role");
  }
  BsonElement privileges = cmd["privileges"];
  if (privileges.eoo()) return MissingField("createRole", "privileges");
  BsonElement roles = cmd["roles"];
  if (roles.eoo()) return MissingField("createRole", "roles");
  HG_ASSIGN_OR_RETURN(std::optional<BsonObj> restrictions,
                      GetArray("createRole", cmd, "authenticationRestrictions"));
  if (restrictions && !restrictions->IsEmpty()) {
    return Status(ErrorCode::kCommandNotSupported,
                  "authenticationRestrictions are not supported by this server yet");
  }
  auth::RoleDocument role;
  role.name = name;
  HG_ASSIGN_OR_RETURN(role.privileges, ParsePrivileges("createRole", privileges));
  HG_ASSIGN_OR_RETURN(role.roles, auth::ParseRoleNames(roles, ctx.db, "createRole.roles"));
  HG_RETURN_IF_ERROR(CheckOkayToGrantRoles(*ctx.service.users, name, role.roles));
  HG_RETURN_IF_ERROR(CheckRoleScope(name, role.privileges, {}));
  return ctx.service.users->InsertRole(role);
}

Status RunUpdateRole(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"privileges", "roles", "authenticationRestrictions"}));
  HG_ASSIGN_OR_RETURN(auth::RoleName name, CommandRole("updateRole", cmd, ctx.db));
  BsonElement privileges = cmd["privileges"];
  BsonElement roles = cmd["roles"];
  if (privileges.eoo() && roles.eoo()) {
    return Status(ErrorCode::kBadValue, "Must specify at least one field to update in updateRole");
  }
  HG_ASSIGN_OR_RETURN(auth::RoleDocument role,
                      ExistingRole(*ctx.service.users, name, Missing::kCouldNotFind));
  if (!privileges.eoo()) {
    HG_ASSIGN_OR_RETURN(role.privileges, ParsePrivileges("updateRole", privileges));
  }
  if (!roles.eoo()) {
    HG_ASSIGN_OR_RETURN(role.roles, auth::ParseRoleNames(roles, ctx.db, "updateRole.roles"));
    HG_RETURN_IF_ERROR(CheckOkayToGrantRoles(*ctx.service.users, name, role.roles));
  }
  HG_RETURN_IF_ERROR(CheckRoleScope(name, role.privileges, {}));
  return ctx.service.users->ReplaceRole(role);
}

// Removes `gone` from every user and role that held it (MongoDB does the same on dropRole).
Status ForgetRole(auth::UserStore& store, const auth::RoleName& gone) {
  HG_ASSIGN_OR_RETURN(std::vector<auth::UserDocument> users, store.List(std::nullopt));
  for (auth::UserDocument& u : users) {
    auto it = std::find(u.roles.begin(), u.roles.end(), gone);
    if (it == u.roles.end()) continue;
    u.roles.erase(it);
    HG_RETURN_IF_ERROR(store.Replace(u));
  }
  HG_ASSIGN_OR_RETURN(std::vector<auth::RoleDocument> roles, store.ListRoles(std::nullopt));
  for (auth::RoleDocument& r : roles) {
    auto it = std::find(r.roles.begin(), r.roles.end(), gone);
    if (it == r.roles.end()) continue;
    r.roles.erase(it);
    HG_RETURN_IF_ERROR(store.ReplaceRole(r));
  }
  return Status::OK();
}

Status RunDropRole(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {}));
  HG_ASSIGN_OR_RETURN(auth::RoleName name, CommandRole("dropRole", cmd, ctx.db));
  HG_ASSIGN_OR_RETURN(auth::RoleDocument role,
                      ExistingRole(*ctx.service.users, name, Missing::kCouldNotFind));
  HG_RETURN_IF_ERROR(ctx.service.users->RemoveRole(role.name));
  return ForgetRole(*ctx.service.users, role.name);
}

Status RunDropAllRolesFromDatabase(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {}));
  HG_ASSIGN_OR_RETURN(std::vector<auth::RoleDocument> roles, ctx.service.users->ListRoles(ctx.db));
  HG_ASSIGN_OR_RETURN(int64_t n, ctx.service.users->RemoveAllRoles(ctx.db));
  for (const auth::RoleDocument& r : roles) {
    HG_RETURN_IF_ERROR(ForgetRole(*ctx.service.users, r.name));
  }
  reply.AppendInt32("n", static_cast<int32_t>(n));
  return Status::OK();
}

// grantPrivilegesToRole and revokePrivilegesFromRole.
Status ChangePrivileges(CommandContext& ctx, std::string_view cmd_name, const BsonObj& cmd,
                        bool grant) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"privileges"}));
  HG_ASSIGN_OR_RETURN(auth::RoleName name, CommandRole(cmd_name, cmd, ctx.db));
  BsonElement privileges_elem = cmd["privileges"];
  if (privileges_elem.eoo()) return MissingField(cmd_name, "privileges");
  HG_ASSIGN_OR_RETURN(std::vector<auth::Privilege> privileges,
                      ParsePrivileges(cmd_name, privileges_elem));
  if (privileges.empty()) {
    return Status(ErrorCode::kBadValue,
                  std::string(cmd_name) + " command requires a non-empty \"privileges\" array");
  }
  HG_ASSIGN_OR_RETURN(auth::RoleDocument role,
                      ExistingRole(*ctx.service.users, name, Missing::kNotFound));
  if (grant) {
    HG_RETURN_IF_ERROR(CheckRoleScope(name, privileges, {}));
    role.privileges.insert(role.privileges.end(), privileges.begin(), privileges.end());
    role.privileges = auth::MergePrivileges(std::move(role.privileges));
  } else {
    for (const auth::Privilege& gone : privileges) {
      for (auth::Privilege& p : role.privileges) {
        if (auth::SameResource(p.resource, gone.resource)) p.actions &= ~gone.actions;
      }
    }
    std::erase_if(role.privileges, [](const auth::Privilege& p) { return p.actions.none(); });
  }
  return ctx.service.users->ReplaceRole(role);
}

// grantRolesToRole and revokeRolesFromRole.
Status ChangeInheritedRoles(CommandContext& ctx, std::string_view cmd_name, const BsonObj& cmd,
                            bool grant) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"roles"}));
  HG_ASSIGN_OR_RETURN(auth::RoleName name, CommandRole(cmd_name, cmd, ctx.db));
  BsonElement roles_elem = cmd["roles"];
  if (roles_elem.eoo()) return MissingField(cmd_name, "roles");
  HG_ASSIGN_OR_RETURN(std::vector<auth::RoleName> roles,
                      auth::ParseRoleNames(roles_elem, ctx.db, std::string(cmd_name) + ".roles"));
  if (roles.empty()) {
    return Status(ErrorCode::kBadValue,
                  std::string(cmd_name) + " command requires a non-empty \"roles\" array");
  }
  HG_ASSIGN_OR_RETURN(auth::RoleDocument role,
                      ExistingRole(*ctx.service.users, name, Missing::kNotFound));
  if (grant) {
    HG_RETURN_IF_ERROR(CheckOkayToGrantRoles(*ctx.service.users, name, roles));
    for (const auth::RoleName& r : roles) {
      if (std::find(role.roles.begin(), role.roles.end(), r) == role.roles.end()) {
        role.roles.push_back(r);
      }
    }
  } else {
    std::erase_if(role.roles, [&](const auth::RoleName& r) {
      return std::find(roles.begin(), roles.end(), r) != roles.end();
    });
  }
  return ctx.service.users->ReplaceRole(role);
}

// One role as rolesInfo describes it.
StatusWith<BsonObj> DescribeRole(const auth::UserStore& store, const auth::RoleName& name,
                                 bool builtin, const std::vector<auth::Privilege>& privileges,
                                 const std::vector<auth::RoleName>& roles, bool show_privileges) {
  BsonBuilder b;
  b.AppendString("role", name.role);
  b.AppendString("db", name.db);
  b.AppendBool("isBuiltin", builtin);
  BsonArrayBuilder direct;
  for (const auth::RoleName& r : roles) direct.AppendObject(r.ToBson());
  b.AppendArray("roles", direct.Obj());
  HG_ASSIGN_OR_RETURN(auth::ResolvedRoles inherited, auth::ResolveRoles(store, roles));
  BsonArrayBuilder inherited_roles;
  for (const auth::RoleName& r : inherited.roles) inherited_roles.AppendObject(r.ToBson());
  b.AppendArray("inheritedRoles", inherited_roles.Obj());
  if (show_privileges) {
    auth::PrivilegeSet own;
    own.Add(privileges);
    b.AppendArray("privileges", own.ToBsonArray());
    inherited.privileges.Add(privileges);
    b.AppendArray("inheritedPrivileges", inherited.privileges.ToBsonArray());
  }
  return b.Obj();
}

constexpr std::string_view kBuiltinRoleNames[] = {"read",
                                                  "readWrite",
                                                  "dbAdmin",
                                                  "dbOwner",
                                                  "userAdmin",
                                                  "clusterMonitor",
                                                  "clusterManager",
                                                  "clusterAdmin",
                                                  "hostManager",
                                                  "backup",
                                                  "restore",
                                                  "readAnyDatabase",
                                                  "readWriteAnyDatabase",
                                                  "userAdminAnyDatabase",
                                                  "dbAdminAnyDatabase",
                                                  "root"};

Status RunRolesInfo(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(
      cmd, {"showPrivileges", "showBuiltinRoles", "showAuthenticationRestrictions"}));
  HG_ASSIGN_OR_RETURN(bool show_builtin, GetBool("rolesInfo", cmd, "showBuiltinRoles", false));
  BsonElement show_priv_elem = cmd["showPrivileges"];
  bool show_privileges = show_priv_elem.Truthy();
  BsonElement arg = cmd.FirstElement();
  std::vector<auth::RoleName> wanted;
  bool all = false;
  if (arg.IsNumber() && arg.NumberLong() == 1) {
    all = true;
  } else if (arg.type() == BsonType::kArray) {
    HG_ASSIGN_OR_RETURN(wanted, auth::ParseRoleNames(arg, ctx.db, "rolesInfo"));
  } else {
    HG_ASSIGN_OR_RETURN(auth::RoleName one, auth::ParseRoleName(arg, ctx.db, "rolesInfo"));
    wanted.push_back(std::move(one));
  }
  BsonArrayBuilder out;
  auto add_builtin = [&](const auth::RoleName& r) -> Status {
    std::optional<std::vector<auth::Privilege>> p = auth::BuiltinRolePrivileges(r);
    HG_ASSIGN_OR_RETURN(BsonObj d,
                        DescribeRole(*ctx.service.users, r, true, *p, {}, show_privileges));
    out.AppendObject(d);
    return Status::OK();
  };
  if (all) {
    HG_ASSIGN_OR_RETURN(std::vector<auth::RoleDocument> roles,
                        ctx.service.users->ListRoles(ctx.db));
    for (const auth::RoleDocument& r : roles) {
      HG_ASSIGN_OR_RETURN(BsonObj d, DescribeRole(*ctx.service.users, r.name, false, r.privileges,
                                                  r.roles, show_privileges));
      out.AppendObject(d);
    }
    if (show_builtin) {
      for (std::string_view n : kBuiltinRoleNames) {
        auth::RoleName r{std::string(n), ctx.db};
        if (auth::IsBuiltinRole(r)) HG_RETURN_IF_ERROR(add_builtin(r));
      }
    }
  } else {
    for (const auth::RoleName& r : wanted) {
      if (auth::IsBuiltinRole(r)) {
        HG_RETURN_IF_ERROR(add_builtin(r));
        continue;
      }
      HG_ASSIGN_OR_RETURN(std::optional<auth::RoleDocument> found, ctx.service.users->FindRole(r));
      if (!found) continue;
      HG_ASSIGN_OR_RETURN(BsonObj d,
                          DescribeRole(*ctx.service.users, found->name, false, found->privileges,
                                       found->roles, show_privileges));
      out.AppendObject(d);
    }
  }
  reply.AppendArray("roles", out.Obj());
  return Status::OK();
}

std::unique_ptr<Command> RoleCommand(std::string_view name, std::string_view help,
                                     FnCommand::RunFn run) {
  return std::make_unique<FnCommand>(name, FnCommand::Options{.help = help}, std::move(run));
}

}  // namespace

std::unique_ptr<Command> MakeCreateRoleCommand() {
  return RoleCommand("createRole", "Adds a role to the system", RunCreateRole);
}
std::unique_ptr<Command> MakeUpdateRoleCommand() {
  return RoleCommand("updateRole", "Used to update a role", RunUpdateRole);
}
std::unique_ptr<Command> MakeDropRoleCommand() {
  return RoleCommand("dropRole", "Drops a single role.", RunDropRole);
}
std::unique_ptr<Command> MakeDropAllRolesFromDatabaseCommand() {
  return RoleCommand("dropAllRolesFromDatabase", "Drops all roles from the given database.",
                     RunDropAllRolesFromDatabase);
}
std::unique_ptr<Command> MakeRolesInfoCommand() {
  return RoleCommand("rolesInfo", "Returns information about roles.", RunRolesInfo);
}
std::unique_ptr<Command> MakeGrantPrivilegesToRoleCommand() {
  return RoleCommand("grantPrivilegesToRole", "Grants privileges to a role",
                     [](CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
                       return ChangePrivileges(ctx, "grantPrivilegesToRole", cmd, true);
                     });
}
std::unique_ptr<Command> MakeRevokePrivilegesFromRoleCommand() {
  return RoleCommand("revokePrivilegesFromRole", "Revokes privileges from a role",
                     [](CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
                       return ChangePrivileges(ctx, "revokePrivilegesFromRole", cmd, false);
                     });
}
std::unique_ptr<Command> MakeGrantRolesToRoleCommand() {
  return RoleCommand("grantRolesToRole", "Grants roles to another role.",
                     [](CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
                       return ChangeInheritedRoles(ctx, "grantRolesToRole", cmd, true);
                     });
}
std::unique_ptr<Command> MakeRevokeRolesFromRoleCommand() {
  return RoleCommand("revokeRolesFromRole", "Revokes roles from another role.",
                     [](CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
                       return ChangeInheritedRoles(ctx, "revokeRolesFromRole", cmd, false);
                     });
}

}  // namespace hourglass::commands
