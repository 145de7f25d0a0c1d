#include "base/write_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

namespace hourglass {
namespace {

using namespace std::chrono_literals;

TEST(WriteGateTest, LockCountsAndUnlockWithoutLockIsRefused) {
  WriteGate gate;
  EXPECT_EQ(gate.LockCount(), 0);
  EXPECT_FALSE(gate.Unlock().has_value());
  EXPECT_EQ(gate.Lock(), 1);
  EXPECT_EQ(gate.Lock(), 2);
  EXPECT_EQ(gate.Unlock(), 1);
  EXPECT_EQ(gate.Unlock(), 0);
  EXPECT_FALSE(gate.Unlock().has_value());
}

TEST(WriteGateTest, BackgroundWritersSkipWhileLocked) {
  WriteGate gate;
  EXPECT_TRUE(gate.TryEnter().has_value());
  gate.Lock();
  EXPECT_FALSE(gate.TryEnter().has_value());
  gate.Unlock();
  EXPECT_TRUE(gate.TryEnter().has_value());
}

TEST(WriteGateTest, WritersWaitForTheLastUnlock) {
  WriteGate gate;
  gate.Lock();
  gate.Lock();
  std::atomic<bool> wrote{false};
  std::thread writer([&] {
    WriteGate::Token t = gate.Enter();
    wrote = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(wrote);
  gate.Unlock();
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(wrote);
  gate.Unlock();
  writer.join();
  EXPECT_TRUE(wrote);
}

TEST(WriteGateTest, LockWaitsForWritesThatStarted) {
  WriteGate gate;
  std::optional<WriteGate::Token> writing(gate.Enter());
  std::atomic<bool> locked{false};
  std::thread locker([&] {
    gate.Lock();
    locked = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(locked);
  // New writers are held back already, although the lock waits.
  EXPECT_FALSE(gate.TryEnter().has_value());
  writing.reset();
  locker.join();
  EXPECT_TRUE(locked);
  EXPECT_EQ(gate.LockCount(), 1);
}

TEST(WriteGateTest, ReleaseAllLetsWaitingWritersThrough) {
  WriteGate gate;
  gate.Lock();
  std::thread writer([&] { WriteGate::Token t = gate.Enter(); });
  std::this_thread::sleep_for(20ms);
  gate.ReleaseAll();
  writer.join();
  EXPECT_EQ(gate.LockCount(), 0);
}

}  // namespace
}  // namespace hourglass
