// Test-only: compressed buckets MongoDB itself wrote (taken from its public jstests), shared by
// the unpacker's and the compression's tests.
#pragma once

namespace hourglass::timeseries::testing {

// A version-2 bucket MongoDB wrote (its public jstests; metaField "m"): two rows at the same
// time, `a` 0.0 then 1.0, `_id`s one apart.
constexpr const char* kMongoV2Bucket = R"({
  "_id": {"$oid": "65a6eb806ffc9fa4280ecac4"},
  "control": {"version": 2,
              "min": {"_id": {"$oid": "65a6eba7e6d2e848e08c3750"},
                      "t": {"$date": "2024-01-16T20:48:00Z"}, "a": 1},
              "max": {"_id": {"$oid": "65a6eba7e6d2e848e08c3751"},
                      "t": {"$date": "2024-01-16T20:48:39.448Z"}, "a": 1},
              "count": 2},
  "meta": 0,
  "data": {"t": {"$binary": {"base64": "CQAYhggUjQEAAIAOAAAAAAAAAAA=", "subType": "07"}},
           "a": {"$binary": {"base64": "AQAAAAAAAAAAAJAuAAAAAAAAAAA=", "subType": "07"}},
           "_id": {"$binary": {"base64": "BwBlpuun5tLoSOCMN1CALgAAAAAAAAAA", "subType": "07"}}}})";

// A version-3 bucket MongoDB wrote (no metaField; count written by its shell, a double): the
// second row is one second *earlier* than the first.
constexpr const char* kMongoV3Bucket = R"({
  "_id": {"$oid": "630ea4802093f9983fc394dc"},
  "control": {"version": 3,
              "min": {"_id": {"$oid": "630fabf7c388456f8aea4f2d"},
                      "t": {"$date": "2022-08-31T00:00:00Z"}, "a": 0},
              "max": {"_id": {"$oid": "630fabf7c388456f8aea4f2f"},
                      "t": {"$date": "2022-08-31T00:00:01Z"}, "a": 1},
              "count": 2.0},
  "data": {"t": {"$binary": {"base64": "CQDolzLxggEAAID+fAAAAAAAAAA=", "subType": "07"}},
           "_id": {"$binary": {"base64": "BwBjD6v3w4hFb4rqTy2ATgAAAAAAAAAA", "subType": "07"}},
           "a": {"$binary": {"base64": "EAAAAAAAgC4AAAAAAAAAAA==", "subType": "07"}}}})";

}  // namespace hourglass::timeseries::testing
