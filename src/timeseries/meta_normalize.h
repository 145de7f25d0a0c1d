// Normalization of a time-series measurement's metaField value (spec timeseries.md 4.1).
//
// Two measurements belong to the same series (and may share a bucket) iff their normalized meta
// values are byte-identical. Normalizing sorts the fields of every embedded object by name,
// bytewise (unsigned, shorter prefix first), recursively, including objects nested inside arrays;
// array elements keep their order (and are renumbered "0", "1", ...); every other value is copied
// byte for byte, so 1 (int32) and NumberLong(1) stay different series while {a:1,b:2} and
// {b:2,a:1} are one. This mirrors MongoDB's timeseries::metadata::normalize. The normalized value
// is also what the bucket stores in its `meta` field.
//
// Fields with duplicate names inside one object keep their relative order (stable sort).
// Pure functions over borrowed views: thread-safe; the input must be valid BSON.
#pragma once

#include <string>
#include <string_view>

#include "bson/bson.h"

namespace hourglass::timeseries {

// Appends `meta`'s value to `b` under `name`, normalized as described above. An EOO `meta`
// (a measurement without a meta value) appends nothing.
void AppendNormalizedMeta(bson::BsonBuilder& b, std::string_view name,
                          const bson::BsonElement& meta);

// The series key of `meta`: the type byte followed by the value bytes of the normalized value (no
// field name). Keys of two metas are byte-equal iff the metas are the same series. An EOO `meta`
// yields the empty string, which differs from every present value's key (`null` included).
std::string NormalizedMetaKey(const bson::BsonElement& meta);

}  // namespace hourglass::timeseries
