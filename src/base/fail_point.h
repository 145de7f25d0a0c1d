// Fail points, as MongoDB has them (src/mongo/util/fail_point.h): named hooks placed in the server
// that a test switches on to make the code fail, hang or take a rare branch. A fail point is off
// until configured (the configureFailPoint command, or SetMode in-process); while off, checking it
// costs one relaxed atomic load. When on it activates by its mode — alwaysOn, {times: n},
// {skip: n} or {activationProbability: p} — and hands the code the data it was configured with:
// opaque bytes here (by convention the raw bytes of configureFailPoint's `data` BSON document,
// since base knows no BSON). It counts the checks that activated it, MongoDB's `timesEntered`.
//
// Define a fail point at namespace scope in the .cc file that uses it, under the name tests give
// configureFailPoint:
//   HG_FAIL_POINT_DEFINE(hangBeforeCheckpoint);
//   ...
//   hangBeforeCheckpoint.PauseWhileSet();  // blocks while the fail point is on
//   if (FailPoint::Entry fp = failBucketWrite.Enter()) return Status(..., "failBucketWrite");
// A definition creates the fail point in the process-wide FailPointRegistry during static
// initialization; fail points are never destroyed.
//
// Thread-safe: any thread may check, configure or wait on any fail point. Data handed to a site
// stays valid while the site holds its Entry, even if the fail point is reconfigured meanwhile.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hourglass {

enum class FailPointMode {
  kOff,
  kAlwaysOn,
  kTimes,                  // active for the next `count` checks, then off
  kSkip,                   // inactive for the next `count` checks, then active for good
  kActivationProbability,  // each check activates with probability `probability`
};

// How a fail point is configured.
struct FailPointSettings {
  FailPointMode mode = FailPointMode::kOff;
  // kTimes: activations left (0 still activates once, as MongoDB's {times: 0} does); kSkip:
  // checks left to let pass. Ignored by the other modes.
  int64_t count = 0;
  // kActivationProbability: in [0, 1]; 0 never activates, 1 always does.
  double probability = 0;
  // Opaque to the fail point; empty when none was given.
  std::string data;
};

class FailPoint {
 public:
  // How often PauseWhileSet and WaitForTimesEntered look again.
  static constexpr std::chrono::milliseconds kPollInterval{5};
  using Clock = std::chrono::steady_clock;
  // Decides, from the fail point's data, whether a check applies to this site (EnterIf).
  using Predicate = std::function<bool(const std::string& data)>;

  // The outcome of one check: true when it activated the fail point, and then its data.
  class Entry {
   public:
    Entry() = default;
    explicit operator bool() const { return data_ != nullptr; }
    // The fail point's data; only when *this is true.
    const std::string& data() const { return *data_; }
    // The same, shared: for wrapping without a copy (bson::BsonObj takes a shared buffer).
    const std::shared_ptr<const std::string>& shared_data() const { return data_; }

   private:
    friend class FailPoint;
    explicit Entry(std::shared_ptr<const std::string> data) : data_(std::move(data)) {}
    std::shared_ptr<const std::string> data_;
  };

  explicit FailPoint(std::string name) : name_(std::move(name)) {}
  FailPoint(const FailPoint&) = delete;
  FailPoint& operator=(const FailPoint&) = delete;

  const std::string& name() const { return name_; }

  // One check: activates the fail point or not, by its mode. An activation counts as an entry
  // (TimesEntered) and uses up one of {times: n}; a check {skip: n} lets pass uses up one skip.
  Entry Enter() {
    if (!active_.load(std::memory_order_relaxed)) return Entry();
    return Entry(SlowEnter(nullptr, /*count_entry=*/true));
  }
  bool ShouldFail() { return static_cast<bool>(Enter()); }

  // A check that only happens where pred(data) is true: where it is false the fail point neither
  // activates nor counts the check (MongoDB's executeIf/scopedIf). `pred` runs under the fail
  // point's lock: it must not use this fail point.
  template <typename Pred>
  Entry EnterIf(Pred&& pred) {
    if (!active_.load(std::memory_order_relaxed)) return Entry();
    Predicate p(std::forward<Pred>(pred));
    return Entry(SlowEnter(&p, /*count_entry=*/true));
  }
  // Runs f(data) when a check activates the fail point (outside its lock: f may block).
  template <typename F>
  void Execute(F&& f) {
    if (Entry e = Enter()) std::forward<F>(f)(e.data());
  }
  template <typename F, typename Pred>
  void ExecuteIf(F&& f, Pred&& pred) {
    if (Entry e = EnterIf(std::forward<Pred>(pred))) std::forward<F>(f)(e.data());
  }

  // Blocks while the fail point is on, looking again every kPollInterval: for "hang" fail points.
  // The first check counts as an entry; the later ones follow the mode ({times: n} runs out) but
  // are not counted, as in MongoDB. With `stop`, returns false as soon as stop() is true (e.g. at
  // shutdown), true once the fail point is off or did not activate.
  bool PauseWhileSet(const std::function<bool()>& stop = {});

  // Configures the fail point and returns the times it was entered before (the count
  // configureFailPoint answers). Entries are counted for the life of the process, across
  // configurations.
  int64_t SetMode(FailPointSettings settings);
  int64_t SetMode(FailPointMode mode, int64_t count = 0, std::string data = {}) {
    return SetMode(FailPointSettings{mode, count, 0, std::move(data)});
  }
  // The current configuration (count: what is left of it).
  FailPointSettings Settings() const;
  int64_t TimesEntered() const { return times_entered_.load(std::memory_order_acquire); }

  // Blocks until the fail point has been entered at least `n` times in all: true then; false at
  // `deadline` or, with `stop`, as soon as stop() is true.
  bool WaitForTimesEntered(int64_t n, Clock::time_point deadline,
                           const std::function<bool()>& stop = {}) const;

 private:
  // The slow path of a check, the fail point being on: nullptr when it does not activate.
  std::shared_ptr<const std::string> SlowEnter(const Predicate* pred, bool count_entry);

  const std::string name_;
  // Whether settings_.mode is not off; read without the lock by every check.
  std::atomic<bool> active_{false};
  std::atomic<int64_t> times_entered_{0};  // written under mu_

  mutable std::mutex mu_;
  mutable std::condition_variable entered_;  // notified (under mu_) on each entry
  FailPointSettings settings_;               // guarded by mu_; its data is in data_
  std::shared_ptr<const std::string> data_;  // guarded by mu_; never null
};

// Every fail point of the process, by name.
class FailPointRegistry {
 public:
  static FailPointRegistry& Get();
  // Creates the fail point `name` and returns it; it lives until the process exits. A name
  // defined twice is a programming error (aborts).
  FailPoint& Define(std::string name);
  // nullptr if no fail point has that name.
  FailPoint* Find(std::string_view name) const;
  // Every fail point, sorted by name.
  std::vector<FailPoint*> All() const;
  // Turns every fail point off (tests' cleanup).
  void DisableAll();

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<FailPoint>, std::less<>> fail_points_;  // guarded by mu_
};

// Turns a fail point on (alwaysOn, with `data`) for its own lifetime, then off: for unit tests.
class FailPointEnableBlock {
 public:
  explicit FailPointEnableBlock(FailPoint& fail_point, std::string data = {})
      : fail_point_(fail_point),
        initial_times_entered_(fail_point.SetMode(FailPointMode::kAlwaysOn, 0, std::move(data))) {}
  ~FailPointEnableBlock() { fail_point_.SetMode(FailPointMode::kOff); }
  FailPointEnableBlock(const FailPointEnableBlock&) = delete;
  FailPointEnableBlock& operator=(const FailPointEnableBlock&) = delete;

  // TimesEntered() when the block began.
  int64_t initial_times_entered() const { return initial_times_entered_; }

 private:
  FailPoint& fail_point_;
  const int64_t initial_times_entered_;
};

}  // namespace hourglass

// Defines the fail point `fp` (also its name for configureFailPoint) as a FailPoint& of that name
// in the process-wide registry. At namespace scope in a .cc file, once per name.
#define HG_FAIL_POINT_DEFINE(fp) \
  ::hourglass::FailPoint& fp = ::hourglass::FailPointRegistry::Get().Define(#fp)
// Declares, in another file, a fail point defined with HG_FAIL_POINT_DEFINE (outside an anonymous
// namespace).
#define HG_FAIL_POINT_DECLARE(fp) extern ::hourglass::FailPoint& fp
