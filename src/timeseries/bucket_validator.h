// The validation MongoDB's bucket collections apply to documents written into them directly (the
// `$jsonSchema` validator, spec §2.1): `_id` an ObjectId; `control` an object with a numeric
// `version`, `min` and `max` objects whose time field is a date, an optional bool `closed`; `data`
// an object; `meta` anything; no other top-level field. Schema version 2 (MongoDB 7.1+, the
// validator of collections created since) adds an optional `control.count`, a number of at least
// 1, and allows no other field in `control`; collections created earlier keep version 1. A
// compressed bucket
// (control.version 2 or 3) must also pass CheckCompressedBucket (bucket_compression.h): a whole
// control.count, every column a BSONColumn of exactly that many cells, a complete time column of
// dates. Pure; thread-safe.
#pragma once

#include <string_view>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::timeseries {

// OK, or DocumentValidationFailure (121) "Document failed validation" naming the first rule
// broken.
Status ValidateBucketDocument(const bson::BsonObj& doc, std::string_view time_field,
                              int schema_version);
// The schema version of a bucket collection's stored `validator` option (1 or 2).
int BucketSchemaVersion(const bson::BsonObj& validator);

}  // namespace hourglass::timeseries
