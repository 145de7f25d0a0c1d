#include "auth/privileges.h"

#include <array>

namespace hourglass::auth {

using A = ActionType;
using Kind = ResourcePattern::Kind;

namespace {

constexpr std::array<std::string_view, static_cast<size_t>(ActionType::kCount)> kActionNames = {
#define X(name, text) text,
#include "auth/action_types.def"
#undef X
};

bool IsSystem(std::string_view coll) { return coll.starts_with("system."); }
bool IsBuckets(std::string_view coll) { return coll.starts_with("system.buckets."); }

ResourcePattern Db(const std::string& db) { return {Kind::kDatabase, db, ""}; }
ResourcePattern AnyNormal() { return {Kind::kAnyNormal, "", ""}; }
ResourcePattern Cluster() { return {Kind::kCluster, "", ""}; }
ResourcePattern AnyResource() { return {Kind::kAnyResource, "", ""}; }
ResourcePattern Exact(const std::string& db, const std::string& coll) {
  return {Kind::kExactNamespace, db, coll};
}
ResourcePattern BucketsIn(const std::string& db) { return {Kind::kSystemBucketsInDb, db, ""}; }
ResourcePattern AnyBuckets() { return {Kind::kAnySystemBuckets, "", ""}; }
ResourcePattern CollectionInAnyDb(const std::string& coll) {
  return {Kind::kCollectionInAnyDb, "", coll};
}

ActionSet ReadActions() {
  return Actions({A::kChangeStream, A::kCollStats, A::kDbHash, A::kDbStats, A::kFind,
                  A::kKillCursors, A::kListCollections, A::kListIndexes, A::kPlanCacheRead});
}

ActionSet ReadWriteActions() {
  return ReadActions() |
         Actions({A::kConvertToCapped, A::kCreateCollection, A::kCreateIndex, A::kDropCollection,
                  A::kDropIndex, A::kInsert, A::kRemove, A::kRenameCollectionSameDB, A::kUpdate});
}

ActionSet DbAdminActions() {
  return Actions({A::kBypassDocumentValidation, A::kCollMod, A::kCollStats, A::kCompact,
                  A::kConvertToCapped, A::kCreateCollection, A::kCreateIndex, A::kDbStats,
                  A::kDropCollection, A::kDropDatabase, A::kDropIndex, A::kEnableProfiler,
                  A::kListCollections, A::kListIndexes, A::kPlanCacheRead, A::kPlanCacheWrite,
                  A::kReIndex, A::kRenameCollectionSameDB, A::kValidate});
}

ActionSet UserAdminActions() {
  return Actions({A::kChangeCustomData, A::kChangePassword, A::kCreateRole, A::kCreateUser,
                  A::kDropRole, A::kDropUser, A::kGrantRole, A::kRevokeRole, A::kViewRole,
                  A::kViewUser});
}

// The roles of one database, `on` being its pattern and `buckets` its system.buckets pattern.
void AddRead(std::vector<Privilege>& out, const ResourcePattern& on, const ResourcePattern& buckets,
             const ResourcePattern& js) {
  out.push_back({on, ReadActions()});
  out.push_back({buckets, ReadActions()});
  out.push_back({js, ReadActions()});
}

void AddReadWrite(std::vector<Privilege>& out, const ResourcePattern& on,
                  const ResourcePattern& buckets, const ResourcePattern& js) {
  out.push_back({on, ReadWriteActions()});
  out.push_back({buckets, ReadWriteActions()});
  out.push_back({js, ReadWriteActions()});
}

void AddDbAdmin(std::vector<Privilege>& out, const ResourcePattern& on,
                const ResourcePattern& buckets, const ResourcePattern& profile) {
  out.push_back({on, DbAdminActions()});
  out.push_back({buckets, DbAdminActions()});
  out.push_back({profile, ReadActions() | Actions({A::kConvertToCapped, A::kCreateCollection,
                                                   A::kDropCollection, A::kPlanCacheRead})});
}

std::vector<Privilege> ClusterMonitor() {
  return {
      {Cluster(), Actions({A::kCheckFreeMonitoringStatus, A::kConnPoolStats, A::kGetCmdLineOpts,
                           A::kGetDefaultRWConcern, A::kGetLog, A::kGetParameter, A::kHostInfo,
                           A::kInprog, A::kListDatabases, A::kListSessions, A::kReplSetGetConfig,
                           A::kReplSetGetStatus, A::kServerStatus, A::kTop, A::kUseUUID})},
      {AnyNormal(), Actions({A::kCollStats, A::kDbStats, A::kIndexStats})},
      {AnyBuckets(), Actions({A::kCollStats})}};
}

std::vector<Privilege> HostManager() {
  return {{Cluster(), Actions({A::kFsync, A::kKillAnyCursor, A::kKillAnySession, A::kKillop,
                               A::kSetParameter, A::kShutdown, A::kUnlock})},
          {AnyNormal(), Actions({A::kKillCursors})}};
}

std::vector<Privilege> ClusterManager() {
  return {{Cluster(), Actions({A::kGetDefaultRWConcern, A::kListSessions, A::kReplSetConfigure,
                               A::kReplSetGetConfig, A::kReplSetGetStatus, A::kReplSetStateChange,
                               A::kSetFeatureCompatibilityVersion})}};
}

std::vector<Privilege> Concat(std::initializer_list<std::vector<Privilege>> parts) {
  std::vector<Privilege> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<Privilege> ForDatabaseRole(const std::string& role, const std::string& db) {
  std::vector<Privilege> out;
  ResourcePattern on = Db(db);
  ResourcePattern buckets = BucketsIn(db);
  ResourcePattern js = Exact(db, "system.js");
  ResourcePattern profile = Exact(db, "system.profile");
  if (role == "read") {
    AddRead(out, on, buckets, js);
  } else if (role == "readWrite") {
    AddReadWrite(out, on, buckets, js);
  } else if (role == "dbAdmin") {
    AddDbAdmin(out, on, buckets, profile);
  } else if (role == "userAdmin") {
    out.push_back({on, UserAdminActions()});
  } else if (role == "dbOwner") {
    AddReadWrite(out, on, buckets, js);
    AddDbAdmin(out, on, buckets, profile);
    out.push_back({on, UserAdminActions()});
  }
  return out;
}

std::optional<std::vector<Privilege>> ForAdminOnlyRole(const std::string& role) {
  std::vector<Privilege> out;
  ResourcePattern js = CollectionInAnyDb("system.js");
  ResourcePattern profile = CollectionInAnyDb("system.profile");
  ActionSet list_databases = Actions({A::kListDatabases});
  if (role == "readAnyDatabase") {
    AddRead(out, AnyNormal(), AnyBuckets(), js);
    out.push_back({Cluster(), list_databases});
  } else if (role == "readWriteAnyDatabase") {
    AddReadWrite(out, AnyNormal(), AnyBuckets(), js);
    out.push_back({Cluster(), list_databases});
  } else if (role == "dbAdminAnyDatabase") {
    AddDbAdmin(out, AnyNormal(), AnyBuckets(), profile);
    out.push_back({Cluster(), list_databases});
  } else if (role == "userAdminAnyDatabase") {
    out.push_back({AnyNormal(), UserAdminActions()});
    out.push_back({Cluster(), list_databases});
    // Reading the users and roles collections directly, as MongoDB's role allows.
    out.push_back({Exact("admin", "system.users"), ReadActions()});
    out.push_back({Exact("admin", "system.roles"), ReadActions()});
  } else if (role == "clusterMonitor") {
    return ClusterMonitor();
  } else if (role == "hostManager") {
    return HostManager();
  } else if (role == "clusterManager") {
    return ClusterManager();
  } else if (role == "clusterAdmin") {
    out = Concat({ClusterMonitor(), HostManager(), ClusterManager()});
    out.push_back({AnyNormal(), Actions({A::kDropDatabase})});
  } else if (role == "backup") {
    out.push_back({Cluster(), Actions({A::kGetParameter, A::kListDatabases, A::kServerStatus})});
    out.push_back({AnyResource(), Actions({A::kCollStats, A::kDbStats, A::kFind, A::kKillCursors,
                                           A::kListCollections, A::kListIndexes})});
  } else if (role == "restore") {
    out.push_back({AnyResource(),
                   Actions({A::kBypassDocumentValidation, A::kChangeCustomData, A::kChangePassword,
                            A::kCollMod, A::kConvertToCapped, A::kCreateCollection, A::kCreateIndex,
                            A::kCreateRole, A::kCreateUser, A::kDropCollection, A::kDropRole,
                            A::kDropUser, A::kGrantRole, A::kInsert, A::kRevokeRole, A::kViewRole,
                            A::kViewUser, A::kListCollections})});
    // Restoring users and roles rewrites them in place.
    for (const char* coll : {"system.users", "system.roles"}) {
      out.push_back({Exact("admin", coll), Actions({A::kFind, A::kUpdate, A::kRemove})});
    }
    out.push_back({Cluster(), Actions({A::kGetParameter, A::kListDatabases})});
  } else if (role == "root") {
    ActionSet all;
    all.set();
    out.push_back({AnyResource(), all});
    out.push_back({Cluster(), all});
  } else {
    return std::nullopt;
  }
  return out;
}

}  // namespace

std::string_view ActionTypeName(ActionType a) { return kActionNames[static_cast<size_t>(a)]; }

ActionSet Actions(std::initializer_list<ActionType> actions) {
  ActionSet s;
  for (ActionType a : actions) s.set(static_cast<size_t>(a));
  return s;
}

bool ResourcePattern::Matches(const ResourceTarget& t) const {
  if (kind == Kind::kCluster) return t.cluster;
  if (t.cluster) return kind == Kind::kAnyResource;
  switch (kind) {
    case Kind::kAnyResource:
      return true;
    case Kind::kAnyNormal:
      return !IsSystem(t.coll);
    case Kind::kDatabase:
      return t.db == db && !IsSystem(t.coll);
    case Kind::kExactNamespace:
      return t.db == db && t.coll == coll;
    case Kind::kCollectionInAnyDb:
      return t.coll == coll;
    case Kind::kSystemBucketsInDb:
      return t.db == db && IsBuckets(t.coll);
    case Kind::kAnySystemBuckets:
      return IsBuckets(t.coll);
    case Kind::kCluster:
      break;
  }
  return false;
}

bson::BsonObj ResourcePattern::ToBson() const {
  bson::BsonBuilder b;
  switch (kind) {
    case Kind::kCluster:
      b.AppendBool("cluster", true);
      break;
    case Kind::kAnyResource:
      b.AppendBool("anyResource", true);
      break;
    case Kind::kAnyNormal:
    case Kind::kDatabase:
    case Kind::kExactNamespace:
    case Kind::kCollectionInAnyDb:
      b.AppendString("db", db);
      b.AppendString("collection", coll);
      break;
    case Kind::kSystemBucketsInDb:
    case Kind::kAnySystemBuckets:
      b.AppendString("db", db);
      b.AppendString("system_buckets", "");
      break;
  }
  return b.Obj();
}

std::optional<std::vector<Privilege>> BuiltinRolePrivileges(const RoleName& role) {
  std::vector<Privilege> db_role = ForDatabaseRole(role.role, role.db);
  if (!db_role.empty()) return db_role;
  if (role.db != "admin") return std::nullopt;
  return ForAdminOnlyRole(role.role);
}

bool IsBuiltinRole(const RoleName& role) { return BuiltinRolePrivileges(role).has_value(); }

void PrivilegeSet::Add(const std::vector<Privilege>& privileges) {
  privileges_.insert(privileges_.end(), privileges.begin(), privileges.end());
}

bool PrivilegeSet::Allows(const ResourceTarget& target, ActionType action) const {
  size_t bit = static_cast<size_t>(action);
  for (const Privilege& p : privileges_) {
    if (p.actions.test(bit) && p.resource.Matches(target)) return true;
  }
  return false;
}

bool PrivilegeSet::HasAnyOnDatabase(const std::string& db) const {
  for (const Privilege& p : privileges_) {
    switch (p.resource.kind) {
      case Kind::kCluster:
        break;
      case Kind::kDatabase:
      case Kind::kExactNamespace:
      case Kind::kSystemBucketsInDb:
        if (p.resource.db == db) return true;
        break;
      default:
        return true;
    }
  }
  return false;
}

bson::BsonObj PrivilegeSet::ToBsonArray() const {
  bson::BsonArrayBuilder out;
  for (const Privilege& p : privileges_) out.AppendObject(PrivilegeToBson(p));
  return out.Obj();
}

bson::BsonObj PrivilegeToBson(const Privilege& p) {
  bson::BsonBuilder one;
  one.AppendObject("resource", p.resource.ToBson());
  size_t actions = one.OpenArray("actions");
  int i = 0;
  for (size_t a = 0; a < p.actions.size(); ++a) {
    if (p.actions.test(a)) {
      one.AppendString(std::to_string(i++), ActionTypeName(static_cast<ActionType>(a)));
    }
  }
  one.Close(actions);
  return one.Obj();
}

namespace {

StatusWith<ResourcePattern> ParseResource(const bson::BsonObj& r) {
  auto bad = [&](std::string why) {
    return Status(ErrorCode::kBadValue, "Invalid privilege resource " + r.ToJson() + ": " + why);
  };
  bson::BsonElement cluster = r["cluster"];
  bson::BsonElement any = r["anyResource"];
  bson::BsonElement db = r["db"];
  bson::BsonElement coll = r["collection"];
  bson::BsonElement buckets = r["system_buckets"];
  for (const bson::BsonElement& f : r) {
    std::string_view n = f.FieldName();
    if (n != "cluster" && n != "anyResource" && n != "db" && n != "collection" &&
        n != "system_buckets") {
      return bad("unknown field '" + std::string(n) + "'");
    }
  }
  if (!cluster.eoo()) {
    if (r.NumFields() != 1 || cluster.type() != bson::BsonType::kBool || !cluster.Bool()) {
      return bad("cluster must be true and alone");
    }
    return Cluster();
  }
  if (!any.eoo()) {
    if (r.NumFields() != 1 || any.type() != bson::BsonType::kBool || !any.Bool()) {
      return bad("anyResource must be true and alone");
    }
    return AnyResource();
  }
  if (db.type() != bson::BsonType::kString) return bad("it needs a string 'db'");
  std::string d(db.Str());
  if (!buckets.eoo()) {
    if (!coll.eoo() || buckets.type() != bson::BsonType::kString) {
      return bad("system_buckets must be a string, without 'collection'");
    }
    if (buckets.Str().empty()) return d.empty() ? AnyBuckets() : BucketsIn(d);
    return ResourcePattern{Kind::kExactNamespace, d,
                           "system.buckets." + std::string(buckets.Str())};
  }
  if (coll.type() != bson::BsonType::kString) return bad("it needs a string 'collection'");
  std::string c(coll.Str());
  if (d.empty() && c.empty()) return AnyNormal();
  if (c.empty()) return Db(d);
  if (d.empty()) return CollectionInAnyDb(c);
  return Exact(d, c);
}

}  // namespace

StatusWith<Privilege> ParsePrivilege(const bson::BsonElement& e) {
  if (e.type() != bson::BsonType::kObject) {
    return Status(ErrorCode::kBadValue, "Privileges must be objects with 'resource' and 'actions'");
  }
  bson::BsonObj p = e.Obj();
  bson::BsonElement resource = p["resource"];
  bson::BsonElement actions = p["actions"];
  if (resource.type() != bson::BsonType::kObject || actions.type() != bson::BsonType::kArray) {
    return Status(ErrorCode::kBadValue,
                  "Privileges need a 'resource' object and an 'actions' array");
  }
  HG_ASSIGN_OR_RETURN(ResourcePattern pattern, ParseResource(resource.Obj()));
  ActionSet set;
  for (const bson::BsonElement& a : actions.Obj()) {
    if (a.type() != bson::BsonType::kString) {
      return Status(ErrorCode::kBadValue, "Privilege actions must be strings");
    }
    bool known = false;
    for (size_t i = 0; i < kActionNames.size(); ++i) {
      if (kActionNames[i] == a.Str()) {
        set.set(i);
        known = true;
      }
    }
    if (!known) {
      return Status(ErrorCode::kBadValue,
                    "Unrecognized action privilege string: " + std::string(a.Str()));
    }
  }
  return Privilege{std::move(pattern), set};
}

bool SameResource(const ResourcePattern& a, const ResourcePattern& b) {
  return a.kind == b.kind && a.db == b.db && a.coll == b.coll;
}

std::vector<Privilege> MergePrivileges(std::vector<Privilege> privileges) {
  std::vector<Privilege> out;
  for (Privilege& p : privileges) {
    bool merged = false;
    for (Privilege& o : out) {
      if (SameResource(o.resource, p.resource)) {
        o.actions |= p.actions;
        merged = true;
        break;
      }
    }
    if (!merged) out.push_back(std::move(p));
  }
  return out;
}

}  // namespace hourglass::auth
