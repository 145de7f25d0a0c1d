// Retrying units of work that lose a write-write race. WiredTiger detects conflicting concurrent
// updates optimistically: the loser's operation fails with WriteConflict (112) and its whole
// transaction must be rolled back and re-run. RetryOnWriteConflict runs that loop. Thread-safe (it
// keeps no state); it blocks while backing off.
#pragma once

#include <functional>

#include "base/status.h"

namespace hourglass::storage {

inline constexpr int kDefaultWriteConflictAttempts = 1000;

// Runs `fn` until it returns anything other than WriteConflict, or until `max_attempts` calls have
// all returned WriteConflict (then that WriteConflict is returned). Between attempts it yields and
// then sleeps with a growing delay (capped at 100 ms) so the winner can commit. `fn` must be a
// complete unit: it begins (e.g. with a WriteUnit) and commits or rolls back its own transaction,
// so each attempt starts from a fresh snapshot.
Status RetryOnWriteConflict(const std::function<Status()>& fn,
                            int max_attempts = kDefaultWriteConflictAttempts);

}  // namespace hourglass::storage
