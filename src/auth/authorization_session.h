// One connection's authentication state: the users it has authenticated as (at most one per
// database, as MongoDB), the privileges their roles grant, and the SASL conversation in progress.
// Privileges are resolved at login and again whenever the user store changes (a revoked role
// takes effect on the connection's next command). Used only by its connection's thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "auth/privileges.h"
#include "auth/scram.h"
#include "auth/user.h"
#include "auth/user_store.h"

namespace hourglass::auth {

class AuthorizationSession {
 public:
  bool IsAuthenticated() const { return !users_.empty(); }
  const std::vector<UserName>& users() const { return users_; }
  // The roles of the authenticated users: those granted to them, and those user-defined roles
  // inherit (built-in roles name none), as connectionStatus lists them.
  const std::vector<RoleName>& Roles() const { return roles_; }
  const PrivilegeSet& privileges() const { return privileges_; }

  // Records `user` as authenticated, replacing a user of the same database; `generation` is the
  // user store's when `user` was read.
  Status Login(const UserDocument& user, uint64_t generation, const UserStore& store);
  // Forgets the user authenticated on `db`, if any.
  Status Logout(const std::string& db, const UserStore& store);
  // Looks the users up again if `store` changed since they were resolved; a user dropped since
  // is logged out.
  Status Refresh(const UserStore& store);
  bool Allows(const ResourceTarget& target, ActionType action) const {
    return privileges_.Allows(target, action);
  }

  // The SASL conversation in progress (saslStart to the end of saslContinue), if any.
  struct Conversation {
    int32_t id = 0;
    std::string db;
    bool speculative = false;  // begun by hello's speculativeAuthenticate
    std::unique_ptr<ScramConversation> scram;
    // The user as the first step found it, and the user store's generation before that.
    std::optional<UserDocument> user;
    uint64_t generation = 0;
  };
  std::optional<Conversation>& conversation() { return conversation_; }
  int32_t NextConversationId() { return ++last_conversation_id_; }

 private:
  // The roles and privileges of the users' roles (ResolveRoles).
  Status Resolve(const UserStore& store);

  std::vector<UserName> users_;
  std::vector<UserDocument> documents_;
  std::vector<RoleName> roles_;
  PrivilegeSet privileges_;
  uint64_t generation_ = 0;
  std::optional<Conversation> conversation_;
  int32_t last_conversation_id_ = 0;
};

}  // namespace hourglass::auth
