#include "auth/authorization_session.h"

#include <algorithm>

namespace hourglass::auth {

Status AuthorizationSession::Login(const UserDocument& user, uint64_t generation,
                                   const UserStore& store) {
  for (size_t i = 0; i < users_.size(); ++i) {
    if (users_[i].db == user.name.db) {
      users_.erase(users_.begin() + static_cast<std::ptrdiff_t>(i));
      documents_.erase(documents_.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  users_.push_back(user.name);
  documents_.push_back(user);
  generation_ = generation;
  return Resolve(store);
}

Status AuthorizationSession::Logout(const std::string& db, const UserStore& store) {
  for (size_t i = 0; i < users_.size(); ++i) {
    if (users_[i].db == db) {
      users_.erase(users_.begin() + static_cast<std::ptrdiff_t>(i));
      documents_.erase(documents_.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  return Resolve(store);
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
  return Resolve(store);
}

Status AuthorizationSession::Resolve(const UserStore& store) {
  std::vector<RoleName> granted;
  for (const UserDocument& u : documents_)
    granted.insert(granted.end(), u.roles.begin(), u.roles.end());
  HG_ASSIGN_OR_RETURN(ResolvedRoles resolved, ResolveRoles(store, granted));
  roles_ = std::move(resolved.roles);
  privileges_ = std::move(resolved.privileges);
  return Status::OK();
}

}  // namespace hourglass::auth
