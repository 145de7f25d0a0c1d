#include "repl/internal_auth.h"

#include "auth/key_file.h"

namespace hourglass::repl {

namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

// The SASL payload of a reply (BinData), or why there is none.
StatusWith<std::string> PayloadOf(const BsonObj& reply) {
  HG_RETURN_IF_ERROR(ReplyStatus(reply, "internal authentication refused: "));
  BsonElement payload = reply["payload"];
  if (payload.type() != BsonType::kBinData) {
    return Status(ErrorCode::kAuthenticationFailed, "a SASL reply without its payload");
  }
  return std::string(payload.BinData());
}

}  // namespace

Status ReplyStatus(const BsonObj& reply, std::string_view context) {
  if (reply["ok"].NumberDouble() == 1.0) return Status::OK();
  const int code = reply["code"].IsNumber() ? static_cast<int>(reply["code"].NumberLong()) : 8;
  const std::string msg =
      reply["errmsg"].type() == BsonType::kString ? std::string(reply["errmsg"].Str()) : "";
  return Status(static_cast<ErrorCode>(code), std::string(context) + msg);
}

InternalLogin::InternalLogin(const std::string& key)
    : client_(auth::ScramMechanism::kSha256, auth::kInternalUser, key) {}

BsonObj InternalLogin::Start() {
  step_ = 1;
  BsonBuilder b;
  b.AppendInt32("saslStart", 1);
  b.AppendString("mechanism", "SCRAM-SHA-256");
  b.AppendBinData("payload", 0, client_.First());
  b.AppendInt32("autoAuthorize", 1);
  size_t options = b.OpenObject("options");
  b.AppendBool("skipEmptyExchange", true);
  b.Close(options);
  b.AppendString("$db", auth::kInternalUserDb);
  return b.Obj();
}

StatusWith<std::optional<BsonObj>> InternalLogin::Next(const BsonObj& reply) {
  HG_ASSIGN_OR_RETURN(std::string payload, PayloadOf(reply));
  if (step_ == 1) {
    step_ = 2;
    HG_ASSIGN_OR_RETURN(std::string final_message, client_.Final(payload));
    BsonBuilder b;
    b.AppendInt32("saslContinue", 1);
    b.AppendElement(reply["conversationId"]);
    b.AppendBinData("payload", 0, final_message);
    b.AppendString("$db", auth::kInternalUserDb);
    return std::optional<BsonObj>(b.Obj());
  }
  if (step_ != 2 || !reply["done"].Truthy()) {
    return Status(ErrorCode::kAuthenticationFailed, "the SASL conversation did not end");
  }
  step_ = 3;
  HG_RETURN_IF_ERROR(client_.Verify(payload));
  return std::optional<BsonObj>();
}

}  // namespace hourglass::repl
