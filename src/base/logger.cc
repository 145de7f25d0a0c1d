#include "base/logger.h"

#include <chrono>
#include <cstdio>
#include <ctime>

#include "base/clock.h"

namespace hourglass {

namespace {
constexpr size_t kRingSize = 1024;

const char* SeverityCode(LogSeverity s) {
  switch (s) {
    case LogSeverity::kDebug:
      return "D1";
    case LogSeverity::kInfo:
      return "I";
    case LogSeverity::kWarning:
      return "W";
    case LogSeverity::kError:
      return "E";
    case LogSeverity::kFatal:
      return "F";
  }
  return "I";
}

thread_local std::string tls_ctx = "-";
}  // namespace

Logger& Logger::Get() {
  static Logger* logger = new Logger();  // never destroyed: used until the process exits
  return *logger;
}

bool Logger::SetLogPath(const std::string& path, bool append, std::string* error) {
  std::lock_guard<std::mutex> lk(mu_);
  if (out_ != nullptr) {
    std::fclose(out_);
    out_ = nullptr;
  }
  if (path.empty()) return true;
  out_ = std::fopen(path.c_str(), append ? "a" : "w");
  if (out_ == nullptr) {
    *error = "cannot open log file " + path;
    return false;
  }
  return true;
}

std::string JsonQuote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
  return out;
}

void Logger::Log(LogSeverity s, std::string_view component, int id, std::string_view ctx,
                 std::string_view msg, std::string_view attr_json) {
  std::string line = "{\"t\":{\"$date\":\"" + FormatIsoDate(NowMillis()) + "\"},\"s\":\"" +
                     SeverityCode(s) + "\",\"c\":" + JsonQuote(component) +
                     ",\"id\":" + std::to_string(id) + ",\"ctx\":" + JsonQuote(ctx) +
                     ",\"msg\":" + JsonQuote(msg);
  if (!attr_json.empty()) {
    line += ",\"attr\":";
    line += attr_json;
  }
  line += "}";
  std::lock_guard<std::mutex> lk(mu_);
  ++total_;
  ring_.push_back(line);
  if (ring_.size() > kRingSize) ring_.pop_front();
  if (quiet_ && s == LogSeverity::kInfo) return;
  FILE* f = out_ != nullptr ? out_ : stderr;
  std::fwrite(line.data(), 1, line.size(), f);
  std::fputc('\n', f);
  std::fflush(f);
}

std::vector<std::string> Logger::RecentLines() const {
  std::lock_guard<std::mutex> lk(mu_);
  return {ring_.begin(), ring_.end()};
}

int64_t Logger::TotalLinesWritten() const {
  std::lock_guard<std::mutex> lk(mu_);
  return total_;
}

std::vector<std::string> Logger::StartupWarnings() const {
  std::lock_guard<std::mutex> lk(mu_);
  return startup_warnings_;
}

void Logger::AddStartupWarning(std::string_view component, int id, std::string_view msg) {
  Log(LogSeverity::kWarning, component, id, "initandlisten", msg);
  std::lock_guard<std::mutex> lk(mu_);
  startup_warnings_.push_back(ring_.back());
}

void SetThreadLogContext(std::string ctx) { tls_ctx = std::move(ctx); }
const std::string& ThreadLogContext() { return tls_ctx; }

}  // namespace hourglass
