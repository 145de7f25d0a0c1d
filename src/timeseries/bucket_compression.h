// Compressing a closed time-series bucket (spec timeseries.md §3.2): a version-1 bucket becomes
// the version-2 bucket MongoDB's compressBucket makes of it — rows sorted by time, each data
// column a BSONColumn binary (BinData subtype 7) with a skip for each missing cell, the time
// column first and the others in their order, control.version 2 and control.count appended;
// _id, control.min/max, closed and meta are kept as they are.
//
// Pure function, thread-safe.
#pragma once

#include <string_view>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::timeseries {

// The version-2 form of `bucket`, a well-formed version-1 bucket of a collection whose time field
// is `time_field`. Rows with equal times keep their order (MongoDB's sort is not stable; any
// order of ties is a valid bucket). BadValue if `bucket` is not a version-1 bucket: no
// control.version 1, a data column that is not an object of row-numbered cells, a row beyond the
// time column's rows, or a time that is not a date.
struct CompressedBucket {
  bson::BsonObj bucket;
  // Interleaved sections of object columns that an object not fitting their reference ended
  // (numSubObjCompressionRestart).
  int64_t interleave_restarts = 0;
};
StatusWith<CompressedBucket> CompressBucket(const bson::BsonObj& bucket,
                                            std::string_view time_field);

}  // namespace hourglass::timeseries
