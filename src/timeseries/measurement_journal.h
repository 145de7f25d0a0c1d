// The measurement journal: the durable record of time-series measurements that have been
// acknowledged but are not yet in their bucket documents (the bucket catalog's write-back cache,
// bucket_catalog.h). One storage table keyed by an increasing 8-byte big-endian number; each
// entry holds one commit's measurements of one collection, grouped by bucket:
//
//   {u: <bucket collection UUID>, t: <timeField>, [m: <metaField>],
//    b: [{i: <bucket _id>, s: <bucket start, Date>, [meta: <normalized meta>],
//         r: [<measurement>, ...]}, ...]}
//
// An entry is removed in the transaction that writes its rows to their buckets, so at any moment
// the entries present are exactly the rows storage does not hold yet; after a crash, startup
// writes them (BucketCatalog::ReplayJournal). Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson.h"
#include "storage/kv_engine.h"
#include "storage/session.h"

namespace hourglass::timeseries {

inline constexpr std::string_view kMeasurementJournalTable = "_timeseries_journal";

class MeasurementJournal {
 public:
  // Creates the table if it does not exist and numbers new entries after the last one stored.
  static StatusWith<std::unique_ptr<MeasurementJournal>> Open(storage::KvEngine* engine);

  // Adds `entry` (a BSON document) in `s`'s open transaction; returns its key.
  StatusWith<std::string> Append(storage::Session& s, std::string_view entry);
  // Removes the entry under `key` in `s`'s open transaction.
  Status Remove(storage::Session& s, std::string_view key);
  // Calls `fn` with every entry, in the order they were appended.
  Status ForEach(storage::Session& s,
                 const std::function<Status(std::string_view key, const bson::BsonObj& entry)>& fn);

 private:
  explicit MeasurementJournal(uint64_t next) : next_(next) {}
  std::atomic<uint64_t> next_;
};

}  // namespace hourglass::timeseries
