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

StatusWith<Privilege> Parse(std::string_view json) {
  auto doc = bson::FromJson(json);
  EXPECT_TRUE(doc.ok()) << json;
  return ParsePrivilege(doc.value()["p"]);
}

TEST(PrivilegesTest, ParsesEveryResourceFormAndRefusesWhatIsNotOne) {
  using Kind = ResourcePattern::Kind;
  struct Case {
    const char* json;
    Kind kind;
    const char* db;
    const char* coll;
  } cases[] = {
      {R"({"p": {"resource": {"db": "app", "collection": "c"}, "actions": ["find"]}})",
       Kind::kExactNamespace, "app", "c"},
      {R"({"p": {"resource": {"db": "app", "collection": ""}, "actions": ["find"]}})",
       Kind::kDatabase, "app", ""},
      {R"({"p": {"resource": {"db": "", "collection": "c"}, "actions": ["find"]}})",
       Kind::kCollectionInAnyDb, "", "c"},
      {R"({"p": {"resource": {"db": "", "collection": ""}, "actions": ["find"]}})",
       Kind::kAnyNormal, "", ""},
      {R"({"p": {"resource": {"cluster": true}, "actions": ["serverStatus"]}})", Kind::kCluster, "",
       ""},
      {R"({"p": {"resource": {"anyResource": true}, "actions": ["find"]}})", Kind::kAnyResource, "",
       ""},
      {R"({"p": {"resource": {"db": "app", "system_buckets": ""}, "actions": ["find"]}})",
       Kind::kSystemBucketsInDb, "app", ""},
      {R"({"p": {"resource": {"db": "app", "system_buckets": "w"}, "actions": ["find"]}})",
       Kind::kExactNamespace, "app", "system.buckets.w"},
  };
  for (const Case& c : cases) {
    StatusWith<Privilege> p = Parse(c.json);
    ASSERT_TRUE(p.ok()) << c.json << " " << p.status().ToString();
    EXPECT_EQ(p.value().resource.kind, c.kind) << c.json;
    EXPECT_EQ(p.value().resource.db, c.db) << c.json;
    EXPECT_EQ(p.value().resource.coll, c.coll) << c.json;
    // What PrivilegeToBson writes parses back to the same privilege.
    bson::BsonBuilder again;
    again.AppendObject("p", PrivilegeToBson(p.value()));
    bson::BsonObj again_doc = again.Obj();
    StatusWith<Privilege> round = ParsePrivilege(again_doc["p"]);
    ASSERT_TRUE(round.ok()) << c.json;
    EXPECT_TRUE(SameResource(round.value().resource, p.value().resource)) << c.json;
    EXPECT_EQ(round.value().actions, p.value().actions) << c.json;
  }
  for (const char* bad : {
           R"({"p": {"resource": {"cluster": false}, "actions": ["find"]}})",
           R"({"p": {"resource": {"cluster": true, "db": "x"}, "actions": ["find"]}})",
           R"({"p": {"resource": {"db": "app"}, "actions": ["find"]}})",
           R"({"p": {"resource": {"db": "app", "collection": "c"}, "actions": ["fly"]}})",
           R"({"p": {"resource": {"db": "app", "collection": "c", "x": 1}, "actions": []}})",
           R"({"p": {"resource": {"db": "app", "collection": "c"}}})",
           R"({"p": "find"})",
       }) {
    EXPECT_FALSE(Parse(bad).ok()) << bad;
  }
}

TEST(PrivilegesTest, MergesPrivilegesOnOneResource) {
  ResourcePattern app{ResourcePattern::Kind::kDatabase, "app", ""};
  ResourcePattern other{ResourcePattern::Kind::kDatabase, "other", ""};
  std::vector<Privilege> merged = MergePrivileges({{app, Actions({ActionType::kFind})},
                                                   {other, Actions({ActionType::kInsert})},
                                                   {app, Actions({ActionType::kInsert})}});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].actions, Actions({ActionType::kFind, ActionType::kInsert}));
  EXPECT_EQ(merged[1].actions, Actions({ActionType::kInsert}));
}

}  // namespace
}  // namespace hourglass::auth
