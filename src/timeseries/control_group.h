// ControlGroup: answering a $group over a time-series collection's measurements from the buckets'
// control summaries (spec timeseries.md §6.3) instead of unpacking them.
//
// Applies to a $group placed right after the unpack stage whose _id is the metaField, a dotted
// path under it, a constant, {$dateTrunc: {date: "$<time field>", <constant options>}}, or an
// object of those ({host: "$M.host", hour: {$dateTrunc: ...}}), and whose accumulators are only
// {$min: "$f"}, {$max: "$f"} (f a top-level field: a measurement field, the time field or the
// metaField) and {$sum: 1} /
// {$count: {}}. The group is split in two:
//   1. per bucket, a *summary* document {m: <bucket meta>, a0: ..., a1: ...}: a_i is
//      control.min.f / control.max.f / the bucket's row count — or, when the bucket cannot be
//      summarized, one summary per matching measurement (a_i = the measurement's f, or 1);
//   2. merge_group(): a $group over the summaries ({_id: "$m...", out_i: {$min|$max|$sum:
//      "$a_i"}}), which the ordinary $group stage runs, so group order, output shape and types
//      are exactly those of the original $group.
//
// When a summary is exact (Summarize returns nullopt otherwise, and the caller unpacks):
//  * every measurement of the bucket passes the query's filter (the caller's `whole`);
//  * with a $dateTrunc in the key, the key of the bucket's earliest and latest times is the same
//    ($dateTrunc never decreases as the date grows, so then every measurement has that key);
//  * for each $min/$max field, control.min.f and control.max.f are both present (or both absent:
//    no measurement has f) and neither is null, undefined, MinKey, MaxKey, an object or an array.
//    control.min/max order values across types canonically, as $min/$max do, but they count
//    null (which the accumulators skip) and merge objects and arrays field by field (the
//    accumulators compare them whole); with those excluded at both ends, no such value can lie
//    between them either, so control.min.f = $min(f) and control.max.f = $max(f) over the bucket;
//  * the time field's control.min is the rounded bucket start, not the earliest measurement:
//    $min of the time field reads the time column (no other column is decoded; for a compressed
//    bucket only the time column's BSONColumn, and the row count is control.count).
//
// Pure functions over BSON; thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::timeseries {

class ControlGroup {
 public:
  // nullopt when `group_spec` (the value of a $group stage) is not of the supported form.
  static std::optional<ControlGroup> Make(const bson::BsonObj& group_spec,
                                          const std::string& time_field,
                                          const std::optional<std::string>& meta_field);

  // The $group to run over the summary documents.
  const bson::BsonObj& merge_group() const { return merge_group_; }
  // The top-level measurement fields a per-measurement summary reads.
  const std::vector<std::string>& fields() const { return fields_; }

  // Whether the merge group's _id gives the same key for two summaries (they differ only in
  // "tmin"); the caller evaluates it (this module has no expression evaluator).
  using SameKey = std::function<bool(const bson::BsonObj&, const bson::BsonObj&)>;

  // Whether the key reads the time field ($dateTrunc): then Summarize needs `same_key`.
  bool time_key() const { return time_key_; }

  // The summary of a whole bucket (every measurement matches), or nullopt if it cannot be
  // computed exactly from control (see the header comment).
  std::optional<bson::BsonObj> Summarize(const bson::BsonObj& bucket,
                                         const SameKey& same_key = {}) const;
  // The summary of one (unpacked) measurement.
  bson::BsonObj SummarizeMeasurement(const bson::BsonObj& measurement) const;

 private:
  enum class Op { kMin, kMax, kCount };
  struct Acc {
    Op op;
    std::string field;  // empty for kCount
  };
  // Appends the rewritten key `e` under `name`; false if it is not of a supported form.
  bool RewriteKey(const bson::BsonElement& e, std::string_view name, bson::BsonBuilder& out);
  // The earliest and latest time of the bucket's time column (nullopt: unreadable).
  std::optional<std::pair<int64_t, int64_t>> TimeRange(const bson::BsonObj& bucket) const;

  std::string time_field_;
  std::optional<std::string> meta_field_;
  bool id_uses_meta_ = false;
  bool time_key_ = false;
  std::vector<Acc> accs_;
  std::vector<std::string> fields_;
  bson::BsonObj merge_group_;
};

}  // namespace hourglass::timeseries
