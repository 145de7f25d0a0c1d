// SCRAM (RFC 5802, RFC 7677) as MongoDB speaks it: the credentials createUser stores and the
// server's side of a saslStart/saslContinue conversation. SCRAM-SHA-1 derives its key from
// MongoDB's pre-digested password (hex MD5 of "user:mongo:password"); SCRAM-SHA-256 from the
// SASLprepped password. Channel binding is not offered (a gs2 header of "n" or "y").
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "auth/crypto.h"
#include "base/status.h"

namespace hourglass::auth {

enum class ScramMechanism { kSha1, kSha256 };

std::string_view MechanismName(ScramMechanism mechanism);  // "SCRAM-SHA-1", "SCRAM-SHA-256"
std::optional<ScramMechanism> ParseMechanism(std::string_view name);
HashAlgorithm HashOf(ScramMechanism mechanism);

// What the server keeps of a password: never the password, only what checks a proof of it.
// Byte strings here are raw (the user document stores them base64).
struct ScramCredentials {
  int iteration_count = 0;
  std::string salt;
  std::string stored_key;
  std::string server_key;
};

// The password as the mechanism feeds it to PBKDF2: SHA-1's digest, SHA-256's SASLprep (which
// can refuse a password: BadValue).
StatusWith<std::string> ScramPassword(ScramMechanism mechanism, std::string_view user,
                                      std::string_view password);
// New credentials with a fresh random salt (16 bytes for SHA-1, 28 for SHA-256, as MongoDB).
StatusWith<ScramCredentials> MakeScramCredentials(ScramMechanism mechanism, std::string_view user,
                                                  std::string_view password, int iterations);
// The same from a given salt (tests check RFC and driver vectors with it).
ScramCredentials DeriveScramCredentials(ScramMechanism mechanism,
                                        std::string_view prepared_password, std::string_view salt,
                                        int iterations);

// The server's side of one conversation. Step() takes each client message in turn and returns the
// server's answer; the conversation is done after the proof is checked (or, without
// skipEmptyExchange, after the client's empty last message). Any failure ends it: a wrong proof
// and an unknown user give the same AuthenticationFailed, so replies do not tell which users
// exist; the reason for the log is in failure_detail().
class ScramConversation {
 public:
  // Looks up the credentials of `user` (as the client named it) for this mechanism; nullopt if
  // the user does not exist or has no credentials for it.
  using CredentialLookup =
      std::function<StatusWith<std::optional<ScramCredentials>>(const std::string& user)>;

  ScramConversation(ScramMechanism mechanism, bool skip_empty_exchange)
      : mechanism_(mechanism), skip_empty_exchange_(skip_empty_exchange) {}

  struct Reply {
    std::string payload;
    bool done = false;
  };
  StatusWith<Reply> Step(std::string_view input, const CredentialLookup& lookup);

  // Tests replay published conversations: their server nonce instead of a random one.
  void SetServerNonceForTest(std::string nonce) { fixed_server_nonce_ = std::move(nonce); }

  ScramMechanism mechanism() const { return mechanism_; }
  // The user the client named in its first message ("" before).
  const std::string& user() const { return user_; }
  bool done() const { return state_ == State::kDone; }
  // True once the client proved it knows the password.
  bool authenticated() const { return authenticated_; }
  const std::string& failure_detail() const { return failure_detail_; }

 private:
  enum class State { kFirst, kFinal, kEmpty, kDone, kFailed };
  StatusWith<Reply> First(std::string_view input, const CredentialLookup& lookup);
  StatusWith<Reply> Final(std::string_view input);
  Status Fail(ErrorCode code, std::string detail);

  ScramMechanism mechanism_;
  bool skip_empty_exchange_;
  State state_ = State::kFirst;
  bool authenticated_ = false;
  std::string user_;
  std::string gs2_header_;
  std::string client_first_bare_;
  std::string server_first_;
  std::string nonce_;
  ScramCredentials credentials_;
  std::string failure_detail_;
  std::string fixed_server_nonce_;
};

// The client's side of one conversation, for a member authenticating to another with the
// key of --keyFile: First() is the saslStart payload, Final() answers the server's first message
// (checking its nonce extends ours), Verify() checks the server's signature, so each side has
// proved it holds the key. `prepared_password` as ScramPassword gives it.
class ScramClient {
 public:
  ScramClient(ScramMechanism mechanism, std::string user, std::string prepared_password);

  std::string First();
  // BadValue for a server message that is not SCRAM's or does not extend this client's nonce.
  StatusWith<std::string> Final(std::string_view server_first);
  // AuthenticationFailed unless the server proved it knows the password too.
  Status Verify(std::string_view server_final) const;

  // Tests replay published conversations: their client nonce instead of a random one.
  void SetClientNonceForTest(std::string nonce) { nonce_ = std::move(nonce); }

 private:
  ScramMechanism mechanism_;
  std::string user_;
  std::string password_;
  std::string nonce_;
  std::string client_first_bare_;
  std::string auth_message_;
  std::string server_key_;
};

}  // namespace hourglass::auth
