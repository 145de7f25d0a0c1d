#include "auth/scram.h"

#include <vector>

#include "auth/saslprep.h"

namespace hourglass::auth {

namespace {

constexpr size_t kServerNonceBytes = 24;

// Splits "k=v,k=v" into its attributes; the values may hold '=' (base64) but not ','.
std::vector<std::string_view> SplitAttributes(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string_view::npos ? s.npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// The value of attribute `key` ("n=alice" → "alice"), or nullopt if `attr` is another one.
std::optional<std::string_view> Attribute(std::string_view attr, char key) {
  if (attr.size() < 2 || attr[0] != key || attr[1] != '=') return std::nullopt;
  return attr.substr(2);
}

// A saslname's escapes: "=2C" is ',' and "=3D" is '='; any other '=' is malformed.
std::optional<std::string> DecodeSaslName(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] != '=') {
      out.push_back(name[i]);
      continue;
    }
    std::string_view esc = name.substr(i + 1, 2);
    if (esc == "2C") {
      out.push_back(',');
    } else if (esc == "3D") {
      out.push_back('=');
    } else {
      return std::nullopt;
    }
    i += 2;
  }
  return out;
}

bool PrintableNonce(std::string_view nonce) {
  if (nonce.empty()) return false;
  for (unsigned char c : nonce) {
    if (c < 0x21 || c > 0x7E || c == ',') return false;
  }
  return true;
}

std::string Xor(std::string_view a, std::string_view b) {
  std::string out(a.size(), '\0');
  for (size_t i = 0; i < a.size(); ++i) out[i] = static_cast<char>(a[i] ^ b[i]);
  return out;
}

}  // namespace

std::string_view MechanismName(ScramMechanism mechanism) {
  return mechanism == ScramMechanism::kSha1 ? "SCRAM-SHA-1" : "SCRAM-SHA-256";
}

std::optional<ScramMechanism> ParseMechanism(std::string_view name) {
  if (name == "SCRAM-SHA-1") return ScramMechanism::kSha1;
  if (name == "SCRAM-SHA-256") return ScramMechanism::kSha256;
  return std::nullopt;
}

HashAlgorithm HashOf(ScramMechanism mechanism) {
  return mechanism == ScramMechanism::kSha1 ? HashAlgorithm::kSha1 : HashAlgorithm::kSha256;
}

StatusWith<std::string> ScramPassword(ScramMechanism mechanism, std::string_view user,
                                      std::string_view password) {
  if (mechanism == ScramMechanism::kSha1) {
    return Md5Hex(std::string(user) + ":mongo:" + std::string(password));
  }
  return SaslPrep(password);
}

ScramCredentials DeriveScramCredentials(ScramMechanism mechanism,
                                        std::string_view prepared_password, std::string_view salt,
                                        int iterations) {
  HashAlgorithm h = HashOf(mechanism);
  std::string salted = Pbkdf2(h, prepared_password, salt, iterations);
  ScramCredentials c;
  c.iteration_count = iterations;
  c.salt = std::string(salt);
  c.stored_key = Digest(h, Hmac(h, salted, "Client Key"));
  c.server_key = Hmac(h, salted, "Server Key");
  return c;
}

StatusWith<ScramCredentials> MakeScramCredentials(ScramMechanism mechanism, std::string_view user,
                                                  std::string_view password, int iterations) {
  HG_ASSIGN_OR_RETURN(std::string prepared, ScramPassword(mechanism, user, password));
  size_t salt_bytes = mechanism == ScramMechanism::kSha1 ? 16 : 28;
  return DeriveScramCredentials(mechanism, prepared, SecureRandomBytes(salt_bytes), iterations);
}

Status ScramConversation::Fail(ErrorCode code, std::string detail) {
  state_ = State::kFailed;
  failure_detail_ = detail;
  return Status(code, std::move(detail));
}

StatusWith<ScramConversation::Reply> ScramConversation::Step(std::string_view input,
                                                             const CredentialLookup& lookup) {
  switch (state_) {
    case State::kFirst:
      return First(input, lookup);
    case State::kFinal:
      return Final(input);
    case State::kEmpty:
      if (!input.empty()) {
        return Fail(ErrorCode::kBadValue, "SCRAM's last client message must be empty");
      }
      state_ = State::kDone;
      return Reply{"", true};
    case State::kDone:
    case State::kFailed:
      break;
  }
  return Status(ErrorCode::kProtocolError, "the SCRAM conversation has already ended");
}

StatusWith<ScramConversation::Reply> ScramConversation::First(std::string_view input,
                                                              const CredentialLookup& lookup) {
  // gs2-header: a channel-binding flag, an optional authzid, then the bare message.
  std::vector<std::string_view> attrs = SplitAttributes(input);
  if (attrs.size() < 4) {
    return Fail(ErrorCode::kBadValue,
                "Incorrect number of arguments for first SCRAM client message, got " +
                    std::to_string(attrs.size()) + " expected at least 4");
  }
  if (attrs[0] != "n" && attrs[0] != "y") {
    return Fail(ErrorCode::kBadValue, "Server does not support channel binding");
  }
  if (!attrs[1].empty()) {
    std::optional<std::string_view> authzid = Attribute(attrs[1], 'a');
    if (!authzid) return Fail(ErrorCode::kBadValue, "Incorrect SCRAM authzid");
  }
  gs2_header_ = std::string(attrs[0]) + "," + std::string(attrs[1]) + ",";
  client_first_bare_ = std::string(input.substr(gs2_header_.size()));
  if (Attribute(attrs[2], 'm')) {
    return Fail(ErrorCode::kBadValue, "SCRAM mandatory extensions are not supported");
  }
  std::optional<std::string_view> name = Attribute(attrs[2], 'n');
  std::optional<std::string_view> client_nonce = Attribute(attrs[3], 'r');
  if (!name || name->empty()) return Fail(ErrorCode::kBadValue, "Invalid SCRAM user name");
  std::optional<std::string> user = DecodeSaslName(*name);
  if (!user) return Fail(ErrorCode::kBadValue, "Invalid SCRAM user name");
  if (!client_nonce || !PrintableNonce(*client_nonce)) {
    return Fail(ErrorCode::kBadValue, "Invalid SCRAM client nonce");
  }
  user_ = *user;
  if (attrs[1].size() > 2 && attrs[1].substr(2) != user_) {
    return Fail(ErrorCode::kBadValue, "SCRAM user name and authzid differ");
  }
  StatusWith<std::optional<ScramCredentials>> found = lookup(user_);
  if (!found.ok()) return Fail(found.status().code(), found.status().reason());
  if (!found.value()) {
    return Fail(ErrorCode::kAuthenticationFailed,
                "UserNotFound: Could not find user \"" + user_ + "\" with " +
                    std::string(MechanismName(mechanism_)) + " credentials");
  }
  credentials_ = std::move(*found.value());
  nonce_ = std::string(*client_nonce) + (fixed_server_nonce_.empty()
                                             ? Base64Encode(SecureRandomBytes(kServerNonceBytes))
                                             : fixed_server_nonce_);
  server_first_ = "r=" + nonce_ + ",s=" + Base64Encode(credentials_.salt) +
                  ",i=" + std::to_string(credentials_.iteration_count);
  state_ = State::kFinal;
  return Reply{server_first_, false};
}

StatusWith<ScramConversation::Reply> ScramConversation::Final(std::string_view input) {
  std::vector<std::string_view> attrs = SplitAttributes(input);
  if (attrs.size() < 3) {
    return Fail(ErrorCode::kBadValue,
                "Incorrect number of arguments for final SCRAM client message, got " +
                    std::to_string(attrs.size()) + " expected at least 3");
  }
  std::optional<std::string_view> binding = Attribute(attrs[0], 'c');
  std::optional<std::string_view> nonce = Attribute(attrs[1], 'r');
  std::optional<std::string_view> proof_b64 = Attribute(attrs.back(), 'p');
  if (!binding || !nonce || !proof_b64) {
    return Fail(ErrorCode::kBadValue, "Incorrect SCRAM client final message");
  }
  if (*binding != Base64Encode(gs2_header_)) {
    return Fail(ErrorCode::kBadValue, "SCRAM channel binding does not match the first message");
  }
  if (*nonce != nonce_) {
    return Fail(ErrorCode::kBadValue, "Unmatched SCRAM nonce received from client");
  }
  StatusWith<std::string> proof = Base64Decode(*proof_b64);
  HashAlgorithm h = HashOf(mechanism_);
  if (!proof.ok() || proof.value().size() != DigestLength(h)) {
    return Fail(ErrorCode::kBadValue, "Invalid SCRAM client proof");
  }
  std::string without_proof(input.substr(0, input.size() - attrs.back().size() - 1));
  std::string auth_message = client_first_bare_ + "," + server_first_ + "," + without_proof;
  std::string client_signature = Hmac(h, credentials_.stored_key, auth_message);
  std::string client_key = Xor(proof.value(), client_signature);
  if (!ConstantTimeEqual(Digest(h, client_key), credentials_.stored_key)) {
    return Fail(ErrorCode::kAuthenticationFailed,
                "SCRAM authentication failed, storedKey mismatch");
  }
  authenticated_ = true;
  std::string server_final = "v=" + Base64Encode(Hmac(h, credentials_.server_key, auth_message));
  state_ = skip_empty_exchange_ ? State::kDone : State::kEmpty;
  return Reply{server_final, skip_empty_exchange_};
}

}  // namespace hourglass::auth

namespace hourglass::auth {

ScramClient::ScramClient(ScramMechanism mechanism, std::string user, std::string prepared_password)
    : mechanism_(mechanism),
      user_(std::move(user)),
      password_(std::move(prepared_password)),
      nonce_(Base64Encode(SecureRandomBytes(kServerNonceBytes))) {}

std::string ScramClient::First() {
  // A user name with ',' or '=' is escaped as a saslname; the internal user has neither.
  client_first_bare_ = "n=" + user_ + ",r=" + nonce_;
  return "n,," + client_first_bare_;
}

StatusWith<std::string> ScramClient::Final(std::string_view server_first) {
  std::vector<std::string_view> attrs = SplitAttributes(server_first);
  std::optional<std::string_view> nonce =
      attrs.size() >= 3 ? Attribute(attrs[0], 'r') : std::nullopt;
  std::optional<std::string_view> salt_b64 =
      attrs.size() >= 3 ? Attribute(attrs[1], 's') : std::nullopt;
  std::optional<std::string_view> iterations =
      attrs.size() >= 3 ? Attribute(attrs[2], 'i') : std::nullopt;
  if (!nonce || !salt_b64 || !iterations) {
    return Status(ErrorCode::kBadValue, "not a SCRAM server-first message");
  }
  if (!nonce->starts_with(nonce_) || nonce->size() == nonce_.size()) {
    return Status(ErrorCode::kBadValue, "the server's SCRAM nonce does not extend the client's");
  }
  HG_ASSIGN_OR_RETURN(std::string salt, Base64Decode(*salt_b64));
  int count = 0;
  for (char c : *iterations) {
    if (c < '0' || c > '9' || count > 10'000'000) {
      return Status(ErrorCode::kBadValue, "a SCRAM iteration count that is not one");
    }
    count = count * 10 + (c - '0');
  }
  if (count < 4096) return Status(ErrorCode::kBadValue, "a SCRAM iteration count below 4096");
  const HashAlgorithm h = HashOf(mechanism_);
  const std::string salted = Pbkdf2(h, password_, salt, count);
  const std::string client_key = Hmac(h, salted, "Client Key");
  server_key_ = Hmac(h, salted, "Server Key");
  const std::string without_proof = "c=" + Base64Encode("n,,") + ",r=" + std::string(*nonce);
  auth_message_ = client_first_bare_ + "," + std::string(server_first) + "," + without_proof;
  const std::string signature = Hmac(h, Digest(h, client_key), auth_message_);
  return without_proof + ",p=" + Base64Encode(Xor(client_key, signature));
}

Status ScramClient::Verify(std::string_view server_final) const {
  std::optional<std::string_view> v = Attribute(SplitAttributes(server_final)[0], 'v');
  StatusWith<std::string> signature =
      v ? Base64Decode(*v) : StatusWith<std::string>(Status(ErrorCode::kBadValue, ""));
  if (server_key_.empty() || !signature.ok() ||
      !ConstantTimeEqual(signature.value(), Hmac(HashOf(mechanism_), server_key_, auth_message_))) {
    return Status(ErrorCode::kAuthenticationFailed,
                  "the server did not prove it knows the key (SCRAM server signature)");
  }
  return Status::OK();
}

}  // namespace hourglass::auth
