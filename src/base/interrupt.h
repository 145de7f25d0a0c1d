// Interruption of a running operation: killOp's kill and maxTimeMS's deadline. Each command runs
// with its OperationControl current on its thread (OperationControl::Scope; a helper thread that
// works for the operation makes it current too), and the loops that may run long — scans, the
// read-ahead of column blocks, fail points that hang — ask CheckForInterrupt(). A check costs a
// relaxed atomic load, and when the operation has a deadline a read of the coarse monotonic clock
// (CLOCK_MONOTONIC_COARSE: a few nanoseconds, a few milliseconds behind); placed once per
// document or bucket, a scan stops within milliseconds of its deadline or kill, however long
// each document takes downstream.
//
// The fail point maxTimeAlwaysTimeOut (MongoDB's) makes every check of an operation with a
// deadline fail with MaxTimeMSExpired, for tests.
//
// Thread-safety: Kill and SetDeadline may come from any thread; Check from any of the
// operation's threads.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"

namespace hourglass {

class OperationControl {
 public:
  using Clock = std::chrono::steady_clock;

  // Sets the deadline (maxTimeMS); Clock::time_point::max() for none.
  void SetDeadline(Clock::time_point deadline) {
    deadline_.store(deadline.time_since_epoch().count(), std::memory_order_relaxed);
  }
  Clock::time_point deadline() const {
    return Clock::time_point(Clock::duration(deadline_.load(std::memory_order_relaxed)));
  }
  bool has_deadline() const { return deadline() != Clock::time_point::max(); }

  // Marks the operation stopped with `code` (Interrupted for killOp): its next check fails. The
  // first kill's code stays.
  void Kill(ErrorCode code);
  bool killed() const { return killed_.load(std::memory_order_relaxed) != 0; }

  // OK, or why the operation must stop: Interrupted (11601) after a kill, MaxTimeMSExpired (50)
  // past the deadline (by the precise clock; CheckForInterrupt reads the coarse one first).
  Status Check();

  // Makes `op` the current thread's operation for the scope (nested scopes restore the outer).
  class Scope {
   public:
    explicit Scope(std::shared_ptr<OperationControl> op);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    std::shared_ptr<OperationControl> previous_;
  };
  // The current thread's operation; null when none.
  static const std::shared_ptr<OperationControl>& Current();

  // The plan the operation reads with, as currentOp's planSummary shows it ("IXSCAN { a: 1 }").
  // The first one set stays: an aggregate's own read, not the reads of its $lookup.
  void SetPlanSummary(std::string summary);
  std::string plan_summary() const;

 private:
  friend Status CheckForInterrupt();
  // Check, after a look at the coarse clock.
  Status CheckCheaply();

  std::atomic<int> killed_{0};  // the ErrorCode, 0 while running
  std::atomic<Clock::rep> deadline_{Clock::time_point::max().time_since_epoch().count()};
  mutable std::mutex plan_mu_;
  std::string plan_summary_;  // guarded by plan_mu_
};

// The current thread's operation's Check, cheaply; OK when the thread runs no operation.
Status CheckForInterrupt();

// Whether `code` says an operation was stopped (killed, out of time, shut down): such an error
// fails a whole write command, as in MongoDB, rather than one of its statements.
bool IsInterruption(ErrorCode code);

}  // namespace hourglass
