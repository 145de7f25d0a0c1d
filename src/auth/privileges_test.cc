#include "auth/privileges.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace hourglass::auth {
namespace {

PrivilegeSet Of(std::initializer_list<RoleName> roles) {
  PrivilegeSet set;
  for (const RoleName& r : roles) {
    auto p = BuiltinRolePrivileges(r);
    EXPECT_TRUE(p.has_value()) << r.Display();
    if (p) set.Add(*p);
  }
  return set;
}

ResourceTarget Ns(std::string db, std::string coll) {
  return ResourceTarget::Namespace(std::move(db), std::move(coll));
}

TEST(PrivilegesTest, ReadCoversTheDatabasesNormalAndBucketCollectionsOnly) {
  PrivilegeSet read = Of({{"read", "app"}});
  EXPECT_TRUE(read.Allows(Ns("app", "c"), ActionType::kFind));
  EXPECT_TRUE(read.Allows(Ns("app", "system.buckets.weather"), ActionType::kFind));
  EXPECT_TRUE(read.Allows(Ns("app", "system.js"), ActionType::kFind));
  EXPECT_TRUE(read.Allows(ResourceTarget::Database("app"), ActionType::kListCollections));
  EXPECT_FALSE(read.Allows(Ns("app", "system.views"), ActionType::kFind));
  EXPECT_FALSE(read.Allows(Ns("other", "c"), ActionType::kFind));
  EXPECT_FALSE(read.Allows(Ns("app", "c"), ActionType::kInsert));
  EXPECT_FALSE(read.Allows(ResourceTarget::Cluster(), ActionType::kFind));
  EXPECT_TRUE(read.HasAnyOnDatabase("app"));
  EXPECT_FALSE(read.HasAnyOnDatabase("other"));
}

TEST(PrivilegesTest, AnyDatabaseAndClusterRolesExistOnlyInAdmin) {
  EXPECT_TRUE(IsBuiltinRole({"readAnyDatabase", "admin"}));
  EXPECT_FALSE(IsBuiltinRole({"readAnyDatabase", "app"}));
  EXPECT_FALSE(IsBuiltinRole({"root", "app"}));
  EXPECT_FALSE(IsBuiltinRole({"clusterMonitor", "app"}));
  EXPECT_TRUE(IsBuiltinRole({"read", "app"}));
  EXPECT_TRUE(IsBuiltinRole({"dbOwner", "admin"}));
  EXPECT_FALSE(IsBuiltinRole({"nope", "admin"}));
}

TEST(PrivilegesTest, ClusterRolesAndRoot) {
  PrivilegeSet monitor = Of({{"clusterMonitor", "admin"}});
  EXPECT_TRUE(monitor.Allows(ResourceTarget::Cluster(), ActionType::kServerStatus));
  EXPECT_TRUE(monitor.Allows(ResourceTarget::Cluster(), ActionType::kInprog));
  EXPECT_FALSE(monitor.Allows(ResourceTarget::Cluster(), ActionType::kKillop));
  EXPECT_FALSE(monitor.Allows(Ns("app", "c"), ActionType::kFind));
  PrivilegeSet root = Of({{"root", "admin"}});
  EXPECT_TRUE(root.Allows(Ns("admin", "system.users"), ActionType::kFind));
  EXPECT_TRUE(root.Allows(ResourceTarget::Cluster(), ActionType::kShutdown));
  PrivilegeSet any = Of({{"readWriteAnyDatabase", "admin"}});
  EXPECT_TRUE(any.Allows(Ns("x", "y"), ActionType::kInsert));
  EXPECT_FALSE(any.Allows(Ns("admin", "system.users"), ActionType::kFind));
  EXPECT_TRUE(any.Allows(ResourceTarget::Cluster(), ActionType::kListDatabases));
}

TEST(PrivilegesTest, ListsPrivilegesAsConnectionStatusShowsThem) {
  PrivilegeSet user_admin = Of({{"userAdmin", "app"}});
  bson::BsonObj list = user_admin.ToBsonArray();
  ASSERT_EQ(list.NumFields(), 1);
  bson::BsonObj first = list.FirstElement().Obj();
  EXPECT_EQ(first["resource"].Obj()["db"].Str(), "app");
  EXPECT_EQ(first["resource"].Obj()["collection"].Str(), "");
  std::vector<std::string> actions;
  for (const auto& a : first["actions"].Obj()) actions.emplace_back(a.Str());
  EXPECT_NE(std::find(actions.begin(), actions.end(), "createUser"), actions.end());
  EXPECT_EQ(std::find(actions.begin(), actions.end(), "find"), actions.end());
}

}  // namespace
}  // namespace hourglass::auth
