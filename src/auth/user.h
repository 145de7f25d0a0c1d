// Users and roles by name, and a user as admin.system.users stores it, in MongoDB's document
// shape: {_id: "<db>.<user>", userId: UUID, user, db, credentials: {"SCRAM-SHA-1": {...},
// "SCRAM-SHA-256": {...}} or {external: true}, roles: [{role, db}], customData?}.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "auth/scram.h"
#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::auth {

struct UserName {
  std::string user;
  std::string db;
  // The user document's _id: "db.user".
  std::string Id() const { return db + "." + user; }
  // How MongoDB's messages name a user: "user@db".
  std::string Display() const { return user + "@" + db; }
  bool operator==(const UserName&) const = default;
  auto operator<=>(const UserName&) const = default;
};

struct RoleName {
  std::string role;
  std::string db;
  std::string Display() const { return role + "@" + db; }
  bool operator==(const RoleName&) const = default;
  auto operator<=>(const RoleName&) const = default;
  bson::BsonObj ToBson() const;
};

// A role given as "name" (of `default_db`) or {role, db}; BadValue/TypeMismatch otherwise,
// naming `field`.
StatusWith<RoleName> ParseRoleName(const bson::BsonElement& e, const std::string& default_db,
                                   std::string_view field);
StatusWith<std::vector<RoleName>> ParseRoleNames(const bson::BsonElement& array,
                                                 const std::string& default_db,
                                                 std::string_view field);

struct UserDocument {
  UserName name;
  std::string user_id;  // 16 bytes, BinData subtype 4
  std::map<ScramMechanism, ScramCredentials> credentials;
  // A user of $external: it has no password, and authenticates by the subject of its X.509
  // certificate (stored as credentials: {external: true}).
  bool external = false;
  std::vector<RoleName> roles;
  std::optional<bson::BsonObj> custom_data;

  // The mechanisms the user has credentials for, as names, SHA-1 first.
  std::vector<std::string> Mechanisms() const;
  bson::BsonObj ToBson() const;
  // BadValue naming the field for a document that is not a user's.
  static StatusWith<UserDocument> FromBson(const bson::BsonObj& doc);
};

}  // namespace hourglass::auth
