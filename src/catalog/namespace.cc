#include "catalog/namespace.h"

namespace hourglass::catalog {

StatusWith<NamespaceString> ParseNamespace(std::string_view full) {
  size_t dot = full.find('.');
  if (dot == std::string_view::npos || dot == 0) {
    return Status(ErrorCode::kInvalidNamespace, "Invalid namespace: " + std::string(full));
  }
  return NamespaceString{std::string(full.substr(0, dot)), std::string(full.substr(dot + 1))};
}

Status ValidateDbName(std::string_view db) {
  if (db.empty()) return Status(ErrorCode::kInvalidNamespace, "Invalid empty database name");
  if (db.size() >= 64) {
    return Status(ErrorCode::kInvalidNamespace,
                  "db name is too long: '" + std::string(db) + "' (max 63 characters)");
  }
  for (char c : db) {
    if (c == '/' || c == '\\' || c == '.' || c == ' ' || c == '"' || c == '$' || c == '*' ||
        c == '<' || c == '>' || c == ':' || c == '|' || c == '?' || c == '\0') {
      return Status(ErrorCode::kInvalidNamespace,
                    "Invalid database name: '" + std::string(db) + "'");
    }
  }
  return Status::OK();
}

Status ValidateCollectionName(const NamespaceString& nss) {
  HG_RETURN_IF_ERROR(ValidateDbName(nss.db));
  const std::string& c = nss.coll;
  auto bad = [&] {
    return Status(ErrorCode::kInvalidNamespace, "Invalid collection name: '" + nss.ns() + "'");
  };
  if (c.empty()) {
    return Status(ErrorCode::kInvalidNamespace, "Invalid namespace specified '" + nss.ns() + "'");
  }
  if (c[0] == '.' || c.find('\0') != std::string::npos) return bad();
  if (c.find('$') != std::string::npos) return bad();
  if (nss.ns().size() > 255) {
    return Status(ErrorCode::kInvalidNamespace,
                  "Fully qualified namespace is too long. Namespace: " + nss.ns() + " Max: 255");
  }
  return Status::OK();
}

}  // namespace hourglass::catalog
