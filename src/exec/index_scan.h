// Executing an index plan (query_planner.h): walking the key ranges of an index table and
// fetching the records they point to.
//
// ScanIndexEntries is the primitive, run inside a caller's Session (and transaction, for writes);
// IndexScan is the DocumentStream of reads, which like CollectionScan reads in chunks, each in its
// own short session, resuming after the last key it saw, so a client cursor pins no snapshot.
// Documents are re-checked against the filter after the fetch; a multikey index's duplicates
// (one record under several keys) and records found by several branches of an $or union are
// returned once.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>

#include "catalog/collection.h"
#include "exec/query_planner.h"
#include "pipeline/pipeline.h"
#include "query/matcher.h"
#include "storage/kv_engine.h"
#include "storage/session.h"

namespace hourglass::exec {

// Where a scan stands: the range being read and the last entry returned.
struct IndexScanPosition {
  size_t range = 0;      // in scan order
  std::string last_key;  // the entry's position (catalog::IndexCursor::position), to resume
  // While `fn` runs: the entry's key, the indexed values' encoding without the RecordId
  // (catalog::IndexCursor::key). Points into storage memory: not valid after `fn` returns.
  std::string_view key;
  bool started = false;
  bool done = false;
};

// Reads at most `max_keys` index entries of `plan` from `pos` on, calling `fn` with each entry's
// RecordId (fn may set *stop to end the scan early; pos.key is the entry's key meanwhile).
// Counts the entries in *keys_examined.
Status ScanIndexEntries(storage::Session& s, const QueryPlan& plan, IndexScanPosition& pos,
                        int64_t max_keys, const std::function<Status(int64_t, bool*)>& fn,
                        int64_t* keys_examined);

// DISTINCT_SCAN: the distinct values of the first field of `plan`'s index (PlanDistinctScan)
// within its ranges, each as {"": value}, in index order. Reads one key per value and skips to
// the next value; a value whose type the key does not keep (numbers, objects) or that may stand
// for a missing field (null) is read from a document of that key. Counts keys and documents read.
StatusWith<std::vector<bson::BsonObj>> DistinctScan(storage::Session& s, catalog::Collection& coll,
                                                    const QueryPlan& plan, int64_t* keys_examined,
                                                    int64_t* docs_examined);

class IndexScan : public pipeline::DocumentStream {
 public:
  IndexScan(std::shared_ptr<catalog::Collection> coll, storage::KvEngine* engine, QueryPlan plan,
            std::optional<query::Matcher> filter);
  StatusWith<std::optional<bson::BsonObj>> Next() override;
  // One step of a multi-planner trial (multi_planner.h): reads at most `max_keys` index entries
  // into the buffer that Next() then drains. Blocks on storage only.
  Status Work(int64_t max_keys) { return ReadChunk(max_keys); }
  bool IsEOF() const { return done_; }
  const QueryPlan& plan() const { return plan_; }
  int64_t keys_examined() const { return keys_examined_; }
  int64_t docs_examined() const { return docs_examined_; }
  int64_t produced() const { return produced_; }  // documents that passed the filter

 private:
  Status ReadChunk(int64_t max_keys);
  // A covered plan's entry (the key at pos_.key): true once its output is buffered, false
  // when a value's type cannot be read from the key and the record is needed.
  StatusWith<bool> CoveredEntry();
  // `doc` (of record `rid`, under the key at pos_.key) with the annotations the plan asks
  // for (collection_scan.h).
  StatusWith<bson::BsonObj> Annotate(const bson::BsonObj& doc, int64_t rid) const;

  std::shared_ptr<catalog::Collection> coll_;
  storage::KvEngine* engine_;
  QueryPlan plan_;
  std::optional<query::Matcher> filter_;
  std::vector<const QueryPlan*> scans_;  // into plan_: one, or the branches of an $or
  size_t scan_ = 0;                      // the scan being read
  IndexScanPosition pos_;                // in scans_[scan_]
  bool done_ = false;
  std::unordered_set<int64_t> seen_;  // multikey and $or plans only
  std::deque<bson::BsonObj> buffer_;
  int64_t chunk_keys_ = 16;  // keys per ReadChunk, doubling up to 1000
  int64_t keys_examined_ = 0;
  int64_t docs_examined_ = 0;
  int64_t produced_ = 0;
};

}  // namespace hourglass::exec
