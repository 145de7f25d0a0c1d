#include "base/interrupt.h"

#include <gtest/gtest.h>

#include <thread>

#include "base/fail_point.h"

namespace hourglass {
namespace {

using Clock = OperationControl::Clock;

TEST(InterruptTest, NoOperationIsNeverInterrupted) {
  EXPECT_EQ(OperationControl::Current(), nullptr);
  EXPECT_TRUE(CheckForInterrupt().ok());
}

TEST(InterruptTest, AKillStopsTheOperationOnEveryThreadWithTheFirstCode) {
  auto op = std::make_shared<OperationControl>();
  OperationControl::Scope scope(op);
  EXPECT_EQ(OperationControl::Current(), op);
  EXPECT_TRUE(CheckForInterrupt().ok());
  op->Kill(ErrorCode::kInterrupted);
  op->Kill(ErrorCode::kMaxTimeMSExpired);  // the first kill's code stays
  EXPECT_EQ(CheckForInterrupt().code(), ErrorCode::kInterrupted);
  EXPECT_EQ(op->Check().reason(), "operation was interrupted");
  Status helper = Status::OK();
  std::thread([&] {
    EXPECT_TRUE(CheckForInterrupt().ok());  // a thread that does not work for it
    OperationControl::Scope on_helper(op);
    helper = CheckForInterrupt();
  }).join();
  EXPECT_EQ(helper.code(), ErrorCode::kInterrupted);
}

TEST(InterruptTest, ADeadlineExpiresByTheClock) {
  auto op = std::make_shared<OperationControl>();
  EXPECT_FALSE(op->has_deadline());
  OperationControl::Scope scope(op);
  op->SetDeadline(Clock::now() + std::chrono::milliseconds(30));
  EXPECT_TRUE(op->has_deadline());
  EXPECT_TRUE(CheckForInterrupt().ok());
  // The coarse clock trails by at most a tick or so: within a second it has passed the deadline.
  auto give_up = Clock::now() + std::chrono::seconds(1);
  Status st = Status::OK();
  while (st.ok() && Clock::now() < give_up) st = CheckForInterrupt();
  EXPECT_EQ(st.code(), ErrorCode::kMaxTimeMSExpired);
  EXPECT_GE(Clock::now(), op->deadline());
  EXPECT_EQ(st.reason(), "operation exceeded time limit");
  EXPECT_TRUE(op->killed());
}

TEST(InterruptTest, ScopesNestAndRestore) {
  auto outer = std::make_shared<OperationControl>();
  auto inner = std::make_shared<OperationControl>();
  {
    OperationControl::Scope a(outer);
    {
      OperationControl::Scope b(inner);
      EXPECT_EQ(OperationControl::Current(), inner);
    }
    EXPECT_EQ(OperationControl::Current(), outer);
  }
  EXPECT_EQ(OperationControl::Current(), nullptr);
}

TEST(InterruptTest, MaxTimeAlwaysTimeOutFailsOnlyOperationsWithADeadline) {
  FailPoint* fp = FailPointRegistry::Get().Find("maxTimeAlwaysTimeOut");
  ASSERT_NE(fp, nullptr);
  fp->SetMode(FailPointMode::kTimes, 1);
  auto unlimited = std::make_shared<OperationControl>();
  {
    OperationControl::Scope scope(unlimited);
    EXPECT_TRUE(CheckForInterrupt().ok());
  }
  auto limited = std::make_shared<OperationControl>();
  limited->SetDeadline(Clock::now() + std::chrono::hours(1));
  {
    OperationControl::Scope scope(limited);
    EXPECT_EQ(CheckForInterrupt().code(), ErrorCode::kMaxTimeMSExpired);  // its one activation
  }
  auto later = std::make_shared<OperationControl>();
  later->SetDeadline(Clock::now() + std::chrono::hours(1));
  OperationControl::Scope scope(later);
  EXPECT_TRUE(CheckForInterrupt().ok());
  fp->SetMode(FailPointMode::kOff);
}

}  // namespace
}  // namespace hourglass
