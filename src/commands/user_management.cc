// The user management commands: createUser, updateUser, dropUser, dropAllUsersFromDatabase,
// usersInfo, grantRolesToUser and revokeRolesFromUser, over the users of admin.system.users
// (auth/user_store.h), with MongoDB's arguments, replies and errors. Roles are the built-in ones
// (auth/privileges.h).
#include "commands/user_management.h"

#include <algorithm>

#include "auth/crypto.h"
#include "auth/privileges.h"
#include "auth/scram.h"
#include "base/server_parameters.h"
#include "base/uuid.h"
#include "commands/admin_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "query/matcher.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// The user a command names in its first field, of the command's database.
StatusWith<auth::UserName> CommandUser(std::string_view cmd_name, const BsonObj& cmd,
                                       const std::string& db) {
  BsonElement e = cmd.FirstElement();
  if (e.type() != BsonType::kString) return WrongType(cmd_name, e, "string");
  std::string user(e.Str());
  if (user.empty())
    return Status(ErrorCode::kBadValue, "User document needs 'user' field to be non-empty");
  if (user.find('\0') != std::string::npos) {
    return Status(ErrorCode::kBadValue, "Username cannot contain NULL characters");
  }
  return auth::UserName{std::move(user), db};
}

}  // namespace

Status CheckRolesExist(const auth::UserStore& store, const std::vector<auth::RoleName>& roles) {
  std::vector<std::string> missing;
  for (const auth::RoleName& r : roles) {
    if (auth::IsBuiltinRole(r)) continue;
    HG_ASSIGN_OR_RETURN(std::optional<auth::RoleDocument> custom, store.FindRole(r));
    if (!custom) missing.push_back(r.Display());
  }
  if (missing.empty()) return Status::OK();
  if (missing.size() == 1) {
    return Status(ErrorCode::kRoleNotFound, "Could not find role: " + missing[0]);
  }
  std::string all;
  for (const std::string& m : missing) all += (all.empty() ? "" : ", ") + m;
  return Status(ErrorCode::kRoleNotFound, "Could not find roles: " + all);
}

namespace {

// The mechanisms named by `mechanisms` (every SCRAM mechanism when absent).
StatusWith<std::vector<auth::ScramMechanism>> ParseMechanisms(std::string_view cmd_name,
                                                              const BsonObj& cmd) {
  HG_ASSIGN_OR_RETURN(std::optional<BsonObj> given, GetArray(cmd_name, cmd, "mechanisms"));
  if (!given)
    return std::vector<auth::ScramMechanism>{auth::ScramMechanism::kSha1,
                                             auth::ScramMechanism::kSha256};
  std::vector<auth::ScramMechanism> out;
  for (const BsonElement& e : *given) {
    if (e.type() != BsonType::kString) {
      return WrongTypeAtPath(std::string(cmd_name) + ".mechanisms", e, "string");
    }
    std::optional<auth::ScramMechanism> m = auth::ParseMechanism(e.Str());
    if (!m) {
      return Status(ErrorCode::kBadValue, "Unknown auth mechanism '" + std::string(e.Str()) + "'");
    }
    if (std::find(out.begin(), out.end(), *m) == out.end()) out.push_back(*m);
  }
  if (out.empty()) {
    return Status(ErrorCode::kBadValue, "mechanisms field must not be empty");
  }
  return out;
}

int IterationCount(auth::ScramMechanism m) {
  const char* name =
      m == auth::ScramMechanism::kSha1 ? "scramIterationCount" : "scramSHA256IterationCount";
  return static_cast<int>(ServerParameterRegistry::Get().Find(name)->GetInt());
}

// Credentials of `password` for `mechanisms`. With digestPassword false the client sends SHA-1's
// digest itself, which SCRAM-SHA-256 cannot use.
StatusWith<std::map<auth::ScramMechanism, auth::ScramCredentials>> BuildCredentials(
    const auth::UserName& name, const std::string& password, bool digest_password,
    const std::vector<auth::ScramMechanism>& mechanisms) {
  std::map<auth::ScramMechanism, auth::ScramCredentials> out;
  for (auth::ScramMechanism m : mechanisms) {
    if (m == auth::ScramMechanism::kSha256 && !digest_password) {
      return Status(ErrorCode::kBadValue, "Use of SCRAM-SHA-256 requires undigested passwords");
    }
    if (m == auth::ScramMechanism::kSha1 && !digest_password) {
      out[m] =
          auth::DeriveScramCredentials(m, password, auth::SecureRandomBytes(16), IterationCount(m));
      continue;
    }
    HG_ASSIGN_OR_RETURN(out[m],
                        auth::MakeScramCredentials(m, name.user, password, IterationCount(m)));
  }
  return out;
}

// The command's password; users of $external have none (their certificate identifies them).
StatusWith<std::optional<std::string>> GetPassword(std::string_view cmd_name, const BsonObj& cmd,
                                                   const std::string& db) {
  HG_ASSIGN_OR_RETURN(std::optional<std::string> pwd, GetString(cmd_name, cmd, "pwd"));
  if (pwd && db == "$external") {
    return Status(ErrorCode::kBadValue,
                  "Cannot set the password for users defined on the '$external' database");
  }
  if (pwd && pwd->empty()) return Status(ErrorCode::kBadValue, "Password cannot be empty");
  return pwd;
}

Status RunCreateUser(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"pwd", "customData", "roles", "digestPassword",
                                            "authenticationRestrictions", "mechanisms"}));
  HG_ASSIGN_OR_RETURN(auth::UserName name, CommandUser("createUser", cmd, ctx.db));
  if (ctx.db == "local") {
    return Status(ErrorCode::kBadValue, "Cannot create users in the local database");
  }
  HG_ASSIGN_OR_RETURN(std::optional<std::string> pwd, GetPassword("createUser", cmd, ctx.db));
  const bool external = ctx.db == "$external";
  if (!pwd && !external) {
    return Status(ErrorCode::kBadValue,
                  "Must provide a 'pwd' field for all user documents, except those with "
                  "'$external' as the user's source db");
  }
  BsonElement roles = cmd["roles"];
  if (roles.eoo()) return MissingField("createUser", "roles");
  HG_ASSIGN_OR_RETURN(std::optional<BsonObj> restrictions,
                      GetArray("createUser", cmd, "authenticationRestrictions"));
  if (restrictions && !restrictions->IsEmpty()) {
    return Status(ErrorCode::kCommandNotSupported,
                  "authenticationRestrictions are not supported by this server yet");
  }
  auth::UserDocument user;
  user.name = name;
  user.user_id = NewUuid();
  HG_ASSIGN_OR_RETURN(user.roles, auth::ParseRoleNames(roles, ctx.db, "createUser.roles"));
  HG_RETURN_IF_ERROR(CheckRolesExist(*ctx.service.users, user.roles));
  HG_ASSIGN_OR_RETURN(std::optional<BsonObj> custom, GetObject("createUser", cmd, "customData"));
  if (custom) user.custom_data = custom->Owned();
  if (external) {
    if (!cmd["mechanisms"].eoo()) {
      return Status(ErrorCode::kBadValue,
                    "mechanisms field must not be given for users of the '$external' database");
    }
    user.external = true;
    return ctx.service.users->Insert(user);
  }
  HG_ASSIGN_OR_RETURN(bool digest, GetBool("createUser", cmd, "digestPassword", true));
  HG_ASSIGN_OR_RETURN(auto mechanisms, ParseMechanisms("createUser", cmd));
  HG_ASSIGN_OR_RETURN(user.credentials, BuildCredentials(name, *pwd, digest, mechanisms));
  return ctx.service.users->Insert(user);
}

Status RunUpdateUser(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"pwd", "customData", "roles", "digestPassword",
                                            "authenticationRestrictions", "mechanisms"}));
  HG_ASSIGN_OR_RETURN(auth::UserName name, CommandUser("updateUser", cmd, ctx.db));
  HG_ASSIGN_OR_RETURN(std::optional<std::string> pwd, GetPassword("updateUser", cmd, ctx.db));
  HG_ASSIGN_OR_RETURN(std::optional<BsonObj> custom, GetObject("updateUser", cmd, "customData"));
  BsonElement roles = cmd["roles"];
  BsonElement mechanisms_given = cmd["mechanisms"];
  if (!pwd && !custom && roles.eoo() && mechanisms_given.eoo()) {
    return Status(ErrorCode::kBadValue, "Must specify at least one field to update in updateUser");
  }
  HG_ASSIGN_OR_RETURN(std::optional<auth::UserDocument> found, ctx.service.users->Find(name));
  if (!found) return Status(ErrorCode::kUserNotFound, "User " + name.Display() + " not found");
  auth::UserDocument user = std::move(*found);
  if (!roles.eoo()) {
    HG_ASSIGN_OR_RETURN(user.roles, auth::ParseRoleNames(roles, ctx.db, "updateUser.roles"));
    HG_RETURN_IF_ERROR(CheckRolesExist(*ctx.service.users, user.roles));
  }
  if (custom) user.custom_data = custom->Owned();
  HG_ASSIGN_OR_RETURN(auto mechanisms, ParseMechanisms("updateUser", cmd));
  if (pwd) {
    HG_ASSIGN_OR_RETURN(bool digest, GetBool("updateUser", cmd, "digestPassword", true));
    HG_ASSIGN_OR_RETURN(user.credentials, BuildCredentials(name, *pwd, digest, mechanisms));
  } else if (!mechanisms_given.eoo()) {
    // Without a new password, mechanisms can only narrow the credentials kept.
    std::map<auth::ScramMechanism, auth::ScramCredentials> kept;
    for (auth::ScramMechanism m : mechanisms) {
      auto it = user.credentials.find(m);
      if (it == user.credentials.end()) {
        return Status(ErrorCode::kBadValue,
                      "mechanisms field must be a subset of previously set mechanisms");
      }
      kept.insert(*it);
    }
    user.credentials = std::move(kept);
  }
  return ctx.service.users->Replace(user);
}

Status RunDropUser(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {}));
  HG_ASSIGN_OR_RETURN(auth::UserName name, CommandUser("dropUser", cmd, ctx.db));
  return ctx.service.users->Remove(name);
}

Status RunDropAllUsersFromDatabase(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {}));
  HG_ASSIGN_OR_RETURN(int64_t n, ctx.service.users->RemoveAll(ctx.db));
  reply.AppendInt32("n", static_cast<int32_t>(n));
  return Status::OK();
}

// grantRolesToUser and revokeRolesFromUser.
Status ChangeRoles(CommandContext& ctx, std::string_view cmd_name, const BsonObj& cmd, bool grant) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"roles"}));
  HG_ASSIGN_OR_RETURN(auth::UserName name, CommandUser(cmd_name, cmd, ctx.db));
  BsonElement roles_elem = cmd["roles"];
  if (roles_elem.eoo()) return MissingField(cmd_name, "roles");
  HG_ASSIGN_OR_RETURN(std::vector<auth::RoleName> roles,
                      auth::ParseRoleNames(roles_elem, ctx.db, std::string(cmd_name) + ".roles"));
  if (roles.empty()) {
    return Status(ErrorCode::kBadValue,
                  std::string(cmd_name) + " command requires a non-empty \"roles\" array");
  }
  HG_ASSIGN_OR_RETURN(std::optional<auth::UserDocument> found, ctx.service.users->Find(name));
  if (!found) {
    return Status(ErrorCode::kUserNotFound,
                  "Could not find user \"" + name.user + "\" for db \"" + name.db + "\"");
  }
  HG_RETURN_IF_ERROR(CheckRolesExist(*ctx.service.users, roles));
  auth::UserDocument user = std::move(*found);
  for (const auth::RoleName& r : roles) {
    auto it = std::find(user.roles.begin(), user.roles.end(), r);
    if (grant && it == user.roles.end()) user.roles.push_back(r);
    if (!grant && it != user.roles.end()) user.roles.erase(it);
  }
  return ctx.service.users->Replace(user);
}

Status RunGrantRolesToUser(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  return ChangeRoles(ctx, "grantRolesToUser", cmd, true);
}

Status RunRevokeRolesFromUser(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  return ChangeRoles(ctx, "revokeRolesFromUser", cmd, false);
}

// usersInfo's argument: which users, or every user of the database or of every database.
struct UsersQuery {
  std::optional<std::vector<auth::UserName>> exact;  // nullopt: all of `db` (or of every db)
  bool all_dbs = false;
};

StatusWith<auth::UserName> ParseUsersInfoName(const BsonElement& e, const std::string& db) {
  if (e.type() == BsonType::kString) return auth::UserName{std::string(e.Str()), db};
  if (e.type() == BsonType::kObject) {
    BsonElement user = e.Obj()["user"];
    BsonElement user_db = e.Obj()["db"];
    if (user.type() == BsonType::kString && user_db.type() == BsonType::kString) {
      return auth::UserName{std::string(user.Str()), std::string(user_db.Str())};
    }
  }
  return Status(ErrorCode::kBadValue,
                "User name must be either a string or an object with 'user' and 'db' strings");
}

StatusWith<UsersQuery> ParseUsersQuery(const BsonElement& arg, const std::string& db) {
  UsersQuery q;
  if (arg.IsNumber() && arg.NumberLong() == 1) return q;
  if (arg.type() == BsonType::kObject && arg.Obj()["forAllDBs"].type() == BsonType::kBool) {
    if (!arg.Obj()["forAllDBs"].Bool()) {
      return Status(ErrorCode::kBadValue, "forAllDBs must be true when given");
    }
    q.all_dbs = true;
    return q;
  }
  q.exact.emplace();
  if (arg.type() == BsonType::kArray) {
    for (const BsonElement& e : arg.Obj()) {
      HG_ASSIGN_OR_RETURN(auth::UserName n, ParseUsersInfoName(e, db));
      q.exact->push_back(std::move(n));
    }
    return q;
  }
  HG_ASSIGN_OR_RETURN(auth::UserName n, ParseUsersInfoName(arg, db));
  q.exact->push_back(std::move(n));
  return q;
}

// `resolved`: the user's roles resolved, for showPrivileges.
BsonObj DescribeUser(const auth::UserDocument& user, bool show_credentials, bool show_custom_data,
                     const std::optional<auth::ResolvedRoles>& resolved) {
  BsonObj stored = user.ToBson();
  BsonBuilder b;
  for (const char* f : {"_id", "userId", "user", "db"}) b.AppendElement(stored[f]);
  if (show_credentials) b.AppendElement(stored["credentials"]);
  if (show_custom_data && user.custom_data) b.AppendObject("customData", *user.custom_data);
  b.AppendElement(stored["roles"]);
  BsonArrayBuilder mechanisms;
  for (const std::string& m : user.Mechanisms()) mechanisms.AppendString(m);
  b.AppendArray("mechanisms", mechanisms.Obj());
  if (resolved) {
    BsonArrayBuilder inherited;
    for (const auth::RoleName& r : resolved->roles) inherited.AppendObject(r.ToBson());
    b.AppendArray("inheritedRoles", inherited.Obj());
    b.AppendArray("inheritedPrivileges", resolved->privileges.ToBsonArray());
    b.AppendArray("inheritedAuthenticationRestrictions", BsonObj());
  }
  return b.Obj();
}

Status RunUsersInfo(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"showCredentials", "showCustomData", "showPrivileges",
                                            "showAuthenticationRestrictions", "filter"}));
  HG_ASSIGN_OR_RETURN(UsersQuery q, ParseUsersQuery(cmd.FirstElement(), ctx.db));
  HG_ASSIGN_OR_RETURN(bool show_credentials, GetBool("usersInfo", cmd, "showCredentials", false));
  HG_ASSIGN_OR_RETURN(bool show_custom_data, GetBool("usersInfo", cmd, "showCustomData", true));
  HG_ASSIGN_OR_RETURN(bool show_privileges, GetBool("usersInfo", cmd, "showPrivileges", false));
  HG_ASSIGN_OR_RETURN(bool show_restrictions,
                      GetBool("usersInfo", cmd, "showAuthenticationRestrictions", false));
  HG_ASSIGN_OR_RETURN(std::optional<BsonObj> filter, GetObject("usersInfo", cmd, "filter"));
  if ((show_privileges || show_restrictions) && (filter || !q.exact)) {
    return Status(ErrorCode::kIllegalOperation,
                  "Privilege or restriction details require exact-match usersInfo queries");
  }
  std::optional<query::Matcher> matcher;
  if (filter) {
    HG_ASSIGN_OR_RETURN(query::Matcher m, query::Matcher::Parse(*filter));
    matcher.emplace(std::move(m));
  }
  std::vector<auth::UserDocument> users;
  if (q.exact) {
    for (const auth::UserName& n : *q.exact) {
      HG_ASSIGN_OR_RETURN(std::optional<auth::UserDocument> u, ctx.service.users->Find(n));
      if (u) users.push_back(std::move(*u));
    }
    std::sort(users.begin(), users.end(), [](const auto& a, const auto& b) {
      return std::tie(a.name.user, a.name.db) < std::tie(b.name.user, b.name.db);
    });
  } else {
    HG_ASSIGN_OR_RETURN(users, ctx.service.users->List(
                                   q.all_dbs ? std::nullopt : std::optional<std::string>(ctx.db)));
    std::sort(users.begin(), users.end(), [](const auto& a, const auto& b) {
      return std::tie(a.name.user, a.name.db) < std::tie(b.name.user, b.name.db);
    });
  }
  BsonArrayBuilder out;
  for (const auth::UserDocument& u : users) {
    std::optional<auth::ResolvedRoles> resolved;
    if (show_privileges) {
      HG_ASSIGN_OR_RETURN(resolved, auth::ResolveRoles(*ctx.service.users, u.roles));
    }
    BsonObj described = DescribeUser(u, show_credentials, show_custom_data, resolved);
    if (matcher && !matcher->Matches(described)) continue;
    out.AppendObject(described);
  }
  reply.AppendArray("users", out.Obj());
  return Status::OK();
}

std::unique_ptr<Command> UserCommand(std::string_view name, std::string_view help,
                                     FnCommand::RunFn run) {
  // As MongoDB, user management commands are never compressed (they may carry passwords).
  return std::make_unique<FnCommand>(name, FnCommand::Options{.help = help, .compressible = false},
                                     std::move(run));
}

}  // namespace

std::unique_ptr<Command> MakeCreateUserCommand() {
  return UserCommand("createUser", "Adds a user to the system", RunCreateUser);
}
std::unique_ptr<Command> MakeUpdateUserCommand() {
  return UserCommand("updateUser", "Used to update a user, for example to change its password",
                     RunUpdateUser);
}
std::unique_ptr<Command> MakeDropUserCommand() {
  return UserCommand("dropUser", "Drops a single user.", RunDropUser);
}
std::unique_ptr<Command> MakeDropAllUsersFromDatabaseCommand() {
  return UserCommand("dropAllUsersFromDatabase", "Drops all users for a single database.",
                     RunDropAllUsersFromDatabase);
}
std::unique_ptr<Command> MakeUsersInfoCommand() {
  return UserCommand("usersInfo", "Returns information about users.", RunUsersInfo);
}
std::unique_ptr<Command> MakeGrantRolesToUserCommand() {
  return UserCommand("grantRolesToUser", "Grants roles to a user.", RunGrantRolesToUser);
}
std::unique_ptr<Command> MakeRevokeRolesFromUserCommand() {
  return UserCommand("revokeRolesFromUser", "Revokes roles from a user.", RunRevokeRolesFromUser);
}

}  // namespace hourglass::commands
