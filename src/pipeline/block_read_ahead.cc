#include "pipeline/block_read_ahead.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "base/helper_threads.h"
#include "base/interrupt.h"
#include "base/server_parameters.h"

namespace hourglass::pipeline {

namespace {

constexpr const char* kDepthParameter = "hourglassBlockReadAheadBlocks";
constexpr int kSpins = 4000;
constexpr int kMaxLeave = 64;  // columns a block may leave to the consumer

void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

ServerParameter* DepthParameter() {
  static ServerParameter* p = [] {
    auto& reg = ServerParameterRegistry::Get();
    if (ServerParameter* found = reg.Find(kDepthParameter)) return found;
    return reg.Register(kDepthParameter, int32_t{16}, true, true, [](const ParameterValue& v) {
      const int64_t n =
          std::holds_alternative<int32_t>(v) ? std::get<int32_t>(v) : std::get<int64_t>(v);
      if (n < 0 || n > 1024) {
        return Status(ErrorCode::kBadValue, std::string("Invalid value for parameter ") +
                                                kDepthParameter + ": must be between 0 and 1024");
      }
      return Status::OK();
    });
  }();
  return p;
}

}  // namespace

void RegisterBlockReadAheadParameters() { (void)DepthParameter(); }

// What the consumer and the helper share. The helper holds it too, so that nothing it touches
// goes away under it.
struct BlockReadAhead::Shared {
  std::mutex mu;
  std::condition_variable changed;
  std::deque<std::unique_ptr<DetachedBlock>> ready;  // read ahead, in the source's order
  Status error = Status::OK();                       // the source's error, after `ready`
  bool end = false;      // the helper read the last block (or the error)
  bool stop = false;     // the consumer is gone: the helper stops at its next block
  bool running = false;  // the helper is inside its loop
  // ready.size(), and whether `end` is set, readable without the lock: a consumer that finds no
  // block waits a few microseconds for one before it sleeps.
  std::atomic<size_t> available{0};
  std::atomic<bool> ended{false};
  // How many of each block's columns the helper leaves for the consumer to decode: one more
  // each time the consumer has to wait for a block, one fewer each time the helper has to wait
  // for room, so that the decoding is shared as the two threads' speeds allow.
  std::atomic<int> leave{0};
};

BlockReadAhead::BlockReadAhead(BlockSource& source) : source_(source) {
  depth_ = static_cast<int>(DepthParameter()->GetInt());
}

BlockReadAhead::~BlockReadAhead() {
  if (!shared_) return;
  std::unique_lock lk(shared_->mu);
  shared_->stop = true;
  shared_->changed.notify_all();
  shared_->changed.wait(lk, [&] { return !shared_->running; });
}

void BlockReadAhead::TryStartHelper() {
  direct_reads_ = 0;
  auto shared = std::make_shared<Shared>();
  shared->running = true;
  const size_t depth = static_cast<size_t>(depth_);
  const size_t batch = Batch();
  BlockSource* source = &source_;
  BlockSource::ThreadContext context = source_.HandOff();
  auto reads = [shared, depth, batch, source] {
    std::unique_lock lk(shared->mu);
    while (!shared->stop && !shared->end) {
      if (shared->ready.size() >= depth) {
        if (shared->leave.load(std::memory_order_relaxed) > 0) {
          shared->leave.fetch_sub(1, std::memory_order_relaxed);
        }
        shared->changed.wait(lk, [&] { return shared->stop || shared->ready.size() < depth; });
        continue;
      }
      lk.unlock();
      StatusWith<std::unique_ptr<DetachedBlock>> next =
          source->NextDetachedBlock(shared->leave.load(std::memory_order_relaxed));
      lk.lock();
      if (!next.ok()) {
        shared->error = next.status();
        shared->end = true;
      } else if (next.value() == nullptr) {
        shared->end = true;
      } else {
        shared->ready.push_back(std::move(next).value());
      }
      shared->available.store(shared->ready.size(), std::memory_order_release);
      shared->ended.store(shared->end, std::memory_order_release);
      // The consumer is woken for a batch of blocks, not for each: a wake-up costs about what
      // folding a small block does.
      if (shared->end || shared->ready.size() >= batch) shared->changed.notify_all();
    }
  };
  // The helper works for the consumer's operation: its reads stop when the operation is killed
  // or past its deadline (the error reaches the consumer as any read's).
  const bool started =
      HelperThreads::Get().TryRun([shared, reads, context, op = OperationControl::Current()] {
        OperationControl::Scope current(op);
        if (context) {
          context(reads);
        } else {
          reads();
        }
        std::lock_guard lk(shared->mu);
        shared->running = false;
        shared->changed.notify_all();
      });
  if (!started) return;
  shared_ = std::move(shared);
  started_ = true;
}

StatusWith<const ColumnBlock*> BlockReadAhead::NextBlock() {
  if (!began_) {
    began_ = true;
    detached_ = depth_ > 0 && source_.DetachBlocks();
  }
  if (!detached_) return source_.NextBlock();
  current_.reset();  // the last block's memory goes back before the next is waited for
  if (ended_) return static_cast<const ColumnBlock*>(nullptr);
  if (!started_ && direct_reads_ >= kBlocksBeforeHelper) TryStartHelper();
  if (!started_) {
    ++direct_reads_;
    HG_ASSIGN_OR_RETURN(current_, source_.NextDetachedBlock());
  } else {
    // The helper usually has the next block within microseconds: waiting for it awake costs
    // less than a sleep and a wake-up.
    for (int spin = 0; spin < kSpins && shared_->available.load(std::memory_order_acquire) == 0 &&
                       !shared_->ended.load(std::memory_order_acquire);
         ++spin) {
      Pause();
    }
    std::unique_lock lk(shared_->mu);
    if (shared_->ready.empty() && !shared_->end &&
        shared_->leave.load(std::memory_order_relaxed) < kMaxLeave) {
      shared_->leave.fetch_add(1, std::memory_order_relaxed);
    }
    shared_->changed.wait(lk, [&] { return !shared_->ready.empty() || shared_->end; });
    if (shared_->ready.empty()) {
      ended_ = true;
      if (!shared_->error.ok()) return shared_->error;
      return static_cast<const ColumnBlock*>(nullptr);
    }
    current_ = std::move(shared_->ready.front());
    shared_->ready.pop_front();
    shared_->available.store(shared_->ready.size(), std::memory_order_release);
    ++blocks_read_ahead_;
    // Likewise the helper, once there is room for a batch.
    if (shared_->ready.size() + Batch() == static_cast<size_t>(depth_)) {
      shared_->changed.notify_all();
    }
  }
  if (!current_) {
    ended_ = true;
    return static_cast<const ColumnBlock*>(nullptr);
  }
  HG_RETURN_IF_ERROR(current_->Complete());
  return &current_->block();
}

StatusWith<const ColumnBlock::Field*> BlockReadAhead::DecodeBounded(std::string_view name) {
  if (!detached_) return source_.DecodeBounded(name);
  if (!current_) {
    return Status(ErrorCode::kInternalError, "no current block to decode a bounded field of");
  }
  return current_->DecodeBounded(name);
}

}  // namespace hourglass::pipeline
