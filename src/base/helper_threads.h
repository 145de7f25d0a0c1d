// A few threads kept for the work an operation hands off to run beside it (a scan that reads
// and decodes the next blocks while the operation folds the last ones). There are as many as
// the machine has cores beyond one, at least one, and an operation only gets one that is idle:
// on a busy server the operations themselves already use every core, and a hand-off that
// waited for a thread would only add latency.
//
// Thread-safety: every method is thread-safe. The threads live as long as the process.
#pragma once

#include <functional>

namespace hourglass {

class HelperThreads {
 public:
  static HelperThreads& Get();

  // Starts fn on an idle helper thread and returns true; returns false at once, leaving fn
  // unrun, when every helper is busy. fn must not throw.
  bool TryRun(std::function<void()> fn);

  // The number of helper threads, and of those idle now (for tests and diagnostics).
  int size() const;
  int idle() const;

 private:
  HelperThreads();
  struct Impl;
  Impl* impl_;  // never freed: detached threads use it until the process exits
};

}  // namespace hourglass
