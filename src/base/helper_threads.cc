#include "base/helper_threads.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace hourglass {

struct HelperThreads::Impl {
  std::mutex mu;
  std::condition_variable wake;
  // One slot per thread: the work handed to it, empty while it is idle.
  std::vector<std::function<void()>> work;
  std::vector<bool> busy;

  void Loop(size_t slot) {
    std::unique_lock lk(mu);
    while (true) {
      wake.wait(lk, [&] { return static_cast<bool>(work[slot]); });
      std::function<void()> fn = std::move(work[slot]);
      work[slot] = nullptr;
      lk.unlock();
      fn();
      fn = nullptr;  // whatever fn holds is released before the slot is idle again
      lk.lock();
      busy[slot] = false;
    }
  }
};

HelperThreads& HelperThreads::Get() {
  static HelperThreads* threads = new HelperThreads();
  return *threads;
}

HelperThreads::HelperThreads() : impl_(new Impl) {
  const size_t n = std::max(1u, std::thread::hardware_concurrency()) - 1;
  const size_t count = std::max<size_t>(1, n);
  impl_->work.resize(count);
  impl_->busy.assign(count, false);
  for (size_t i = 0; i < count; ++i) {
    std::thread([impl = impl_, i] { impl->Loop(i); }).detach();
  }
}

bool HelperThreads::TryRun(std::function<void()> fn) {
  {
    std::lock_guard lk(impl_->mu);
    auto idle = std::find(impl_->busy.begin(), impl_->busy.end(), false);
    if (idle == impl_->busy.end()) return false;
    const size_t slot = static_cast<size_t>(idle - impl_->busy.begin());
    impl_->busy[slot] = true;
    impl_->work[slot] = std::move(fn);
  }
  impl_->wake.notify_all();
  return true;
}

int HelperThreads::size() const { return static_cast<int>(impl_->busy.size()); }

int HelperThreads::idle() const {
  std::lock_guard lk(impl_->mu);
  return static_cast<int>(std::count(impl_->busy.begin(), impl_->busy.end(), false));
}

}  // namespace hourglass
