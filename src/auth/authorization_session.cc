#include "auth/authorization_session.h"

#include <algorithm>

namespace hourglass::auth {

std::vector<RoleName> AuthorizationSession::Roles() const {
  std::vector<RoleName> out;
  for (const UserDocument& u : documents_) {
    for (const RoleName& r : u.roles) {
      if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
    }
  }
  return out;
}

void AuthorizationSession::Login(const UserDocument& user, uint64_t generation) {
  Logout(user.name.db);
  users_.push_back(user.name);
  documents_.push_back(user);
  generation_ = generation;
  Resolve();
}

void AuthorizationSession::Logout(const std::string& db) {
  for (size_t i = 0; i < users_.size(); ++i) {
    if (users_[i].db == db) {
      users_.erase(users_.begin() + static_cast<std::ptrdiff_t>(i));
      documents_.erase(documents_.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  Resolve();
}

Status AuthorizationSession::Refresh(const UserStore& store) {
  if (users_.empty() || store.generation() == generation_) return Status::OK();
  uint64_t generation = store.generation();
  std::vector<UserName> users;
  std::vector<UserDocument> documents;
  for (const UserName& name : users_) {
    HG_ASSIGN_OR_RETURN(std::optional<UserDocument> found, store.Find(name));
    if (!found) continue;  // dropped: no longer authenticated
    users.push_back(name);
    documents.push_back(std::move(*found));
  }
  users_ = std::move(users);
  documents_ = std::move(documents);
  generation_ = generation;
  Resolve();
  return Status::OK();
}

void AuthorizationSession::Resolve() {
  privileges_ = PrivilegeSet();
  for (const RoleName& role : Roles()) {
    if (auto privileges = BuiltinRolePrivileges(role)) privileges_.Add(*privileges);
  }
}

}  // namespace hourglass::auth
