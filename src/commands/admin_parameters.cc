// getParameter, setParameter and setFeatureCompatibilityVersion, over the ServerParameterRegistry
// plus two document-valued parameters MongoDB users expect (featureCompatibilityVersion and
// logComponentVerbosity) that the scalar registry cannot hold.
#include <algorithm>
#include <map>
#include <string>

#include "base/logger.h"
#include "base/server_parameters.h"
#include "commands/admin_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr std::string_view kFcvName = "featureCompatibilityVersion";
constexpr std::string_view kFcv = "7.0";
constexpr std::string_view kLogVerbosityName = "logComponentVerbosity";

ServerParameter* LogLevel() { return ServerParameterRegistry::Get().Find("logLevel"); }

void AppendValue(BsonBuilder& b, std::string_view name, const ParameterValue& v) {
  if (auto* x = std::get_if<bool>(&v))
    b.AppendBool(name, *x);
  else if (auto* i = std::get_if<int32_t>(&v))
    b.AppendInt32(name, *i);
  else if (auto* l = std::get_if<int64_t>(&v))
    b.AppendInt64(name, *l);
  else if (auto* d = std::get_if<double>(&v))
    b.AppendDouble(name, *d);
  else
    b.AppendString(name, std::get<std::string>(v));
}

StatusWith<ParameterValue> ValueFromElement(const BsonElement& e, const std::string& name) {
  switch (e.type()) {
    case BsonType::kBool:
      return ParameterValue(e.Bool());
    case BsonType::kInt32:
      return ParameterValue(e.Int32());
    case BsonType::kInt64:
      return ParameterValue(e.Int64());
    case BsonType::kDouble:
    case BsonType::kDecimal128:
      return ParameterValue(e.NumberDouble());
    case BsonType::kString:
      return ParameterValue(std::string(e.Str()));
    default:
      return Status(ErrorCode::kBadValue, "Invalid value for parameter " + name +
                                              ": value of type " +
                                              std::string(bson::TypeName(e.type())));
  }
}

// Log components as MongoDB names them; Hourglass logs through one level, so each reports -1
// ("inherit the default verbosity"), as an unconfigured mongod does.
constexpr std::string_view kLogComponents[] = {
    "accessControl", "assert",  "command",  "control",     "executor", "geo",
    "index",         "network", "query",    "replication", "sharding", "storage",
    "write",         "ftdc",    "tracking", "transaction"};

// A parameter whose value is a document, handled beside the scalar registry.
struct DocumentParameter {
  std::string_view name;
  bool runtime;
  std::function<void(BsonBuilder&, std::string_view)> append;
  std::function<Status(const BsonElement&)> set;
};

const std::vector<DocumentParameter>& DocumentParameters() {
  static const auto* params = new std::vector<DocumentParameter>{
      {kFcvName, false,
       [](BsonBuilder& b, std::string_view name) {
         size_t t = b.OpenObject(name);
         b.AppendString("version", kFcv);
         b.Close(t);
       },
       nullptr},
      {kLogVerbosityName, true,
       [](BsonBuilder& b, std::string_view name) {
         size_t t = b.OpenObject(name);
         b.AppendInt32("verbosity", static_cast<int32_t>(LogLevel()->GetInt()));
         for (auto c : kLogComponents) {
           size_t ct = b.OpenObject(c);
           b.AppendInt32("verbosity", -1);
           b.Close(ct);
         }
         b.Close(t);
       },
       [](const BsonElement& e) -> Status {
         if (e.type() != BsonType::kObject) {
           return Status(ErrorCode::kTypeMismatch, "log component verbosity is not a BSON object");
         }
         BsonElement v = e.Obj().GetField("verbosity");
         if (v.eoo()) return Status::OK();  // only the default level is adjustable
         if (!v.IsNumber()) {
           return Status(ErrorCode::kBadValue, "Expected verbosity to be a number");
         }
         // A negative default means "unset", which for the default component is level 0.
         return LogLevel()->Set(static_cast<int32_t>(std::max<int64_t>(0, v.NumberLong())));
       }},
  };
  return *params;
}

const DocumentParameter* FindDocumentParameter(std::string_view name) {
  for (const auto& p : DocumentParameters()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

// Every parameter, document-valued or scalar, sorted by name like MongoDB's parameter map.
struct AnyParameter {
  std::string name;
  const DocumentParameter* doc = nullptr;
  ServerParameter* scalar = nullptr;
  bool runtime() const { return doc ? doc->runtime : scalar->settable_at_runtime(); }
  bool startup() const { return doc ? false : scalar->settable_at_startup(); }
  void Append(BsonBuilder& b, std::string_view as) const {
    if (doc)
      doc->append(b, as);
    else
      AppendValue(b, as, scalar->Get());
  }
};

std::vector<AnyParameter> AllParameters() {
  std::vector<AnyParameter> all;
  for (const auto& p : DocumentParameters()) all.push_back({std::string(p.name), &p, nullptr});
  for (ServerParameter* p : ServerParameterRegistry::Get().All()) {
    if (FindDocumentParameter(p->name()) == nullptr) all.push_back({p->name(), nullptr, p});
  }
  std::sort(all.begin(), all.end(),
            [](const AnyParameter& a, const AnyParameter& b) { return a.name < b.name; });
  return all;
}

std::optional<AnyParameter> FindParameter(std::string_view name) {
  if (const auto* d = FindDocumentParameter(name))
    return AnyParameter{std::string(name), d, nullptr};
  if (auto* s = ServerParameterRegistry::Get().Find(name)) {
    return AnyParameter{std::string(name), nullptr, s};
  }
  return std::nullopt;
}

Status RunGetParameter(CommandContext&, const BsonObj& cmd, BsonBuilder& reply) {
  BsonElement first = cmd.FirstElement();
  bool all = false;
  bool show_details = false;
  std::string set_at;
  if (first.type() == BsonType::kObject) {
    BsonObj opts = first.Obj();
    for (BsonElement e : opts) {
      std::string_view f = e.FieldName();
      if (f != "allParameters" && f != "showDetails" && f != "setAt" &&
          f != "forIncrementalFeatureRollout") {
        return UnknownField("getParameter", f);
      }
    }
    HG_ASSIGN_OR_RETURN(all, GetBool("getParameter", opts, "allParameters", false));
    HG_ASSIGN_OR_RETURN(show_details, GetBool("getParameter", opts, "showDetails", false));
    HG_ASSIGN_OR_RETURN(auto s, GetString("getParameter", opts, "setAt"));
    if (s) {
      if (*s != "startup" && *s != "runtime") {
        return Status(ErrorCode::kBadValue, "Enumeration value '" + *s +
                                                "' for field 'getParameter.setAt' is not a valid "
                                                "value.");
      }
      set_at = *s;
    }
  } else if (first.type() == BsonType::kString && first.Str() == "*") {
    all = true;
  }

  bool found = false;
  for (const AnyParameter& p : AllParameters()) {
    if (!all && !cmd.HasField(p.name)) continue;
    if (set_at == "runtime" && !p.runtime()) continue;
    if (set_at == "startup" && !p.startup()) continue;
    if (show_details) {
      size_t t = reply.OpenObject(p.name);
      p.Append(reply, "value");
      reply.AppendBool("settableAtRuntime", p.runtime());
      reply.AppendBool("settableAtStartup", p.startup());
      reply.Close(t);
    } else {
      p.Append(reply, p.name);
    }
    found = true;
  }
  if (!found) return Status(ErrorCode::kInvalidOptions, "no option found to get");
  return Status::OK();
}

Status RunSetParameter(CommandContext&, const BsonObj& cmd, BsonBuilder& reply) {
  // Check every requested parameter before changing any, as MongoDB does.
  std::map<std::string, std::pair<AnyParameter, BsonElement>> to_set;
  bool first = true;
  for (BsonElement e : cmd) {
    if (first) {
      first = false;
      continue;
    }
    std::string name(e.FieldName());
    if (IsGenericArgument(name)) continue;
    auto p = FindParameter(name);
    if (!p) {
      return Status(ErrorCode::kInvalidOptions, "attempted to set unrecognized parameter [" + name +
                                                    "], use help:true to see options ");
    }
    if (!p->runtime()) {
      return Status(ErrorCode::kIllegalOperation,
                    "not allowed to change [" + name + "] at runtime");
    }
    if (to_set.count(name) != 0) {
      return Status(ErrorCode::kInvalidOptions, "attempted to set parameter [" + name +
                                                    "] twice in the same setParameter command");
    }
    to_set.emplace(name, std::make_pair(*p, e));
  }
  if (to_set.empty()) {
    return Status(ErrorCode::kInvalidOptions,
                  "no option found to set, use help:true to see options ");
  }
  bool reported_was = false;
  for (auto& [name, entry] : to_set) {
    auto& [param, value] = entry;
    // Only the first parameter's previous value is reported, under `was`.
    if (!reported_was) {
      param.Append(reply, "was");
      reported_was = true;
    }
    if (param.doc) {
      HG_RETURN_IF_ERROR(param.doc->set(value));
    } else {
      HG_ASSIGN_OR_RETURN(ParameterValue v, ValueFromElement(value, name));
      HG_RETURN_IF_ERROR(param.scalar->Set(v));
    }
    LOGI("COMMAND", 23435, "Successfully set parameter to new value",
         "{\"parameterName\":" + JsonQuote(name) + "}");
  }
  return Status::OK();
}

Status RunSetFcv(CommandContext&, const BsonObj& cmd, BsonBuilder&) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"confirm", "fromConfigServer", "dryRun"}));
  BsonElement v = cmd.FirstElement();
  if (v.type() != BsonType::kString) {
    return WrongType("setFeatureCompatibilityVersion", v, "string");
  }
  HG_ASSIGN_OR_RETURN(bool confirm,
                      GetBool("setFeatureCompatibilityVersion", cmd, "confirm", false));
  (void)confirm;  // already at the only version we support: nothing to confirm
  if (v.Str() == kFcv) return Status::OK();
  if (v.Str() == "6.0" || v.Str() == "5.0") {
    return Status(ErrorCode::kCommandNotSupported,
                  "Hourglass only supports featureCompatibilityVersion " + std::string(kFcv));
  }
  return Status(ErrorCode::kBadValue,
                "Enumeration value '" + std::string(v.Str()) +
                    "' for field 'setFeatureCompatibilityVersion' is not a valid value.");
}

}  // namespace

void RegisterBasicServerParameters() {
  auto& reg = ServerParameterRegistry::Get();
  RegisterEnableTestCommands();
  reg.Register("cursorTimeoutMillis", int64_t{600000}, true, true);
  reg.Register("logLevel", int32_t{0}, true, true, [](const ParameterValue& v) {
    if (std::get<int32_t>(v) < 0) return Status(ErrorCode::kBadValue, "Invalid value for logLevel");
    return Status::OK();
  });
  // The PBKDF2 iterations of the SCRAM credentials createUser and updateUser make.
  for (const char* name : {"scramIterationCount", "scramSHA256IterationCount"}) {
    int32_t default_count = std::string_view(name) == "scramIterationCount" ? 10000 : 15000;
    reg.Register(name, default_count, true, true, [name](const ParameterValue& v) {
      if (std::get<int32_t>(v) < 5000) {
        return Status(ErrorCode::kBadValue, std::string("Invalid value for parameter ") + name +
                                                ": " + std::to_string(std::get<int32_t>(v)) +
                                                " is not greater than or equal to "
                                                "5000");
      }
      return Status::OK();
    });
  }
  // The validator is the only hook that sees a new value, so it applies it to the logger.
  reg.Register("quiet", false, true, true, [](const ParameterValue& v) {
    Logger::Get().SetQuiet(std::get<bool>(v));
    return Status::OK();
  });
}

std::unique_ptr<Command> MakeGetParameterCommand() {
  return std::make_unique<FnCommand>(
      "getParameter",
      FnCommand::Options{.help = "get administrative option(s)\n"
                                 "{ getParameter:1, <param>:1 } or { getParameter:'*' }",
                         .admin_only = true},
      RunGetParameter);
}

std::unique_ptr<Command> MakeSetParameterCommand() {
  return std::make_unique<FnCommand>(
      "setParameter",
      FnCommand::Options{
          .help = "set administrative option(s)\n{ setParameter:1, <param>:<value> }",
          .admin_only = true},
      RunSetParameter);
}

std::unique_ptr<Command> MakeSetFeatureCompatibilityVersionCommand() {
  return std::make_unique<FnCommand>(
      "setFeatureCompatibilityVersion",
      FnCommand::Options{.help = "set the featureCompatibilityVersion (only \"7.0\" is supported)",
                         .admin_only = true},
      RunSetFcv);
}

}  // namespace hourglass::commands
