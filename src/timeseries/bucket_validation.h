// The consistency checks the `validate` command applies to each stored bucket of a time-series
// collection (MongoDB 7.0's time-series checks of validate, log id 6698300): what a bucket must
// agree with in itself, beyond the `$jsonSchema` validator that direct writes pass
// (bucket_validator.h).
//
// CheckBucketConsistency(bucket, options, strings) returns OK, or the first problem found, in
// this order:
//  1. shape: `_id` an ObjectId; `control`, `control.min`, `control.max` and `data` objects
//     (BadValue; normally caught by the schema check before this runs);
//  2. `control.version` is 1, 2 or 3 (BadValue);
//  3. the timestamp in the `_id` is control.min.<time> in seconds, as the bucket catalog makes
//     bucket ids (NewBucketId) (InvalidIdField);
//  4. every `data` column has the type of its version: an object (version 1), a BSONColumn
//     (BinData subtype 7; versions 2 and 3) (TypeMismatch);
//  5. control.min, control.max and `data` name as many fields (BadValue);
//  6. the time column: version 1 holds dates under the row indexes "0", "1", ... in order;
//     versions 2 and 3 decode (a corrupt or truncated column is InvalidBSON, never a crash),
//     every row has a date, and version 2 holds them in ascending order; versions 2 and 3 have a
//     numeric control.count equal to the number of rows (BadValue);
//  7. every other column: version 1 row indexes are numbers in increasing order below the row
//     count; versions 2 and 3 decode to as many cells as the time column (BadValue/InvalidBSON);
//  8. control.min/control.max of every column are the least/greatest of its values as the bucket
//     catalog computes them (BucketFieldTree, strings under `strings`, the collection's default
//     collation; null: simple; objects compared field by field whatever their field order), except
//     that control.min of the time field may be any date not after the earliest row: it is the
//     bucket's start, which deletes and updates of measurements keep (MongoDB wants the earliest
//     time rounded to the granularity) (BadValue).
//
// `bucket` must be valid BSON (the caller runs bson::ValidateBson first); anything else about it
// may be wrong. Pure; thread-safe. Decoding is bounded: a column is never decoded past
// kMaxBucketRows cells.
#pragma once

#include <cstddef>
#include <memory>

#include "base/status.h"
#include "bson/bson.h"
#include "bson/bson_compare.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::timeseries {

// The most rows a column is decoded to while checking (a few bytes of run-length encoding can
// claim millions of cells); a bucket claiming more is reported, not decoded.
inline constexpr size_t kMaxBucketRows = size_t{1} << 20;

Status CheckBucketConsistency(const bson::BsonObj& bucket, const TimeseriesOptions& options,
                              const std::shared_ptr<const bson::StringComparator>& strings);

}  // namespace hourglass::timeseries
