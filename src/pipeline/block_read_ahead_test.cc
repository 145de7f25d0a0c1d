// Reading ahead must hand over the source's blocks in its order, all of them, then its end or
// its error, and never touch the source once the consumer is gone.
#include "pipeline/block_read_ahead.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "base/helper_threads.h"
#include "base/server_parameters.h"

namespace hourglass::pipeline {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;

// Block i: one row whose column "v" holds i, and a bounded field "t" whose cell, once decoded,
// holds -i. The block owns the document its elements point into. With `leave`, "v" is added
// only by Complete, as a source that leaves a column to the consumer does.
class NumberedBlock : public DetachedBlock {
 public:
  NumberedBlock(int i, int leave) : left_(leave > 0) {
    BsonBuilder b;
    b.AppendInt32("v", i);
    b.AppendInt32("t", -i);
    doc_ = b.Obj();
    block_.num_rows = 1;
    block_.fields.push_back(
        ColumnBlock::Field{.name = "t", .bounded = true, .lo = doc_["t"], .hi = doc_["t"]});
    if (!left_) block_.fields.push_back(ColumnBlock::Field{.name = "v", .cells = {doc_["v"]}});
  }
  StatusWith<const ColumnBlock::Field*> DecodeBounded(std::string_view name) override {
    ColumnBlock::Field& t = block_.fields[0];
    if (name != "t" || !t.bounded) return Status(ErrorCode::kInternalError, "not bounded");
    t.bounded = false;
    t.cells = {doc_["t"]};
    return &t;
  }
  Status Complete() override {
    if (left_) block_.fields.push_back(ColumnBlock::Field{.name = "v", .cells = {doc_["v"]}});
    left_ = false;
    return Status::OK();
  }

 private:
  BsonObj doc_;
  bool left_;
};

// `blocks` numbered blocks, then the end, or an error instead of block `fail_at`. It checks that
// no two calls overlap and that no call comes after `closed` is set.
class NumberedSource : public BlockSource {
 public:
  NumberedSource(int blocks, bool detaches, int fail_at = -1)
      : blocks_(blocks), detaches_(detaches), fail_at_(fail_at) {}

  void RequireFields(const std::vector<std::string>& names) override { required = names; }
  void AcceptBounds(const std::vector<std::string>& names) override { bounded = names; }
  bool DetachBlocks() override {
    detach_calls++;
    return detaches_;
  }
  StatusWith<const ColumnBlock*> NextBlock() override {
    Enter();
    StatusWith<std::unique_ptr<DetachedBlock>> next = Make(0);
    Leave();
    if (!next.ok()) return next.status();
    attached_ = std::move(next).value();
    if (!attached_) return static_cast<const ColumnBlock*>(nullptr);
    return &attached_->block();
  }
  StatusWith<const ColumnBlock::Field*> DecodeBounded(std::string_view name) override {
    return attached_->DecodeBounded(name);
  }
  // The helper's reads run within the context handed off (the operation's, for a real scan).
  ThreadContext HandOff() override {
    ++handoffs;
    return [](const std::function<void()>& reads) {
      t_in_context = true;
      reads();
      t_in_context = false;
    };
  }
  StatusWith<std::unique_ptr<DetachedBlock>> NextDetachedBlock(int leave) override {
    if (std::this_thread::get_id() != consumer_ && !t_in_context) read_outside_context = true;
    Enter();
    max_leave = std::max(max_leave.load(), leave);
    last_leave = leave;
    if (leave > 0) ++blocks_leaving;
    if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us.load()));
    StatusWith<std::unique_ptr<DetachedBlock>> next = Make(leave);
    Leave();
    return next;
  }

  std::vector<std::string> required, bounded;
  std::atomic<int> detach_calls{0};
  std::atomic<int> calls{0};
  std::atomic<bool> overlapped{false};
  std::atomic<bool> closed{false};
  std::atomic<bool> called_after_close{false};
  std::atomic<int> max_leave{0};  // the most columns the consumer let the source leave
  std::atomic<int> last_leave{0};
  std::atomic<int> handoffs{0};
  std::atomic<bool> read_outside_context{false};
  std::atomic<int> blocks_leaving{0};  // blocks asked for with columns to leave
  std::atomic<int> delay_us{0};        // how long each detached block takes to read
  std::set<std::thread::id> threads() {
    std::lock_guard lk(mu_);
    return threads_;
  }

 private:
  StatusWith<std::unique_ptr<DetachedBlock>> Make(int leave) {
    const int i = next_++;
    if (i == fail_at_)
      return Status(ErrorCode::kBadValue, "block " + std::to_string(i) + " is bad");
    if (i >= blocks_) return std::unique_ptr<DetachedBlock>();
    return std::unique_ptr<DetachedBlock>(std::make_unique<NumberedBlock>(i, leave));
  }
  void Enter() {
    if (closed) called_after_close = true;
    if (in_call_.exchange(true)) overlapped = true;
    ++calls;
    std::lock_guard lk(mu_);
    threads_.insert(std::this_thread::get_id());
  }
  void Leave() { in_call_ = false; }

  static inline thread_local bool t_in_context = false;
  const std::thread::id consumer_ = std::this_thread::get_id();
  const int blocks_;
  const bool detaches_;
  const int fail_at_;
  int next_ = 0;
  std::atomic<bool> in_call_{false};
  std::unique_ptr<DetachedBlock> attached_;
  std::mutex mu_;
  std::set<std::thread::id> threads_;
};

// Reads every block, checking they come numbered in order; returns how many, or the error.
StatusWith<int> ReadAll(BlockSource& source) {
  int n = 0;
  while (true) {
    HG_ASSIGN_OR_RETURN(const ColumnBlock* block, source.NextBlock());
    if (block == nullptr) return n;
    const ColumnBlock::Field* v = block->Find("v");
    if (v == nullptr) return Status(ErrorCode::kInternalError, "a block came incomplete");
    EXPECT_EQ(v->cells[0].Int32(), n);
    ++n;
  }
}

// Whether the next block `reader` gives is the source's block `n`, complete.
::testing::AssertionResult NextIsBlock(BlockReadAhead& reader, int n) {
  StatusWith<const ColumnBlock*> block = reader.NextBlock();
  if (!block.ok()) return ::testing::AssertionFailure() << block.status().ToString();
  if (block.value() == nullptr) return ::testing::AssertionFailure() << "the end before " << n;
  const ColumnBlock::Field* v = block.value()->Find("v");
  if (v == nullptr) return ::testing::AssertionFailure() << "block " << n << " came incomplete";
  if (v->cells[0].Int32() != n) {
    return ::testing::AssertionFailure() << "block " << v->cells[0].Int32() << " came for " << n;
  }
  return ::testing::AssertionSuccess();
}

class BlockReadAheadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterBlockReadAheadParameters();
    depth_ = ServerParameterRegistry::Get().Find("hourglassBlockReadAheadBlocks");
    ASSERT_NE(depth_, nullptr);
    saved_ = depth_->GetInt();
    // The last test's helper may still be on its way back to idle.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (HelperThreads::Get().idle() < HelperThreads::Get().size()) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  void TearDown() override { ASSERT_TRUE(depth_->Set(saved_).ok()); }
  ServerParameter* depth_ = nullptr;
  int64_t saved_ = 0;
};

TEST_F(BlockReadAheadTest, HandsOverEveryBlockInOrderFromAHelperThread) {
  NumberedSource source(500, /*detaches=*/true);
  int64_t ahead = 0;
  {
    BlockReadAhead reader(source);
    reader.RequireFields({"v"});
    reader.AcceptBounds({"t"});
    StatusWith<int> n = ReadAll(reader);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(n.value(), 500);
    // The end stays the end.
    StatusWith<const ColumnBlock*> again = reader.NextBlock();
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again.value(), nullptr);
    ahead = reader.blocks_read_ahead();
  }
  EXPECT_EQ(source.required, std::vector<std::string>{"v"});
  EXPECT_EQ(source.bounded, std::vector<std::string>{"t"});
  EXPECT_EQ(source.detach_calls, 1);
  EXPECT_EQ(source.handoffs, 1);
  EXPECT_FALSE(source.read_outside_context);
  EXPECT_FALSE(source.overlapped);
  // The first blocks come from the consumer's thread, the rest from a helper.
  EXPECT_EQ(ahead, 500 - BlockReadAhead::kBlocksBeforeHelper);
  EXPECT_EQ(source.threads().size(), 2u);
  EXPECT_TRUE(source.threads().count(std::this_thread::get_id()));
}

TEST_F(BlockReadAheadTest, ASmallSourceIsReadOnTheConsumersThread) {
  // kBlocksBeforeHelper reads, the one that finds the end included.
  NumberedSource source(BlockReadAhead::kBlocksBeforeHelper - 1, /*detaches=*/true);
  BlockReadAhead reader(source);
  StatusWith<int> n = ReadAll(reader);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), BlockReadAhead::kBlocksBeforeHelper - 1);
  EXPECT_EQ(reader.blocks_read_ahead(), 0);
  EXPECT_EQ(source.threads(), std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST_F(BlockReadAheadTest, TheSourcesErrorComesAfterTheBlocksBeforeIt) {
  for (int fail_at : {3, BlockReadAhead::kBlocksBeforeHelper, 77}) {
    NumberedSource source(200, /*detaches=*/true, fail_at);
    BlockReadAhead reader(source);
    int n = 0;
    Status error = Status::OK();
    while (true) {
      StatusWith<const ColumnBlock*> block = reader.NextBlock();
      if (!block.ok()) {
        error = block.status();
        break;
      }
      ASSERT_NE(block.value(), nullptr) << "the end came instead of the error";
      ASSERT_NE(block.value()->Find("v"), nullptr);
      EXPECT_EQ(block.value()->Find("v")->cells[0].Int32(), n);
      ++n;
    }
    EXPECT_EQ(n, fail_at);
    EXPECT_EQ(error.code(), ErrorCode::kBadValue);
    EXPECT_EQ(error.reason(), "block " + std::to_string(fail_at) + " is bad");
  }
}

TEST_F(BlockReadAheadTest, AConsumerThatStopsEarlyStopsTheHelper) {
  NumberedSource source(100000, /*detaches=*/true);
  {
    BlockReadAhead reader(source);
    for (int i = 0; i < 40; ++i) {
      StatusWith<const ColumnBlock*> block = reader.NextBlock();
      ASSERT_TRUE(block.ok());
      ASSERT_NE(block.value(), nullptr);
    }
  }
  source.closed = true;
  const int calls = source.calls;
  // Held ahead at most: the depth, plus the block the helper was reading.
  EXPECT_LE(calls, 40 + static_cast<int>(depth_->GetInt()) + 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(source.calls, calls);
  EXPECT_FALSE(source.called_after_close);
}

TEST_F(BlockReadAheadTest, BoundedFieldsAreDecodedInTheCurrentBlock) {
  NumberedSource source(100, /*detaches=*/true);
  BlockReadAhead reader(source);
  for (int i = 0; i < 100; ++i) {
    StatusWith<const ColumnBlock*> block = reader.NextBlock();
    ASSERT_TRUE(block.ok());
    ASSERT_NE(block.value(), nullptr);
    if (i % 7 != 0) continue;
    ASSERT_NE(block.value()->Find("v"), nullptr);
    StatusWith<const ColumnBlock::Field*> t = reader.DecodeBounded("t");
    ASSERT_TRUE(t.ok());
    EXPECT_FALSE(t.value()->bounded);
    EXPECT_EQ(t.value()->cells[0].Int32(), -i);
  }
}

TEST_F(BlockReadAheadTest, TheConsumersShareOfTheDecodingFollowsTheSlowerSide) {
  // While the source is slow the consumer keeps waiting for blocks, so it takes a share of the
  // decoding (the source leaves it columns); once the consumer is the slow one the helper keeps
  // waiting for room and takes the share back. Every block the consumer gets is complete.
  NumberedSource source(400, /*detaches=*/true);
  source.delay_us = 300;
  BlockReadAhead reader(source);
  int n = 0;
  for (; n < 150; ++n) ASSERT_TRUE(NextIsBlock(reader, n));
  EXPECT_GT(source.max_leave, 1);
  EXPECT_GT(source.blocks_leaving, 50);
  source.delay_us = 0;
  for (; n < 400; ++n) {
    ASSERT_TRUE(NextIsBlock(reader, n));
    std::this_thread::sleep_for(std::chrono::microseconds(300));
  }
  EXPECT_EQ(source.last_leave, 0);
}

TEST_F(BlockReadAheadTest, ASourceThatDoesNotDetachIsReadDirectly) {
  NumberedSource source(300, /*detaches=*/false);
  BlockReadAhead reader(source);
  StatusWith<int> n = ReadAll(reader);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 300);
  EXPECT_EQ(reader.blocks_read_ahead(), 0);
  EXPECT_EQ(source.detach_calls, 1);
  EXPECT_EQ(source.threads(), std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST_F(BlockReadAheadTest, DepthZeroTurnsReadingAheadOff) {
  ASSERT_TRUE(depth_->Set(int32_t{0}).ok());
  NumberedSource source(300, /*detaches=*/true);
  BlockReadAhead reader(source);
  StatusWith<int> n = ReadAll(reader);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 300);
  EXPECT_EQ(source.detach_calls, 0);
  EXPECT_EQ(reader.blocks_read_ahead(), 0);
  EXPECT_FALSE(depth_->Set(int32_t{-1}).ok());
}

TEST_F(BlockReadAheadTest, DepthOneStillHandsOverEveryBlock) {
  ASSERT_TRUE(depth_->Set(int32_t{1}).ok());
  NumberedSource source(300, /*detaches=*/true);
  BlockReadAhead reader(source);
  StatusWith<int> n = ReadAll(reader);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 300);
  EXPECT_GT(reader.blocks_read_ahead(), 0);
  EXPECT_FALSE(source.overlapped);
}

}  // namespace
}  // namespace hourglass::pipeline
