// Window bounds of $setWindowFields ({documents: [lo, hi]} or {range: [lo, hi], unit}), mapping
// each document of a partition to its window, and the time units shared with $densify. Internal
// to src/pipeline; see README.md ("Window stages"). Everything here is immutable once parsed,
// except WindowIndexer, which is per partition and single-threaded.
//
// Errors (MongoDB 7.0's): malformed bounds FailedToParse (9); lower above upper 5339900; document
// bounds without a sortBy 5339901; range bounds without a one-field sortBy 5339902 or with a
// descending one 8947401; range windows over a date without a unit 5429413, over another
// non-number 5429414, with a unit over a non-date 5429513.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "pipeline/expression_internal.h"
#include "pipeline/spill_file.h"
#include "pipeline/value.h"

namespace hourglass::pipeline {

// The units and date arithmetic are $dateAdd's (expression_internal.h, date_time.cc).
using internal::FixedUnitMillis;
using internal::TimeUnit;

// "millisecond" ... "year"; anything else fails with FailedToParse (9), as MongoDB's window and
// $densify units do ($dateAdd's 'unit' has its own codes).
StatusWith<TimeUnit> ParseTimeUnit(std::string_view name);
// `millis` moved by `amount` units in UTC: $dateAdd's arithmetic (month ends clamp), saturating
// at the ends of the date range instead of failing.
int64_t AddTimeUnits(int64_t millis, TimeUnit unit, int64_t amount);

// What a window function learns from the stage's sortBy.
struct WindowSortInfo {
  bool present = false;
  size_t num_keys = 0;
  std::vector<std::string> first_path;  // the first sortBy key, split on '.'
  bool ascending = true;
};

// The documents of one partition, in order: in memory, or, once Spill() is called (a partition
// over the stage's memory limit with allowDiskUse), in a spill file read back on access. Reads
// in increasing position are sequential; others seek. Single-threaded.
class PartitionDocs {
 public:
  PartitionDocs();
  ~PartitionDocs();
  PartitionDocs(PartitionDocs&&) noexcept;
  PartitionDocs& operator=(PartitionDocs&&) noexcept;

  size_t size() const { return size_; }
  bool spilled() const { return file_ != nullptr; }
  // Appends a document (to the file once spilled: I/O errors).
  [[nodiscard]] Status Add(bson::BsonObj doc);
  // Moves the documents held so far into a new spill file under `dir`; later ones follow them.
  [[nodiscard]] Status Spill(const std::string& dir);
  // Ends the input; needed before Get once spilled.
  [[nodiscard]] Status Seal();
  // The document at `i` (< size()); read from the file when spilled (I/O errors).
  StatusWith<bson::BsonObj> Get(size_t i) const;

 private:
  size_t size_ = 0;
  std::vector<bson::BsonObj> docs_;  // in memory
  std::unique_ptr<SpillFile> file_;  // spilled
  std::vector<int64_t> offsets_;     // spilled: where each document starts
  mutable std::unique_ptr<SpillFile::Reader> reader_;
  mutable size_t next_ = 0;  // the position reader_ reads next
};

// One partition, in partition + sortBy order.
struct WindowPartition {
  PartitionDocs docs;
  // The value at the first sortBy path of each document (missing without a sortBy).
  std::vector<Value> sort_values;
};

// One end of a window: "unbounded", "current" or an offset.
struct WindowBound {
  enum Kind { kUnbounded, kCurrent, kOffset };
  Kind kind = kUnbounded;
  double offset = 0;  // numeric range offset
  int64_t n = 0;      // documents offset, or a count of `unit`
};

struct WindowBounds {
  bool range = false;
  WindowBound lower, upper;  // default: the whole partition
  std::optional<TimeUnit> unit;
  bool Unbounded() const {
    return lower.kind == WindowBound::kUnbounded && upper.kind == WindowBound::kUnbounded;
  }
};

// Parses the value of a window function's `window` field.
StatusWith<WindowBounds> ParseWindowBounds(const bson::BsonElement& arg,
                                           const WindowSortInfo& sort);

// Maps each document of a partition to its window [lo, hi). Both ends never move backwards as
// the document index grows (range windows need an ascending sortBy), which the functions rely on
// to slide state along the partition.
class WindowIndexer {
 public:
  explicit WindowIndexer(const WindowBounds& w) : w_(w) {}
  // Checks and reads the sortBy values a range window needs (5429413 / 5429414 / 5429513).
  Status Prepare(const WindowPartition& p);
  void Bounds(size_t i, size_t* lo, size_t* hi) const;

 private:
  const WindowBounds& w_;
  size_t n_ = 0;
  std::vector<double> keys_;
};

}  // namespace hourglass::pipeline
