// The server's users and user-defined roles, kept where MongoDB keeps them: documents of
// admin.system.users (user.h's shape) and admin.system.roles (role.h's), each with the unique
// index MongoDB gives it ({user: 1, db: 1}, {role: 1, db: 1}). Every change bumps a generation
// that connections compare to know when to look their users and roles up again. Thread-safe.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "auth/role.h"
#include "auth/user.h"
#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::catalog {
class Catalog;
struct NamespaceString;
}  // namespace hourglass::catalog
namespace hourglass::storage {
class KvEngine;
}

namespace hourglass::auth {

class UserStore;

// Roles and everything they grant: the roles themselves and those user-defined roles inherit
// (built-in roles name none), and their privileges.
struct ResolvedRoles {
  std::vector<RoleName> roles;
  PrivilegeSet privileges;
};
// Follows `roles` breadth first through the role graph, each role once (createRole refuses
// cycles, but a restored admin.system.roles might hold one); a role that no longer exists grants
// nothing.
StatusWith<ResolvedRoles> ResolveRoles(const UserStore& store, const std::vector<RoleName>& roles);

class UserStore {
 public:
  UserStore(storage::KvEngine* engine, catalog::Catalog* catalog)
      : engine_(engine), catalog_(catalog) {}

  // The internal user of --keyFile (auth/key_file.h): Find gives it as if it were stored; it
  // is never listed, written or removed. Call before serving clients.
  void SetInternalUser(UserDocument user) { internal_ = std::move(user); }

  StatusWith<std::optional<UserDocument>> Find(const UserName& name) const;
  // Location51003 "User "u@db" already exists" if it does.
  Status Insert(const UserDocument& user);
  // UserNotFound if the user does not exist.
  Status Replace(const UserDocument& user);
  Status Remove(const UserName& name);
  // Removes every user of `db`; returns how many.
  StatusWith<int64_t> RemoveAll(const std::string& db);
  // The users of `db`, or of every database, ordered by _id.
  StatusWith<std::vector<UserDocument>> List(const std::optional<std::string>& db) const;

  StatusWith<std::optional<RoleDocument>> FindRole(const RoleName& name) const;
  // Location51002 "Role "r@db" already exists" if it does.
  Status InsertRole(const RoleDocument& role);
  // RoleNotFound if the role does not exist.
  Status ReplaceRole(const RoleDocument& role);
  Status RemoveRole(const RoleName& name);
  StatusWith<int64_t> RemoveAllRoles(const std::string& db);
  StatusWith<std::vector<RoleDocument>> ListRoles(const std::optional<std::string>& db) const;

  // Whether any user or role exists (the localhost exception holds until one does).
  StatusWith<bool> HasUsers() const;
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  std::optional<UserDocument> internal_;
  StatusWith<std::optional<bson::BsonObj>> FindDoc(const catalog::NamespaceString& nss,
                                                   const std::string& id) const;
  // DuplicateKey if the _id exists.
  Status InsertDoc(const catalog::NamespaceString& nss, std::string_view name_field,
                   const bson::BsonObj& doc);
  // False if there is no document with that _id.
  StatusWith<bool> ReplaceDoc(const catalog::NamespaceString& nss, const std::string& id,
                              const bson::BsonObj& doc);
  // Removes, in one transaction, the documents of `db` whose `name_field` is `only` (all of the
  // database's when `only` is nullopt); returns how many.
  StatusWith<int64_t> RemoveDocs(const catalog::NamespaceString& nss, std::string_view name_field,
                                 const std::string& db, const std::optional<std::string>& only);
  StatusWith<std::vector<bson::BsonObj>> ListDocs(const catalog::NamespaceString& nss) const;

  storage::KvEngine* engine_;
  catalog::Catalog* catalog_;
  std::atomic<uint64_t> generation_{1};
};

}  // namespace hourglass::auth
