// Whole bucket documents made from measurements, for the writes that build buckets outside the
// bucket catalog: a delete or an update rewriting a bucket with the measurements it keeps, and an
// update's changed measurements moved into new buckets (MongoDB 8.0's "side" buckets: an updated
// measurement leaves its bucket, as a delete, and is written anew).
//
// Pure functions, thread-safe.
#pragma once

#include <span>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::timeseries {

// The bucket `id` of meta `meta` (the stored, normalized meta element, any name; EOO: none)
// holding `rows` (measurements, whose metaField is left out) in their order, with control.min of
// the time field `min_time` (the bucket's start, which a rewrite keeps): version 1, or compressed
// as version 2 (the rows sorted by time) or 3 (their order); its control.min/max compare strings
// under `strings`, the collection's default collation (null: simple). BadValue for a value a
// compressed bucket cannot hold (CodeWScope) or for no rows.
StatusWith<bson::BsonObj> MakeBucket(const bson::ObjectId& id, const bson::BsonElement& meta,
                                     std::span<const bson::BsonObj> rows,
                                     const TimeseriesOptions& o, int64_t min_time, int version,
                                     std::shared_ptr<const bson::StringComparator> strings);

// New buckets for `rows` (measurements of any series whose time fields hold Dates), as the bucket
// catalog would open them for these rows alone, arriving in time order: one series (normalized
// meta) per bucket, each starting at its first time rounded down, closed by the time span and by
// the count and size limits of CurrentNewBucketRules, in its layout, under NewBucketId _ids.
StatusWith<std::vector<bson::BsonObj>> MakeNewBuckets(
    std::vector<bson::BsonObj> rows, const TimeseriesOptions& o,
    const std::shared_ptr<const bson::StringComparator>& strings);

}  // namespace hourglass::timeseries
