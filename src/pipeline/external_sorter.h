// ExternalSorter: sorts rows (a sort key and a document) under a memory limit, writing sorted
// runs to a SpillFile when the rows held exceed it and allow_disk_use is set, and merging the
// runs on output (k-way, by a heap). Used by $sort (and find's sort, which runs as $sort) and
// $bucketAuto, and by $group, which writes its own sorted runs (AppendToSortedRun) and merges
// them here.
//
// Order: by the caller's key comparison; rows with equal keys come out in the order they were
// added (stable), also across runs (ties go to the earlier run). With `limit` set (a $sort
// followed by $limit), only the first `limit` rows are kept: the held rows are trimmed whenever
// they reach twice the limit, so a top-k sort holds O(k) rows and spills only when k rows alone
// exceed the memory limit.
//
// Memory accounting: key and document bytes plus a fixed per-row overhead. Over the limit
// without allow_disk_use (or without a spill directory) Add fails with
// QueryExceededMemoryLimitNoDiskUseAllowed (292) and the caller's message; spill-file errors
// are the SpillFile's. Single-threaded; the spill file is removed when the sorter is destroyed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "pipeline/spill_file.h"

namespace hourglass::pipeline {

struct SortRow {
  bson::BsonObj key;
  bson::BsonObj doc;
};

struct PipelineContext;

struct ExternalSorterOptions {
  // A stage's options: `limit_bytes` of memory, and the context's allow_disk_use and tmp_dir.
  static ExternalSorterOptions ForStage(const PipelineContext& ctx, int64_t limit_bytes,
                                        std::string exceeded_message);

  int64_t memory_limit_bytes = 100 * 1024 * 1024;
  bool allow_disk_use = false;
  std::string tmp_dir;  // empty: spilling impossible (292 at the limit)
  int64_t limit = 0;    // keep only the first `limit` rows; 0: all
  std::string exceeded_message =
      "Sort exceeded memory limit, but did not opt in to external "
      "sorting.";
  std::string spill_prefix = "extsort";  // names the spill file (spill_file.h)
};

class ExternalSorter {
 public:
  // <0, 0, >0 as key `a` sorts before, with, or after key `b`.
  using KeyCompare = std::function<int(const bson::BsonObj& a, const bson::BsonObj& b)>;

  ExternalSorter(KeyCompare compare, ExternalSorterOptions options);
  ~ExternalSorter();

  // Adds one row (both objects owned). Before Finish only.
  [[nodiscard]] Status Add(bson::BsonObj key, bson::BsonObj doc);
  // Writes one row straight to a sorted run on disk, bypassing memory: for a caller that holds
  // its rows in key order itself ($group) and spills them whole. A run's rows come in key order
  // and end with EndSortedRun(); no Add while a run is open. Runs merge in the order they were
  // written (ties go to the earlier run), before the rows held by Add. Before Finish only.
  // Errors: 292 (exceeded_message) without allow_disk_use or a tmp_dir; I/O errors.
  [[nodiscard]] Status AppendToSortedRun(const bson::BsonObj& key, const bson::BsonObj& doc);
  // Ends the run AppendToSortedRun started (nothing when it wrote no row).
  [[nodiscard]] Status EndSortedRun();
  // Ends the input; afterwards Next() returns the rows in order.
  [[nodiscard]] Status Finish();
  // The next row, nullopt at the end, or an I/O error.
  StatusWith<std::optional<SortRow>> Next();

  // Number of sorted runs written to disk so far (0: everything stayed in memory).
  int64_t num_spills() const { return static_cast<int64_t>(runs_.size()); }
  // Bytes currently held in memory, as accounted.
  int64_t memory_bytes() const { return bytes_; }

 private:
  static int64_t RowBytes(const SortRow& r);
  void SortHeld();
  void Trim();
  Status Spill();

  KeyCompare compare_;
  ExternalSorterOptions options_;
  std::vector<SortRow> rows_;  // held in memory, in Add order until sorted
  int64_t bytes_ = 0;
  std::unique_ptr<SpillFile> file_;
  struct Run {
    int64_t begin, end;
  };
  std::vector<Run> runs_;
  std::optional<int64_t> open_run_begin_;  // a run AppendToSortedRun is writing

  // Output state.
  bool finished_ = false;
  size_t pos_ = 0;  // in rows_, when nothing spilled
  int64_t emitted_ = 0;
  struct Source;
  std::vector<std::unique_ptr<Source>> sources_;
  std::vector<size_t> heap_;  // indices into sources_
};

}  // namespace hourglass::pipeline
