// Column blocks: rows handed over column by column by a source that stores them that way (the
// buckets of a time-series collection), so that a stage able to work on columns ($group whose
// key and accumulators read plain top-level fields) skips building a document per row.
//
// A block describes `num_rows` rows. A field of the block is either a column (one element per
// row, EOO where the row lacks the field) or a constant (the same element for every row, like a
// time-series bucket's meta field). A field the block does not list is missing in every row.
// `selection`, when `all_rows` is false, lists the rows (ascending) that passed the query; the
// others must be ignored. Row order is the order a document stream would have produced them in.
// A column the consumer agreed to take by its bounds (BlockSource::AcceptBounds) may come as a
// bounded field instead: no cells, only the least and greatest value its rows hold.
// A column whose present cells all hold one numeric type may come as numbers instead of
// elements (a compressed bucket's column, decoded without an element per cell): every consumer
// reads a column's rows through Field::Cell, or reads the numbers directly.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::pipeline {

// Room for one numeric cell as an element (type, empty name, value), which an element made by
// NumberColumn::Element borrows.
struct CellScratch {
  char bytes[10];
};

// Whether the integer v converts to a double exactly (|v| <= 2^53), so that comparing it as a
// double compares it exactly.
inline bool ExactAsDouble(int64_t v) {
  constexpr int64_t kLimit = int64_t{1} << 53;
  return v >= -kLimit && v <= kLimit;
}

// A column of numbers: every present row holds a value of type `type` (kDouble, kInt32, kInt64
// or kDate). values[row] is a double's IEEE-754 bits, an int32 sign-extended, an int64, or a
// date's milliseconds; present[row] is 0 for a row without the field (nullptr: every row has it).
struct NumberColumn {
  bson::BsonType type = bson::BsonType::kEOO;  // kEOO: not a column of numbers
  const uint64_t* values = nullptr;
  const uint8_t* present = nullptr;

  bool Present(size_t row) const { return present == nullptr || present[row] != 0; }
  double Double(size_t row) const { return std::bit_cast<double>(values[row]); }
  int64_t Int(size_t row) const { return static_cast<int64_t>(values[row]); }
  // The row's cell as an element (EOO when missing), the same the element form holds; it
  // borrows `scratch`.
  bson::BsonElement Element(size_t row, CellScratch& scratch) const {
    if (!Present(row)) return bson::BsonElement();
    scratch.bytes[0] = static_cast<char>(type);
    scratch.bytes[1] = '\0';
    if (type == bson::BsonType::kInt32) {
      const int32_t v = static_cast<int32_t>(Int(row));
      std::memcpy(scratch.bytes + 2, &v, 4);
    } else {
      std::memcpy(scratch.bytes + 2, &values[row], 8);
    }
    return bson::BsonElement(scratch.bytes, 0);
  }
};

struct ColumnBlock {
  struct Field {
    std::string name;
    bool constant = false;
    bson::BsonElement value = {};               // constant: the value of every row
    std::vector<bson::BsonElement> cells = {};  // column: one element per row (EOO: missing)
    // A column of numbers instead of `cells` (which is then empty) when numbers.type is set.
    NumberColumn numbers = {};
    // Bounded (only in a block whose rows all count): `cells` is empty; every row holds a value
    // of the type of `lo` and `hi`, which are the same type, with lo <= value <= hi.
    bool bounded = false;
    bson::BsonElement lo = {};
    bson::BsonElement hi = {};

    // A column's cell of `row` (EOO: missing), from `cells` or `numbers` (then borrowing
    // `scratch`).
    bson::BsonElement Cell(size_t row, CellScratch& scratch) const {
      return numbers.type == bson::BsonType::kEOO ? cells[row] : numbers.Element(row, scratch);
    }
    // Whether a column holds byte-identical cells in rows a and b (both missing included): a
    // deterministic expression of the field then has the same value in both rows.
    bool SameCell(size_t a, size_t b) const {
      if (numbers.type != bson::BsonType::kEOO) {
        return numbers.Present(a) == numbers.Present(b) &&
               (!numbers.Present(a) || numbers.values[a] == numbers.values[b]);
      }
      const bson::BsonElement& x = cells[a];
      const bson::BsonElement& y = cells[b];
      if (x.type() != y.type()) return false;
      if (x.eoo()) return true;
      const size_t size = x.ValueSize();
      return size == y.ValueSize() && std::memcmp(x.value(), y.value(), size) == 0;
    }
  };

  int64_t num_rows = 0;
  bool all_rows = true;
  std::vector<uint32_t> selection;  // when !all_rows: the rows that count, ascending
  std::vector<Field> fields;

  // How many rows count (all of them, or the selection's).
  int64_t SelectedRows() const {
    return all_rows ? num_rows : static_cast<int64_t>(selection.size());
  }

  // The field named `name`, or nullptr when every row lacks it.
  const Field* Find(std::string_view name) const {
    for (const Field& f : fields) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }
};

// A block that owns everything its fields point into, so that it stays valid after its source
// moves on (and may be handed from the thread that read it to another).
class DetachedBlock {
 public:
  virtual ~DetachedBlock() = default;
  const ColumnBlock& block() const { return block_; }
  // BlockSource::DecodeBounded for this block.
  virtual StatusWith<const ColumnBlock::Field*> DecodeBounded(std::string_view name) = 0;
  // Decodes the columns the source left to the consumer (NextDetachedBlock's `leave`), on the
  // consumer's thread; the block is complete only then.
  virtual Status Complete() { return Status::OK(); }

 protected:
  ColumnBlock block_;
};

// The columnar side of a DocumentStream (see DocumentStream::AsBlockSource). A consumer uses
// either the blocks or Next(), never both.
class BlockSource {
 public:
  virtual ~BlockSource() = default;

  // Detached blocks, for a consumer that reads ahead on another thread (block_read_ahead.h). A
  // source that can give them returns true from DetachBlocks, called once before the first
  // block; from then on the consumer takes every block with NextDetachedBlock (nullptr at the
  // end), one call at a time, from any thread. The other sources return false and are read
  // with NextBlock. With `leave` > 0 the source may leave up to that many of the block's
  // columns undecoded, for DetachedBlock::Complete on the consumer's thread: so the two threads
  // can share the decoding.
  virtual bool DetachBlocks() { return false; }
  // Called on the consumer's thread just before another thread takes over a source that
  // detaches its blocks: what that thread must run its reads within (the operation's context,
  // taken now, once), or null for nothing.
  using ThreadContext = std::function<void(const std::function<void()>& reads)>;
  virtual ThreadContext HandOff() { return nullptr; }
  virtual StatusWith<std::unique_ptr<DetachedBlock>> NextDetachedBlock(int /*leave*/ = 0) {
    return Status(ErrorCode::kInternalError, "this block source does not detach its blocks");
  }

  // The top-level fields the consumer reads; blocks may leave every other field out. Called
  // once, before the first NextBlock.
  virtual void RequireFields(const std::vector<std::string>& names) = 0;
  // The next block, or nullptr at the end. The block and the elements it points into stay valid
  // until the next call.
  virtual StatusWith<const ColumnBlock*> NextBlock() = 0;

  // Of the required fields, those the consumer can often do with by their bounds alone (a
  // $dateTrunc key whose bins hold a whole block): blocks may give them as bounded fields,
  // decoded only if the consumer calls DecodeBounded. A source that cannot bound a column
  // ignores this; one that passes blocks on forwards it. Called at most once, after
  // RequireFields.
  virtual void AcceptBounds(const std::vector<std::string>& names) = 0;
  // The bounded field `name` of the current block, now with its cells (the returned field and
  // the cells stay valid as long as the block). Only for a field the current block gives as
  // bounded.
  virtual StatusWith<const ColumnBlock::Field*> DecodeBounded(std::string_view name) = 0;
};

}  // namespace hourglass::pipeline
