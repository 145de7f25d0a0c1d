// Decoding a BSONColumn binary (BinData subtype 7) into its cells.
//
// A column holds one cell per row: a BSON value, or "missing" (the row has no value for this
// field). DecodeBsonColumn walks the whole binary once, in order, validating as it goes: every
// length and offset is bounds-checked, literals must be well-formed BSON elements, Simple-8b
// words must use valid selectors and decode to values their type can hold, interleaved (object
// and array) sections must match their reference object, and the column must end with exactly
// one 0x00. Anything else gives InvalidBSON (22) naming the problem and the byte offset; the
// decoder never reads outside the input, never loops without consuming input, and never
// returns a row for a corrupt column.
//
// Cells own their bytes. Pure functions, thread-safe. Format: README.md in this folder.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::bsoncolumn {

// One decoded row: missing, or an element with an empty field name.
class ColumnCell {
 public:
  ColumnCell() = default;
  // `element` holds type byte, 0x00 (empty name), value bytes.
  explicit ColumnCell(std::string element) : element_(std::move(element)) {}

  bool missing() const { return element_.empty(); }
  // EOO for a missing cell. Borrows from this cell.
  bson::BsonElement element() const {
    return missing() ? bson::BsonElement() : bson::BsonElement(element_.data(), 0);
  }
  const std::string& bytes() const { return element_; }
  bool operator==(const ColumnCell& o) const { return element_ == o.element_; }

 private:
  std::string element_;
};

// Decodes every cell of `binary` (the BinData payload, without the BinData header).
// InvalidBSON (22) if the binary is corrupt or truncated.
StatusWith<std::vector<ColumnCell>> DecodeBsonColumn(std::string_view binary);
// The same, refusing (InvalidBSON) a column of more than `max_cells` cells before building them:
// what a reader that knows the row count (a bucket's control.count) calls, so that a few bytes
// of run-length encoding cannot make it build millions of cells.
StatusWith<std::vector<ColumnCell>> DecodeBsonColumn(std::string_view binary, size_t max_cells);

// The cells of a column without an allocation per cell, for readers that walk many cells (the
// time-series scan): each present cell as an element (type byte, 0x00 for the empty name, value
// bytes) appended to `bytes`, its offset in `offsets`; kMissing for a missing cell. A reused
// ColumnElements keeps its capacity. Same cells and same validation (and error) as
// DecodeBsonColumn, which stays the slot-by-slot reference: this one decodes the Simple-8b blocks
// of numeric streams (doubles, integers, dates) a whole block at a time, straight into `bytes`.
struct ColumnElements {
  static constexpr size_t kMissing = static_cast<size_t>(-1);
  // Both buffers may extend past the cells (a reused ColumnElements keeps them at their size, so
  // that the next column is written without zero-filling them again).
  std::string bytes;
  std::vector<size_t> offsets;  // offsets[i] for cell i < cells
  size_t cells = 0;
  size_t size() const { return cells; }
  bool missing(size_t i) const { return offsets[i] == kMissing; }
  // EOO for a missing cell. Borrows from `bytes`.
  bson::BsonElement element(size_t i) const {
    return missing(i) ? bson::BsonElement() : bson::BsonElement(bytes.data() + offsets[i], 0);
  }
};
// Decodes every cell of `binary` into *out (emptied first; left without cells on error).
// InvalidBSON (22) as DecodeBsonColumn. `expected_cells`, when the caller knows it (control.count),
// sizes the buffers once; it is only a hint. `max_cells` caps the cells as DecodeBsonColumn's does
// (the same error at the same cell).
Status DecodeBsonColumnElements(std::string_view binary, ColumnElements* out,
                                size_t expected_cells = 0,
                                size_t max_cells = static_cast<size_t>(-1));

// The cells of a column whose present cells all hold one numeric type, as numbers, for readers
// that compute on them (block processing of $group): no element per cell. `type` is kDouble,
// kInt32, kInt64 or kDate; values[i] is cell i's number (a double's IEEE-754 bits, an integer or
// a date's milliseconds as int64; 0 for a missing cell); when some cells are missing (`missing`
// > 0), present[i] is 0 for a missing cell and 1 otherwise (else `present` means nothing). Like
// ColumnElements, a reused ColumnValues keeps its buffers, which may extend past the cells.
struct ColumnValues {
  bson::BsonType type = bson::BsonType::kEOO;
  std::vector<uint64_t> values;
  std::vector<uint8_t> present;
  size_t cells = 0;
  size_t missing = 0;  // how many cells are missing
  size_t size() const { return cells; }
};
// Decodes `binary` into *out when every present cell has one of the types above, and the same
// one: then out->type is that type. Otherwise (other or mixed types, interleaved sections, no
// present cell) out->type is kEOO and the caller decodes the column another way (the decoder
// stops at the first cell that does not fit). Errors, `expected_cells` and `max_cells` as
// DecodeBsonColumnElements; a column it takes gets the same validation, so the same error.
Status DecodeBsonColumnValues(std::string_view binary, ColumnValues* out, size_t expected_cells = 0,
                              size_t max_cells = static_cast<size_t>(-1));

// The cells of a column handed to a visitor one by one, in row order, nothing allocated per
// cell. `value` is the cell's value bytes (as in a BSON element after its name), valid only
// during the call. A corrupt column gives InvalidBSON as DecodeBsonColumn, possibly after some
// cells were visited: a visitor must not act on the cells before the status is OK.
class CellVisitor {
 public:
  virtual ~CellVisitor() = default;
  virtual void Missing() = 0;
  virtual void Value(bson::BsonType type, std::string_view value) = 0;
};
Status VisitBsonColumn(std::string_view binary, CellVisitor& visitor);

}  // namespace hourglass::bsoncolumn
