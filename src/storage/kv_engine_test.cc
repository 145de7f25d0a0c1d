#include "storage/kv_engine.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "storage/record_id.h"
#include "storage/storage_test_util.h"

namespace hourglass::storage {
namespace {

using testing::DiskOptions;
using testing::OpenOrDie;
using testing::TempDir;

std::string GetOrEmpty(Session& s, std::string_view ident, std::string_view key) {
  auto got = s.Get(ident, key);
  if (!got.ok() || !got.value().has_value()) return "<missing>";
  return *got.value();
}

TEST(KvEngineTest, CreateListAndDropTables) {
  TempDir dir;
  auto engine = OpenOrDie(DiskOptions(dir.path()));
  ASSERT_NE(engine, nullptr);
  EXPECT_TRUE(engine->ListTables().empty());
  ASSERT_TRUE(engine->CreateTable("b-table").ok());
  ASSERT_TRUE(engine->CreateTable("a.table_1").ok());
  // Creating again is a no-op.
  ASSERT_TRUE(engine->CreateTable("a.table_1").ok());
  EXPECT_TRUE(engine->TableExists("a.table_1"));
  EXPECT_FALSE(engine->TableExists("missing"));
  EXPECT_EQ(engine->ListTables(), (std::vector<std::string>{"a.table_1", "b-table"}));

  ASSERT_TRUE(engine->DropTable("a.table_1").ok());
  EXPECT_FALSE(engine->TableExists("a.table_1"));
  EXPECT_EQ(engine->ListTables(), (std::vector<std::string>{"b-table"}));
  // Dropping a missing table succeeds.
  EXPECT_TRUE(engine->DropTable("a.table_1").ok());
}

TEST(KvEngineTest, RejectsInvalidIdents) {
  TempDir dir;
  auto engine = OpenOrDie(DiskOptions(dir.path()));
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->CreateTable("").code(), ErrorCode::kBadValue);
  EXPECT_EQ(engine->CreateTable("has/slash").code(), ErrorCode::kBadValue);
  EXPECT_EQ(engine->CreateTable("has space").code(), ErrorCode::kBadValue);
  EXPECT_EQ(engine->CreateTable("WiredTigerX").code(), ErrorCode::kBadValue);
  EXPECT_EQ(engine->DropTable("a:b").code(), ErrorCode::kBadValue);
  EXPECT_FALSE(engine->TableExists("a:b"));
}

TEST(KvEngineTest, OpenFailsOnMissingDirectory) {
  TempDir dir;
  auto engine = KvEngine::Open(DiskOptions(dir.path() + "/does/not/exist"));
  EXPECT_FALSE(engine.ok());
  EXPECT_EQ(KvEngine::Open(DiskOptions("")).status().code(), ErrorCode::kBadValue);
}

TEST(KvEngineTest, DataPersistsAcrossCleanReopen) {
  TempDir dir;
  {
    auto engine = OpenOrDie(DiskOptions(dir.path()));
    ASSERT_NE(engine, nullptr);
    ASSERT_TRUE(engine->CreateTable("t").ok());
    ASSERT_TRUE(engine->CreateTable("gone").ok());
    auto s = engine->NewSession();
    ASSERT_TRUE(s->Insert("t", "k1", "v1").ok());
    ASSERT_TRUE(s->Put("t", "k2", std::string("bin\0ary", 7)).ok());
    s.reset();
    ASSERT_TRUE(engine->DropTable("gone").ok());
  }
  auto engine = OpenOrDie(DiskOptions(dir.path()));
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->ListTables(), (std::vector<std::string>{"t"}));
  auto s = engine->NewSession();
  EXPECT_EQ(GetOrEmpty(*s, "t", "k1"), "v1");
  EXPECT_EQ(GetOrEmpty(*s, "t", "k2"), std::string("bin\0ary", 7));
  EXPECT_GT(engine->TableSizeBytes("t"), 0);
  EXPECT_EQ(engine->TableSizeBytes("nope"), 0);
}

TEST(KvEngineTest, CheckpointAndJournalCallsSucceed) {
  TempDir dir;
  auto engine = OpenOrDie(DiskOptions(dir.path()));
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->CreateTable("t").ok());
  auto s = engine->NewSession();
  ASSERT_TRUE(s->Put("t", "k", "v").ok());
  EXPECT_TRUE(engine->WaitForJournal().ok());
  EXPECT_TRUE(engine->Checkpoint().ok());
}

TEST(KvEngineTest, InMemoryModeWritesNoFiles) {
  TempDir dir;
  EngineOptions opts;
  opts.dbpath = dir.path();
  opts.in_memory = true;
  opts.cache_size_mb = 32;
  {
    auto engine = OpenOrDie(opts);
    ASSERT_NE(engine, nullptr);
    ASSERT_TRUE(engine->CreateTable("t").ok());
    auto s = engine->NewSession();
    ASSERT_TRUE(s->Insert("t", "k", "v").ok());
    EXPECT_EQ(GetOrEmpty(*s, "t", "k"), "v");
    EXPECT_TRUE(engine->WaitForJournal().ok());
    EXPECT_TRUE(engine->Checkpoint().ok());
    EXPECT_EQ(engine->TableSizeBytes("t"), 0);
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  // Nothing survives a reopen.
  auto engine = OpenOrDie(opts);
  ASSERT_NE(engine, nullptr);
  EXPECT_FALSE(engine->TableExists("t"));
}

TEST(KvEngineTest, SessionsAreReused) {
  TempDir dir;
  auto engine = OpenOrDie(DiskOptions(dir.path()));
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->CreateTable("t").ok());
  {
    auto a = engine->NewSession();
    auto b = engine->NewSession();
    EXPECT_EQ(engine->ActiveSessionsForTest(), 2);
    ASSERT_TRUE(a->Put("t", "k", "v").ok());
  }
  EXPECT_EQ(engine->ActiveSessionsForTest(), 0);
  // Many short operations from many threads share a small set of WiredTiger sessions.
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&engine, t] {
      for (int i = 0; i < 50; ++i) {
        auto s = engine->NewSession();
        std::string key = std::to_string(t) + ":" + std::to_string(i);
        EXPECT_TRUE(s->Put("t", key, "x").ok());
        EXPECT_EQ(GetOrEmpty(*s, "t", key), "x");
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(engine->ActiveSessionsForTest(), 0);
}

TEST(KvEngineTest, DropSucceedsWhileIdleSessionsCachedCursors) {
  TempDir dir;
  auto engine = OpenOrDie(DiskOptions(dir.path()));
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->CreateTable("t").ok());
  {
    // Both sessions go back to the cache holding a cursor on "t".
    auto a = engine->NewSession();
    auto b = engine->NewSession();
    ASSERT_TRUE(a->Put("t", "k", "old").ok());
    EXPECT_EQ(GetOrEmpty(*b, "t", "k"), "old");
  }
  ASSERT_TRUE(engine->DropTable("t").ok());
  EXPECT_FALSE(engine->TableExists("t"));
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(dir.path()) / "t.wt"));
  // A recreated table of the same name is empty, read through the reused sessions.
  ASSERT_TRUE(engine->CreateTable("t").ok());
  auto a = engine->NewSession();
  auto b = engine->NewSession();
  EXPECT_EQ(GetOrEmpty(*a, "t", "k"), "<missing>");
  EXPECT_EQ(GetOrEmpty(*b, "t", "k"), "<missing>");
}

TEST(KvEngineTest, DropWhileActiveSessionHoldsCursorIsDeferredThenCompleted) {
  TempDir dir;
  auto engine = OpenOrDie(DiskOptions(dir.path()));
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->CreateTable("t").ok());
  ASSERT_TRUE(engine->CreateTable("other").ok());
  auto holder = engine->NewSession();
  ASSERT_TRUE(holder->Put("t", "k", "v").ok());
  ASSERT_TRUE(engine->Checkpoint().ok());
  auto cursor = holder->OpenCursor("t");
  ASSERT_NE(cursor, nullptr);
  ASSERT_TRUE(cursor->SeekFirst().value());

  // The open cursor keeps the table busy: the drop is accepted but deferred.
  ASSERT_TRUE(engine->DropTable("t").ok());
  EXPECT_FALSE(engine->TableExists("t"));
  EXPECT_EQ(engine->ListTables(), (std::vector<std::string>{"other"}));
  EXPECT_EQ(engine->CreateTable("t").code(), ErrorCode::kConflictingOperationInProgress);
  auto data_file = std::filesystem::path(dir.path()) / "t.wt";
  EXPECT_TRUE(std::filesystem::exists(data_file));
  // The holder can still finish reading.
  EXPECT_EQ(cursor->value(), "v");
  // Its other tables are unaffected.
  ASSERT_TRUE(holder->Put("other", "k", "v").ok());

  cursor.reset();
  holder.reset();
  // The background thread retries deferred drops every second.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::filesystem::exists(data_file) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(std::filesystem::exists(data_file));
  ASSERT_TRUE(engine->CreateTable("t").ok());
  auto s = engine->NewSession();
  EXPECT_EQ(GetOrEmpty(*s, "t", "k"), "<missing>");
}

TEST(KvEngineTest, DropWhileActiveSessionHasOnlyCachedCursorCompletes) {
  TempDir dir;
  auto engine = OpenOrDie(DiskOptions(dir.path()));
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->CreateTable("t").ok());
  auto holder = engine->NewSession();
  ASSERT_TRUE(holder->Put("t", "k", "v").ok());
  // The holder keeps running operations on other tables; its next cursor use sees the drop and
  // closes the cached cursor on "t".
  std::atomic<bool> stop{false};
  ASSERT_TRUE(engine->CreateTable("other").ok());
  std::thread worker([&] {
    while (!stop.load()) {
      EXPECT_TRUE(holder->Put("other", "k", "v").ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  ASSERT_TRUE(engine->DropTable("t").ok());
  stop = true;
  worker.join();
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(dir.path()) / "t.wt"));
  EXPECT_EQ(holder->Get("t", "k").status().code(), ErrorCode::kNamespaceNotFound);
}

// 2 MB of highly compressible values: with snappy the data file is a fraction of that.
TEST(KvEngineTest, BlockCompressionShrinksDataFiles) {
  auto file_size_with = [](bool compression) -> int64_t {
    TempDir dir;
    EngineOptions opts = DiskOptions(dir.path());
    opts.block_compressor = compression ? "snappy" : "none";
    auto engine = OpenOrDie(opts);
    if (!engine) return -1;
    EXPECT_TRUE(engine->CreateTable("t").ok());
    auto s = engine->NewSession();
    std::string value(1000, 'a');
    EXPECT_TRUE(s->Begin().ok());
    for (int64_t i = 0; i < 2000; ++i) EXPECT_TRUE(s->Insert("t", EncodeRecordId(i), value).ok());
    EXPECT_TRUE(s->Commit().ok());
    s.reset();
    EXPECT_TRUE(engine->Checkpoint().ok());
    return engine->TableSizeBytes("t");
  };
  int64_t compressed = file_size_with(true);
  int64_t plain = file_size_with(false);
  EXPECT_GT(plain, 2'000'000);
  EXPECT_GT(compressed, 0);
  EXPECT_LT(compressed, plain / 4);
}

// Each block compressor, as the engine default or named by a table's own configuration, writes
// a table that is smaller than the uncompressed one and reads back the same values, after a
// clean reopen and after a kill (recovery reads the table's pages, so the compressor must be
// there before it runs).
TEST(KvEngineTest, EveryBlockCompressorRoundTripsAndSurvivesRecovery) {
  auto value_of = [](int64_t i) {
    std::string v = "reading " + std::to_string(i % 97) + " ";
    v.resize(400, static_cast<char>('a' + i % 3));
    return v;
  };
  const std::string kNone = "none";
  for (const std::string compressor : {"none", "snappy", "zlib", "zstd"}) {
    for (bool as_table_config : {false, true}) {
      SCOPED_TRACE(compressor + (as_table_config ? " (table config)" : " (engine default)"));
      TempDir dir;
      EngineOptions opts = DiskOptions(dir.path());
      opts.checkpoint_interval_secs = 0;
      opts.block_compressor = as_table_config ? kNone : compressor;
      const std::string table_config =
          as_table_config ? "block_compressor=" + compressor : std::string();
      pid_t child = fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        auto engine = KvEngine::Open(opts);
        if (!engine.ok()) _exit(2);
        auto& e = *engine.value();
        if (!e.CreateTable("t", table_config).ok()) _exit(3);
        auto s = e.NewSession();
        for (int64_t i = 0; i < 3000; ++i) {
          if (!s->Begin().ok()) _exit(4);
          if (!s->Insert("t", EncodeRecordId(i), value_of(i)).ok()) _exit(5);
          if (!s->Commit().ok()) _exit(6);
          // Half the rows reach a checkpoint (compressed pages on disk); the rest only the
          // journal, replayed on top of those pages.
          if (i == 1500 && !e.Checkpoint().ok()) _exit(7);
        }
        if (!e.WaitForJournal().ok()) _exit(8);
        kill(getpid(), SIGKILL);
        _exit(9);
      }
      int wstatus = 0;
      ASSERT_EQ(waitpid(child, &wstatus, 0), child);
      ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited with " << WEXITSTATUS(wstatus);
      for (int open = 0; open < 2; ++open) {
        auto engine = OpenOrDie(opts);
        ASSERT_NE(engine, nullptr);
        auto s = engine->NewSession();
        auto cursor = s->OpenCursor("t");
        ASSERT_NE(cursor, nullptr);
        int64_t n = 0;
        for (auto more = cursor->SeekFirst(); more.ok() && more.value(); more = cursor->Next()) {
          ASSERT_EQ(DecodeRecordId(cursor->key()), n);
          ASSERT_EQ(cursor->value(), value_of(n));
          ++n;
        }
        EXPECT_EQ(n, 3000);
        cursor.reset();
        s.reset();
        ASSERT_TRUE(engine->Checkpoint().ok());
        const int64_t bytes = engine->TableSizeBytes("t");
        if (compressor == "none") {
          EXPECT_GT(bytes, 3000 * 400);
        } else {
          EXPECT_LT(bytes, 3000 * 400 / 4) << "not compressed";
        }
      }
    }
  }
}

TEST(KvEngineTest, TableConfigurationsAreChecked) {
  TempDir dir;
  auto engine = OpenOrDie(DiskOptions(dir.path()));
  ASSERT_NE(engine, nullptr);
  EXPECT_TRUE(engine->CheckTableConfig("").ok());
  EXPECT_TRUE(engine->CheckTableConfig("block_compressor=zstd").ok());
  EXPECT_TRUE(engine->CheckTableConfig("block_compressor=none,leaf_page_max=64KB").ok());
  Status unknown_key = engine->CheckTableConfig("no_such_key=1");
  EXPECT_EQ(unknown_key.code(), ErrorCode::kBadValue);
  EXPECT_NE(unknown_key.reason().find("no_such_key=1"), std::string::npos) << unknown_key.reason();
  Status unknown_compressor = engine->CheckTableConfig("block_compressor=lz4");
  EXPECT_EQ(unknown_compressor.code(), ErrorCode::kBadValue);
  EXPECT_NE(unknown_compressor.reason().find("unknown block compressor 'lz4'"), std::string::npos)
      << unknown_compressor.reason();
  // The creation string spells out the table's compressor.
  ASSERT_TRUE(engine->CreateTable("z", "block_compressor=zstd").ok());
  ASSERT_TRUE(engine->CreateTable("s").ok());
  auto z = engine->TableCreationString("z");
  ASSERT_TRUE(z.ok()) << z.status().ToString();
  EXPECT_NE(z.value().find("block_compressor=zstd"), std::string::npos) << z.value();
  auto snappy = engine->TableCreationString("s");
  ASSERT_TRUE(snappy.ok());
  EXPECT_NE(snappy.value().find("block_compressor=snappy"), std::string::npos) << snappy.value();
  EXPECT_EQ(engine->TableCreationString("missing").status().code(), ErrorCode::kNamespaceNotFound);
  // CreateTable checks before creating anything.
  EXPECT_EQ(engine->CreateTable("t", "block_compressor=lz4").code(), ErrorCode::kBadValue);
  EXPECT_FALSE(engine->TableExists("t"));

  EngineOptions bad = DiskOptions(dir.path());
  bad.block_compressor = "lz4";
  engine.reset();
  auto opened = KvEngine::Open(bad);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), ErrorCode::kBadValue);
}

TEST(KvEngineTest, SecondOpenInSameProcessFails) {
  TempDir dir;
  auto first = OpenOrDie(DiskOptions(dir.path()));
  ASSERT_NE(first, nullptr);
  auto second = KvEngine::Open(DiskOptions(dir.path()));
  EXPECT_EQ(second.status().code(), ErrorCode::kConflictingOperationInProgress);
}

// Writers and readers keep using tables while another thread creates and drops one of them over
// and over: every call either works or reports the table missing, and nothing crashes or leaks.
TEST(KvEngineTest, ConcurrentDropsAndOperations) {
  TempDir dir;
  auto engine = OpenOrDie(DiskOptions(dir.path()));
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->CreateTable("stable").ok());
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < 3; ++t) {
    workers.emplace_back([&, t] {
      int i = 0;
      while (!stop.load()) {
        auto s = engine->NewSession();
        std::string key = std::to_string(t) + "-" + std::to_string(i++ % 50);
        EXPECT_TRUE(s->Put("stable", key, "v").ok());
        Status st = s->Put("flux", key, "v");
        EXPECT_TRUE(st.ok() || st.code() == ErrorCode::kNamespaceNotFound) << st.ToString();
        if (auto c = s->OpenCursor("flux")) {
          auto more = c->SeekFirst();
          EXPECT_TRUE(more.ok());
        }
      }
    });
  }
  for (int round = 0; round < 15; ++round) {
    // The previous round's drop may have been deferred.
    Status created = engine->CreateTable("flux");
    ASSERT_TRUE(created.ok() || created.code() == ErrorCode::kConflictingOperationInProgress)
        << created.ToString();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(engine->DropTable("flux").ok());
  }
  stop = true;
  for (auto& w : workers) w.join();
  EXPECT_FALSE(engine->TableExists("flux"));
}

// Writes a pipe byte once the engine is open, then waits to be killed.
TEST(KvEngineTest, OpenFailsWhileAnotherProcessHoldsTheDbpath) {
  TempDir dir;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    auto engine = KvEngine::Open(DiskOptions(dir.path()));
    char byte = engine.ok() ? 'y' : 'n';
    (void)!write(ready[1], &byte, 1);
    while (true) pause();
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);
  EXPECT_EQ(byte, 'y');
  auto engine = KvEngine::Open(DiskOptions(dir.path()));
  EXPECT_EQ(engine.status().code(), ErrorCode::kConflictingOperationInProgress);
  EXPECT_NE(engine.status().reason().find("in use by another process"), std::string::npos)
      << engine.status().reason();
  kill(child, SIGKILL);
  int wstatus = 0;
  waitpid(child, &wstatus, 0);
  // Once the holder is gone the dbpath opens again.
  auto reopened = KvEngine::Open(DiskOptions(dir.path()));
  EXPECT_TRUE(reopened.ok()) << reopened.status().ToString();
}

// The child writes, makes the journal durable, and dies by SIGKILL without closing: no final
// checkpoint, so the parent's reopen must replay the journal.
TEST(KvEngineTest, RecoversJournaledWritesAfterKill) {
  TempDir dir;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    EngineOptions opts = DiskOptions(dir.path());
    opts.checkpoint_interval_secs = 0;
    opts.journal_commit_interval_ms = 0;
    auto engine = KvEngine::Open(opts);
    if (!engine.ok()) _exit(2);
    auto& e = *engine.value();
    if (!e.CreateTable("t").ok()) _exit(3);
    auto s = e.NewSession();
    for (int64_t i = -50; i < 50; ++i) {
      if (!s->Begin().ok()) _exit(4);
      if (!s->Insert("t", EncodeRecordId(i), "value" + std::to_string(i)).ok()) _exit(5);
      if (!s->Commit().ok()) _exit(6);
    }
    // An aborted transaction must stay aborted after recovery.
    if (!s->Begin().ok() || !s->Put("t", EncodeRecordId(0), "rolled back").ok()) _exit(7);
    s->Rollback();
    if (!s->Modify("t", EncodeRecordId(1), {{"VALUE", 0, 5}}).ok()) _exit(8);
    if (!e.WaitForJournal().ok()) _exit(9);
    kill(getpid(), SIGKILL);
    _exit(10);
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited with " << WEXITSTATUS(wstatus);
  ASSERT_EQ(WTERMSIG(wstatus), SIGKILL);

  auto engine = OpenOrDie(DiskOptions(dir.path()));
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->TableExists("t"));
  auto s = engine->NewSession();
  auto cursor = s->OpenCursor("t");
  ASSERT_NE(cursor, nullptr);
  int64_t expected = -50;
  for (auto more = cursor->SeekFirst(); more.ok() && more.value(); more = cursor->Next()) {
    ASSERT_EQ(DecodeRecordId(cursor->key()), expected);
    std::string want = "value" + std::to_string(expected);
    if (expected == 1) want = "VALUE1";
    EXPECT_EQ(cursor->value(), want);
    ++expected;
  }
  EXPECT_EQ(expected, 50);
}

// Without WaitForJournal a commit still survives the death of the process once the journal
// flusher has run: the child commits, waits several intervals and dies by SIGKILL. (A process
// kill leaves written-but-unsynced journal data in the OS cache, so this cannot show the fsync
// that protects against power loss; it checks that nothing stays in WiredTiger's buffers.)
TEST(KvEngineTest, CommitsSurviveKillWithoutWaitForJournal) {
  TempDir dir;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    EngineOptions opts = DiskOptions(dir.path());
    opts.checkpoint_interval_secs = 0;
    opts.journal_commit_interval_ms = 50;
    auto engine = KvEngine::Open(opts);
    if (!engine.ok()) _exit(2);
    auto& e = *engine.value();
    if (!e.CreateTable("t").ok()) _exit(3);
    auto s = e.NewSession();
    if (!s->Insert("t", "k", "flushed in the background").ok()) _exit(4);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    kill(getpid(), SIGKILL);
    _exit(10);
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited with " << WEXITSTATUS(wstatus);
  auto engine = OpenOrDie(DiskOptions(dir.path()));
  ASSERT_NE(engine, nullptr);
  auto s = engine->NewSession();
  EXPECT_EQ(GetOrEmpty(*s, "t", "k"), "flushed in the background");
}

}  // namespace
}  // namespace hourglass::storage
