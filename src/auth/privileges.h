// Privileges as MongoDB grants them: an action type on a resource pattern. The built-in roles'
// privileges (read, readWrite, dbAdmin, ..., root) and the test of a set of privileges against
// what one command needs.
#pragma once

#include <bitset>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/user.h"
#include "bson/bson.h"

namespace hourglass::auth {

enum class ActionType : uint8_t {
#define X(name, text) name,
#include "auth/action_types.def"
#undef X
  kCount
};
std::string_view ActionTypeName(ActionType a);

using ActionSet = std::bitset<static_cast<size_t>(ActionType::kCount)>;
ActionSet Actions(std::initializer_list<ActionType> actions);

// What a command touches: the cluster, a database (coll empty) or one namespace.
struct ResourceTarget {
  bool cluster = false;
  std::string db;
  std::string coll;
  static ResourceTarget Cluster() { return {true, "", ""}; }
  static ResourceTarget Database(std::string db) { return {false, std::move(db), ""}; }
  static ResourceTarget Namespace(std::string db, std::string coll) {
    return {false, std::move(db), std::move(coll)};
  }
};

// MongoDB's resource patterns. A database pattern covers the database itself and its normal
// collections (not system.*); the system.buckets patterns cover time-series bucket collections.
struct ResourcePattern {
  enum class Kind {
    kCluster,
    kAnyResource,
    kAnyNormal,
    kDatabase,
    kExactNamespace,
    kCollectionInAnyDb,
    kSystemBucketsInDb,
    kAnySystemBuckets,
  };
  Kind kind;
  std::string db;
  std::string coll;
  bool Matches(const ResourceTarget& t) const;
  // {cluster: true}, {anyResource: true}, {db, collection}, {db, system_buckets}.
  bson::BsonObj ToBson() const;
};

struct Privilege {
  ResourcePattern resource;
  ActionSet actions;
};

// A privilege as roles store it, {resource: {...}, actions: ["find", ...]}. BadValue naming what
// is wrong (an unknown action, a malformed resource).
StatusWith<Privilege> ParsePrivilege(const bson::BsonElement& e);
bson::BsonObj PrivilegeToBson(const Privilege& p);
// Two privileges on the same resource merge their actions, as MongoDB keeps them.
std::vector<Privilege> MergePrivileges(std::vector<Privilege> privileges);
bool SameResource(const ResourcePattern& a, const ResourcePattern& b);

// The privileges of the built-in role, or nullopt if `role` is not one. The any-database and
// cluster roles exist only in admin, as in MongoDB.
std::optional<std::vector<Privilege>> BuiltinRolePrivileges(const RoleName& role);
bool IsBuiltinRole(const RoleName& role);

class PrivilegeSet {
 public:
  void Add(const std::vector<Privilege>& privileges);
  bool Allows(const ResourceTarget& target, ActionType action) const;
  // Whether any privilege could apply to `db` or one of its collections (listDatabases shows a
  // user without the listDatabases action the databases this holds for).
  bool HasAnyOnDatabase(const std::string& db) const;
  // [{resource, actions: [...]}], as connectionStatus's showPrivileges lists them.
  bson::BsonObj ToBsonArray() const;
  bool empty() const { return privileges_.empty(); }
  const std::vector<Privilege>& list() const { return privileges_; }

 private:
  std::vector<Privilege> privileges_;
};

}  // namespace hourglass::auth
