// BucketUnpacker turns one stored time-series bucket back into the measurements it holds (spec
// §3.1 and §6.1 in /work/shared/spec/timeseries.md): the read side of $_internalUnpackBucket.
//
// Output shape, as MongoDB produces it: the time field first, then the meta field (named after the
// collection's metaField, holding the bucket's `meta` value, present only when the bucket has a
// `meta` field), then the remaining data columns in the order they appear in the bucket's `data`
// object. Rows come out in stored row order; a row with no cell in a column lacks that field.
// A projection limited to top-level names (UnpackSpec::Mode) decides which fields are produced;
// the time column is always walked, since it defines the rows.
//
// Version-1 buckets are walked in place. Compressed buckets (version 2 and 3, BSONColumn columns)
// have only the columns the read needs decoded, each into one buffer of elements
// (DecodeCompressedColumns in bucket_compression.h), and their rows are built from those cells;
// their rows come out in stored order, which for version 3 is not time order. A malformed
// bucket (no control/version, no time column, a column that is not an object, row keys that are
// not ascending decimal numbers, a column with rows the time column lacks; for compressed
// buckets a column that is not a valid BSONColumn or whose cell count is not control.count)
// fails with DataCorruptionDetected (296) naming the bucket's _id.
//
// Thread-safety: an unpacker is immutable after construction; Unpack may run concurrently on one
// instance. Lifetime: the measurement handed to `emit` BORROWS a buffer that Unpack reuses for
// the next row — call Owned() on it to keep it beyond the callback.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "bsoncolumn/bson_column_decoder.h"

namespace hourglass::timeseries {

struct UnpackSpec {
  std::string time_field;
  std::optional<std::string> meta_field;
  // Which top-level fields to produce: all of them (default), only the ones named in `fields`
  // (kInclude; the time and meta fields too are produced only when named), or all but those
  // named (kExclude). An empty include list produces empty documents (count-only pipelines).
  enum class Mode { kAll, kInclude, kExclude } mode = Mode::kAll;
  std::vector<std::string> fields;
};

class BucketUnpacker {
 public:
  explicit BucketUnpacker(UnpackSpec spec);

  const UnpackSpec& spec() const { return spec_; }

  // Calls emit(measurement) for each row of `bucket` in stored row order, until emit returns
  // false (early stop; Unpack then returns OK without looking at the remaining rows). The
  // measurement borrows an internal buffer valid only during the call. Errors: see the header
  // comment (DataCorruptionDetected for malformed buckets). Rows emitted before an error was
  // found stay emitted.
  Status Unpack(const bson::BsonObj& bucket, const std::function<bool(bson::BsonObj)>& emit) const;
  // The same for the rows `keep_row` accepts, given each row's position (0, 1, ... in stored
  // row order) and time cell; the other rows are stepped over (and validated) without being
  // built.
  Status Unpack(
      const bson::BsonObj& bucket,
      const std::function<bool(int64_t position, const bson::BsonElement& time)>& keep_row,
      const std::function<bool(bson::BsonObj)>& emit) const;

  // The rows of `bucket` column by column, for consumers that work on columns. `out` is resized
  // to `fields.size()`; out[i] is fields[i]: present when it is a data column of the bucket (the
  // time field included; the meta field never is one), with one element per row in stored row
  // order — the order Unpack emits — and EOO where the row lacks the field. The elements point
  // into `bucket` — for a compressed bucket into its decoded cells (elements with empty field
  // names), which the Column's `owner` keeps alive (a caller that moves `cells` elsewhere must
  // keep the owner too). Cell
  // vectors keep their capacity, so a caller that reuses `out` allocates only for a bucket with
  // more rows than any before. Returns the number of rows. Same validation and error codes as
  // Unpack, except that of a compressed bucket only the named columns are decoded, and so
  // checked: its row count is control.count, which a named column must match, and its time
  // column is decoded only when named.
  // With `numbers`, a compressed column whose present cells all have one numeric type (double,
  // int32, int64, date) comes as those numbers instead (`values`, kept alive by `owner`; `cells`
  // is then empty): no element per cell. Version-1 buckets always come as elements.
  struct Column {
    bool present = false;
    std::vector<bson::BsonElement> cells;
    const bsoncolumn::ColumnValues* values = nullptr;
    std::shared_ptr<const void> owner;  // null for a version-1 bucket
  };
  static StatusWith<int64_t> Columns(const bson::BsonObj& bucket, std::string_view time_field,
                                     std::span<const std::string> fields, std::vector<Column>* out,
                                     bool numbers = false);
  static StatusWith<int64_t> Columns(const bson::BsonObj& bucket, std::string_view time_field,
                                     const std::vector<std::string>& fields,
                                     std::vector<Column>* out, bool numbers = false) {
    return Columns(bucket, time_field, std::span<const std::string>(fields), out, numbers);
  }

  // Number of rows in `bucket` without materializing them: the entries of data.<time_field> for
  // version 1, control.count for version 2/3. Same error codes as Unpack.
  static StatusWith<int64_t> CountRows(const bson::BsonObj& bucket, std::string_view time_field);

  // Whether the top-level field `name` is produced under this spec.
  bool Produces(std::string_view name) const;

 private:
  UnpackSpec spec_;
  // Unpack for a compressed bucket: from its decoded columns.
  Status UnpackCompressed(
      const bson::BsonObj& bucket,
      const std::function<bool(int64_t position, const bson::BsonElement& time)>& keep_row,
      const std::function<bool(bson::BsonObj)>& emit) const;
  // The bucket's meta element renamed to the metaField, as each row carries it (empty when rows
  // carry no meta).
  std::string MetaCell(const bson::BsonObj& bucket) const;

  bool include_time_;
  bool include_meta_;
};

}  // namespace hourglass::timeseries
