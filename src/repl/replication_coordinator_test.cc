#include "repl/replication_coordinator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "catalog/catalog.h"
#include "storage/storage_test_util.h"

namespace hourglass::repl {
namespace {

using storage::testing::DiskOptions;
using storage::testing::OpenOrDie;
using storage::testing::TempDir;

constexpr int kPort = 27999;

ReplicationCoordinator::Options MemberOptions(const std::string& dbpath) {
  return {"rs0", dbpath, kPort, "127.0.0.1", nullptr};
}

// Waits up to 20 s for the member to take writes.
ReplicaSetView AwaitPrimary(const ReplicationCoordinator& c) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::atomic<bool> stop{false};
  ReplicaSetView view = c.View();
  while (!view.writable_primary && std::chrono::steady_clock::now() < deadline) {
    c.AwaitTopologyChange(view.topology_counter, deadline, stop);
    view = c.View();
  }
  return view;
}

TEST(ReplicationCoordinatorTest, ElectionIdCarriesTheTerm) {
  EXPECT_EQ(ElectionIdForTerm(1).ToHex(), "7fffffff0000000000000001");
  EXPECT_EQ(ElectionIdForTerm(0x1234567890).ToHex(), "7fffffff0000001234567890");
}

TEST(ReplicationCoordinatorTest, StateNames) {
  EXPECT_EQ(MemberStateName(MemberState::kPrimary), "PRIMARY");
  EXPECT_EQ(MemberStateName(MemberState::kSecondary), "SECONDARY");
  EXPECT_EQ(MemberStateName(MemberState::kStartup2), "STARTUP2");
  EXPECT_EQ(MemberStateName(MemberState::kRemoved), "REMOVED");
}

TEST(ReplicationCoordinatorTest, SelfIsThisMachineOnThisPort) {
  TempDir dir;
  auto engine = OpenOrDie(DiskOptions(dir.path()));
  auto catalog = catalog::Catalog::Open(engine.get()).value();
  ReplicationCoordinator c(MemberOptions(dir.path()), engine.get(), catalog.get());
  EXPECT_TRUE(c.IsSelf("localhost:27999"));
  EXPECT_TRUE(c.IsSelf("127.0.0.1:27999"));
  EXPECT_TRUE(c.IsSelf("127.0.0.2:27999"));  // all of 127/8 is this machine
  EXPECT_FALSE(c.IsSelf("127.0.0.1:27998"));
  EXPECT_FALSE(c.IsSelf("localhost"));        // port 27017
  EXPECT_FALSE(c.IsSelf("192.0.2.1:27999"));  // TEST-NET-1: never an address of ours
}

TEST(ReplicationCoordinatorTest, InitiateElectsAndARestartKeepsTheSet) {
  TempDir dir;
  int64_t term = 0;
  {
    auto engine = OpenOrDie(DiskOptions(dir.path()));
    auto catalog = catalog::Catalog::Open(engine.get()).value();
    ReplicationCoordinator c(MemberOptions(dir.path()), engine.get(), catalog.get());
    ASSERT_TRUE(c.Start().ok());
    ReplicaSetView before = c.View();
    EXPECT_EQ(before.state, MemberState::kStartup);
    EXPECT_FALSE(before.config.has_value());
    ASSERT_TRUE(c.Initiate(nullptr).ok());
    ReplicaSetView view = AwaitPrimary(c);
    ASSERT_TRUE(view.writable_primary);
    EXPECT_EQ(view.state, MemberState::kPrimary);
    ASSERT_TRUE(view.config.has_value());
    EXPECT_EQ(view.config->members.at(0).host, "127.0.0.1:27999");
    EXPECT_EQ(view.primary, 0);
    EXPECT_EQ(view.self, 0);
    EXPECT_GE(view.term, 1);
    EXPECT_EQ(view.config->term, view.term);
    EXPECT_GT(view.topology_counter, before.topology_counter);
    // The "new primary" no-op and the configuration are applied, in this term.
    EXPECT_EQ(view.last_applied.term, view.term);
    EXPECT_GT(view.last_applied.ts, 0u);
    EXPECT_EQ(c.Initiate(nullptr).code(), ErrorCode::kAlreadyInitialized);
    term = view.term;
    c.Shutdown();
  }
  {
    auto engine = OpenOrDie(DiskOptions(dir.path()));
    auto catalog = catalog::Catalog::Open(engine.get()).value();
    ReplicationCoordinator c(MemberOptions(dir.path()), engine.get(), catalog.get());
    ASSERT_TRUE(c.Start().ok());
    ReplicaSetView view = AwaitPrimary(c);
    ASSERT_TRUE(view.writable_primary);
    EXPECT_GE(view.term, term);
    EXPECT_EQ(view.config->settings.replica_set_id.has_value(), true);
    c.Shutdown();
  }
  {
    // Another set's name on the same data is refused.
    auto engine = OpenOrDie(DiskOptions(dir.path()));
    auto catalog = catalog::Catalog::Open(engine.get()).value();
    ReplicationCoordinator c({"other", dir.path(), kPort, "127.0.0.1", nullptr}, engine.get(),
                             catalog.get());
    EXPECT_EQ(c.Start().code(), ErrorCode::kInvalidReplicaSetConfig);
  }
}

TEST(ReplicationCoordinatorTest, ForcedStepDownAndFreeze) {
  TempDir dir;
  auto engine = OpenOrDie(DiskOptions(dir.path()));
  auto catalog = catalog::Catalog::Open(engine.get()).value();
  ReplicationCoordinator c(MemberOptions(dir.path()), engine.get(), catalog.get());
  ASSERT_TRUE(c.Start().ok());
  std::string info;
  EXPECT_EQ(c.Freeze(10, &info).code(), ErrorCode::kNotYetInitialized);
  ASSERT_TRUE(c.Initiate(nullptr).ok());
  ASSERT_TRUE(AwaitPrimary(c).writable_primary);
  EXPECT_EQ(c.Freeze(10, &info).code(), ErrorCode::kNotSecondary);
  EXPECT_EQ(c.StepDown(5, 0, false).code(), ErrorCode::kExceededTimeLimit);
  ASSERT_TRUE(c.StepDown(60, 10, true).ok());
  ReplicaSetView down = c.View();
  EXPECT_EQ(down.state, MemberState::kSecondary);
  EXPECT_FALSE(down.writable_primary);
  EXPECT_EQ(down.primary, -1);
  EXPECT_EQ(c.StepDown(60, 10, true).code(), ErrorCode::kNotWritablePrimary);
  ASSERT_TRUE(c.Freeze(0, &info).ok());
  EXPECT_EQ(info, "unfreezing");
  EXPECT_TRUE(AwaitPrimary(c).writable_primary);
  c.Shutdown();
}

}  // namespace
}  // namespace hourglass::repl
