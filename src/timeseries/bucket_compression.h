// Compressed time-series buckets (control.version 2 and 3, spec §3.2 in
// /work/shared/spec/timeseries.md): MongoDB's layout, where each `data` column is one BSONColumn
// binary (BinData subtype 7, src/bsoncolumn) holding a cell per measurement and control.count
// says how many measurements there are. Version 2 holds its rows sorted by time, version 3
// (MongoDB 8.0) in arrival order; nothing here relies on the order.
//
// Readers decode only the columns they need straight into element buffers
// (DecodeCompressedColumns) and read the cells in place; DecompressBucket turns a compressed
// bucket into the version-1 bucket with the same measurements (MongoDB's decompressBucket) for
// callers that want that form. Writers that rewrite a compressed bucket (a time-series delete)
// use CompressBucket to write it back compressed.
//
// Pure functions, thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson.h"
#include "bsoncolumn/bson_column_decoder.h"

namespace hourglass::timeseries {

// Whether `bucket` has control.version 2 or 3 (any numeric type).
bool IsCompressedBucket(const bson::BsonObj& bucket);

// The version-1 bucket holding the measurements of the compressed bucket `bucket`: the same
// top-level fields in the same order, control.version 1 and no control.count, each column
// `want` accepts (the time column always) as {"0": v, "1": v, ...} with the missing cells
// left out, in the stored column order and the stored row order. Columns `want` rejects are
// neither decoded nor copied. Owned.
// DataCorruptionDetected (296) "malformed time-series bucket <_id>: ..." when the bucket is not
// a valid compressed bucket (see CheckCompressedBucket) in any part it reads.
StatusWith<bson::BsonObj> DecompressBucket(
    const bson::BsonObj& bucket, std::string_view time_field,
    const std::function<bool(std::string_view column)>& want = nullptr);

// One column of a compressed bucket, decoded for a reader: `name` points into the bucket, `cells`
// holds one element (empty field name) per row, or kMissing; or, for a column decoded as numbers,
// `values` holds them and `cells` is null.
struct DecodedColumn {
  std::string_view name;
  std::shared_ptr<bsoncolumn::ColumnElements> cells;
  std::shared_ptr<bsoncolumn::ColumnValues> values;
};
// The columns of the compressed bucket `bucket` that `want` accepts (every column when `want` is
// null), in stored order, decoded straight into elements: what DecompressBucket decodes, without
// building the version-1 form; readers walk the cells in place. Returns control.count, the number
// of cells of every column. Same validation and errors (296) as DecompressBucket for what it
// reads: control.count, `data`, and each column it decodes (its cell count must be
// control.count; the time column's cells must all be present, and the time column must exist,
// when `want` accepts it). A column it does not decode is not checked: a read that takes the
// time from control.min/max, or counts rows, decodes nothing of the time column.
// A column `numbers` accepts is decoded as numbers (bsoncolumn::DecodeBsonColumnValues) when its
// present cells have one numeric type, as elements otherwise.
// `max_columns`, when the caller knows how many names `want` accepts, stops the walk of `data`
// once that many differently named columns are decoded: the columns after the last one wanted
// are not read at all (their headers, kilobytes apart, are cache misses).
StatusWith<int64_t> DecodeCompressedColumns(
    const bson::BsonObj& bucket, std::string_view time_field,
    const std::function<bool(std::string_view column)>& want, std::vector<DecodedColumn>* out,
    const std::function<bool(std::string_view column)>& numbers = nullptr,
    size_t max_columns = static_cast<size_t>(-1));

// The checks a compressed bucket must pass before it is stored: control.count a whole number in
// [1, 2^31); `data` holds the time column; every column is a BinData subtype 7 that decodes (as
// BSONColumn) to exactly control.count cells; the time column's cells are all dates (none
// missing). OK or BadValue naming the first broken rule.
Status CheckCompressedBucket(const bson::BsonObj& bucket, std::string_view time_field);

// The compressed bucket (control.version `version`, 2 or 3) holding the measurements of the
// version-1 bucket `bucket`, in MongoDB's layout: _id, control (version replaced in place,
// count appended or replaced), the other top-level fields in order, `data` last, with the time
// column first and the others in their order. Version 2 sorts the rows by time (stable);
// version 3 keeps their order. BadValue for a value a column cannot hold (CodeWScope), the
// unpacker's errors for a malformed bucket, BadValue for a bucket without rows.
// `interleave_restarts`, when given, receives how many interleaved sections of object columns
// an object that did not fit their reference ended (MongoDB's numSubObjCompressionRestart).
StatusWith<bson::BsonObj> CompressBucket(const bson::BsonObj& bucket, std::string_view time_field,
                                         int version, int64_t* interleave_restarts = nullptr);

}  // namespace hourglass::timeseries
