// configureFailPoint and waitForFailPoint (MongoDB's db/commands/fail_point_cmd.cpp): the
// test-only commands that switch the server's fail points (base/fail_point.h) on and off and wait
// for them to be entered. They exist only with --setParameter enableTestCommands=1, run against
// admin, and answer as MongoDB 7.0 does:
//   {configureFailPoint: "<name>", mode: "off" | "alwaysOn" | {times: n} | {skip: n} |
//    {activationProbability: p}, data: {...}}  ->  {count: <times entered before>, ok: 1}
//   {waitForFailPoint: "<name>", timesEntered: n, maxTimeMS: ms}  ->  {ok: 1} once the fail point
//    has been entered n times in all, MaxTimeMSExpired (50) if not within maxTimeMS
// An unknown fail point is FailPointSetFailed (266).
#include <charconv>
#include <climits>
#include <optional>
#include <string>

#include "base/fail_point.h"
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

constexpr std::string_view kWaitForFailPoint = "waitForFailPoint";

StatusWith<FailPoint*> FindFailPoint(std::string_view name) {
  FailPoint* fail_point = FailPointRegistry::Get().Find(name);
  if (fail_point == nullptr) {
    return Status(ErrorCode::kFailPointSetFailed, std::string(name) + " not found");
  }
  return fail_point;
}

// {times: n} or {skip: n}: n a whole number in [0, 2^31).
StatusWith<int64_t> ParseModeCount(const BsonObj& mode, std::string_view field) {
  HG_ASSIGN_OR_RETURN(int64_t n, bson::ExtractIntegerField(mode, field));
  if (n < 0) {
    return Status(ErrorCode::kBadValue,
                  "'" + std::string(field) + "' option to 'mode' must be positive");
  }
  if (n > INT_MAX) {
    return Status(ErrorCode::kBadValue,
                  "'" + std::string(field) + "' option to 'mode' is too large");
  }
  return n;
}

// The shortest text that reads back as `d` ("0.5", "2"), as MongoDB's fmt "{}" prints it.
std::string ShortestDouble(double d) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(d);
}

// MongoDB's FailPoint::parseBSON: the mode and data of a configureFailPoint command.
StatusWith<FailPointSettings> ParseFailPointSettings(const BsonObj& cmd) {
  FailPointSettings settings;
  BsonElement mode = cmd["mode"];
  if (mode.eoo()) {
    return Status(ErrorCode::kIllegalOperation,
                  "When setting a failpoint, you must supply a 'mode'");
  }
  if (mode.type() == BsonType::kString) {
    if (mode.Str() == "off") {
      settings.mode = FailPointMode::kOff;
    } else if (mode.Str() == "alwaysOn") {
      settings.mode = FailPointMode::kAlwaysOn;
    } else {
      return Status(ErrorCode::kBadValue, "unknown mode: " + std::string(mode.Str()));
    }
  } else if (mode.type() == BsonType::kObject) {
    BsonObj spec = mode.Obj();
    if (spec.HasField("times")) {
      settings.mode = FailPointMode::kTimes;
      HG_ASSIGN_OR_RETURN(settings.count, ParseModeCount(spec, "times"));
    } else if (spec.HasField("skip")) {
      settings.mode = FailPointMode::kSkip;
      HG_ASSIGN_OR_RETURN(settings.count, ParseModeCount(spec, "skip"));
    } else if (spec.HasField("activationProbability")) {
      BsonElement p = spec["activationProbability"];
      if (!p.IsNumber()) {
        return Status(ErrorCode::kTypeMismatch,
                      "the 'activationProbability' option to 'mode' must be a double between 0 "
                      "and 1");
      }
      double probability = p.NumberDouble();
      if (probability < 0 || probability > 1) {
        return Status(ErrorCode::kBadValue,
                      "activationProbability must be between 0.0 and 1.0; found " +
                          ShortestDouble(probability));
      }
      settings.mode = FailPointMode::kActivationProbability;
      settings.probability = probability;
    } else {
      return Status(ErrorCode::kBadValue,
                    "'mode' must be one of 'off', 'alwaysOn', '{times:n}', '{skip:n}' or "
                    "'{activationProbability:p}'");
    }
  } else {
    return Status(ErrorCode::kTypeMismatch, "'mode' must be a string or JSON object");
  }
  BsonElement data = cmd["data"];
  if (!data.eoo()) {
    if (!data.IsObjectOrArray()) {
      return Status(ErrorCode::kTypeMismatch, "the 'data' option must be a JSON object");
    }
    settings.data = std::string(data.Obj().bytes());
  }
  return settings;
}

// MongoDB's FailPoint::Mode numbers, as its "Set failpoint" log line shows them.
int ModeNumber(FailPointMode mode) {
  switch (mode) {
    case FailPointMode::kOff:
      return 0;
    case FailPointMode::kAlwaysOn:
      return 1;
    case FailPointMode::kActivationProbability:
      return 2;
    case FailPointMode::kTimes:
      return 3;
    case FailPointMode::kSkip:
      return 4;
  }
  return 0;
}

void LogSetFailPoint(const FailPoint& fail_point) {
  FailPointSettings settings = fail_point.Settings();
  BsonObj data = settings.data.empty() ? BsonObj() : BsonObj::CopyOf(settings.data);
  LOGW("CONTROL", 23829, "Set failpoint",
       "{\"failPointName\":" + JsonQuote(fail_point.name()) + ",\"failPoint\":{\"mode\":" +
           std::to_string(ModeNumber(settings.mode)) + ",\"data\":" + data.ToJson() +
           ",\"timesEntered\":" + std::to_string(fail_point.TimesEntered()) + "}}");
}

Status RunConfigureFailPoint(CommandContext&, const BsonObj& cmd, BsonBuilder& reply) {
  // MongoDB reads the name with BSONElement::str(), which is "" for any other type.
  BsonElement name = cmd.FirstElement();
  HG_ASSIGN_OR_RETURN(FailPoint * fail_point,
                      FindFailPoint(name.type() == BsonType::kString ? name.Str() : ""));
  HG_ASSIGN_OR_RETURN(FailPointSettings settings, ParseFailPointSettings(cmd));
  int64_t count = fail_point->SetMode(std::move(settings));
  LogSetFailPoint(*fail_point);
  // MongoDB's appendNumber: an int while the value is well inside int's range, else a long.
  if (count < INT_MAX / 2) {
    reply.AppendInt32("count", static_cast<int32_t>(count));
  } else {
    reply.AppendInt64("count", count);
  }
  return Status::OK();
}

Status RunWaitForFailPoint(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  auto start = FailPoint::Clock::now();
  BsonElement name = cmd.FirstElement();
  if (name.type() != BsonType::kString) return WrongType(kWaitForFailPoint, name, "string");
  HG_ASSIGN_OR_RETURN(std::optional<int64_t> times_entered,
                      GetInt64(kWaitForFailPoint, cmd, "timesEntered"));
  HG_ASSIGN_OR_RETURN(std::optional<int64_t> max_time_ms,
                      GetInt64(kWaitForFailPoint, cmd, "maxTimeMS"));
  if (!times_entered) return MissingField(kWaitForFailPoint, "timesEntered");
  if (!max_time_ms) return MissingField(kWaitForFailPoint, "maxTimeMS");
  if (*max_time_ms < 0 || *max_time_ms > INT_MAX) {
    return Status(ErrorCode::kBadValue, std::to_string(*max_time_ms) +
                                            " value for maxTimeMS is out of range [0, " +
                                            std::to_string(INT_MAX) + "]");
  }
  HG_ASSIGN_OR_RETURN(FailPoint * fail_point, FindFailPoint(name.Str()));
  // maxTimeMS 0 is no limit, as for every command.
  auto deadline = *max_time_ms == 0 ? FailPoint::Clock::time_point::max()
                                    : start + std::chrono::milliseconds(*max_time_ms);
  if (fail_point->WaitForTimesEntered(*times_entered, deadline,
                                      [&] { return ctx.service.shutting_down.load(); })) {
    return Status::OK();
  }
  if (ctx.service.shutting_down.load()) {
    return Status(ErrorCode::kInterruptedAtShutdown, "interrupted at shutdown");
  }
  return Status(ErrorCode::kMaxTimeMSExpired, "operation exceeded time limit");
}

}  // namespace

std::unique_ptr<Command> MakeConfigureFailPointCommand() {
  return std::make_unique<FnCommand>(
      "configureFailPoint",
      FnCommand::Options{
          .help = "modifies the settings of a fail point", .admin_only = true, .test_only = true},
      RunConfigureFailPoint);
}

std::unique_ptr<Command> MakeWaitForFailPointCommand() {
  return std::make_unique<FnCommand>(
      "waitForFailPoint",
      FnCommand::Options{.help = "wait for a fail point to be entered a certain number of times",
                         .admin_only = true,
                         .test_only = true},
      RunWaitForFailPoint);
}

}  // namespace hourglass::commands
