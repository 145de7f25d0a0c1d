// The validation MongoDB's bucket collections apply to documents written into them directly (the
// `$jsonSchema` validator of schema version 1, spec §2.1): `_id` an ObjectId; `control` an object
// with a numeric `version`, `min` and `max` objects whose time field is a date, an optional bool
// `closed`; `data` an object; `meta` anything; no other top-level field. A compressed bucket
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
Status ValidateBucketDocument(const bson::BsonObj& doc, std::string_view time_field);

}  // namespace hourglass::timeseries
