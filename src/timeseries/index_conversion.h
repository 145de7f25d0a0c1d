// Index specs of a time-series collection in user terms and in bucket terms (spec §7 of
// /work/shared/spec/timeseries.md). A user index on the view X is stored as an index of its
// bucket collection system.buckets.X whose key names bucket fields:
//   time field T, ascending   -> control.min.T, control.max.T  (descending: max first)
//   meta field M, M.sub        -> meta, meta.sub                (any index type: hashed,
//   2dsphere...) measurement f, asc / desc  -> control.min.f, control.max.f  (descending: max
//   first) measurement f: "2dsphere"  -> data.f: "2dsphere_bucket"
// A bucket holding values in [min, max] then sits in the index under both ends of its range, so
// a bound on f becomes bounds on control.min.f / control.max.f (the planner's job).
//
// The reverse mapping (listIndexes, dropIndexes by key, hint by key) also accepts the built-in
// series index {meta: 1, control.min.T: 1} (catalog/collection.h), which lists as {M: 1, T: 1}.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>

#include "base/status.h"
#include "bson/bson.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::timeseries {

// The bucket key of the user key `user_key`. BadValue (createIndexes reports it as
// CannotCreateIndex 67) for an empty key, a non-numeric time component, or a measurement
// component that is neither a number nor "2dsphere".
StatusWith<bson::BsonObj> BucketKeyFromUserKey(const bson::BsonObj& user_key,
                                               const TimeseriesOptions& options);

// The user key of a bucket key, or nullopt if some component has no user meaning (e.g. an `_id`
// or a lone control.min.f of a measurement).
std::optional<bson::BsonObj> UserKeyFromBucketKey(const bson::BsonObj& bucket_key,
                                                  const TimeseriesOptions& options);

// The checks MongoDB makes on a createIndexes spec as given (before any normalization) for a
// time-series collection, in its order:
//   unique: true                        -> InvalidOptions (72)
//   a "text" key component              -> InvalidOptions (72)
//   partialFilterExpression + collation -> IndexOptionsConflict (85)
//   the key conversion                  -> BadValue (see BucketKeyFromUserKey)
Status CheckUserIndexSpec(const bson::BsonObj& raw_spec, const TimeseriesOptions& options);

// The bucket index spec of a normalized user spec ({v, key, name, options...}, already through
// CheckUserIndexSpec): {v, key: <bucket key>, name, options..., [originalSpec: <user spec>]}.
// originalSpec is stored when the key has a measurement component or a partial filter, as MongoDB
// does. Errors (InvalidOptions 72 unless noted):
//   sparse with a key component other than T and M(.sub)
//   expireAfterSeconds on a field other than T, or without a partialFilterExpression on M only
//     (a TTL index that passes is keyed on control.min.T alone)
//   partialFilterExpression: translated as reads push filters down (BucketFilter::ToBson():
//     M -> meta, comparisons to $_internalExpr* bounds on control.min/max); conjuncts on
//     measurements must be comparisons MongoDB pushes down ($eq, $gt, $gte, $lt, $lte, $in,
//     $exists of scalars), else Location5916301
StatusWith<bson::BsonObj> BucketIndexSpecFromUserSpec(const bson::BsonObj& user_spec,
                                                      const TimeseriesOptions& options);

// The spec listIndexes shows on the view for a bucket index: its originalSpec if it has one,
// else the bucket spec with the key converted back; nullopt if the key does not convert.
std::optional<bson::BsonObj> UserIndexSpecFromBucketSpec(const bson::BsonObj& bucket_spec,
                                                         const TimeseriesOptions& options);

}  // namespace hourglass::timeseries
