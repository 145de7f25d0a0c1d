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

}  // namespace hourglass::bsoncolumn
