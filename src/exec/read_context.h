// ReadContext: what the query engine needs of the server to read — the storage engine, the
// catalog, the bucket catalog (time-series reads see its open buckets' state) and the dbpath
// (spill files go to <dbpath>/_tmp). Commands make one from their ServiceContext; the engine never
// sees a command, a connection or a reply.
//
// Thread-safety and lifetime: a plain value of borrowed pointers to process-wide, thread-safe
// objects (and a view of the dbpath option) that outlive every read.
#pragma once

#include <string_view>

namespace hourglass::storage {
class KvEngine;
}
namespace hourglass::catalog {
class Catalog;
}
namespace hourglass::timeseries {
class BucketCatalog;
}

namespace hourglass::exec {

struct ReadContext {
  storage::KvEngine* engine = nullptr;
  catalog::Catalog* catalog = nullptr;
  timeseries::BucketCatalog* bucket_catalog = nullptr;  // may be null (no time-series state)
  std::string_view dbpath;  // the server options' string, which outlives every read
};

}  // namespace hourglass::exec
