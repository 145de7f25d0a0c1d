// The server's users, kept where MongoDB keeps them: documents of admin.system.users (user.h's
// shape), with the unique index {user: 1, db: 1} MongoDB gives that collection. Every change bumps
// a generation that connections compare to know when to look their users up again. Thread-safe.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "auth/user.h"
#include "base/status.h"

namespace hourglass::catalog {
class Catalog;
}
namespace hourglass::storage {
class KvEngine;
}

namespace hourglass::auth {

class UserStore {
 public:
  UserStore(storage::KvEngine* engine, catalog::Catalog* catalog)
      : engine_(engine), catalog_(catalog) {}

  StatusWith<std::optional<UserDocument>> Find(const UserName& name) const;
  // Location51003 "User "u@db" already exists" if it does.
  Status Insert(const UserDocument& user);
  // UserNotFound if the user does not exist.
  Status Replace(const UserDocument& user);
  Status Remove(const UserName& name);
  // Removes every user of `db`; returns how many.
  StatusWith<int64_t> RemoveAll(const std::string& db);
  // The users of `db`, or of every database, ordered by _id.
  StatusWith<std::vector<UserDocument>> List(const std::optional<std::string>& db) const;
  // Whether any user exists (the localhost exception holds until one does).
  StatusWith<bool> HasUsers() const;
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  // Removes, in one transaction, the users of `db` (of every database when nullopt), or only
  // `only` when given; returns how many.
  StatusWith<int64_t> RemoveWhere(const std::optional<std::string>& db,
                                  const std::optional<UserName>& only);

  storage::KvEngine* engine_;
  catalog::Catalog* catalog_;
  std::atomic<uint64_t> generation_{1};
};

}  // namespace hourglass::auth
