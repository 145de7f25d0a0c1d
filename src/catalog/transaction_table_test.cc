// The record of retryable writes against a real WiredTiger engine: statements recorded in a
// transaction are known once it commits (and not when it rolls back), after a reopen too; a
// session's older txnNumber is refused; records that arrive with replicated writes replace the
// session's older ones; idle sessions are reaped; a second write of a session waits for the first.
#include "catalog/transaction_table.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "storage/storage_test_util.h"

namespace hourglass::catalog {
namespace {

using bson::BsonObj;

const std::string kSession(16, '\x01');
const std::string kOther(16, '\x02');

class TransactionTableTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void TearDown() override {
    table_.reset();
    engine_.reset();
  }
  void Open() {
    table_.reset();
    engine_.reset();
    storage::EngineOptions opts = storage::testing::DiskOptions(dir_.path());
    opts.checkpoint_interval_secs = 0;
    engine_ = storage::testing::OpenOrDie(opts);
    ASSERT_NE(engine_, nullptr);
    table_ = std::move(TransactionTable::Open(engine_.get())).value();
  }

  // Records `ids` of (session, txn) with `result` in a transaction that commits if `commit`.
  void Record(const std::string& session, int64_t txn, std::vector<int32_t> ids,
              const BsonObj& result = BsonObj(), bool commit = true) {
    auto s = engine_->NewSession();
    ASSERT_TRUE(s->Begin().ok());
    StatementRecord rec{session, txn, std::move(ids), result};
    ASSERT_TRUE(table_->Record(*s, rec).ok());
    if (commit) {
      ASSERT_TRUE(s->Commit().ok());
    } else {
      s->Rollback();
    }
  }

  storage::testing::TempDir dir_;
  std::unique_ptr<storage::KvEngine> engine_;
  std::unique_ptr<TransactionTable> table_;
};

TEST_F(TransactionTableTest, KnowsCommittedStatementsOnly) {
  Record(kSession, 3, {0, 1}, bson::FromJson(R"({"n": 1})").value());
  Record(kSession, 3, {2}, BsonObj(), /*commit=*/false);
  auto out = table_->CheckOut(kSession, 3, 0);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out.value()->Executed(0).has_value());
  EXPECT_EQ(out.value()->Executed(1)->GetField("n").NumberLong(), 1);
  EXPECT_FALSE(out.value()->Executed(2).has_value());
  EXPECT_EQ(table_->counters().records_written.load(), 1);
}

TEST_F(TransactionTableTest, StatementsSurviveAReopen) {
  Record(kSession, 7, {4});
  Open();
  auto out = table_->CheckOut(kSession, 7, 0);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out.value()->Executed(4).has_value());
  EXPECT_FALSE(out.value()->Executed(0).has_value());
}

TEST_F(TransactionTableTest, AnOlderTxnNumberIsRefusedAndANewerForgetsTheOld) {
  Record(kSession, 5, {0});
  {
    auto old = table_->CheckOut(kSession, 4, 0);
    ASSERT_FALSE(old.ok());
    EXPECT_EQ(old.status().code(), ErrorCode::kTransactionTooOld);
    EXPECT_NE(old.status().reason().find("txnNumber 4 is prohibited"), std::string::npos);
    EXPECT_NE(old.status().reason().find("txnNumber 5 has already started"), std::string::npos);
  }
  {
    auto newer = table_->CheckOut(kSession, 6, 0);
    ASSERT_TRUE(newer.ok());
    EXPECT_FALSE(newer.value()->Executed(0).has_value());
  }
  // Begun, though it recorded nothing: 5 stays refused; after a reopen the table, which never
  // heard of 6, still knows 5's statements are gone.
  EXPECT_EQ(table_->CheckOut(kSession, 5, 0).status().code(), ErrorCode::kTransactionTooOld);
  Open();
  auto again = table_->CheckOut(kSession, 5, 0);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again.value()->Executed(0).has_value());
}

TEST_F(TransactionTableTest, AnotherEpochReadsTheTableAgain) {
  auto first = table_->CheckOut(kSession, 1, /*epoch=*/1);
  ASSERT_TRUE(first.ok());
  first.value().reset();
  // Records that arrived with replicated writes (another member was primary).
  auto s = engine_->NewSession();
  ASSERT_TRUE(s->Begin().ok());
  ASSERT_TRUE(
      table_->ApplyRecord(*s, StatementRecord{kSession, 1, {0, 1}, BsonObj()}.ToBson()).ok());
  ASSERT_TRUE(table_->ApplyRecord(*s, StatementRecord{kSession, 2, {9}, BsonObj()}.ToBson()).ok());
  ASSERT_TRUE(s->Commit().ok());
  auto same_epoch = table_->CheckOut(kSession, 1, 1);
  ASSERT_TRUE(same_epoch.ok());  // what this member knew in epoch 1
  same_epoch.value().reset();
  auto next_epoch = table_->CheckOut(kSession, 2, 2);
  ASSERT_TRUE(next_epoch.ok());
  EXPECT_TRUE(next_epoch.value()->Executed(9).has_value());
  next_epoch.value().reset();
  // Txn 2's record replaced txn 1's rows.
  EXPECT_EQ(table_->CheckOut(kSession, 1, 3).status().code(), ErrorCode::kTransactionTooOld);
}

// The txnNumbers of the table's rows, in key order.
std::vector<int64_t> RowTxnNumbers(storage::KvEngine& engine) {
  std::vector<int64_t> out;
  auto s = engine.NewSession();
  auto cursor = std::move(s->OpenCursorOrError(TransactionTable::kTable)).value();
  for (bool found = cursor->SeekFirst().value(); found; found = cursor->Next().value()) {
    const std::string_view key = cursor->key();
    uint64_t txn = 0;
    for (size_t i = 16; i < 24; ++i) txn = (txn << 8) | static_cast<uint8_t>(key[i]);
    out.push_back(static_cast<int64_t>(txn));
  }
  return out;
}

TEST_F(TransactionTableTest, OlderRowsGoOnceEachWhateverTheWayIn) {
  Record(kSession, 1, {0});
  Record(kSession, 1, {1});
  // A batch of the log brings a record per bucket: txn 1's rows go with the first.
  auto apply = [&](std::vector<int64_t> txns, bool commit) {
    auto s = engine_->NewSession();
    ASSERT_TRUE(s->Begin().ok());
    int32_t id = 0;
    for (int64_t txn : txns) {
      ASSERT_TRUE(
          table_->ApplyRecord(*s, StatementRecord{kSession, txn, {id++}, BsonObj()}.ToBson()).ok());
    }
    if (commit) {
      ASSERT_TRUE(s->Commit().ok());
    } else {
      s->Rollback();
    }
  };
  apply({2, 2, 2}, true);
  EXPECT_EQ(RowTxnNumbers(*engine_), (std::vector<int64_t>{2, 2, 2}));
  // A newer txnNumber in the same transaction removes the rows it wrote first.
  apply({3, 4}, true);
  EXPECT_EQ(RowTxnNumbers(*engine_), (std::vector<int64_t>{4}));
  // A removal rolled back removed nothing: the next one still finds txn 4's row.
  apply({5}, false);
  EXPECT_EQ(RowTxnNumbers(*engine_), (std::vector<int64_t>{4}));
  apply({6}, true);
  EXPECT_EQ(RowTxnNumbers(*engine_), (std::vector<int64_t>{6}));
  // A write of the primary removes them too, and after a reopen (memory gone) as well.
  Record(kOther, 1, {0});
  { ASSERT_TRUE(table_->CheckOut(kSession, 7, 0).ok()); }
  EXPECT_EQ(RowTxnNumbers(*engine_), (std::vector<int64_t>{1}));  // kOther's
  Record(kSession, 7, {0});
  Open();
  apply({8}, true);
  EXPECT_EQ(RowTxnNumbers(*engine_), (std::vector<int64_t>{8, 1}));
}

TEST_F(TransactionTableTest, ReapsIdleSessionsOnly) {
  Record(kSession, 1, {0});
  Record(kOther, 1, {0});
  const int64_t future = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count() +
                         60'000;
  auto reaped = table_->Reap(0);
  ASSERT_TRUE(reaped.ok());
  EXPECT_EQ(reaped.value(), 0);
  reaped = table_->Reap(future);
  ASSERT_TRUE(reaped.ok());
  EXPECT_EQ(reaped.value(), 2);
  auto out = table_->CheckOut(kSession, 1, 0);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out.value()->Executed(0).has_value());
}

TEST_F(TransactionTableTest, ASecondWriteOfASessionWaitsForTheFirst) {
  auto first = table_->CheckOut(kSession, 1, 0);
  ASSERT_TRUE(first.ok());
  std::atomic<bool> second_in{false};
  std::thread t([&] {
    auto second = table_->CheckOut(kSession, 1, 0);
    EXPECT_TRUE(second.ok());
    second_in = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(second_in.load());
  // Another session is not held up.
  EXPECT_TRUE(table_->CheckOut(kOther, 1, 0).ok());
  first.value().reset();
  t.join();
  EXPECT_TRUE(second_in.load());
}

TEST_F(TransactionTableTest, RecordsRoundTripAndMalformedOnesAreRefused) {
  StatementRecord rec{kSession, 12, {3, 4}, bson::FromJson(R"({"n": 2})").value()};
  auto back = StatementRecord::FromBson(rec.ToBson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back.value().session, kSession);
  EXPECT_EQ(back.value().txn_number, 12);
  EXPECT_EQ(back.value().stmt_ids, (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(back.value().result["n"].NumberLong(), 2);
  auto bad = StatementRecord::FromBson(bson::FromJson(R"({"lsid": {"id": 1}})").value());
  EXPECT_EQ(bad.status().code(), ErrorCode::kBadValue);
  EXPECT_NE(bad.status().reason().find("lsid"), std::string::npos);
}

}  // namespace
}  // namespace hourglass::catalog
