// Informational commands: ping, buildInfo, hostInfo, getCmdLineOpts, getLog, whatsmyuri,
// connectionStatus, listCommands and features.
#include <gnu/libc-version.h>
#include <openssl/opensslv.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "base/logger.h"
#include "commands/admin_commands.h"
#include "commands/auth_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

#if defined(__x86_64__)
constexpr std::string_view kTargetArch = "x86_64";
#elif defined(__aarch64__)
constexpr std::string_view kTargetArch = "aarch64";
#else
constexpr std::string_view kTargetArch = "unknown";
#endif

BsonObj StringArray(const std::vector<std::string>& items) {
  BsonArrayBuilder a;
  for (const auto& s : items) a.AppendString(s);
  return a.Obj();
}

Status RunPing(CommandContext&, const BsonObj&, BsonBuilder&) { return Status::OK(); }

Status RunBuildInfo(CommandContext&, const BsonObj&, BsonBuilder& reply) {
  reply.AppendString("version", kReportedMongoVersion);
  reply.AppendString("gitVersion", "hourglass-" + std::string(kHourglassVersion));
  reply.AppendString("hourglassVersion", kHourglassVersion);
  reply.AppendArray("modules", BsonObj());
  reply.AppendString("allocator", "system");
  reply.AppendString("javascriptEngine", "none");
  reply.AppendString("sysInfo", "deprecated");
  size_t va = reply.OpenArray("versionArray");
  for (int i = 0; i < 4; ++i) reply.AppendInt32(std::to_string(i), kReportedVersionArray[i]);
  reply.Close(va);
  // libssl is linked by the network layer, not here: report the headers we were built with.
  size_t ssl = reply.OpenObject("openssl");
  reply.AppendString("running", OPENSSL_VERSION_TEXT);
  reply.AppendString("compiled", OPENSSL_VERSION_TEXT);
  reply.Close(ssl);
  size_t env = reply.OpenObject("buildEnvironment");
  reply.AppendString("distmod", "");
  reply.AppendString("distarch", kTargetArch);
  reply.AppendString("cc", "gcc: " __VERSION__);
  reply.AppendString("ccflags", "");
  reply.AppendString("cxx", "g++: " __VERSION__);
  reply.AppendString("cxxflags", "-std=c++20");
  reply.AppendString("linkflags", "");
  reply.AppendString("target_arch", kTargetArch);
  reply.AppendString("target_os", "linux");
  reply.AppendString("cppdefines", "");
  reply.Close(env);
  reply.AppendInt32("bits", 64);
  reply.AppendBool("debug", false);
  reply.AppendInt32("maxBsonObjectSize", kMaxBsonObjectSize);
  size_t se = reply.OpenArray("storageEngines");
  reply.AppendString("0", "wiredTiger");
  reply.Close(se);
  return Status::OK();
}

std::string ReadFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The value of `key` in a KEY="value" file such as /etc/os-release.
std::string OsReleaseValue(std::string_view key) {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
        line[key.size()] == '=') {
      std::string v = line.substr(key.size() + 1);
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "";
}

// The first "<key> : value" line of /proc/cpuinfo.
std::string CpuInfoValue(std::string_view key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(' '));
    return v;
  }
  return "";
}

Status RunHostInfo(CommandContext&, const BsonObj&, BsonBuilder& reply) {
  struct utsname uts {};
  uname(&uts);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  long page_size = sysconf(_SC_PAGESIZE);
  long pages = sysconf(_SC_PHYS_PAGES);
  int64_t mem_mb = static_cast<int64_t>(pages) * page_size / (1024 * 1024);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);

  size_t sys = reply.OpenObject("system");
  reply.AppendDate("currentTime", NowMillis());
  reply.AppendString("hostname", host);
  reply.AppendInt32("cpuAddrSize", 64);
  reply.AppendInt64("memSizeMB", mem_mb);
  reply.AppendInt64("memLimitMB", mem_mb);
  reply.AppendInt32("numCores", static_cast<int32_t>(cores));
  reply.AppendString("cpuArch", uts.machine);
  reply.AppendBool("numaEnabled", false);
  reply.Close(sys);

  size_t os = reply.OpenObject("os");
  reply.AppendString("type", "Linux");
  std::string name = OsReleaseValue("PRETTY_NAME");
  reply.AppendString("name", name.empty() ? "Linux" : name);
  reply.AppendString("version", std::string("Kernel ") + uts.release);
  reply.Close(os);

  struct rlimit nofile {};
  getrlimit(RLIMIT_NOFILE, &nofile);
  size_t extra = reply.OpenObject("extra");
  reply.AppendString("versionString", ReadFirstLine("/proc/version"));
  reply.AppendString("libcVersion", gnu_get_libc_version());
  reply.AppendString("kernelVersion", uts.release);
  reply.AppendString("cpuFrequencyMHz", CpuInfoValue("cpu MHz"));
  reply.AppendString("cpuFeatures", CpuInfoValue("flags"));
  reply.AppendInt64("pageSize", page_size);
  reply.AppendInt32("numPages", static_cast<int32_t>(pages));
  reply.AppendInt32("maxOpenFiles",
                    static_cast<int32_t>(std::min<rlim_t>(nofile.rlim_cur, INT32_MAX)));
  reply.Close(extra);
  return Status::OK();
}

Status RunGetCmdLineOpts(CommandContext& ctx, const BsonObj&, BsonBuilder& reply) {
  reply.AppendArray("argv", StringArray(ctx.service.options.argv));
  reply.AppendObject("parsed", ctx.service.options.parsed);
  return Status::OK();
}

Status RunGetLog(CommandContext&, const BsonObj& cmd, BsonBuilder& reply) {
  BsonElement which = cmd.FirstElement();
  if (which.type() == BsonType::kNull || which.type() == BsonType::kUndefined) {
    return MissingField("getLog", "getLog");
  }
  if (which.type() != BsonType::kString) return WrongType("getLog", which, "string");
  std::string_view name = which.Str();
  if (name == "*") {
    reply.AppendArray("names", StringArray({"global", "startupWarnings"}));
    return Status::OK();
  }
  if (name == "global") {
    reply.AppendInt64("totalLinesWritten", Logger::Get().TotalLinesWritten());
    reply.AppendArray("log", StringArray(Logger::Get().RecentLines()));
    return Status::OK();
  }
  if (name == "startupWarnings") {
    auto lines = Logger::Get().StartupWarnings();
    reply.AppendInt64("totalLinesWritten", static_cast<int64_t>(lines.size()));
    reply.AppendArray("log", StringArray(lines));
    return Status::OK();
  }
  return Status(ErrorCode::kOperationFailed, "No log named '" + std::string(name) + "'");
}

Status RunWhatsMyUri(CommandContext& ctx, const BsonObj&, BsonBuilder& reply) {
  reply.AppendString("you", ctx.client.remote);
  return Status::OK();
}

Status RunConnectionStatus(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_ASSIGN_OR_RETURN(bool show_privileges,
                      GetBool("connectionStatus", cmd, "showPrivileges", false));
  if (ctx.service.users != nullptr) {
    HG_RETURN_IF_ERROR(ctx.client.auth.Refresh(*ctx.service.users));
  }
  BsonArrayBuilder users;
  for (const auth::UserName& u : ctx.client.auth.users()) {
    BsonBuilder one;
    one.AppendString("user", u.user);
    one.AppendString("db", u.db);
    users.AppendObject(one.Obj());
  }
  BsonArrayBuilder roles;
  for (const auth::RoleName& r : ctx.client.auth.Roles()) roles.AppendObject(r.ToBson());
  size_t auth = reply.OpenObject("authInfo");
  reply.AppendArray("authenticatedUsers", users.Obj());
  reply.AppendArray("authenticatedUserRoles", roles.Obj());
  if (show_privileges) {
    reply.AppendArray("authenticatedUserPrivileges", ctx.client.auth.privileges().ToBsonArray());
  }
  reply.Close(auth);
  return Status::OK();
}

Status RunListCommands(CommandContext&, const BsonObj&, BsonBuilder& reply) {
  // MongoDB lists each alias under its own name, all sorted.
  std::vector<std::pair<std::string_view, const Command*>> entries;
  for (const Command* c : CommandRegistry::Get().All()) {
    if (!CommandEnabled(*c)) continue;
    entries.emplace_back(c->Name(), c);
    for (auto a : c->Aliases()) entries.emplace_back(a, c);
  }
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t all = reply.OpenObject("commands");
  for (const auto& [name, c] : entries) {
    size_t one = reply.OpenObject(name);
    reply.AppendString("help", c->Help());
    reply.AppendBool("requiresAuth", CommandRequiresAuth(c->Name()));
    reply.AppendBool("secondaryOk", true);
    reply.AppendBool("adminOnly", c->AdminOnly());
    reply.AppendArray("apiVersions", BsonObj());
    reply.AppendArray("deprecatedApiVersions", BsonObj());
    reply.Close(one);
  }
  reply.Close(all);
  return Status::OK();
}

Status RunFeatures(CommandContext&, const BsonObj&, BsonBuilder&) { return Status::OK(); }

}  // namespace

std::unique_ptr<Command> MakePingCommand() {
  return std::make_unique<FnCommand>(
      "ping",
      FnCommand::Options{.help = "a way to check that the server is alive",
                         .allows_after_cluster_time = false},
      RunPing);
}

std::unique_ptr<Command> MakeBuildInfoCommand() {
  return std::make_unique<FnCommand>(
      "buildInfo",
      FnCommand::Options{.aliases = {"buildinfo"}, .help = "get version #, etc.\n{ buildinfo:1 }"},
      RunBuildInfo);
}

std::unique_ptr<Command> MakeHostInfoCommand() {
  return std::make_unique<FnCommand>(
      "hostInfo", FnCommand::Options{.help = "returns information about the host"}, RunHostInfo);
}

std::unique_ptr<Command> MakeGetCmdLineOptsCommand() {
  return std::make_unique<FnCommand>("getCmdLineOpts",
                                     FnCommand::Options{.help = "get argv", .admin_only = true},
                                     RunGetCmdLineOpts);
}

std::unique_ptr<Command> MakeGetLogCommand() {
  return std::make_unique<FnCommand>(
      "getLog",
      FnCommand::Options{.help = "{ getLog : '*' }  OR { getLog : 'global' }", .admin_only = true},
      RunGetLog);
}

std::unique_ptr<Command> MakeWhatsMyUriCommand() {
  return std::make_unique<FnCommand>("whatsmyuri", FnCommand::Options{.help = "{whatsmyuri:1}"},
                                     RunWhatsMyUri);
}

std::unique_ptr<Command> MakeConnectionStatusCommand() {
  return std::make_unique<FnCommand>(
      "connectionStatus",
      FnCommand::Options{
          .help =
              "Returns connection-specific information such as logged-in users and their roles"},
      RunConnectionStatus);
}

std::unique_ptr<Command> MakeListCommandsCommand() {
  return std::make_unique<FnCommand>(
      "listCommands", FnCommand::Options{.help = "get a list of all db commands"}, RunListCommands);
}

std::unique_ptr<Command> MakeFeaturesCommand() {
  return std::make_unique<FnCommand>(
      "features", FnCommand::Options{.help = "return build level feature settings"}, RunFeatures);
}

}  // namespace hourglass::commands
