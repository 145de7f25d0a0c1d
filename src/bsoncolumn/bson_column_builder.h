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
// objects are buffered until the reference object is chosen). Finish() returns the column as
// if it ended now and leaves the builder able to continue; it copies the builder's state and
// the bytes written so far, so it costs time in proportion to the column, not to what was
// added since the last call. A builder cannot yet be re-opened from an existing binary.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
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
  BsonColumnBuilder() = default;
  BsonColumnBuilder(const BsonColumnBuilder&) = default;
  BsonColumnBuilder& operator=(const BsonColumnBuilder&) = default;

  // Appends `e`'s value (its field name is ignored); EOO appends a missing cell. BadValue for
  // CodeWScope, at any depth, which a column cannot hold (the builder is unchanged).
  Status Append(const bson::BsonElement& e);
  // Appends a missing cell.
  void Skip();

  // The column as if it ended now. The builder is unchanged and may continue.
  std::string Finish() const;
  // The column, finishing the builder itself (no copy); the builder is empty afterwards.
  std::string Release();

  // Cells appended so far.
  size_t size() const { return cells_; }
  // How many times an object that did not fit the interleaved section's reference ended it and
  // started a new one (MongoDB's numSubObjCompressionRestart counts these per bucket).
  int64_t interleave_restarts() const { return interleave_restarts_; }

 private:
  enum class Mode { kRegular, kDeterminingReference, kAppending };
  struct SubStream {
    ColumnStreamEncoder encoder;
    std::string buf;
    std::deque<std::pair<size_t, size_t>> blocks;
  };

  void AppendObject(const bson::BsonElement& e);
  void AppendRegular(bson::BsonType type, std::string_view value);
  void StartDeterminingReference(std::string_view obj, bson::BsonType type);
  void FinishDeterminingReference();
  bool AppendSubElements(std::string_view obj);
  void FlushInterleaved();
  void Finalize();

  std::string buf_;
  ColumnStreamEncoder regular_;
  Mode mode_ = Mode::kRegular;
  std::string reference_;  // the reference object's bytes
  bson::BsonType reference_type_ = bson::BsonType::kObject;
  std::vector<std::string> buffered_;  // objects waiting for the reference ({} for a skip)
  std::vector<SubStream> streams_;
  size_t cells_ = 0;
  int64_t interleave_restarts_ = 0;
};

}  // namespace hourglass::bsoncolumn
