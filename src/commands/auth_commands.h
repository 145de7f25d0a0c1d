// Authentication as the handshake and the commands use it: the SASL conversation behind
// saslStart/saslContinue and hello's speculativeAuthenticate, hello's saslSupportedMechs, and the
// authorization check the dispatcher runs before every command when --auth is on.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "commands/command.h"

namespace hourglass::commands {

// hello's speculativeAuthenticate: a saslStart run inside the handshake. The reply to embed, or
// nullopt when it failed (MongoDB drops the field then, and the client authenticates as usual).
// BadValue only for a value that is not a non-empty object.
StatusWith<std::optional<bson::BsonObj>> SpeculativeAuthenticate(CommandContext& ctx,
                                                                 const bson::BsonElement& spec);

// hello's saslSupportedMechs "db.user": the user's SCRAM mechanisms, or nullopt for an unknown
// user. BadValue for a name without a '.'.
StatusWith<std::optional<bson::BsonObj>> SupportedMechanisms(CommandContext& ctx,
                                                             std::string_view db_dot_user);

// With --auth: OK if the client may run `cmd` (a command needing no authentication, or one whose
// privileges the client's users hold, or the localhost exception's first user); Unauthorized
// (13) with MongoDB's message otherwise. Looks the client's users up again if they changed.
Status CheckAuthorization(CommandContext& ctx, const Command& cmd, const bson::BsonObj& body);

// The users the client has authenticated as, "user@db" each: a cursor's owners.
std::vector<std::string> AuthenticatedUserNames(const ClientState& client);

// Whether the authorization table lists the command (tests check every command is), and whether
// it needs an authenticated client (listCommands' requiresAuth).
bool CommandHasAuthorizationEntry(std::string_view name);
bool CommandRequiresAuth(std::string_view name);

}  // namespace hourglass::commands
