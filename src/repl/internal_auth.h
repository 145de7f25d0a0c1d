// A member's login to another member as the internal user of --keyFile (auth/key_file.h):
// SCRAM-SHA-256 over saslStart/saslContinue, checking the other member's proof too, before
// hgRaftConnect (WireTransport's dials) or reading its oplog or data (oplog_fetcher.h). Not
// thread-safe: one per connection.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "auth/scram.h"
#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::repl {

// OK for a reply with ok: 1; otherwise its error (its code, 8 UnknownError without one), the
// message prefixed with `context`.
Status ReplyStatus(const bson::BsonObj& reply, std::string_view context);

class InternalLogin {
 public:
  explicit InternalLogin(const std::string& key);

  // The first command to send (saslStart on `local`).
  bson::BsonObj Start();
  // Takes the reply to the last command sent: the next command, or nullopt once logged in.
  // AuthenticationFailed (18) when either side's proof fails, or the error the reply carried.
  StatusWith<std::optional<bson::BsonObj>> Next(const bson::BsonObj& reply);

 private:
  auth::ScramClient client_;
  int step_ = 0;
};

}  // namespace hourglass::repl
