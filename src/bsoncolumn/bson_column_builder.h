// BsonColumnBuilder: encodes a sequence of cells (BSON values or "missing") into a BSONColumn
// binary (BinData subtype 7), producing the bytes MongoDB's BSONColumnBuilder produces for the
// same sequence.
//
// Scalars go through one ColumnStreamEncoder (column_stream_encoder.h). Non-empty objects and
// arrays go to interleaved mode: the builder buffers objects while it grows a reference object
// (a superset of their fields, merged in order), and once it has buffered more than twice as
// many objects as the reference has scalar fields it writes 0xF1 (object root) or 0xF2 (array
// root), the reference object, and one stream per scalar field; the streams' blocks are merged
// in the order a decoder consumes them, and 0x00 ends the section. An object that does not fit
// the reference (different order, object where a scalar was, ...) ends the section and starts
// a new one.
//
// Incremental use: Append and Skip cost time in proportion to the value appended (amortized;
// MongoDB's algorithm occasionally re-scales up to one word's worth of pending doubles, and
// objects are buffered until the reference object is chosen). Every byte the builder has written
// is final except the count byte of the open Simple-8b control block; what is pending (at most
// one word's worth of values, a run-length count, the open block, and in interleaved mode the
// leaves' blocks not yet placed) is finished on a scratch copy by Finish() and Intermediate().
//
// - Intermediate() returns what changed since its previous call, like MongoDB's
//   BSONColumnBuilder::intermediate(): the length of the prefix of the previously returned binary
//   that is unchanged, and the bytes that follow it (one byte-range edit of a stored column).
//   Cost: the bytes written since the previous call plus the pending part, not the column.
// - Finish() returns the whole column as if it ended now (the written bytes are copied once, the
//   pending part finished on a scratch copy); the builder continues.
// - FromBinary() continues a stored column: it decodes the binary and replays its cells, so it
//   costs as much as building the column from the start (once per re-opening), and its first
//   Intermediate() is relative to the stored binary.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "bsoncolumn/column_stream_encoder.h"

namespace hourglass::bsoncolumn {

class BsonColumnBuilder {
 public:
  // Intermediate()'s answer. The column is now: the first `offset` bytes of the binary the
  // previous call described (0 at the first call), followed by `data` — and, when `head` is set,
  // with the byte at `head_offset` (< offset) replaced by `*head`. A block's count byte changes
  // when words are added behind the words it already counts: the head spares rewriting those.
  struct Diff {
    size_t offset = 0;
    std::string data;
    std::optional<char> head;
    size_t head_offset = 0;
  };

  BsonColumnBuilder() = default;
  BsonColumnBuilder(const BsonColumnBuilder&) = default;
  BsonColumnBuilder& operator=(const BsonColumnBuilder&) = default;

  // A builder that continues `binary` (a BSONColumn, without the BinData header): appending to it
  // gives the bytes a builder fed every cell from the start gives. It decodes and replays the
  // cells (time and memory in proportion to the column). Its first Intermediate() is relative to
  // `binary`: if `binary` is what this encoder writes for its cells (MongoDB 7.0+ and this
  // module), the unchanged prefix is everything but the open block; if another encoder wrote it
  // differently (MongoDB 5.x/6.x's 0xF0 sections), the edit starts at the first byte that
  // differs. InvalidBSON if `binary` is not a valid column.
  static StatusWith<BsonColumnBuilder> FromBinary(std::string_view binary);

  // Appends `e`'s value (its field name is ignored); EOO appends a missing cell. BadValue for
  // CodeWScope, at any depth, which a column cannot hold (the builder is unchanged).
  Status Append(const bson::BsonElement& e);
  // The same for a field a FieldCursor parsed: its type, value and size are known already.
  Status Append(const bson::FieldView& f);
  // Whether a column can hold the value of an element of type `type` whose value bytes start at
  // `value` (anything but CodeWScope, at any depth).
  static bool CanHold(bson::BsonType type, const char* value);
  // Appends a missing cell.
  void Skip();

  // The column as if it ended now. The builder is unchanged and may continue.
  std::string Finish() const;
  // What changed since the previous Intermediate() (see Diff): applying it to the previous result
  // gives Finish()'s bytes. Amortized cost in proportion to what was appended since the previous
  // call (plus the pending part, see above).
  Diff Intermediate();
  // Intermediate() in two steps, for a caller whose write of the diff may fail or be retried:
  // ProposeIntermediate() computes it without recording it (any number of times);
  // AcceptIntermediate() records the proposal that reached storage. Appending between the two
  // is not allowed.
  struct Proposal {
    Diff diff;
    size_t stable = 0;
    std::string tail;
  };
  Proposal ProposeIntermediate() const;
  void AcceptIntermediate(Proposal proposal);
  // The column `proposal` describes, from byte `from` on (`from` at or after where the previous
  // accepted proposal's unchanged bytes end, e.g. its diff's `head_offset`): to say the change
  // as one range, as MongoDB's binary diffs do.
  std::string BytesFrom(const Proposal& proposal, size_t from) const;
  // Bytes held, this object's own included (written column, pending values, the last
  // intermediate tail).
  size_t ApproxMemory() const;
  // The column, finishing the builder itself (no copy); the builder is empty afterwards.
  std::string Release();

  // Cells appended so far.
  size_t size() const { return cells_; }
  // How many times an object that did not fit the interleaved section's reference ended it and
  // started a new one (MongoDB's numSubObjCompressionRestart counts these per bucket).
  int64_t interleave_restarts() const { return interleave_restarts_; }

 private:
  enum class Mode { kRegular, kDeterminingReference, kAppending };
  // One leaf of an interleaved section. `buf` holds its blocks from `consumed` on (earlier ones
  // were moved to the column); `blocks` lists the finished ones not yet moved.
  struct SubStream {
    ColumnStreamEncoder encoder;
    std::string buf;
    std::deque<std::pair<size_t, size_t>> blocks;
    size_t consumed = 0;
  };
  // (cells of the leaf's blocks already in the column, leaf index): the leaf with the smallest
  // key supplies the next block a decoder reads.
  using MergeKey = std::pair<uint64_t, size_t>;
  using MergeHeap = std::priority_queue<MergeKey, std::vector<MergeKey>, std::greater<MergeKey>>;

  void AppendObject(const bson::BsonElement& e);
  // A scalar (or empty object/array) cell: ends an interleaved section, then the regular stream.
  void AppendScalar(bson::BsonType type, std::string_view value);
  void AppendRegular(bson::BsonType type, std::string_view value);
  void StartDeterminingReference(std::string_view obj, bson::BsonType type);
  void FinishDeterminingReference();
  bool AppendSubElements(std::string_view obj);
  void FlushInterleaved();
  void MergeReadyBlocks();
  void Finalize();
  // Length of the prefix of buf_ that can never change, and the rest of the column as Finish()
  // would write it.
  std::pair<size_t, std::string> StableTail() const;

  // What every Append reads first, together: a bucket's columns are appended to a few cells at
  // a time, each from cold cache lines.
  std::string buf_;
  size_t cells_ = 0;
  Mode mode_ = Mode::kRegular;
  ColumnStreamEncoder regular_;
  std::string reference_;  // the reference object's bytes
  bson::BsonType reference_type_ = bson::BsonType::kObject;
  std::vector<std::string> buffered_;  // objects waiting for the reference ({} for a skip)
  std::vector<SubStream> streams_;
  MergeHeap merge_;  // every leaf, in interleaved appending mode
  // Intermediate(): whether it was called, the stable length then, and the tail it returned.
  bool intermediate_called_ = false;
  size_t last_stable_ = 0;
  std::string last_tail_;
  int64_t interleave_restarts_ = 0;
};

}  // namespace hourglass::bsoncolumn
