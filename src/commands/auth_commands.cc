// saslStart, saslContinue, authenticate and logout: SCRAM-SHA-1 and SCRAM-SHA-256 conversations
// (auth/scram.h) against the users of admin.system.users, with MongoDB's replies, codes and log
// lines. Every failure of a conversation answers the same AuthenticationFailed, so a reply never
// tells whether a user exists; the log says why.
#include "commands/auth_commands.h"

#include "auth/crypto.h"
#include "auth/scram.h"
#include "base/logger.h"
#include "commands/admin_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

Status AuthenticationFailed() {
  return Status(ErrorCode::kAuthenticationFailed, "Authentication failed.");
}

// A SASL payload: BinData of subtype 0, or a base64 string (and the reply answers in kind).
struct Payload {
  std::string bytes;
  bool as_string = false;
};

StatusWith<Payload> ParsePayload(std::string_view cmd_name, const BsonObj& cmd) {
  BsonElement e = cmd["payload"];
  if (e.eoo()) {
    return Status(ErrorCode::kLocation40414, "BSON field '" + std::string(cmd_name) +
                                                 ".payload' is missing but a required field");
  }
  if (e.type() == BsonType::kString) {
    StatusWith<std::string> bytes = auth::Base64Decode(e.Str());
    if (!bytes.ok()) return Status(ErrorCode::kBadValue, "Invalid base64 in SASL payload");
    return Payload{std::move(bytes).value(), true};
  }
  if (e.type() == BsonType::kBinData) {
    if (e.BinSubtype() != 0) {
      return Status(ErrorCode::kBadValue,
                    "Invalid SASLPayload subtype. Expected BinDataGeneral, got: " +
                        std::to_string(e.BinSubtype()));
    }
    return Payload{std::string(e.BinData()), false};
  }
  return Status(ErrorCode::kBadValue,
                "Invalid SASLPayload type. Expected Base64 or BinData, got: " +
                    std::string(bson::TypeName(e.type())));
}

void AppendPayload(BsonBuilder& reply, const std::string& bytes, bool as_string) {
  if (as_string) {
    reply.AppendString("payload", auth::Base64Encode(bytes));
  } else {
    reply.AppendBinData("payload", 0, bytes);
  }
}

std::string AuthAttr(const auth::ScramConversation& scram, bool speculative, const std::string& db,
                     const ClientState& client) {
  BsonBuilder attr;
  attr.AppendString("mechanism", auth::MechanismName(scram.mechanism()));
  attr.AppendBool("speculative", speculative);
  attr.AppendString("principalName", scram.user());
  attr.AppendString("authenticationDatabase", db);
  attr.AppendString("remote", client.remote);
  attr.AppendObject("extraInfo", BsonObj());
  if (!scram.failure_detail().empty()) attr.AppendString("error", scram.failure_detail());
  return attr.Obj().ToJson();
}

// A connection authenticates as one user per database, and on one database only, as MongoDB
// allows; logging in again as the same user is allowed.
Status CheckOneLogin(const ClientState& client, const auth::UserName& user) {
  for (const auth::UserName& other : client.auth.users()) {
    if (other == user) continue;
    if (other.db == user.db) {
      return Status(ErrorCode::kLocation5626701,
                    "Each client connection may only be authenticated once. Previously "
                    "authenticated as: " +
                        other.Display());
    }
    return Status(ErrorCode::kLocation5626702,
                  "Client has attempted to authenticate on multiple databases.Already "
                  "authenticated as: " +
                      other.Display());
  }
  return Status::OK();
}

// Runs one step of the client's conversation and appends {conversationId, done, payload}. On
// success of the whole conversation the user is logged in on the connection.
Status Step(CommandContext& ctx, const Payload& payload, BsonBuilder& reply) {
  auto& conversation = ctx.client.auth.conversation();
  auth::ScramConversation& scram = *conversation->scram;
  const std::string db = conversation->db;
  const bool speculative = conversation->speculative;
  auto lookup = [&](const std::string& user) -> StatusWith<std::optional<auth::ScramCredentials>> {
    conversation->generation = ctx.service.users->generation();
    HG_ASSIGN_OR_RETURN(conversation->user, ctx.service.users->Find({user, db}));
    const std::optional<auth::UserDocument>& found = conversation->user;
    if (!found) return std::optional<auth::ScramCredentials>();
    auto it = found->credentials.find(scram.mechanism());
    if (it == found->credentials.end()) return std::optional<auth::ScramCredentials>();
    return std::optional<auth::ScramCredentials>(it->second);
  };
  StatusWith<auth::ScramConversation::Reply> step = scram.Step(payload.bytes, lookup);
  if (!step.ok()) {
    if (scram.failure_detail().empty()) {
      LOGI("ACCESS", 20249, "Authentication failed",
           "{\"error\":" + JsonQuote(step.status().ToString()) + "}");
    } else {
      LOGI("ACCESS", 20249, "Authentication failed", AuthAttr(scram, speculative, db, ctx.client));
    }
    conversation.reset();
    return AuthenticationFailed();
  }
  if (scram.done() && scram.authenticated()) {
    // The user as the first step found it, with the generation read before: a change since then
    // is looked up again at the next command (AuthorizationSession::Refresh).
    std::optional<auth::UserDocument> user = std::move(conversation->user);
    const uint64_t generation = conversation->generation;
    if (!user) {
      conversation.reset();
      return AuthenticationFailed();
    }
    if (Status st = CheckOneLogin(ctx.client, user->name); !st.ok()) {
      conversation.reset();
      return st;
    }
    HG_RETURN_IF_ERROR(ctx.client.auth.Login(*user, generation, *ctx.service.users));
    LOGI("ACCESS", 20250, "Authentication succeeded", AuthAttr(scram, speculative, db, ctx.client));
    conversation.reset();
  }
  reply.AppendInt32("conversationId", 1);
  reply.AppendBool("done", step.value().done);
  AppendPayload(reply, step.value().payload, payload.as_string);
  return Status::OK();
}

// saslStart's body against authentication database `db`.
Status Start(CommandContext& ctx, const BsonObj& cmd, const std::string& db, bool speculative,
             BsonBuilder& reply) {
  HG_ASSIGN_OR_RETURN(std::optional<std::string> mechanism_name,
                      GetString("saslStart", cmd, "mechanism"));
  if (!mechanism_name) return MissingField("saslStart", "mechanism");
  std::optional<auth::ScramMechanism> mechanism = auth::ParseMechanism(*mechanism_name);
  if (!mechanism) {
    return Status(ErrorCode::kMechanismUnavailable, "Received authentication for mechanism " +
                                                        *mechanism_name + " which is not enabled");
  }
  if (db == "$external") {
    return Status(
        ErrorCode::kMechanismUnavailable,
        "Unsupported mechanism '" + *mechanism_name + "' on authentication database '" + db + "'");
  }
  HG_ASSIGN_OR_RETURN(Payload payload, ParsePayload("saslStart", cmd));
  if (ctx.service.users == nullptr) return AuthenticationFailed();  // a server without storage
  bool skip_empty_exchange = false;
  HG_ASSIGN_OR_RETURN(std::optional<BsonObj> options, GetObject("saslStart", cmd, "options"));
  if (options) {
    BsonElement skip = (*options)["skipEmptyExchange"];
    if (!skip.eoo()) {
      if (skip.type() != BsonType::kBool) {
        return Status(ErrorCode::kBadValue, "skipEmptyExchange must be boolean");
      }
      skip_empty_exchange = skip.Bool();
    }
  }
  // A new saslStart replaces a conversation in progress.
  auto& conversation = ctx.client.auth.conversation();
  conversation.emplace();
  conversation->id = 1;
  conversation->db = db;
  conversation->speculative = speculative;
  conversation->scram = std::make_unique<auth::ScramConversation>(*mechanism, skip_empty_exchange);
  return Step(ctx, payload, reply);
}

Status RunSaslStart(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"mechanism", "payload", "autoAuthorize", "options"}));
  return Start(ctx, cmd, ctx.db, false, reply);
}

Status RunSaslContinue(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"conversationId", "payload"}));
  auto& conversation = ctx.client.auth.conversation();
  if (!conversation) return Status(ErrorCode::kProtocolError, "No SASL session state found");
  BsonElement id = cmd["conversationId"];
  if (id.eoo()) return MissingField("saslContinue", "conversationId");
  if (!id.IsNumber() || id.NumberLong() != conversation->id || conversation->db != ctx.db) {
    conversation.reset();
    return Status(ErrorCode::kProtocolError, "sasl: Mismatched conversation id");
  }
  HG_ASSIGN_OR_RETURN(Payload payload, ParsePayload("saslContinue", cmd));
  return Step(ctx, payload, reply);
}

constexpr const char* kX509 = "MONGODB-X509";

// MONGODB-X509: the subject of the connection's verified client certificate is the user of
// $external it logs in as. Appends {dbname, user} as mongod answers. As mongod's, the reply says
// only "Authentication failed." unless the user is unknown or the database wrong; the log says
// why.
Status AuthenticateX509(CommandContext& ctx, const BsonObj& cmd, const std::string& db,
                        bool speculative, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"mechanism", "user", "db"}));
  HG_ASSIGN_OR_RETURN(std::optional<std::string> given, GetString("authenticate", cmd, "user"));
  const std::string& subject = ctx.client.peer_subject;
  // The log line of the attempt, as SCRAM's (AuthAttr).
  auto attributes = [&](const Status& st) {
    BsonBuilder attr;
    attr.AppendString("mechanism", kX509);
    attr.AppendBool("speculative", speculative);
    attr.AppendString("principalName", given ? *given : subject);
    attr.AppendString("authenticationDatabase", db);
    attr.AppendString("remote", ctx.client.remote);
    attr.AppendObject("extraInfo", BsonObj());
    if (!st.ok()) attr.AppendString("error", st.ToString());
    return attr.Obj().ToJson();
  };
  auto fail = [&](const Status& st) {
    LOGI("ACCESS", 20249, "Authentication failed", attributes(st));
    if (st.code() == ErrorCode::kUserNotFound || st.code() == ErrorCode::kProtocolError) return st;
    return AuthenticationFailed();
  };
  if (db != "$external") {
    return fail(Status(ErrorCode::kProtocolError,
                       "X.509 authentication must always use the $external database."));
  }
  if (subject.empty()) {
    return fail(
        Status(ErrorCode::kAuthenticationFailed, "No verified subject name available from client"));
  }
  if (given && *given != subject) {
    return fail(Status(ErrorCode::kAuthenticationFailed,
                       "There is no x.509 client certificate matching the user."));
  }
  const uint64_t generation = ctx.service.users->generation();
  HG_ASSIGN_OR_RETURN(std::optional<auth::UserDocument> user,
                      ctx.service.users->Find({subject, db}));
  if (!user) {
    return fail(Status(ErrorCode::kUserNotFound,
                       "Could not find user \"" + subject + "\" for db \"" + db + "\""));
  }
  HG_RETURN_IF_ERROR(CheckOneLogin(ctx.client, user->name));
  HG_RETURN_IF_ERROR(ctx.client.auth.Login(*user, generation, *ctx.service.users));
  LOGI("ACCESS", 20250, "Authentication succeeded", attributes(Status::OK()));
  reply.AppendString("dbname", db);
  reply.AppendString("user", subject);
  return Status::OK();
}

// The legacy authenticate command: MONGODB-X509 only, as in MongoDB 6.0 and later.
Status RunAuthenticate(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_ASSIGN_OR_RETURN(std::optional<std::string> mechanism,
                      GetString("authenticate", cmd, "mechanism"));
  if (!mechanism) return Status(ErrorCode::kBadValue, "Auth mechanism not specified");
  if (*mechanism != kX509) {
    LOGI("ACCESS", 20249, "Authentication failed",
         "{\"mechanism\":" + JsonQuote(*mechanism) +
             ",\"error\":\"BadValue: Unsupported mechanism: " + *mechanism + "\"}");
    return AuthenticationFailed();
  }
  return AuthenticateX509(ctx, cmd, ctx.db, false, reply);
}

Status RunLogout(CommandContext& ctx, const BsonObj&, BsonBuilder&) {
  if (ctx.service.users == nullptr) return Status::OK();  // no users: no one to log out
  return ctx.client.auth.Logout(ctx.db, *ctx.service.users);
}

}  // namespace

std::vector<std::string> AuthenticatedUserNames(const ClientState& client) {
  std::vector<std::string> out;
  for (const auth::UserName& u : client.auth.users()) out.push_back(u.Display());
  return out;
}

StatusWith<std::optional<BsonObj>> SpeculativeAuthenticate(CommandContext& ctx,
                                                           const BsonElement& spec) {
  if (spec.type() != BsonType::kObject || spec.Obj().IsEmpty()) {
    return Status(ErrorCode::kBadValue, "hello.speculativeAuthenticate must be a non-empty Object");
  }
  BsonObj cmd = spec.Obj();
  std::string_view name = cmd.FirstElement().FieldName();
  if (name != "saslStart" && name != "authenticate") {
    return Status(ErrorCode::kLocation51769,
                  "hello.speculativeAuthenticate unknown command: " + std::string(name));
  }
  BsonElement db = cmd["db"];
  BsonBuilder reply;
  // MongoDB drops any failure here: the client then authenticates as usual.
  Status st = Status::OK();
  if (name == "authenticate") {
    BsonElement mechanism = cmd["mechanism"];
    if (mechanism.type() != BsonType::kString || mechanism.Str() != kX509) {
      return std::optional<BsonObj>();
    }
    // Drivers leave the database out: X.509 users live in $external.
    const std::string auth_db =
        db.type() == BsonType::kString ? std::string(db.Str()) : std::string("$external");
    st = AuthenticateX509(ctx, cmd, auth_db, true, reply);
  } else {
    if (db.type() != BsonType::kString) return std::optional<BsonObj>();
    st = Start(ctx, cmd, std::string(db.Str()), true, reply);
  }
  if (!st.ok()) return std::optional<BsonObj>();
  return std::optional<BsonObj>(reply.Obj());
}

StatusWith<std::optional<BsonObj>> SupportedMechanisms(CommandContext& ctx,
                                                       std::string_view db_dot_user) {
  size_t dot = db_dot_user.find('.');
  if (dot == std::string_view::npos) {
    return Status(ErrorCode::kBadValue, "UserName must contain a '.' separated database.user pair");
  }
  auth::UserName name{std::string(db_dot_user.substr(dot + 1)),
                      std::string(db_dot_user.substr(0, dot))};
  if (ctx.service.users == nullptr) return std::optional<BsonObj>();  // a server without storage
  HG_ASSIGN_OR_RETURN(std::optional<auth::UserDocument> user, ctx.service.users->Find(name));
  if (!user) {
    LOGI("ACCESS", 20251, "Supported SASL mechanisms requested for unknown user",
         "{\"user\":" + JsonQuote(name.Display()) + "}");
    return std::optional<BsonObj>();
  }
  bson::BsonArrayBuilder mechanisms;
  for (const std::string& m : user->Mechanisms()) mechanisms.AppendString(m);
  return std::optional<BsonObj>(mechanisms.Obj());
}

std::unique_ptr<Command> MakeSaslStartCommand() {
  return std::make_unique<FnCommand>(
      "saslStart",
      FnCommand::Options{.help = "Begins a SASL authentication conversation",
                         .compressible = false},
      RunSaslStart);
}

std::unique_ptr<Command> MakeSaslContinueCommand() {
  return std::make_unique<FnCommand>(
      "saslContinue",
      FnCommand::Options{.help = "Continues a SASL authentication conversation",
                         .compressible = false},
      RunSaslContinue);
}

std::unique_ptr<Command> MakeAuthenticateCommand() {
  return std::make_unique<FnCommand>("authenticate",
                                     FnCommand::Options{.help = "internal", .compressible = false},
                                     RunAuthenticate);
}

std::unique_ptr<Command> MakeLogoutCommand() {
  return std::make_unique<FnCommand>("logout", FnCommand::Options{.help = "de-authenticate"},
                                     RunLogout);
}

}  // namespace hourglass::commands
