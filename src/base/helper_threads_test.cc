#include "base/helper_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace hourglass {
namespace {

TEST(HelperThreadsTest, RunsWorkOnAnotherThreadAndRefusesWhenAllAreBusy) {
  HelperThreads& helpers = HelperThreads::Get();
  ASSERT_GE(helpers.size(), 1);
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  bool release = false;
  std::vector<std::thread::id> ids;
  // Occupy every helper.
  for (int i = 0; i < helpers.size(); ++i) {
    ASSERT_TRUE(helpers.TryRun([&] {
      std::unique_lock lk(mu);
      ids.push_back(std::this_thread::get_id());
      ++started;
      cv.notify_all();
      cv.wait(lk, [&] { return release; });
    }));
  }
  {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return started == helpers.size(); });
  }
  for (std::thread::id id : ids) EXPECT_NE(id, std::this_thread::get_id());
  bool ran = false;
  EXPECT_FALSE(helpers.TryRun([&] { ran = true; }));
  {
    std::lock_guard lk(mu);
    release = true;
  }
  cv.notify_all();
  // Once a helper is idle again it takes new work.
  std::atomic<bool> done{false};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!helpers.TryRun([&] { done = true; })) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  while (!done) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace hourglass
