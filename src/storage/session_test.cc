#include "storage/session.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "storage/kv_engine.h"
#include "storage/storage_test_util.h"
#include "storage/write_conflict.h"

namespace hourglass::storage {
namespace {

using testing::TempDir;

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto engine = KvEngine::Open(testing::DiskOptions(dir_.path()));
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
    ASSERT_TRUE(engine_->CreateTable("t").ok());
  }
  void TearDown() override { engine_.reset(); }

  std::string Read(Session& s, std::string_view key) {
    auto got = s.Get("t", key);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (!got.ok() || !got.value()) return "<missing>";
    return *got.value();
  }

  TempDir dir_;
  std::unique_ptr<KvEngine> engine_;
};

TEST_F(SessionTest, InsertGetPutRemove) {
  auto s = engine_->NewSession();
  EXPECT_EQ(Read(*s, "k"), "<missing>");
  ASSERT_TRUE(s->Insert("t", "k", "v1").ok());
  EXPECT_EQ(Read(*s, "k"), "v1");
  ASSERT_TRUE(s->Put("t", "k", "v2").ok());
  EXPECT_EQ(Read(*s, "k"), "v2");
  ASSERT_TRUE(s->Put("t", "new", "n").ok());
  EXPECT_EQ(Read(*s, "new"), "n");
  ASSERT_TRUE(s->Remove("t", "k").ok());
  EXPECT_EQ(Read(*s, "k"), "<missing>");
  EXPECT_EQ(s->Remove("t", "k").code(), ErrorCode::kNoSuchKey);
}

TEST_F(SessionTest, CommitHooksRunOnlyAfterACommit) {
  auto s = engine_->NewSession();
  int ran = 0;
  // Outside a transaction the write has committed already: at once.
  s->OnCommit([&] { ++ran; });
  EXPECT_EQ(ran, 1);
  // Inside: only when the commit succeeds, once.
  ASSERT_TRUE(s->Begin().ok());
  ASSERT_TRUE(s->Put("t", "k", "v").ok());
  s->OnCommit([&] { ++ran; });
  EXPECT_EQ(ran, 1);
  ASSERT_TRUE(s->Commit().ok());
  EXPECT_EQ(ran, 2);
  ASSERT_TRUE(s->Begin().ok());
  ASSERT_TRUE(s->Commit().ok());
  EXPECT_EQ(ran, 2);
  // Rolled back: forgotten, also for the next transaction.
  {
    WriteUnit wu(*s);
    ASSERT_TRUE(s->Put("t", "k", "w").ok());
    s->OnCommit([&] { ran += 10; });
  }
  ASSERT_TRUE(s->Begin().ok());
  ASSERT_TRUE(s->Commit().ok());
  EXPECT_EQ(ran, 2);
  // A transaction doomed by a write conflict fails to commit: not run.
  auto other = engine_->NewSession();
  ASSERT_TRUE(s->Begin().ok());
  ASSERT_TRUE(other->Begin().ok());
  ASSERT_TRUE(s->Put("t", "k", "a").ok());
  s->OnCommit([&] { ran += 100; });
  EXPECT_EQ(other->Put("t", "k", "b").code(), ErrorCode::kWriteConflict);
  other->OnCommit([&] { ran += 1000; });
  EXPECT_EQ(other->Commit().code(), ErrorCode::kWriteConflict);
  ASSERT_TRUE(s->Commit().ok());
  EXPECT_EQ(ran, 102);
}

TEST_F(SessionTest, PreCommitHooksWriteInTheTransactionOrFailIt) {
  auto s = engine_->NewSession();
  // A hook's writes commit with the transaction, after the caller's, before the commit hooks;
  // the transaction's state lives until the commit hooks have run.
  std::vector<std::string> order;
  ASSERT_TRUE(s->Begin().ok());
  ASSERT_TRUE(s->Put("t", "k", "v").ok());
  auto state = std::make_shared<int>(7);
  s->TransactionState(this) = state;
  std::weak_ptr<int> watch = state;
  state.reset();
  s->OnPreCommit([&] {
    order.push_back("pre");
    EXPECT_EQ(Read(*s, "k"), "v");
    // A hook may register another: it runs too.
    s->OnPreCommit([&] {
      order.push_back("pre2");
      return Status::OK();
    });
    return s->Put("t", "log", "entry");
  });
  s->OnCommit([&] { order.push_back(watch.expired() ? "commit without state" : "commit"); });
  ASSERT_TRUE(s->Commit().ok());
  EXPECT_EQ(order, (std::vector<std::string>{"pre", "pre2", "commit"}));
  EXPECT_TRUE(watch.expired());
  auto reader = engine_->NewSession();
  EXPECT_EQ(Read(*reader, "log"), "entry");
  // A failing hook rolls everything back and is Commit's result; the commit hooks do not run.
  order.clear();
  ASSERT_TRUE(s->Begin().ok());
  ASSERT_TRUE(s->Put("t", "k", "w").ok());
  s->OnPreCommit([&] { return Status(ErrorCode::kNotWritablePrimary, "not primary"); });
  s->OnCommit([&] { order.push_back("commit"); });
  EXPECT_EQ(s->Commit().code(), ErrorCode::kNotWritablePrimary);
  EXPECT_FALSE(s->InTransaction());
  EXPECT_TRUE(order.empty());
  EXPECT_EQ(Read(*reader, "k"), "v");
  // And a later transaction starts without them.
  ASSERT_TRUE(s->Begin().ok());
  ASSERT_TRUE(s->Put("t", "k", "x").ok());
  ASSERT_TRUE(s->Commit().ok());
  EXPECT_EQ(Read(*reader, "k"), "x");
}

TEST_F(SessionTest, BinaryKeysAndValuesRoundTrip) {
  auto s = engine_->NewSession();
  std::string key("\0\xff\x01", 3);
  std::string value("\0\0\xfe", 3);
  ASSERT_TRUE(s->Insert("t", key, value).ok());
  EXPECT_EQ(Read(*s, key), value);
  ASSERT_TRUE(s->Put("t", "empty-value", "").ok());
  EXPECT_EQ(Read(*s, "empty-value"), "");
}

TEST_F(SessionTest, EmptyKeysAreRejected) {
  auto s = engine_->NewSession();
  EXPECT_EQ(s->Insert("t", "", "v").code(), ErrorCode::kBadValue);
  EXPECT_EQ(s->Put("t", "", "v").code(), ErrorCode::kBadValue);
  EXPECT_EQ(Read(*s, ""), "<missing>");
  EXPECT_EQ(s->Remove("t", "").code(), ErrorCode::kNoSuchKey);
  ASSERT_TRUE(s->Insert("t", std::string(1, '\0'), "smallest").ok());
  auto c = s->OpenCursor("t");
  ASSERT_TRUE(c->Seek("").value());
  EXPECT_EQ(c->value(), "smallest");
  EXPECT_FALSE(c->Seek("", false).value());
}

TEST_F(SessionTest, InsertOfExistingKeyIsDuplicateKey) {
  auto s = engine_->NewSession();
  ASSERT_TRUE(s->Insert("t", "k", "v1").ok());
  Status st = s->Insert("t", "k", "v2");
  EXPECT_EQ(st.code(), ErrorCode::kDuplicateKey);
  EXPECT_EQ(st.code_number(), 11000);
  EXPECT_EQ(Read(*s, "k"), "v1");
  // A duplicate inside a transaction does not doom it.
  ASSERT_TRUE(s->Begin().ok());
  EXPECT_EQ(s->Insert("t", "k", "v3").code(), ErrorCode::kDuplicateKey);
  ASSERT_TRUE(s->Insert("t", "k2", "x").ok());
  ASSERT_TRUE(s->Commit().ok());
  EXPECT_EQ(Read(*s, "k2"), "x");
}

TEST_F(SessionTest, MissingTableIsNamespaceNotFound) {
  auto s = engine_->NewSession();
  EXPECT_EQ(s->Get("nope", "k").status().code(), ErrorCode::kNamespaceNotFound);
  EXPECT_EQ(s->Insert("nope", "k", "v").code(), ErrorCode::kNamespaceNotFound);
  EXPECT_EQ(s->OpenCursorOrError("nope").status().code(), ErrorCode::kNamespaceNotFound);
  EXPECT_EQ(s->OpenCursor("nope"), nullptr);
}

TEST_F(SessionTest, CommitMakesWritesVisibleAndRollbackDiscardsThem) {
  auto writer = engine_->NewSession();
  auto reader = engine_->NewSession();
  ASSERT_TRUE(writer->Begin().ok());
  EXPECT_TRUE(writer->InTransaction());
  ASSERT_TRUE(writer->Insert("t", "a", "1").ok());
  EXPECT_EQ(Read(*writer, "a"), "1");  // own writes are visible
  EXPECT_EQ(Read(*reader, "a"), "<missing>");
  ASSERT_TRUE(writer->Commit().ok());
  EXPECT_FALSE(writer->InTransaction());
  EXPECT_EQ(Read(*reader, "a"), "1");

  ASSERT_TRUE(writer->Begin().ok());
  ASSERT_TRUE(writer->Put("t", "a", "2").ok());
  ASSERT_TRUE(writer->Insert("t", "b", "x").ok());
  writer->Rollback();
  EXPECT_EQ(Read(*reader, "a"), "1");
  EXPECT_EQ(Read(*reader, "b"), "<missing>");
}

TEST_F(SessionTest, TransactionMisuseIsIllegalOperation) {
  auto s = engine_->NewSession();
  EXPECT_EQ(s->Commit().code(), ErrorCode::kIllegalOperation);
  ASSERT_TRUE(s->Begin().ok());
  EXPECT_EQ(s->Begin().code(), ErrorCode::kIllegalOperation);
  s->Rollback();
  s->Rollback();  // no-op
}

TEST_F(SessionTest, DestroyingSessionRollsBackOpenTransaction) {
  {
    auto s = engine_->NewSession();
    ASSERT_TRUE(s->Begin().ok());
    ASSERT_TRUE(s->Insert("t", "k", "v").ok());
  }
  auto s = engine_->NewSession();
  EXPECT_FALSE(s->InTransaction());
  EXPECT_EQ(Read(*s, "k"), "<missing>");
}

TEST_F(SessionTest, WriteUnitRollsBackUnlessCommitted) {
  auto s = engine_->NewSession();
  {
    WriteUnit wu(*s);
    ASSERT_TRUE(wu.begin_status().ok());
    ASSERT_TRUE(s->Insert("t", "dropped", "v").ok());
  }
  EXPECT_FALSE(s->InTransaction());
  EXPECT_EQ(Read(*s, "dropped"), "<missing>");
  {
    WriteUnit wu(*s);
    ASSERT_TRUE(s->Insert("t", "kept", "v").ok());
    ASSERT_TRUE(wu.Commit().ok());
  }
  EXPECT_EQ(Read(*s, "kept"), "v");
}

TEST_F(SessionTest, SnapshotIsolationBetweenSessions) {
  auto a = engine_->NewSession();
  auto b = engine_->NewSession();
  ASSERT_TRUE(b->Put("t", "k", "v1").ok());
  ASSERT_TRUE(a->Begin().ok());
  EXPECT_EQ(Read(*a, "k"), "v1");  // the snapshot is taken here
  ASSERT_TRUE(b->Put("t", "k", "v2").ok());
  ASSERT_TRUE(b->Insert("t", "new", "n").ok());
  EXPECT_EQ(Read(*a, "k"), "v1");
  EXPECT_EQ(Read(*a, "new"), "<missing>");
  ASSERT_TRUE(a->Commit().ok());
  EXPECT_EQ(Read(*a, "k"), "v2");
  EXPECT_EQ(Read(*a, "new"), "n");
}

TEST_F(SessionTest, ConcurrentUpdatesOfOneKeyConflict) {
  auto a = engine_->NewSession();
  auto b = engine_->NewSession();
  ASSERT_TRUE(a->Put("t", "k", "base").ok());
  ASSERT_TRUE(a->Begin().ok());
  ASSERT_TRUE(b->Begin().ok());
  EXPECT_EQ(Read(*b, "k"), "base");
  ASSERT_TRUE(a->Put("t", "k", "from-a").ok());
  Status st = b->Put("t", "k", "from-b");
  EXPECT_EQ(st.code(), ErrorCode::kWriteConflict);
  EXPECT_EQ(st.code_number(), 112);
  // The loser's transaction is doomed until rolled back.
  EXPECT_EQ(b->Get("t", "k").status().code(), ErrorCode::kWriteConflict);
  EXPECT_EQ(b->Insert("t", "other", "x").code(), ErrorCode::kWriteConflict);
  EXPECT_EQ(b->Commit().code(), ErrorCode::kWriteConflict);
  EXPECT_FALSE(b->InTransaction());
  ASSERT_TRUE(a->Commit().ok());
  EXPECT_EQ(Read(*b, "k"), "from-a");
  EXPECT_EQ(Read(*b, "other"), "<missing>");
  // After the winner committed, a fresh transaction succeeds.
  ASSERT_TRUE(b->Begin().ok());
  ASSERT_TRUE(b->Put("t", "k", "from-b").ok());
  ASSERT_TRUE(b->Commit().ok());
  EXPECT_EQ(Read(*a, "k"), "from-b");
}

TEST_F(SessionTest, AutocommitWriteWaitsForConflictingTransaction) {
  auto a = engine_->NewSession();
  ASSERT_TRUE(a->Put("t", "k", "base").ok());
  ASSERT_TRUE(a->Begin().ok());
  ASSERT_TRUE(a->Put("t", "k", "from-a").ok());
  std::atomic<bool> done{false};
  std::thread other([&] {
    auto b = engine_->NewSession();
    EXPECT_TRUE(b->Put("t", "k", "autocommit").ok());
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(done.load());
  ASSERT_TRUE(a->Commit().ok());
  other.join();
  EXPECT_EQ(Read(*a, "k"), "autocommit");
}

TEST_F(SessionTest, UpdateOfKeyChangedAfterSnapshotConflicts) {
  auto a = engine_->NewSession();
  auto b = engine_->NewSession();
  ASSERT_TRUE(a->Put("t", "k", "base").ok());
  ASSERT_TRUE(a->Begin().ok());
  EXPECT_EQ(Read(*a, "k"), "base");
  ASSERT_TRUE(b->Put("t", "k", "committed-later").ok());
  EXPECT_EQ(a->Put("t", "k", "stale").code(), ErrorCode::kWriteConflict);
  a->Rollback();
}

TEST_F(SessionTest, RetryOnWriteConflictSerializesIncrements) {
  constexpr int kThreads = 4;
  constexpr int kIncrements = 40;
  {
    auto s = engine_->NewSession();
    ASSERT_TRUE(s->Put("t", "counter", "0").ok());
  }
  std::atomic<int> conflicts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      auto s = engine_->NewSession();
      for (int i = 0; i < kIncrements; ++i) {
        Status st = RetryOnWriteConflict([&]() -> Status {
          WriteUnit wu(*s);
          HG_RETURN_IF_ERROR(wu.begin_status());
          auto got = s->Get("t", "counter");
          HG_RETURN_IF_ERROR(got.status());
          int n = std::stoi(*got.value());
          Status put = s->Put("t", "counter", std::to_string(n + 1));
          if (put.code() == ErrorCode::kWriteConflict) conflicts.fetch_add(1);
          HG_RETURN_IF_ERROR(put);
          return wu.Commit();
        });
        EXPECT_TRUE(st.ok()) << st.ToString();
      }
    });
  }
  for (auto& th : threads) th.join();
  auto s = engine_->NewSession();
  EXPECT_EQ(Read(*s, "counter"), std::to_string(kThreads * kIncrements));
}

TEST_F(SessionTest, RetryOnWriteConflictGivesUpAfterMaxAttempts) {
  int calls = 0;
  Status st = RetryOnWriteConflict(
      [&] {
        ++calls;
        return Status(ErrorCode::kWriteConflict, "always");
      },
      5);
  EXPECT_EQ(st.code(), ErrorCode::kWriteConflict);
  EXPECT_EQ(calls, 5);
  calls = 0;
  st = RetryOnWriteConflict([&] {
    ++calls;
    return Status(ErrorCode::kBadValue, "not retried");
  });
  EXPECT_EQ(st.code(), ErrorCode::kBadValue);
  EXPECT_EQ(calls, 1);
}

TEST_F(SessionTest, ModifyPatchesBytesInPlace) {
  auto s = engine_->NewSession();
  ASSERT_TRUE(s->Insert("t", "k", "hello world").ok());
  // Outside a transaction Modify runs in its own.
  ASSERT_TRUE(s->Modify("t", "k", {{"HELLO", 0, 5}}).ok());
  EXPECT_EQ(Read(*s, "k"), "HELLO world");
  // Later modifications see earlier ones: insert, delete, then append past the end (zero pad).
  ASSERT_TRUE(s->Begin().ok());
  ASSERT_TRUE(s->Modify("t", "k", {{",", 5, 0}, {"", 6, 6}, {"!", 14, 0}}).ok());
  ASSERT_TRUE(s->Commit().ok());
  EXPECT_EQ(Read(*s, "k"), std::string("HELLO,\0\0\0\0\0\0\0\0!", 15));
  EXPECT_EQ(s->Modify("t", "missing", {{"x", 0, 1}}).code(), ErrorCode::kNoSuchKey);
  EXPECT_FALSE(s->InTransaction());
}

TEST_F(SessionTest, ApplyModificationsInMemoryMatchesModify) {
  // Random edit lists (replacements, inserts, deletes, past the end, over the end) applied by
  // WiredTiger and in memory leave the same bytes.
  std::mt19937 rng(7);
  auto s = engine_->NewSession();
  std::string mirror = "0123456789abcdefghij";
  ASSERT_TRUE(s->Insert("t", "m", mirror).ok());
  for (int round = 0; round < 200; ++round) {
    std::vector<Session::Modification> mods;
    size_t len = mirror.size();
    for (int i = 0, n = 1 + static_cast<int>(rng() % 4); i < n; ++i) {
      Session::Modification m;
      m.offset = rng() % (len + 4);
      m.size = rng() % 6;
      m.data = std::string(rng() % 5, static_cast<char>('A' + rng() % 26));
      len = m.offset > len ? m.offset : len;
      len = len - std::min(m.size, len - m.offset) + m.data.size();
      mods.push_back(std::move(m));
    }
    ASSERT_TRUE(s->Modify("t", "m", mods).ok());
    ApplyModifications(mirror, mods);
    ASSERT_EQ(Read(*s, "m"), mirror) << "round " << round;
  }
}

TEST_F(SessionTest, UpdateReplacesOnlyAnExistingValue) {
  auto s = engine_->NewSession();
  ASSERT_TRUE(s->Insert("t", "k", "old value").ok());
  ASSERT_TRUE(s->Update("t", "k", "new").ok());
  EXPECT_EQ(Read(*s, "k"), "new");
  // Unlike Put, nothing is created for a missing key (nor an empty one).
  EXPECT_EQ(s->Update("t", "missing", "x").code(), ErrorCode::kNoSuchKey);
  EXPECT_EQ(s->Update("t", "", "x").code(), ErrorCode::kNoSuchKey);
  auto got = s->Get("t", "missing");
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got.value().has_value());
}

TEST_F(SessionTest, ModifyRollsBackWithItsTransaction) {
  auto s = engine_->NewSession();
  ASSERT_TRUE(s->Insert("t", "k", "abc").ok());
  ASSERT_TRUE(s->Begin().ok());
  ASSERT_TRUE(s->Modify("t", "k", {{"X", 1, 1}}).ok());
  EXPECT_EQ(Read(*s, "k"), "aXc");
  s->Rollback();
  EXPECT_EQ(Read(*s, "k"), "abc");
}

}  // namespace
}  // namespace hourglass::storage
