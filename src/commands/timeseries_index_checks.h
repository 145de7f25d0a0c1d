// What a time-series collection's bucket indexes ask of a measurement, checked before its write
// is acknowledged: a journaled measurement reaches its bucket only at a later flush, where an
// index key that cannot be made would fail the flush, and every read after it, for good. Inserts
// check each measurement; updates check each measurement they change.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/collection.h"

namespace hourglass::commands {

class BucketIndexChecks {
 public:
  // The checks of the indexes `buckets` has now; `time_field` is the collection's.
  BucketIndexChecks(const catalog::Collection& buckets, std::string_view time_field);

  // A bucket whose bounds of an indexed measurement field hold an array cannot be indexed:
  // Location5930501 for a measurement with an array along one of them, as MongoDB answers. A
  // measurement with a 2dsphere index must be a point there (or missing, null): Location16755.
  Status CheckMeasurement(const bson::BsonObj& m) const;

  // The keys the indexes on the meta make of a bucket of this meta (16766 for an array under a
  // hashed component, 171 for parallel arrays...).
  Status CheckMeta(const bson::BsonElement& meta) const;

 private:
  std::vector<std::string> paths_;      // measurement fields whose bounds are indexed
  std::vector<std::string> geo_paths_;  // measurement fields with a 2dsphere index
  std::vector<const catalog::IndexDescriptor*> meta_indexes_;
};

}  // namespace hourglass::commands
