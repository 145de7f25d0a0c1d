// A user-defined role as admin.system.roles stores it, in MongoDB's document shape:
// {_id: "<db>.<role>", role, db, privileges: [{resource, actions}], roles: [{role, db}]}.
#pragma once

#include <vector>

#include "auth/privileges.h"
#include "auth/user.h"
#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::auth {

struct RoleDocument {
  RoleName name;
  std::vector<Privilege> privileges;
  std::vector<RoleName> roles;

  std::string Id() const { return name.db + "." + name.role; }
  bson::BsonObj ToBson() const;
  // BadValue naming the field for a document that is not a role's.
  static StatusWith<RoleDocument> FromBson(const bson::BsonObj& doc);
};

}  // namespace hourglass::auth
