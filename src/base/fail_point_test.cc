#include "base/fail_point.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace hourglass {

// Defined as the server defines its fail points, outside any anonymous namespace.
HG_FAIL_POINT_DEFINE(failPointTestDefined);

namespace {

using std::chrono::milliseconds;

int CountActivations(FailPoint& fp, int checks) {
  int n = 0;
  for (int i = 0; i < checks; ++i) n += fp.ShouldFail() ? 1 : 0;
  return n;
}

TEST(FailPointTest, OffByDefault) {
  FailPoint fp("off");
  EXPECT_FALSE(fp.ShouldFail());
  EXPECT_FALSE(fp.Enter());
  EXPECT_EQ(fp.TimesEntered(), 0);
  EXPECT_EQ(fp.Settings().mode, FailPointMode::kOff);
}

TEST(FailPointTest, AlwaysOnActivatesEveryCheckAndCountsEach) {
  FailPoint fp("always");
  EXPECT_EQ(fp.SetMode(FailPointMode::kAlwaysOn), 0);
  EXPECT_EQ(CountActivations(fp, 5), 5);
  EXPECT_EQ(fp.TimesEntered(), 5);
  EXPECT_EQ(fp.SetMode(FailPointMode::kOff), 5);
  EXPECT_FALSE(fp.ShouldFail());
  EXPECT_EQ(fp.TimesEntered(), 5);
}

TEST(FailPointTest, TimesActivatesThatManyChecksThenTurnsOff) {
  FailPoint fp("times");
  fp.SetMode(FailPointMode::kTimes, 3);
  EXPECT_TRUE(fp.ShouldFail());
  EXPECT_EQ(fp.Settings().count, 2);
  EXPECT_EQ(CountActivations(fp, 10), 2);
  EXPECT_EQ(fp.TimesEntered(), 3);
  EXPECT_EQ(fp.Settings().mode, FailPointMode::kOff);
}

TEST(FailPointTest, TimesZeroStillActivatesOnceAsInMongoDB) {
  FailPoint fp("times0");
  fp.SetMode(FailPointMode::kTimes, 0);
  EXPECT_EQ(CountActivations(fp, 3), 1);
}

TEST(FailPointTest, SkipLetsChecksPassThenStaysOnAndCountsOnlyActivations) {
  FailPoint fp("skip");
  fp.SetMode(FailPointMode::kSkip, 2);
  EXPECT_FALSE(fp.ShouldFail());
  EXPECT_FALSE(fp.ShouldFail());
  EXPECT_EQ(fp.TimesEntered(), 0);
  EXPECT_EQ(CountActivations(fp, 4), 4);
  EXPECT_EQ(fp.TimesEntered(), 4);
  EXPECT_EQ(fp.Settings().mode, FailPointMode::kSkip);
}

TEST(FailPointTest, ActivationProbabilityZeroNeverOneAlways) {
  FailPoint fp("random");
  fp.SetMode(FailPointSettings{FailPointMode::kActivationProbability, 0, 0.0, {}});
  EXPECT_EQ(CountActivations(fp, 1000), 0);
  EXPECT_EQ(fp.TimesEntered(), 0);
  fp.SetMode(FailPointSettings{FailPointMode::kActivationProbability, 0, 1.0, {}});
  EXPECT_EQ(CountActivations(fp, 1000), 1000);
  EXPECT_EQ(fp.TimesEntered(), 1000);
  // A half chance: 10,000 draws land within ten standard deviations (50) of 5,000.
  fp.SetMode(FailPointSettings{FailPointMode::kActivationProbability, 0, 0.5, {}});
  int n = CountActivations(fp, 10000);
  EXPECT_GT(n, 4500);
  EXPECT_LT(n, 5500);
}

TEST(FailPointTest, SetModeAnswersTheEntriesSoFarAcrossConfigurations) {
  FailPoint fp("count");
  EXPECT_EQ(fp.SetMode(FailPointMode::kTimes, 2), 0);
  CountActivations(fp, 5);
  EXPECT_EQ(fp.SetMode(FailPointMode::kAlwaysOn), 2);
  CountActivations(fp, 3);
  EXPECT_EQ(fp.SetMode(FailPointMode::kTimes, 1), 5);
  EXPECT_EQ(fp.SetMode(FailPointMode::kOff), 5);
}

TEST(FailPointTest, DataReachesTheSiteAndOutlivesReconfiguration) {
  FailPoint fp("data");
  fp.SetMode(FailPointMode::kAlwaysOn, 0, std::string("\x05\0\0\0\0", 5));
  FailPoint::Entry entry = fp.Enter();
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry.data(), std::string("\x05\0\0\0\0", 5));
  fp.SetMode(FailPointMode::kAlwaysOn, 0, "other");
  EXPECT_EQ(entry.data().size(), 5u);  // the site's copy is unchanged
  EXPECT_EQ(fp.Enter().data(), "other");
  EXPECT_EQ(fp.Settings().data, "other");
  fp.SetMode(FailPointMode::kAlwaysOn);
  EXPECT_EQ(fp.Enter().data(), "");
}

TEST(FailPointTest, EnterIfWithAFalsePredicateNeitherActivatesNorCounts) {
  FailPoint fp("pred");
  fp.SetMode(FailPointMode::kTimes, 1, "insert");
  EXPECT_FALSE(fp.EnterIf([](const std::string& data) { return data == "find"; }));
  EXPECT_EQ(fp.TimesEntered(), 0);
  EXPECT_EQ(fp.Settings().count, 1);  // the time was not used up
  EXPECT_TRUE(fp.EnterIf([](const std::string& data) { return data == "insert"; }));
  EXPECT_EQ(fp.TimesEntered(), 1);
  EXPECT_FALSE(fp.EnterIf([](const std::string&) { return true; }));
}

TEST(FailPointTest, ExecuteRunsOnlyWhenActivated) {
  FailPoint fp("execute");
  std::string seen;
  fp.Execute([&](const std::string& data) { seen = "ran " + data; });
  EXPECT_EQ(seen, "");
  fp.SetMode(FailPointMode::kAlwaysOn, 0, "d");
  fp.ExecuteIf([&](const std::string& data) { seen = "ran " + data; },
               [](const std::string&) { return false; });
  EXPECT_EQ(seen, "");
  fp.Execute([&](const std::string& data) { seen = "ran " + data; });
  EXPECT_EQ(seen, "ran d");
}

TEST(FailPointTest, WaitForTimesEnteredReturnsAtOnceWhenAlreadyReached) {
  FailPoint fp("wait");
  EXPECT_TRUE(fp.WaitForTimesEntered(0, FailPoint::Clock::now()));
  fp.SetMode(FailPointMode::kAlwaysOn);
  fp.ShouldFail();
  EXPECT_TRUE(fp.WaitForTimesEntered(1, FailPoint::Clock::now()));
}

TEST(FailPointTest, WaitForTimesEnteredTimesOutAtItsDeadline) {
  FailPoint fp("timeout");
  fp.SetMode(FailPointMode::kAlwaysOn);
  auto start = FailPoint::Clock::now();
  EXPECT_FALSE(fp.WaitForTimesEntered(1, start + milliseconds(50)));
  EXPECT_GE(FailPoint::Clock::now() - start, milliseconds(50));
  // A deadline already past: one look, no wait.
  EXPECT_FALSE(fp.WaitForTimesEntered(1, start));
}

TEST(FailPointTest, WaitForTimesEnteredWakesWhenAnotherThreadEnters) {
  FailPoint fp("wake");
  fp.SetMode(FailPointMode::kAlwaysOn);
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(20));
    fp.ShouldFail();
    fp.ShouldFail();
  });
  EXPECT_TRUE(fp.WaitForTimesEntered(2, FailPoint::Clock::now() + std::chrono::seconds(30)));
  t.join();
}

TEST(FailPointTest, WaitForTimesEnteredStopsWhenAsked) {
  FailPoint fp("stop");
  std::atomic<bool> stop{false};
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(20));
    stop = true;
  });
  EXPECT_FALSE(
      fp.WaitForTimesEntered(1, FailPoint::Clock::time_point::max(), [&] { return stop.load(); }));
  t.join();
}

TEST(FailPointTest, PauseWhileSetBlocksUntilTurnedOffAndCountsOnce) {
  FailPoint fp("hang");
  EXPECT_TRUE(fp.PauseWhileSet());  // off: returns at once
  fp.SetMode(FailPointMode::kAlwaysOn);
  std::atomic<bool> paused_done{false};
  std::thread t([&] {
    fp.PauseWhileSet();
    paused_done = true;
  });
  ASSERT_TRUE(fp.WaitForTimesEntered(1, FailPoint::Clock::now() + std::chrono::seconds(30)));
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_FALSE(paused_done.load());
  fp.SetMode(FailPointMode::kOff);
  t.join();
  EXPECT_TRUE(paused_done.load());
  EXPECT_EQ(fp.TimesEntered(), 1);
}

TEST(FailPointTest, PauseWhileSetStopsWhenAsked) {
  FailPoint fp("hangStop");
  fp.SetMode(FailPointMode::kAlwaysOn);
  int looks = 0;
  EXPECT_FALSE(fp.PauseWhileSet([&] { return ++looks == 3; }));
  EXPECT_EQ(looks, 3);
}

TEST(FailPointTest, ConcurrentChecksUseUpTimesExactly) {
  FailPoint fp("concurrent");
  fp.SetMode(FailPointMode::kTimes, 100);
  std::atomic<int> activations{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] { activations += CountActivations(fp, 1000); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(activations.load(), 100);
  EXPECT_EQ(fp.TimesEntered(), 100);
}

TEST(FailPointTest, EnableBlockTurnsOnForItsScope) {
  FailPoint fp("block");
  {
    FailPointEnableBlock block(fp, "x");
    EXPECT_EQ(block.initial_times_entered(), 0);
    EXPECT_EQ(fp.Enter().data(), "x");
  }
  EXPECT_FALSE(fp.ShouldFail());
}

TEST(FailPointRegistryTest, DefinitionsRegisterByName) {
  FailPointRegistry& registry = FailPointRegistry::Get();
  EXPECT_EQ(registry.Find("failPointTestDefined"), &failPointTestDefined);
  EXPECT_EQ(failPointTestDefined.name(), "failPointTestDefined");
  EXPECT_NE(registry.Find("dummy"), nullptr);
  EXPECT_EQ(registry.Find("noSuchFailPoint"), nullptr);
  std::vector<FailPoint*> all = registry.All();
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1]->name(), all[i]->name());
}

TEST(FailPointRegistryTest, DisableAllTurnsEveryFailPointOff) {
  failPointTestDefined.SetMode(FailPointMode::kAlwaysOn);
  FailPointRegistry::Get().DisableAll();
  EXPECT_FALSE(failPointTestDefined.ShouldFail());
}

}  // namespace
}  // namespace hourglass
