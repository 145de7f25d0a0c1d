// Reading ahead of a block consumer: while the consumer folds one block, a helper thread
// (base/helper_threads.h) takes the next ones from the source, which reads and decodes them, up
// to hourglassBlockReadAheadBlocks blocks ahead. Blocks reach the consumer in the source's
// order, so what it computes is the same with or without reading ahead.
//
// The first blocks are read on the consumer's thread: a small read is over before a hand-off
// would pay for itself. Reading ahead needs a source that detaches its blocks
// (BlockSource::DetachBlocks) and an idle helper; otherwise the source is read directly.
//
// Thread-safety: the wrapper is used by one thread; only the source is read from the helper,
// one call at a time, and the consumer must not touch the source otherwise until the wrapper is
// destroyed (its destructor stops the helper and waits for it).
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/column_block.h"

namespace hourglass::pipeline {

// Registers hourglassBlockReadAheadBlocks (int, default 16, 0 turns reading ahead off; startup
// and runtime). Idempotent; the server calls it before it applies --setParameter.
void RegisterBlockReadAheadParameters();

class BlockReadAhead : public BlockSource {
 public:
  explicit BlockReadAhead(BlockSource& source);
  ~BlockReadAhead() override;
  BlockReadAhead(const BlockReadAhead&) = delete;
  BlockReadAhead& operator=(const BlockReadAhead&) = delete;

  void RequireFields(const std::vector<std::string>& names) override {
    source_.RequireFields(names);
  }
  void AcceptBounds(const std::vector<std::string>& names) override { source_.AcceptBounds(names); }
  StatusWith<const ColumnBlock*> NextBlock() override;
  StatusWith<const ColumnBlock::Field*> DecodeBounded(std::string_view name) override;

  // How many blocks the helper thread read (0: none, every block was read by the consumer).
  int64_t blocks_read_ahead() const { return blocks_read_ahead_; }

  // The blocks read on the consumer's thread before a helper is asked for (and again between
  // tries when none was idle).
  static constexpr int kBlocksBeforeHelper = 8;

 private:
  struct Shared;
  // Hands the rest of the source to a helper thread, when one is idle.
  void TryStartHelper();
  // The blocks handed over at a time: half of those held ahead.
  size_t Batch() const { return std::max<size_t>(1, static_cast<size_t>(depth_) / 2); }

  BlockSource& source_;
  int depth_ = 0;          // blocks held ahead; 0: the source is read directly
  bool began_ = false;     // the first block was asked for
  bool detached_ = false;  // the source gives detached blocks
  bool started_ = false;   // a helper reads the source
  bool ended_ = false;     // the last block was handed out (or the source's error)
  int direct_reads_ = 0;   // blocks read on this thread since the last try for a helper
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<DetachedBlock> current_;
  int64_t blocks_read_ahead_ = 0;
};

}  // namespace hourglass::pipeline
