// The times of a rollup's source that changed since the rollup last computed them: the dirty
// ranges that rollup maintenance recomputes and that reads answered from a rollup take from the
// source instead (commands/rollups.h).
//
// Each write that changes the source's measurements records, in its own transaction, the time
// range of the buckets it wrote (RollupSourceObserver, installed on the source's bucket
// collection): durable exactly when the write is, so a crash never leaves a change unmarked, and
// no write of the source runs without its mark. A mark is one record of the table _rollup_dirty:
//
//   key   <rollup uuid length: 1 byte><rollup uuid><seq: 8 bytes BE><from: 8 bytes BE, sign
//   flipped> value <to: 8 bytes LE>        -- the range [from, to) in milliseconds
//
// `seq` orders marks: every transaction's marks take a new one, larger than any taken before,
// also across restarts. Maintenance takes a seq before it reads the source, and afterwards
// forgets only the marks below it (Clear): a write that committed after the read began marks
// with a larger seq and stays dirty (and Clear forgets only the marks it was shown). The marks of
// one transaction that overlap or touch are merged into one record (kept in the session's
// transaction state). Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "catalog/collection.h"
#include "storage/kv_engine.h"
#include "storage/session.h"

namespace hourglass::timeseries {

inline constexpr std::string_view kRollupMarksTable = "_rollup_dirty";
inline constexpr std::string_view kRollupThinnedTable = "_rollup_thinned";

struct DirtyRange {
  int64_t from = 0;  // millis, inclusive
  int64_t to = 0;    // millis, exclusive
  uint64_t seq = 0;
};

class RollupMarks {
 public:
  // Creates the table if it is missing and starts seqs above every stored one.
  static StatusWith<std::unique_ptr<RollupMarks>> Open(storage::KvEngine* engine);

  uint64_t NextSeq() { return next_seq_.fetch_add(1); }

  // Marks [from, to) changed for the rollup `rollup` (its bucket collection's UUID), in `s`'s
  // transaction (or at once outside one). Ranges are clamped to +-2^60 ms (Dates past 36 million
  // years mark the edge).
  Status Mark(storage::Session& s, const std::string& rollup, int64_t from, int64_t to);
  // Every mark of `rollup`, in seq order.
  StatusWith<std::vector<DirtyRange>> List(storage::Session& s, const std::string& rollup) const;
  // Forgets the parts inside [from, to) of the marks in `listed` (what List returned before the
  // bins were recomputed) that are still stored as listed; the parts outside stay, under their
  // own seq, and replace them in `listed`. Marks committed after the List are not touched, even
  // with an older seq (a transaction takes its seq at its first mark, not at its commit).
  Status Clear(storage::Session& s, const std::string& rollup, int64_t from, int64_t to,
               std::vector<DirtyRange>* listed);
  // Forgets every mark of `rollup`, and its thinned time (it was dropped).
  Status DropAll(storage::Session& s, const std::string& rollup);
  // The rollups that have marks.
  StatusWith<std::vector<std::string>> MarkedRollups(storage::Session& s) const;

  // The source's TTL removed measurements up to `through` (the removed bucket's latest time):
  // the bins up to there keep their rows (table _rollup_thinned: the largest such time per
  // rollup). ThinnedThrough: that time, nullopt if the TTL removed nothing yet.
  Status MarkThinned(storage::Session& s, const std::string& rollup, int64_t through);
  StatusWith<std::optional<int64_t>> ThinnedThrough(storage::Session& s,
                                                    const std::string& rollup) const;

 private:
  explicit RollupMarks(uint64_t first_seq) : next_seq_(first_seq) {}
  std::atomic<uint64_t> next_seq_;
};

// The union of `ranges` as disjoint sorted [from, to) ranges (seq: the largest merged).
std::vector<DirtyRange> MergeRanges(std::vector<DirtyRange> ranges);
// `ranges` minus `cut`, both sorted and disjoint (pieces keep their seq).
std::vector<DirtyRange> SubtractRanges(const std::vector<DirtyRange>& ranges,
                                       const std::vector<DirtyRange>& cut);
// `ranges` (sorted, disjoint) joined across their smallest gaps until at most `max` (>= 1) are
// left.
std::vector<DirtyRange> CoalesceRanges(std::vector<DirtyRange> ranges, size_t max);

// Installed on a rollup source's bucket collection: marks, for each of its rollups, the time
// range of every bucket a write changes (control.min/max of the time field; for a bucket without
// them, its start through its largest span), and the latest time of every bucket the TTL
// removes (MarkThinned).
class RollupSourceObserver : public catalog::WriteObserver {
 public:
  RollupSourceObserver(RollupMarks* marks, std::string time_field, int64_t max_span_seconds,
                       std::vector<std::string> rollups)
      : marks_(marks),
        time_field_(std::move(time_field)),
        max_span_ms_(max_span_seconds * 1000),
        rollups_(std::move(rollups)) {}
  Status OnWrite(storage::Session& s, int64_t rid, const bson::BsonObj* doc, bool expired) override;
  const std::vector<std::string>& rollups() const { return rollups_; }

 private:
  RollupMarks* marks_;
  std::string time_field_;
  int64_t max_span_ms_;
  std::vector<std::string> rollups_;
};

}  // namespace hourglass::timeseries
