// AppendLog on disk: records come back in order and numbered on across reopening and segments; a
// record cut short or corrupted by a crash ends its segment and the records before it stay;
// DropBefore removes whole finished segments only; a log without a directory numbers and keeps
// nothing; an engine's log is synced by WaitForJournal and opened once per name.
#include "storage/append_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "storage/storage_test_util.h"

namespace hourglass::storage {
namespace {

using Records = std::vector<std::pair<uint64_t, std::string>>;

Records All(const AppendLog& log) {
  Records out;
  Status st = log.ForEach([&](uint64_t n, std::string_view p) {
    out.emplace_back(n, std::string(p));
    return Status::OK();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

std::unique_ptr<AppendLog> OpenLog(const std::string& dir, uint64_t segment_bytes = 1 << 20) {
  auto log = AppendLog::Open(dir, segment_bytes);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? std::move(log).value() : nullptr;
}

// The segments' file names (spare ones: SpareFiles), sorted.
std::vector<std::string> FilesOf(const std::string& dir, bool spare) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.ends_with(".spare") == spare) out.push_back(std::move(name));
  }
  std::sort(out.begin(), out.end());
  return out;
}
std::vector<std::string> SegmentFiles(const std::string& dir) { return FilesOf(dir, false); }
std::vector<std::string> SpareFiles(const std::string& dir) { return FilesOf(dir, true); }

std::string Payload(int i) { return "record-" + std::to_string(i) + std::string(i % 7, 'x'); }

TEST(AppendLogTest, RecordsComeBackInOrderAcrossReopening) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/log";
  {
    auto log = OpenLog(dir);
    EXPECT_TRUE(All(*log).empty());
    for (int i = 1; i <= 100; ++i) {
      auto n = log->Append(Payload(i));
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      EXPECT_EQ(n.value(), static_cast<uint64_t>(i));
    }
    ASSERT_TRUE(log->Append("").ok());  // an empty payload is a record too
    ASSERT_TRUE(log->Sync().ok());
    // Only the records there at Open are replayed.
    EXPECT_TRUE(All(*log).empty());
  }
  auto log = OpenLog(dir);
  Records got = All(*log);
  ASSERT_EQ(got.size(), 101u);
  for (int i = 1; i <= 100; ++i) {
    EXPECT_EQ(got[i - 1].first, static_cast<uint64_t>(i));
    EXPECT_EQ(got[i - 1].second, Payload(i));
  }
  EXPECT_EQ(got[100], (std::pair<uint64_t, std::string>{101, ""}));
  EXPECT_EQ(log->next_number(), 102u);
  auto n = log->Append("after");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 102u);
  // Opening began a segment of its own, named by its first record.
  EXPECT_EQ(SegmentFiles(dir),
            (std::vector<std::string>{"0000000000000001.log", "0000000000000066.log"}));
}

TEST(AppendLogTest, SegmentsRollOverAndDropBeforeRemovesOnlyFinishedOnes) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/log";
  auto log = OpenLog(dir, 100);        // a new segment once one holds 100 bytes
  const std::string payload(60, 'p');  // 76 bytes with the header: one per segment, nearly
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(log->Append(payload).ok());
  // Records 1..6: the segment of record 1 holds 1 and then is full; each later one likewise.
  EXPECT_EQ(SegmentFiles(dir).size(), 6u);
  EXPECT_FALSE(log->HasSegmentsBefore(1));
  EXPECT_TRUE(log->HasSegmentsBefore(3));
  auto kept = log->DropBefore(3);  // records 1 and 2 are done
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept.value(), 3u);
  EXPECT_EQ(SegmentFiles(dir).front(), "0000000000000003.log");
  // The segment being appended to stays, whatever the bound.
  kept = log->DropBefore(100);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept.value(), 6u);
  EXPECT_EQ(SegmentFiles(dir), std::vector<std::string>{"0000000000000006.log"});
  log.reset();
  log = OpenLog(dir, 100);
  Records got = All(*log);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, 6u);
  // Every record there at Open is below 7: all their segments go.
  ASSERT_TRUE(log->DropBefore(log->next_number()).ok());
  EXPECT_TRUE(SegmentFiles(dir).empty());
  EXPECT_EQ(log->Append("x").value(), 7u);
}

TEST(AppendLogTest, FinishedSegmentsAreReusedAndTheirOldRecordsNeverReplayed) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/log";
  const std::string big(60, 'b');    // 76 bytes with the header
  const std::string small(40, 's');  // 56
  {
    auto log = OpenLog(dir, 100);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(log->Append(big).ok());  // records 1..5, a segment each
    ASSERT_TRUE(log->DropBefore(5).ok());
    // The two newest finished segments are kept as spares, the others removed.
    EXPECT_EQ(SpareFiles(dir),
              (std::vector<std::string>{"0000000000000003.spare", "0000000000000004.spare"}));
    EXPECT_EQ(SegmentFiles(dir), std::vector<std::string>{"0000000000000005.log"});
    // The next segments are the spares renamed, written over from their start with records
    // shorter than what they held.
    ASSERT_TRUE(log->Append(small).ok());
    ASSERT_TRUE(log->Append(big).ok());
    ASSERT_TRUE(log->Append(small).ok());
    EXPECT_EQ(SpareFiles(dir).size(), 0u);
    EXPECT_EQ(SegmentFiles(dir),
              (std::vector<std::string>{"0000000000000005.log", "0000000000000006.log",
                                        "0000000000000007.log", "0000000000000008.log"}));
    // Record 6 went into a spare (record 4's segment), and its old bytes remain after it; with
    // no spare left, record 8's is a new file.
    EXPECT_EQ(std::filesystem::file_size(dir + "/0000000000000006.log"), 76u);
    EXPECT_EQ(std::filesystem::file_size(dir + "/0000000000000008.log"), 56u);
    ASSERT_TRUE(log->Sync().ok());
  }
  auto log = OpenLog(dir, 100);
  Records got = All(*log);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], (std::pair<uint64_t, std::string>{5, big}));
  EXPECT_EQ(got[1], (std::pair<uint64_t, std::string>{6, small}));
  EXPECT_EQ(got[2], (std::pair<uint64_t, std::string>{7, big}));
  EXPECT_EQ(got[3], (std::pair<uint64_t, std::string>{8, small}));
  EXPECT_EQ(log->Append("nine").value(), 9u);
}

TEST(AppendLogTest, SparesOutliveReopeningAndAReusedOneWithNoNewRecordIsEmpty) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/log";
  const std::string big(60, 'b');
  {
    auto log = OpenLog(dir, 100);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(log->Append(big).ok());
    ASSERT_TRUE(log->DropBefore(3).ok());
  }
  EXPECT_EQ(SpareFiles(dir).size(), 2u);
  // A crash right after a spare became segment 4, before its first record was written: it holds
  // record 1's bytes, which must not come back.
  std::filesystem::rename(dir + "/0000000000000001.spare", dir + "/0000000000000004.log");
  {
    auto log = OpenLog(dir, 100);
    Records got = All(*log);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].first, 3u);
    EXPECT_EQ(SegmentFiles(dir), std::vector<std::string>{"0000000000000003.log"});
    // The spare left from before the restart is used again.
    ASSERT_TRUE(log->Append("four").ok());
    EXPECT_TRUE(SpareFiles(dir).empty());
    ASSERT_TRUE(log->Sync().ok());
  }
  auto log = OpenLog(dir, 100);
  Records got = All(*log);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1], (std::pair<uint64_t, std::string>{4, "four"}));
}

TEST(AppendLogTest, ARecordCutShortOrCorruptEndsItsSegment) {
  for (const bool corrupt : {false, true}) {
    testing::TempDir tmp;
    const std::string dir = tmp.path() + "/log";
    {
      auto log = OpenLog(dir);
      for (int i = 1; i <= 5; ++i) ASSERT_TRUE(log->Append(Payload(i)).ok());
    }
    const std::string file = dir + "/0000000000000001.log";
    const auto size = std::filesystem::file_size(file);
    const uint64_t last = 16 + Payload(5).size();
    if (corrupt) {
      // A byte of the last payload changes: its checksum no longer matches.
      std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(size - 2));
      f.put('!');
    } else {
      // The crash came in the middle of the last write.
      std::filesystem::resize_file(file, size - last / 2);
    }
    auto log = OpenLog(dir);
    Records got = All(*log);
    ASSERT_EQ(got.size(), 4u) << corrupt;
    EXPECT_EQ(got.back(), (std::pair<uint64_t, std::string>{4, Payload(4)}));
    // The lost record's number is given again: it was never durable.
    EXPECT_EQ(log->Append("again").value(), 5u);
  }
}

TEST(AppendLogTest, AnEmptyLastSegmentGivesWayToTheNextOne) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/log";
  {
    auto log = OpenLog(dir);
    ASSERT_TRUE(log->Append("a").ok());
  }
  // A crash right after a segment was created, before its first record was written.
  std::ofstream(dir + "/0000000000000002.log").close();
  auto log = OpenLog(dir);
  EXPECT_EQ(All(*log).size(), 1u);
  ASSERT_TRUE(log->Append("b").ok());
  ASSERT_TRUE(log->Sync().ok());
  log.reset();
  log = OpenLog(dir);
  Records got = All(*log);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1], (std::pair<uint64_t, std::string>{2, "b"}));
}

TEST(AppendLogTest, NumberAfterSkipsNumbersNamedElsewhere) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/log";
  auto log = OpenLog(dir);
  ASSERT_TRUE(log->Append("a").ok());
  log->NumberAfter(40);
  EXPECT_EQ(log->Append("b").value(), 41u);
  log->NumberAfter(10);  // lower: no change
  EXPECT_EQ(log->Append("c").value(), 42u);
  log.reset();
  log = OpenLog(dir);
  Records got = All(*log);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].first, 41u);
  EXPECT_EQ(got[2].first, 42u);
}

TEST(AppendLogTest, WithoutADirectoryRecordsAreOnlyNumbered) {
  auto log = OpenLog("");
  EXPECT_EQ(log->Append("a").value(), 1u);
  EXPECT_EQ(log->Append("b").value(), 2u);
  EXPECT_TRUE(log->Sync().ok());
  EXPECT_TRUE(All(*log).empty());
  EXPECT_FALSE(log->HasSegmentsBefore(100));
}

TEST(AppendLogTest, AnEnginesLogLivesInItsDbpathAndIsOpenedOnce) {
  testing::TempDir tmp;
  {
    auto engine = testing::OpenOrDie(testing::DiskOptions(tmp.path()));
    auto log = engine->OpenAppendLog("side-log");
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    EXPECT_EQ(engine->OpenAppendLog("side-log").value().get(), log.value().get());
    EXPECT_EQ(engine->OpenAppendLog("bad/name").status().code(), ErrorCode::kBadValue);
    ASSERT_TRUE(log.value()->Append("kept").ok());
    ASSERT_TRUE(engine->WaitForJournal().ok());
    EXPECT_TRUE(std::filesystem::exists(tmp.path() + "/side-log/0000000000000001.log"));
  }
  auto engine = testing::OpenOrDie(testing::DiskOptions(tmp.path()));
  auto log = engine->OpenAppendLog("side-log");
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(All(*log.value()), (Records{{1, "kept"}}));
}

}  // namespace
}  // namespace hourglass::storage
