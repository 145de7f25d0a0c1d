#include "base/interrupt.h"

#include <time.h>

#include <utility>

#include "base/fail_point.h"

namespace hourglass {

HG_FAIL_POINT_DEFINE(maxTimeAlwaysTimeOut);

namespace {

thread_local std::shared_ptr<OperationControl> t_current;

// The monotonic clock steady_clock reads, at the kernel's tick: no more behind than a tick.
OperationControl::Clock::rep CoarseNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return std::chrono::duration_cast<OperationControl::Clock::duration>(
             std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec))
      .count();
}

}  // namespace

void OperationControl::Kill(ErrorCode code) {
  int expected = 0;
  killed_.compare_exchange_strong(expected, static_cast<int>(code), std::memory_order_relaxed);
}

void OperationControl::SetPlanSummary(std::string summary) {
  std::lock_guard lk(plan_mu_);
  if (plan_summary_.empty()) plan_summary_ = std::move(summary);
}

std::string OperationControl::plan_summary() const {
  std::lock_guard lk(plan_mu_);
  return plan_summary_;
}

Status OperationControl::Check() {
  if (const int code = killed_.load(std::memory_order_relaxed); code != 0) {
    const auto c = static_cast<ErrorCode>(code);
    if (c == ErrorCode::kMaxTimeMSExpired) {
      return Status(c, "operation exceeded time limit");
    }
    if (c == ErrorCode::kClientDisconnect) {
      return Status(c, "operation was interrupted because a client disconnected");
    }
    return Status(c, "operation was interrupted");
  }
  if (!has_deadline()) return Status::OK();
  if (Clock::now() >= deadline() || maxTimeAlwaysTimeOut.ShouldFail()) {
    // Every later check, on any of its threads, fails the same way.
    Kill(ErrorCode::kMaxTimeMSExpired);
    return Status(ErrorCode::kMaxTimeMSExpired, "operation exceeded time limit");
  }
  return Status::OK();
}

Status OperationControl::CheckCheaply() {
  if (killed()) return Check();
  const Clock::rep deadline = deadline_.load(std::memory_order_relaxed);
  if (deadline == Clock::time_point::max().time_since_epoch().count()) return Status::OK();
  if (CoarseNow() >= deadline) return Check();  // the precise clock decides
  if (maxTimeAlwaysTimeOut.ShouldFail()) {
    Kill(ErrorCode::kMaxTimeMSExpired);
    return Status(ErrorCode::kMaxTimeMSExpired, "operation exceeded time limit");
  }
  return Status::OK();
}

OperationControl::Scope::Scope(std::shared_ptr<OperationControl> op)
    : previous_(std::exchange(t_current, std::move(op))) {}

OperationControl::Scope::~Scope() { t_current = std::move(previous_); }

const std::shared_ptr<OperationControl>& OperationControl::Current() { return t_current; }

bool IsInterruption(ErrorCode code) {
  return code == ErrorCode::kInterrupted || code == ErrorCode::kInterruptedAtShutdown ||
         code == ErrorCode::kInterruptedDueToReplStateChange ||
         code == ErrorCode::kMaxTimeMSExpired || code == ErrorCode::kClientDisconnect;
}

Status CheckForInterrupt() {
  OperationControl* op = t_current.get();
  return op == nullptr ? Status::OK() : op->CheckCheaply();
}

}  // namespace hourglass
