#include "base/fail_point.h"

#include <algorithm>
#include <random>
#include <thread>

#include "base/status.h"

namespace hourglass {

namespace {

// A fail point that guards no code: tests of configureFailPoint and waitForFailPoint configure
// and wait on it, as MongoDB's jstests do on its `dummy`.
HG_FAIL_POINT_DEFINE(dummy);

// Each thread draws activations of {activationProbability: p} from its own generator.
double NextUniform() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(generator);
}

}  // namespace

std::shared_ptr<const std::string> FailPoint::SlowEnter(const Predicate* pred, bool count_entry) {
  std::lock_guard<std::mutex> lk(mu_);
  if (settings_.mode == FailPointMode::kOff) return nullptr;
  if (pred != nullptr && !(*pred)(*data_)) return nullptr;
  bool activate = false;
  switch (settings_.mode) {
    case FailPointMode::kOff:
      break;
    case FailPointMode::kAlwaysOn:
      activate = true;
      break;
    case FailPointMode::kTimes:
      activate = true;
      if (--settings_.count <= 0) {
        settings_.mode = FailPointMode::kOff;
        active_.store(false, std::memory_order_relaxed);
      }
      break;
    case FailPointMode::kSkip:
      if (settings_.count > 0) {
        --settings_.count;
      } else {
        activate = true;
      }
      break;
    case FailPointMode::kActivationProbability:
      activate = NextUniform() < settings_.probability;
      break;
  }
  if (!activate) return nullptr;
  if (count_entry) {
    times_entered_.fetch_add(1, std::memory_order_release);
    entered_.notify_all();
  }
  return data_;
}

bool FailPoint::PauseWhileSet(const std::function<bool()>& stop) {
  if (!Enter()) return true;
  while (true) {
    if (stop && stop()) return false;
    std::this_thread::sleep_for(kPollInterval);
    if (!active_.load(std::memory_order_relaxed) ||
        SlowEnter(nullptr, /*count_entry=*/false) == nullptr) {
      return true;
    }
  }
}

int64_t FailPoint::SetMode(FailPointSettings settings) {
  std::lock_guard<std::mutex> lk(mu_);
  data_ = std::make_shared<const std::string>(std::move(settings.data));
  settings.data.clear();
  settings_ = std::move(settings);
  active_.store(settings_.mode != FailPointMode::kOff, std::memory_order_relaxed);
  return times_entered_.load(std::memory_order_acquire);
}

FailPointSettings FailPoint::Settings() const {
  std::lock_guard<std::mutex> lk(mu_);
  FailPointSettings s = settings_;
  if (data_) s.data = *data_;
  return s;
}

bool FailPoint::WaitForTimesEntered(int64_t n, Clock::time_point deadline,
                                    const std::function<bool()>& stop) const {
  std::unique_lock<std::mutex> lk(mu_);
  while (times_entered_.load(std::memory_order_acquire) < n) {
    if (stop && stop()) return false;
    Clock::time_point now = Clock::now();
    if (now >= deadline) return false;
    // Wakes on every entry, and at least every kPollInterval to ask `stop` again.
    entered_.wait_until(lk, std::min(deadline, now + kPollInterval));
  }
  return true;
}

FailPointRegistry& FailPointRegistry::Get() {
  static FailPointRegistry* registry = new FailPointRegistry();
  return *registry;
}

FailPoint& FailPointRegistry::Define(std::string name) {
  std::lock_guard<std::mutex> lk(mu_);
  auto fail_point = std::make_unique<FailPoint>(name);
  auto [it, inserted] = fail_points_.emplace(std::move(name), std::move(fail_point));
  invariant(inserted);
  return *it->second;
}

FailPoint* FailPointRegistry::Find(std::string_view name) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = fail_points_.find(name);
  return it == fail_points_.end() ? nullptr : it->second.get();
}

std::vector<FailPoint*> FailPointRegistry::All() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<FailPoint*> all;
  for (const auto& [name, fail_point] : fail_points_) all.push_back(fail_point.get());
  return all;
}

void FailPointRegistry::DisableAll() {
  for (FailPoint* fail_point : All()) fail_point->SetMode(FailPointMode::kOff);
}

}  // namespace hourglass
