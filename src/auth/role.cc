#include "auth/role.h"

namespace hourglass::auth {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

BsonObj RoleDocument::ToBson() const {
  BsonBuilder b;
  b.AppendString("_id", Id());
  b.AppendString("role", name.role);
  b.AppendString("db", name.db);
  size_t privileges_token = b.OpenArray("privileges");
  int i = 0;
  for (const Privilege& p : privileges) b.AppendObject(std::to_string(i++), PrivilegeToBson(p));
  b.Close(privileges_token);
  size_t roles_token = b.OpenArray("roles");
  i = 0;
  for (const RoleName& r : roles) b.AppendObject(std::to_string(i++), r.ToBson());
  b.Close(roles_token);
  return b.Obj();
}

StatusWith<RoleDocument> RoleDocument::FromBson(const BsonObj& doc) {
  RoleDocument r;
  BsonElement role = doc["role"];
  BsonElement db = doc["db"];
  if (role.type() != BsonType::kString || db.type() != BsonType::kString) {
    return Status(ErrorCode::kBadValue, "invalid role document: 'role' and 'db' must be strings");
  }
  r.name = {std::string(role.Str()), std::string(db.Str())};
  BsonElement privileges = doc["privileges"];
  if (privileges.type() == BsonType::kArray) {
    for (const BsonElement& p : privileges.Obj()) {
      HG_ASSIGN_OR_RETURN(Privilege parsed, ParsePrivilege(p));
      r.privileges.push_back(std::move(parsed));
    }
  }
  BsonElement roles = doc["roles"];
  if (roles.type() == BsonType::kArray) {
    HG_ASSIGN_OR_RETURN(r.roles, ParseRoleNames(roles, r.name.db, "roles"));
  }
  return r;
}

}  // namespace hourglass::auth
