// AppendLog: an append-only log of numbered records in segment files of one directory, for data
// that must be durable as soon as it is acknowledged but reaches its tables later and in bulk (the
// time-series measurement journal). An append costs one write(2) and nothing of WiredTiger's cache
// or log: a record kept in a table would be copied into the cache, logged, removed again and then
// cleaned out by eviction, all for bytes that are read back only after a crash. The KvEngine that
// opens a log (KvEngine::OpenAppendLog) makes it durable with its own journal: its periodic flush
// and WaitForJournal fsync the log too.
//
// Records are numbered 1, 2, ... in append order, on across restarts. A segment file is named by
// its first record's number (16 hex digits, then ".log") and holds records back to back:
//
//   <payload length: uint32 LE><number: uint64 LE><CRC-32C of the 12 bytes before and the payload:
//    uint32 LE><payload>
//
// Opening starts a new segment after the existing ones, which stay for replay (ForEach) until
// DropBefore removes them. A record cut short, failing its checksum or not numbered next ends its
// segment: a crash interrupted its write, and nothing after it in that segment was made durable.
//
// DropBefore keeps up to two finished segments as spares (".spare" for ".log"), and a new
// segment is one of them renamed and written over from its start, as databases recycle their
// write-ahead logs: overwriting pages the page cache already holds costs a copy, where a new
// file's pages must each be allocated first (and on a virtual machine, often faulted in by the
// host as well). A reused segment's older bytes end its records at replay, as they are not
// numbered next. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hourglass::storage {

class AppendLog {
 public:
  static constexpr uint64_t kDefaultSegmentBytes = 64 << 20;

  // Opens the log in `dir`, creating the directory if missing; the records already there are
  // numbered before any appended from now on. `dir` empty: a log that keeps nothing (for an
  // in-memory engine), whose appends only get their numbers. A new segment is begun once the
  // current one holds `segment_bytes`.
  static StatusWith<std::unique_ptr<AppendLog>> Open(std::string dir,
                                                     uint64_t segment_bytes = kDefaultSegmentBytes);
  ~AppendLog();
  AppendLog(const AppendLog&) = delete;
  AppendLog& operator=(const AppendLog&) = delete;

  // Appends `payload` and returns its number; durable after the next Sync. A failed write
  // (OutOfDiskSpace, InternalError) leaves the log as it was before the call.
  StatusWith<uint64_t> Append(std::string_view payload);
  // Makes every record appended before the call durable: fdatasync of the segments written since
  // the last Sync, and of the directory when a segment was created. Cheap when nothing was.
  Status Sync();

  // Calls fn(number, payload) for every record of the segments that were there at Open, in
  // order; a failed fn stops the walk and is returned.
  Status ForEach(const std::function<Status(uint64_t, std::string_view)>& fn) const;
  // Numbers every record appended from now on above `n`.
  void NumberAfter(uint64_t n);
  uint64_t next_number() const;

  // Whether DropBefore(n) would remove a segment.
  bool HasSegmentsBefore(uint64_t n) const;
  // Removes the segments, other than the one being appended to, whose records are all numbered
  // below `n`, and makes their removal durable. Returns the number of the first record still
  // kept (every record numbered below it is gone).
  StatusWith<uint64_t> DropBefore(uint64_t n);

 private:
  struct File;
  struct Segment {
    uint64_t first;  // the number of its first record
    std::string path;
  };
  explicit AppendLog(std::string dir, uint64_t segment_bytes)
      : dir_(std::move(dir)), segment_bytes_(segment_bytes) {}
  // Begins a segment whose first record is numbered next_; under mu_.
  Status BeginSegment();

  const std::string dir_;
  const uint64_t segment_bytes_;
  mutable std::mutex mu_;
  uint64_t next_ = 1;
  std::vector<Segment> segments_;  // oldest first; the last is current_'s once it exists
  std::shared_ptr<File> current_;  // the segment appended to; null until the first append
  uint64_t current_size_ = 0;
  bool current_dirty_ = false;                   // written since Sync took it
  std::vector<std::shared_ptr<File>> unsynced_;  // finished segments written since the last Sync
  bool dir_dirty_ = false;                       // a segment was created since the last Sync
  size_t replay_segments_ = 0;                   // segments_[0, this) were there at Open
  std::vector<std::string> spares_;              // paths of finished segments kept for reuse
  bool broken_ = false;                          // a failed write could not be undone
};

}  // namespace hourglass::storage
