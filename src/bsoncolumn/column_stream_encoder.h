// ColumnStreamEncoder: the encoder of one BSONColumn stream (the whole column in regular mode,
// or one leaf of an interleaved section), reproducing MongoDB's BSONColumnBuilder per-stream
// choices so that the bytes are the bytes MongoDB writes.
//
// Each value is compared with the previous one: a type change, or a value that cannot become a
// Simple-8b delta, is written as a literal (type byte, empty name, value); otherwise the zig-zag
// delta (delta of delta for ObjectId, Date, Timestamp) goes to a Simple8bBuilder whose words are
// grouped under control bytes (at most 16 words each). Doubles are scaled by 1, 10, 100, 10^4 or
// 10^8 when that makes them integers; the encoder keeps the smallest scale that fits the values
// of the current block, re-scaling pending values or starting a new block, whichever gives fewer
// words, and lowers the scale again after each block it writes.
//
// The encoder owns no buffer: every call takes the ColumnSink it writes to. Everything it has
// written is final except the count in the open control block's byte (open_control_offset()):
// words are only ever appended after it. FlushCopyTo writes what Flush would write without
// changing the encoder, in time proportional to the pending values (at most one word's worth,
// or a run-length count) plus the open block, which is how a column is finished, or an
// intermediate tail computed, while appending continues. Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bson/bson.h"
#include "bsoncolumn/bson_column_values.h"
#include "bsoncolumn/simple8b.h"

namespace hourglass::bsoncolumn {

// Where a stream's bytes go. `blocks`, when set, records every finished control block (offset and
// size in `*buf`): interleaved sections use it to merge their leaves' blocks in decoding order.
struct ColumnSink {
  std::string* buf;
  std::deque<std::pair<size_t, size_t>>* blocks = nullptr;
};

class ColumnStreamEncoder {
 public:
  ColumnStreamEncoder();

  // Appends a value of type `type` whose value bytes are `value` (no EOO).
  void Append(ColumnSink& sink, bson::BsonType type, std::string_view value);
  // Appends a missing cell.
  void Skip(ColumnSink& sink);
  // Writes everything pending. Appending may continue (a new control byte follows).
  void Flush(ColumnSink& sink);

  // What Flush would write, written to `sink` without changing this encoder. `sink.buf` must hold
  // this stream's bytes from offset `from` on, where `from` is at most open_control_offset() (the
  // open control block is rewritten there); offsets recorded in `sink.blocks` are relative to it.
  void FlushCopyTo(ColumnSink& sink, size_t from) const;
  // Offset of the open control block, whose count byte may still change, or -1 if there is none.
  ptrdiff_t open_control_offset() const { return control_offset_; }
  // The caller dropped the first `n` bytes of this stream's buffer (all before the open block).
  void ShiftOffsets(size_t n) {
    if (control_offset_ >= 0) control_offset_ -= static_cast<ptrdiff_t>(n);
  }

  // Makes `type`/`value` the previous value without writing it (interleaved leaves start from
  // their value in the reference object).
  void SetPrevious(bson::BsonType type, std::string_view value);

  // Heap bytes held (the previous value, pending values, scratch builders).
  size_t HeapMemory() const;

  // Tests only: whether a double that completes a word may skip re-appending the pending values
  // when that would rebuild the same state, and whether full-precision doubles take the fast
  // path built on that (on by default; the bytes are the same either way, which the tests check
  // by turning it off).
  static void SetRestartShortcutForTest(bool on) { restart_shortcut_ = on; }

 private:
  struct Writer;
  bson::BsonType prev_type() const { return static_cast<bson::BsonType>(prev_[0]); }
  std::string_view prev_value() const { return std::string_view(prev_).substr(2); }
  void StorePrevious(bson::BsonType type, std::string_view value);
  void InitializeFromPrevious();
  void WriteLiteralFromPrevious(ColumnSink& sink);
  bool AppendDouble(ColumnSink& sink, double value, double previous);
  // Append of a double in the steady state of a full-precision column (the memory-as-integer
  // scale, one value pending, each value completing a word): the same bytes and state as the
  // general path, with less work. Returns false, changing nothing, when not in that state.
  bool AppendDoubleFast(ColumnSink& sink, std::string_view value);
  // After a double's delta completed a word: back to the lowest scale for the pending values.
  void RestartAfterWord(ColumnSink& sink, int64_t encoded);
  void AppendWordBytes(ColumnSink& sink, uint64_t word);
  // Makes s64_ hold the steady state (steady_pending_) again, before anything else uses it.
  void SettleSteady();
  std::optional<Simple8bBuilder<uint64_t>> TryRescalePending(int64_t encoded, int new_scale) const;
  void WriteWord(ColumnSink& sink, uint64_t word);
  ptrdiff_t IncrementControlCount(ColumnSink& sink);
  void FlushBuilders(ColumnSink& sink);

  std::string prev_;  // type byte, 0x00, value bytes of the previous value ("\0\0" = none)
  Simple8bBuilder<uint64_t> s64_;
  // The steady state of a full-precision column, kept without s64_'s bookkeeping: when set, the
  // stream's builder is a new builder after Append(*steady_pending_) (one value pending, which
  // shares a word with no other), whatever s64_ holds; SettleSteady makes s64_ that builder.
  std::optional<uint64_t> steady_pending_;
  int64_t prev_enc64_ = 0;
  int64_t prev_delta_ = 0;
  double last_in_prev_block_ = 0;
  int scale_ = kScaleMemoryAsInteger;
  ptrdiff_t control_offset_ = -1;
  // The byte at control_offset_ while it is open, kept here so that counting a word is a store
  // rather than a load of a line last touched a commit ago (a cache miss per word written).
  uint8_t control_byte_ = 0;
  bool store128_ = false;
  // The 128-bit stream's state after the 64-bit one's: an encoder appending doubles or integers
  // to one of a bucket's many columns then touches fewer cache lines.
  Simple8bBuilder<uint128> s128_;
  std::optional<int128> prev_enc128_;
  // Builders AppendDouble re-appends pending values from, one per level of its recursion, kept
  // so that their memory is reused. Scratch, not state: a copy of the encoder starts without.
  struct Spares {
    Spares() = default;
    Spares(const Spares&) {}
    Spares& operator=(const Spares&) { return *this; }
    Spares(Spares&&) = default;
    Spares& operator=(Spares&&) = default;
    std::vector<std::unique_ptr<Simple8bBuilder<uint64_t>>> builders;
    size_t depth = 0;
  };
  Spares spares_;
  static inline bool restart_shortcut_ = true;
};

}  // namespace hourglass::bsoncolumn
