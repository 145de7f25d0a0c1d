// What the user and role management commands share.
#pragma once

#include <vector>

#include "auth/user.h"
#include "auth/user_store.h"
#include "base/status.h"

namespace hourglass::commands {

// RoleNotFound (31) naming the roles of `roles` that are neither built-in nor user-defined.
Status CheckRolesExist(const auth::UserStore& store, const std::vector<auth::RoleName>& roles);

}  // namespace hourglass::commands
