#include "storage/wiredtiger_error.h"

#include <wiredtiger.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "storage/write_conflict.h"

namespace hourglass::storage {
namespace internal {

Status WtStatus(int ret, std::string_view context) {
  if (ret == 0) return Status::OK();
  const char* text = wiredtiger_strerror(ret);
  std::string reason(context);
  reason += ": ";
  reason += text ? text : "unknown WiredTiger error";
  switch (ret) {
    case WT_ROLLBACK:
    case WT_PREPARE_CONFLICT:
      // The transaction lost a race (or was chosen to free cache); it must be rolled back and
      // retried from a fresh snapshot.
      return Status(ErrorCode::kWriteConflict, "WriteConflict during " + reason);
    case WT_DUPLICATE_KEY:
      return Status(ErrorCode::kDuplicateKey, reason);
    case ENOSPC:
      return Status(ErrorCode::kOutOfDiskSpace, reason);
    case WT_PANIC:
      // WiredTiger cannot continue after a panic and every later call would fail; stop now
      // rather than let the server acknowledge writes that can no longer be made durable.
      LogStorage("F", "WiredTiger panic", reason);
      std::abort();
    default:
      return Status(ErrorCode::kInternalError, reason);
  }
}

namespace {
void AppendJsonEscaped(std::string_view in, std::string* out) {
  for (char ch : in) {
    unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out->push_back('\\');
      out->push_back(ch);
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", u);
      out->append(buf);
    } else {
      out->push_back(ch);
    }
  }
}
}  // namespace

void LogStorage(std::string_view severity, std::string_view msg, std::string_view detail) {
  std::string line = "{\"s\":\"";
  AppendJsonEscaped(severity, &line);
  line += "\",\"c\":\"STORAGE\",\"msg\":\"";
  AppendJsonEscaped(msg, &line);
  line += "\"";
  if (!detail.empty()) {
    line += ",\"attr\":{\"detail\":\"";
    AppendJsonEscaped(detail, &line);
    line += "\"}";
  }
  line += "}\n";
  // One write call per line so concurrent lines do not interleave.
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

bool IsWtNotFound(int ret) { return ret == WT_NOTFOUND; }
bool IsWtBusy(int ret) { return ret == EBUSY; }

}  // namespace internal

Status RetryOnWriteConflict(const std::function<Status()>& fn, int max_attempts) {
  Status status = Status::OK();
  for (int attempt = 1;; ++attempt) {
    status = fn();
    if (status.code() != ErrorCode::kWriteConflict || attempt >= max_attempts) return status;
    // The first few retries only yield: most conflicts clear as soon as the winner commits.
    if (attempt <= 3) {
      std::this_thread::yield();
    } else {
      auto delay = std::chrono::milliseconds(std::min(attempt - 3, 100));
      std::this_thread::sleep_for(delay);
    }
  }
}

}  // namespace hourglass::storage
