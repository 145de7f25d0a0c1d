// --keyFile (security.keyFile): the shared secret replica set members authenticate to each
// other with, as mongod's keyFile internal authentication. Members log in as the internal user
// `__system@local` with SCRAM-SHA-256, the key (its whitespace removed) as the password; a
// server with a key file also requires clients to authenticate (--auth), as mongod does.
#pragma once

#include <string>

#include "base/status.h"

namespace hourglass::auth {

// The internal user's name and database.
inline constexpr const char* kInternalUser = "__system";
inline constexpr const char* kInternalUserDb = "local";

// Reads and checks a key file as mongod does: only its owner may read it (no group or world
// permissions), and what is left once whitespace is removed is 6 to 1,024 base64 characters.
// InvalidOptions (72) naming the file and what is wrong; the key otherwise.
StatusWith<std::string> ReadKeyFile(const std::string& path);

}  // namespace hourglass::auth
