// Temporary files for blocking stages that spill to disk ($sort, $group, $bucketAuto, find's
// sort). A SpillFile is an append-only sequence of BSON documents in one file under the spill
// directory (<dbpath>/_tmp, created on the first write); readers read a byte range of it back in
// order. The file is removed when the SpillFile is destroyed (a stage's stream, hence its cursor,
// going away), and RemoveStaleSpillFiles clears what a crashed server left behind.
//
// On-disk format: documents written back to back, each in its own BSON encoding (whose first 4
// bytes are its length). Nothing else: the file never outlives the process that wrote it.
//
// Also here: the process-wide spill counters serverStatus reports (SpillMetrics, atomic).
//
// Thread-safety: one SpillFile and its readers belong to one stream (single-threaded). Calls
// block on file I/O. Errors: OutOfDiskSpace (14031) when the disk is full, InternalError (1) for
// other I/O failures and for a corrupt file.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::pipeline {

class SpillFile {
 public:
  // Nothing is created until the first Append. `prefix` names the file's user ("sort", "group").
  SpillFile(std::string dir, std::string_view prefix);
  ~SpillFile();
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;

  // Appends `doc` (buffered; see Flush).
  [[nodiscard]] Status Append(const bson::BsonObj& doc);
  // Writes buffered documents to the file; needed before reading what was appended.
  [[nodiscard]] Status Flush();
  // Bytes appended so far: the offset the next document is written at.
  int64_t size() const { return size_; }
  // Empty until the file is created.
  const std::string& path() const { return path_; }

  // Reads the documents in [begin, end) in order. Borrows the SpillFile, which must outlive it
  // and be flushed up to `end`.
  class Reader {
   public:
    Reader(const SpillFile* file, int64_t begin, int64_t end, size_t buffer_bytes);
    // The next document (owned), nullopt at the end of the range, or an error.
    StatusWith<std::optional<bson::BsonObj>> Next();

   private:
    const SpillFile* file_;
    int64_t pos_, end_;
    size_t buffer_bytes_;
    std::string buffer_;
    size_t buffer_pos_ = 0;
  };
  std::unique_ptr<Reader> Read(int64_t begin, int64_t end, size_t buffer_bytes = 64 * 1024) const;

 private:
  Status Open();
  std::string dir_;
  std::string prefix_;
  std::string path_;
  int fd_ = -1;
  std::string pending_;  // appended, not yet written
  int64_t size_ = 0;
};

// Process-wide counters of blocking stages, for serverStatus's metrics.query (MongoDB's names):
// sort.* counts $sort stages (find's sort included), group.spills the runs $group wrote.
struct SpillMetrics {
  std::atomic<int64_t> sort_spills{0};        // metrics.query.sort.spillToDisk
  std::atomic<int64_t> sort_keys_sorted{0};   // metrics.query.sort.totalKeysSorted
  std::atomic<int64_t> sort_bytes_sorted{0};  // metrics.query.sort.totalBytesSorted
  std::atomic<int64_t> group_spills{0};       // metrics.query.group.spills
};
SpillMetrics& GlobalSpillMetrics();

// <dbpath>/_tmp, where spill files go.
std::string SpillDirectory(const std::string& dbpath);

// Removes the spill directory's files (left by a server that did not shut down cleanly); called
// once at startup, before any query runs.
void RemoveStaleSpillFiles(const std::string& dir);

// Files now in `dir` (for tests and diagnostics); 0 if it does not exist.
int64_t CountSpillFiles(const std::string& dir);

}  // namespace hourglass::pipeline
