// Structured logging in MongoDB's shape: one JSON object per line,
//   {"t":{"$date":"..."},"s":"I","c":"NETWORK","id":22943,"ctx":"conn3","msg":"...","attr":{...}}
// written to stderr or a log file, and kept in a bounded in-memory ring so the getLog command can
// return recent lines. Thread-safe; a call blocks only for the write of one line.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace hourglass {

enum class LogSeverity { kDebug, kInfo, kWarning, kError, kFatal };

class Logger {
 public:
  static Logger& Get();

  // Sends lines to `path` (appending if `append`, else truncating). Empty path = stderr.
  bool SetLogPath(const std::string& path, bool append, std::string* error);
  void SetQuiet(bool quiet) { quiet_ = quiet; }

  // `attr_json` is a JSON object text ("{...}") or empty; callers build it with JsonAttr helpers
  // or from a BSON document's relaxed Extended JSON.
  void Log(LogSeverity s, std::string_view component, int id, std::string_view ctx,
           std::string_view msg, std::string_view attr_json = {});

  // Recent lines (oldest first), at most `max` of them, and how many were ever written.
  std::vector<std::string> RecentLines() const;
  int64_t TotalLinesWritten() const;
  // Startup warnings, for getLog: "startupWarnings".
  std::vector<std::string> StartupWarnings() const;
  void AddStartupWarning(std::string_view component, int id, std::string_view msg);

 private:
  Logger() = default;
  mutable std::mutex mu_;
  FILE* out_ = nullptr;  // guarded by mu_; nullptr = stderr
  bool quiet_ = false;
  std::deque<std::string> ring_;  // guarded by mu_
  std::vector<std::string> startup_warnings_;
  int64_t total_ = 0;
};

// Escapes `s` as a JSON string literal, quotes included.
std::string JsonQuote(std::string_view s);

// The calling thread's log context ("conn12", "initandlisten", ...).
void SetThreadLogContext(std::string ctx);
const std::string& ThreadLogContext();

#define HG_LOG(sev, component, id, msg, attr) \
  ::hourglass::Logger::Get().Log(sev, component, id, ::hourglass::ThreadLogContext(), msg, attr)
#define LOGI(component, id, msg, attr) \
  HG_LOG(::hourglass::LogSeverity::kInfo, component, id, msg, attr)
#define LOGW(component, id, msg, attr) \
  HG_LOG(::hourglass::LogSeverity::kWarning, component, id, msg, attr)
#define LOGE(component, id, msg, attr) \
  HG_LOG(::hourglass::LogSeverity::kError, component, id, msg, attr)

}  // namespace hourglass
