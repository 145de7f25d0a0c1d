#include "storage/cursor.h"

#include <gtest/gtest.h>

#include <limits>

#include "storage/kv_engine.h"
#include "storage/record_id.h"
#include "storage/storage_test_util.h"

namespace hourglass::storage {
namespace {

class CursorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions opts;
    opts.dbpath = dir_.path();
    opts.in_memory = true;
    opts.cache_size_mb = 32;
    auto engine = KvEngine::Open(opts);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
    ASSERT_TRUE(engine_->CreateTable("t").ok());
    session_ = engine_->NewSession();
  }
  void TearDown() override {
    session_.reset();
    engine_.reset();
  }

  void InsertIds(const std::vector<int64_t>& ids) {
    for (int64_t id : ids) {
      ASSERT_TRUE(session_->Insert("t", EncodeRecordId(id), std::to_string(id)).ok());
    }
  }

  // Ids from the cursor's current position onwards, moving forward or backward.
  std::vector<int64_t> Drain(Cursor& c, StatusWith<bool> first, bool forward) {
    std::vector<int64_t> out;
    for (auto more = std::move(first); more.ok() && more.value();
         more = forward ? c.Next() : c.Prev()) {
      out.push_back(DecodeRecordId(c.key()));
      EXPECT_EQ(c.value(), std::to_string(out.back()));
    }
    return out;
  }

  testing::TempDir dir_;
  std::unique_ptr<KvEngine> engine_;
  std::unique_ptr<Session> session_;
};

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST_F(CursorTest, IteratesRecordIdsInNumericOrderBothWays) {
  InsertIds({5, -1, kMax, 0, -300, 256, kMin, 1, 255});
  auto c = session_->OpenCursor("t");
  ASSERT_NE(c, nullptr);
  std::vector<int64_t> ascending = {kMin, -300, -1, 0, 1, 5, 255, 256, kMax};
  EXPECT_EQ(Drain(*c, c->SeekFirst(), true), ascending);
  std::vector<int64_t> descending(ascending.rbegin(), ascending.rend());
  EXPECT_EQ(Drain(*c, c->SeekLast(), false), descending);
}

TEST_F(CursorTest, SeekFindsNearestKeyInDirection) {
  InsertIds({-10, 0, 10, 20});
  auto c = session_->OpenCursor("t");
  ASSERT_NE(c, nullptr);
  // Exact hits.
  EXPECT_EQ(Drain(*c, c->Seek(EncodeRecordId(0)), true), (std::vector<int64_t>{0, 10, 20}));
  EXPECT_EQ(Drain(*c, c->Seek(EncodeRecordId(0), false), false), (std::vector<int64_t>{0, -10}));
  // Between keys: forward lands on the next larger, reverse on the next smaller.
  EXPECT_EQ(Drain(*c, c->Seek(EncodeRecordId(-5)), true), (std::vector<int64_t>{0, 10, 20}));
  EXPECT_EQ(Drain(*c, c->Seek(EncodeRecordId(15), false), false),
            (std::vector<int64_t>{10, 0, -10}));
  // Beyond the ends.
  auto past = c->Seek(EncodeRecordId(21));
  ASSERT_TRUE(past.ok());
  EXPECT_FALSE(past.value());
  EXPECT_FALSE(c->Valid());
  auto before = c->Seek(EncodeRecordId(-11), false);
  ASSERT_TRUE(before.ok());
  EXPECT_FALSE(before.value());
  EXPECT_EQ(Drain(*c, c->Seek(EncodeRecordId(-11)), true), (std::vector<int64_t>{-10, 0, 10, 20}));
  EXPECT_EQ(Drain(*c, c->Seek(EncodeRecordId(21), false), false),
            (std::vector<int64_t>{20, 10, 0, -10}));
}

TEST_F(CursorTest, ExhaustedCursorStaysAtEnd) {
  InsertIds({1, 2});
  auto c = session_->OpenCursor("t");
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->SeekLast().value());
  EXPECT_FALSE(c->Next().value());
  EXPECT_FALSE(c->Next().value());
  EXPECT_FALSE(c->Prev().value());
  // A fresh cursor's first Next starts at the beginning.
  auto fresh = session_->OpenCursor("t");
  ASSERT_TRUE(fresh->Next().value());
  EXPECT_EQ(DecodeRecordId(fresh->key()), 1);
}

TEST_F(CursorTest, EmptyTable) {
  auto c = session_->OpenCursor("t");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->SeekFirst().value());
  EXPECT_FALSE(c->SeekLast().value());
  EXPECT_FALSE(c->Seek("anything").value());
  EXPECT_FALSE(c->Seek("anything", false).value());
}

TEST_F(CursorTest, BytewiseOrderForArbitraryKeys) {
  for (std::string k : {std::string("b"), std::string("a"), std::string("ab"),
                        std::string("\xff", 1), std::string("\0", 1), std::string("a\0", 2)}) {
    ASSERT_TRUE(session_->Insert("t", k, "v").ok());
  }
  auto c = session_->OpenCursor("t");
  std::vector<std::string> keys;
  for (auto more = c->SeekFirst(); more.ok() && more.value(); more = c->Next()) {
    keys.emplace_back(c->key());
  }
  EXPECT_EQ(keys, (std::vector<std::string>{std::string("\0", 1), "a", std::string("a\0", 2), "ab",
                                            "b", std::string("\xff", 1)}));
}

TEST_F(CursorTest, ResumesAfterLastKeyInANewSession) {
  InsertIds({1, 2, 3, 4, 5, 6});
  std::string last_key;
  std::vector<int64_t> seen;
  {
    auto c = session_->OpenCursor("t");
    ASSERT_TRUE(c->SeekFirst().value());
    seen.push_back(DecodeRecordId(c->key()));
    ASSERT_TRUE(c->Next().value());
    seen.push_back(DecodeRecordId(c->key()));
    last_key = std::string(c->key());
  }
  // Between "getMore" calls: the last returned key is deleted, a key before the resume point
  // and one after it are added.
  ASSERT_TRUE(session_->Remove("t", EncodeRecordId(2)).ok());
  ASSERT_TRUE(session_->Insert("t", EncodeRecordId(0), "0").ok());
  ASSERT_TRUE(session_->Insert("t", EncodeRecordId(7), "7").ok());
  auto other = engine_->NewSession();
  auto c = other->OpenCursor("t");
  auto rest = Drain(*c, c->SeekAfter(last_key), true);
  seen.insert(seen.end(), rest.begin(), rest.end());
  EXPECT_EQ(seen, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}));
  // Reverse resume.
  EXPECT_EQ(Drain(*c, c->SeekAfter(EncodeRecordId(4), false), false),
            (std::vector<int64_t>{3, 1, 0}));
}

TEST_F(CursorTest, SeesOwnTransactionAndLosesPositionAtCommit) {
  InsertIds({1, 3});
  ASSERT_TRUE(session_->Begin().ok());
  ASSERT_TRUE(session_->Insert("t", EncodeRecordId(2), "2").ok());
  auto c = session_->OpenCursor("t");
  EXPECT_EQ(Drain(*c, c->SeekFirst(), true), (std::vector<int64_t>{1, 2, 3}));
  ASSERT_TRUE(c->Seek(EncodeRecordId(2)).value());
  ASSERT_TRUE(session_->Commit().ok());
  EXPECT_FALSE(c->Valid());
  EXPECT_EQ(c->Next().status().code(), ErrorCode::kIllegalOperation);
  EXPECT_EQ(Drain(*c, c->Seek(EncodeRecordId(2)), true), (std::vector<int64_t>{2, 3}));
}

TEST_F(CursorTest, SnapshotCursorIgnoresLaterCommits) {
  InsertIds({1, 2});
  ASSERT_TRUE(session_->Begin().ok());
  auto c = session_->OpenCursor("t");
  ASSERT_TRUE(c->SeekFirst().value());
  auto other = engine_->NewSession();
  ASSERT_TRUE(other->Insert("t", EncodeRecordId(3), "3").ok());
  ASSERT_TRUE(other->Remove("t", EncodeRecordId(2)).ok());
  EXPECT_EQ(Drain(*c, c->SeekFirst(), true), (std::vector<int64_t>{1, 2}));
  session_->Rollback();
  EXPECT_EQ(Drain(*c, c->SeekFirst(), true), (std::vector<int64_t>{1, 3}));
}

}  // namespace
}  // namespace hourglass::storage
