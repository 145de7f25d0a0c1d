#include "auth/user.h"

#include "auth/crypto.h"

namespace hourglass::auth {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

Status Bad(std::string why) {
  return Status(ErrorCode::kBadValue, "invalid user document: " + std::move(why));
}

StatusWith<std::string> Base64Field(const BsonObj& obj, std::string_view field) {
  BsonElement e = obj[field];
  if (e.type() != BsonType::kString) return Bad("credentials need a string " + std::string(field));
  return Base64Decode(e.Str());
}

}  // namespace

BsonObj RoleName::ToBson() const {
  BsonBuilder b;
  b.AppendString("role", role);
  b.AppendString("db", db);
  return b.Obj();
}

StatusWith<RoleName> ParseRoleName(const BsonElement& e, const std::string& default_db,
                                   std::string_view field) {
  if (e.type() == BsonType::kString) {
    if (e.Str().empty()) {
      return Status(ErrorCode::kBadValue, "Role names must be non-empty strings");
    }
    return RoleName{std::string(e.Str()), default_db};
  }
  if (e.type() != BsonType::kObject) {
    return Status(ErrorCode::kBadValue, "Role names must be either strings or objects, found " +
                                            std::string(field) + " element of another type");
  }
  BsonObj o = e.Obj();
  BsonElement role = o["role"];
  BsonElement db = o["db"];
  if (role.type() != BsonType::kString || db.type() != BsonType::kString) {
    return Status(ErrorCode::kBadValue,
                  "Role name objects need a string 'role' and a string 'db' field");
  }
  for (const BsonElement& f : o) {
    if (f.FieldName() != "role" && f.FieldName() != "db") {
      return Status(ErrorCode::kBadValue,
                    "Unknown field in role name object: " + std::string(f.FieldName()));
    }
  }
  if (role.Str().empty() || db.Str().empty()) {
    return Status(ErrorCode::kBadValue, "Role names and their databases must be non-empty");
  }
  return RoleName{std::string(role.Str()), std::string(db.Str())};
}

StatusWith<std::vector<RoleName>> ParseRoleNames(const BsonElement& array,
                                                 const std::string& default_db,
                                                 std::string_view field) {
  if (array.type() != BsonType::kArray) {
    return Status(ErrorCode::kTypeMismatch,
                  "BSON field '" + std::string(field) + "' is the wrong type '" +
                      std::string(bson::TypeName(array.type())) + "', expected type 'array'");
  }
  std::vector<RoleName> out;
  for (const BsonElement& e : array.Obj()) {
    HG_ASSIGN_OR_RETURN(RoleName r, ParseRoleName(e, default_db, field));
    bool seen = false;
    for (const RoleName& o : out) seen |= o == r;
    if (!seen) out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> UserDocument::Mechanisms() const {
  std::vector<std::string> out;
  for (const auto& [m, c] : credentials) out.emplace_back(MechanismName(m));
  if (external) out.emplace_back("external");
  return out;
}

BsonObj UserDocument::ToBson() const {
  BsonBuilder b;
  b.AppendString("_id", name.Id());
  b.AppendBinData("userId", 4, user_id);
  b.AppendString("user", name.user);
  b.AppendString("db", name.db);
  size_t creds = b.OpenObject("credentials");
  if (external) b.AppendBool("external", true);
  for (const auto& [m, c] : credentials) {
    size_t one = b.OpenObject(MechanismName(m));
    b.AppendInt32("iterationCount", c.iteration_count);
    b.AppendString("salt", Base64Encode(c.salt));
    b.AppendString("storedKey", Base64Encode(c.stored_key));
    b.AppendString("serverKey", Base64Encode(c.server_key));
    b.Close(one);
  }
  b.Close(creds);
  if (custom_data) b.AppendObject("customData", *custom_data);
  size_t roles_token = b.OpenArray("roles");
  int i = 0;
  for (const RoleName& r : roles) b.AppendObject(std::to_string(i++), r.ToBson());
  b.Close(roles_token);
  return b.Obj();
}

StatusWith<UserDocument> UserDocument::FromBson(const BsonObj& doc) {
  UserDocument u;
  BsonElement user = doc["user"];
  BsonElement db = doc["db"];
  if (user.type() != BsonType::kString || db.type() != BsonType::kString) {
    return Bad("'user' and 'db' must be strings");
  }
  u.name = {std::string(user.Str()), std::string(db.Str())};
  BsonElement id = doc["userId"];
  if (id.type() == BsonType::kBinData) u.user_id = std::string(id.BinData());
  BsonElement creds = doc["credentials"];
  if (creds.type() != BsonType::kObject) return Bad("'credentials' must be an object");
  for (const BsonElement& c : creds.Obj()) {
    if (c.FieldName() == "external") {
      u.external = c.type() == BsonType::kBool && c.Bool();
      continue;
    }
    std::optional<ScramMechanism> m = ParseMechanism(c.FieldName());
    if (!m) continue;  // another mechanism's credentials: not ours
    if (c.type() != BsonType::kObject) return Bad("SCRAM credentials must be an object");
    BsonObj o = c.Obj();
    ScramCredentials sc;
    BsonElement iterations = o["iterationCount"];
    if (!iterations.IsNumber() || iterations.NumberLong() < 1) {
      return Bad("SCRAM credentials need a positive iterationCount");
    }
    sc.iteration_count = static_cast<int>(iterations.NumberLong());
    HG_ASSIGN_OR_RETURN(sc.salt, Base64Field(o, "salt"));
    HG_ASSIGN_OR_RETURN(sc.stored_key, Base64Field(o, "storedKey"));
    HG_ASSIGN_OR_RETURN(sc.server_key, Base64Field(o, "serverKey"));
    if (sc.stored_key.size() != DigestLength(HashOf(*m))) return Bad("storedKey of wrong length");
    u.credentials[*m] = std::move(sc);
  }
  BsonElement roles = doc["roles"];
  if (roles.type() != BsonType::kArray) return Bad("'roles' must be an array");
  HG_ASSIGN_OR_RETURN(u.roles, ParseRoleNames(roles, u.name.db, "roles"));
  BsonElement custom = doc["customData"];
  if (custom.type() == BsonType::kObject) u.custom_data = custom.Obj().Owned();
  return u;
}

}  // namespace hourglass::auth
