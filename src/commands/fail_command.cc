#include "commands/fail_command.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "base/fail_point.h"
#include "base/logger.h"
#include "bson/field_check.h"
#include "commands/write_concern.h"

namespace hourglass::commands {

HG_FAIL_POINT_DEFINE(failCommand);

namespace {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

constexpr std::string_view kFailMessage = "Failing command via 'failCommand' failpoint";

// The fail point's data as a document (configureFailPoint stores a document's bytes, or none).
BsonObj DataOf(const FailPoint::Entry& entry) {
  return entry.data().empty() ? BsonObj() : BsonObj(entry.shared_data());
}
// The same, borrowed, inside a predicate.
BsonObj DataOf(const std::string& bytes) {
  return bytes.empty() ? BsonObj() : BsonObj(bytes.data());
}

// MongoDB's getStringField: the string, or "" for any other type.
std::string_view StringField(const BsonObj& data, std::string_view field) {
  BsonElement e = data[field];
  return e.type() == BsonType::kString ? e.Str() : std::string_view();
}

// MongoDB's bsonExtractBooleanField: only a bool true counts.
bool TrueField(const BsonObj& data, std::string_view field) {
  BsonElement e = data[field];
  return e.type() == BsonType::kBool && e.Bool();
}

std::string_view AppName(const ClientState& client) {
  BsonElement name = client.client_metadata.GetPath("application.name");
  return name.type() == BsonType::kString ? name.Str() : std::string_view();
}

// The namespace the command acts on, as MongoDB's invocation->ns() names it: "<db>.<collection>"
// for a command on a collection, "<db>" otherwise.
std::string CommandNamespace(const CommandContext& ctx, const Command& command,
                             const BsonObj& body) {
  BsonElement target = command.Name() == "getMore" ? body["collection"] : body.FirstElement();
  if (target.type() == BsonType::kString && !target.Str().empty()) {
    return ctx.db + "." + std::string(target.Str());
  }
  return ctx.db;
}

// MongoDB's shouldActivateFailCommandFailPoint: whether the fail point's data names this command
// on this connection.
bool AppliesTo(const BsonObj& data, const CommandContext& ctx, const Command& command,
               const BsonObj& body) {
  if (command.Name() == "configureFailPoint") return false;  // even when listed
  if (data.HasField("threadName") &&
      StringField(data, "threadName") != "conn" + std::to_string(ctx.client.connection_id)) {
    return false;
  }
  if (data.HasField("appName") && StringField(data, "appName") != AppName(ctx.client)) {
    return false;
  }
  if (data.HasField("namespace") &&
      StringField(data, "namespace") != CommandNamespace(ctx, command, body)) {
    return false;
  }
  if (data.HasField("failAllCommands")) return true;
  BsonElement names = data["failCommands"];
  if (!names.IsObjectOrArray()) return false;
  for (BsonElement name : names.Obj()) {
    if (name.type() != BsonType::kString) continue;
    if (name.Str() == command.Name()) return true;
    for (std::string_view alias : command.Aliases()) {
      if (name.Str() == alias) return true;
    }
  }
  return false;
}

// What the fail point's data asks of a command it applies to before it runs.
struct Actions {
  bool close_connection = false;
  bool block_connection = false;
  std::optional<int64_t> error_code;

  explicit Actions(const BsonObj& data)
      : close_connection(TrueField(data, "closeConnection")),
        block_connection(TrueField(data, "blockConnection")) {
    if (data.HasField("errorCode")) {
      StatusWith<int64_t> code = bson::ExtractIntegerField(data, "errorCode");
      if (code.ok()) error_code = code.value();
    }
  }
  bool any() const { return close_connection || block_connection || error_code.has_value(); }
};

// Sleeps for blockConnection, waking early at shutdown.
void Block(const CommandContext& ctx, int64_t millis) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(millis);
  while (!ctx.service.shutting_down.load()) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        deadline - now, std::chrono::milliseconds(10)));
  }
}

void TakeErrorLabels(const BsonObj& data, FailCommandOutcome& outcome) {
  BsonElement labels = data["errorLabels"];
  if (labels.type() == BsonType::kArray) outcome.error_labels = labels.Obj().Owned();
}

std::string CommandAttr(const Command& command) {
  return "\"command\":" + JsonQuote(command.Name());
}

}  // namespace

FailCommandOutcome CheckFailCommand(const CommandContext& ctx, const Command& command,
                                    const BsonObj& body) {
  FailCommandOutcome outcome;
  FailPoint::Entry entry = failCommand.EnterIf([&](const std::string& bytes) {
    BsonObj data = DataOf(bytes);
    return Actions(data).any() && AppliesTo(data, ctx, command, body);
  });
  if (!entry) return outcome;
  BsonObj data = DataOf(entry);
  Actions actions(data);
  TakeErrorLabels(data, outcome);
  if (actions.block_connection) {
    StatusWith<int64_t> millis = data.HasField("blockTimeMS")
                                     ? bson::ExtractIntegerField(data, "blockTimeMS")
                                     : StatusWith<int64_t>(ErrorCode::kNoSuchKey, "");
    if (!millis.ok()) {
      outcome.error = Status(ErrorCode::kInvalidOptions,
                             "must specify 'blockTimeMS' when 'blockConnection' is true");
      return outcome;
    }
    if (millis.value() < 0) {
      outcome.error = Status(ErrorCode::kInvalidOptions, "'blockTimeMS' must be non-negative");
      return outcome;
    }
    LOGI("COMMAND", 20432, "Blocking command via 'failCommand' failpoint",
         "{" + CommandAttr(command) + ",\"blockTime\":" + std::to_string(millis.value()) + "}");
    Block(ctx, millis.value());
    LOGI("COMMAND", 20433, "Unblocking command via 'failCommand' failpoint",
         "{" + CommandAttr(command) + "}");
  }
  if (actions.close_connection) {
    LOGI("COMMAND", 20431, "Failing command via 'failCommand' failpoint: closing connection",
         "{" + CommandAttr(command) + "}");
    outcome.close_connection = true;
    return outcome;
  }
  if (actions.error_code) {
    BsonElement extra = data["errorExtraInfo"];
    if (!extra.eoo() && extra.type() != BsonType::kObject) {
      outcome.error = Status(ErrorCode::kTypeMismatch,
                             "\"errorExtraInfo\" had the wrong type. Expected object, found " +
                                 std::string(bson::TypeName(extra.type())));
      return outcome;
    }
    // MongoDB keeps the code's low 32 bits (ErrorCodes::Error is an int).
    auto code = static_cast<ErrorCode>(static_cast<int32_t>(*actions.error_code));
    LOGI(
        "COMMAND", 20435, "Failing command via 'failCommand' failpoint",
        "{" + CommandAttr(command) + ",\"errorCode\":" + std::to_string(*actions.error_code) + "}");
    outcome.error = Status(code, std::string(kFailMessage),
                           extra.eoo() ? std::string() : std::string(extra.Obj().bytes()));
  }
  return outcome;
}

void CheckFailCommandWriteConcernError(const CommandContext& ctx, const Command& command,
                                       const BsonObj& body, bson::BsonBuilder& reply,
                                       FailCommandOutcome& outcome) {
  FailPoint::Entry entry = failCommand.EnterIf([&](const std::string& bytes) {
    BsonObj data = DataOf(bytes);
    return data.HasField("writeConcernError") && TakesWriteConcern(command, body) &&
           AppliesTo(data, ctx, command, body);
  });
  if (!entry) return;
  BsonObj data = DataOf(entry);
  reply.AppendElement(data["writeConcernError"]);
  outcome.write_concern_error = true;
  TakeErrorLabels(data, outcome);
}

}  // namespace hourglass::commands
