// BucketFilter: predicate pushdown for reads of a time-series collection (spec §6.2 in
// /work/shared/spec/timeseries.md). From the user's filter on measurements it derives what can be
// tested on a whole bucket before unpacking it:
//  - meta_filter(): the top-level conjuncts that reference only the metaField, renamed M -> meta
//    (M.a -> meta.a). Tested on bucket documents with query::Matcher it is exact.
//  - a loose predicate on control.min / control.max (MayMatch): {f: {$gt: v}} becomes
//    "control.max.f > v", and so on, with MongoDB's $_internalExpr* comparisons (canonical BSON
//    order across types, no type bracketing, a path that meets an array may match). It never
//    rejects a bucket holding a matching measurement, but may keep buckets holding none, so the
//    caller still applies the full filter to every unpacked measurement (unless meta_only()).
//  - time bounds (min_time_millis / max_time_millis) to narrow a scan of buckets ordered by their
//    rounded start time control.min.<time>.
//
// Control-based pruning of fields other than the time field relies on buckets without mixed
// schema (a path that is an object in some rows and a scalar or array in others, which the bucket
// catalog avoids by rolling over on schema change); with assume_no_mixed_schema = false only the
// meta and time predicates are pushed down.
//
// Collations: the filter compares strings under expr_ctx.collator (the read's; null: simple), the
// meta tests exactly so. A bucket's control.min/max were computed under the collection's default
// collation (`control_collator`): only when that is the read's do string operands reach them; a
// read under another collation leaves its string comparisons of measurements to the event
// filter, as MongoDB does.
//
// Thread-safety: immutable after Make; copies share state and may be used from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "bson/bson.h"
#include "query/expression_hooks.h"
#include "query/matcher.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::timeseries {

struct BucketFilterSpec {
  std::string time_field;
  std::optional<std::string> meta_field;
  int64_t bucket_max_span_seconds = 3600;
  bool assume_no_mixed_schema = true;
  // What the filter's $expr may read ($$NOW, the command's `let` variables), and the collation
  // its comparisons use.
  query::ExpressionContext expr_ctx;
  // The collation control.min/max were computed under: the collection's default (null: simple).
  std::shared_ptr<const bson::StringComparator> control_collator;

  // The spec of a collection with these options whose default collation is `control_collator`.
  static BucketFilterSpec Of(const TimeseriesOptions& options,
                             const query::ExpressionContext& expr_ctx,
                             std::shared_ptr<const bson::StringComparator> control_collator) {
    return BucketFilterSpec{.time_field = options.time_field,
                            .meta_field = options.meta_field,
                            .bucket_max_span_seconds = options.bucket_max_span_seconds,
                            .assume_no_mixed_schema = true,
                            .expr_ctx = expr_ctx,
                            .control_collator = std::move(control_collator)};
  }
};

class BucketFilter {
 public:
  // Never fails for valid filters: parts that cannot be pushed down are simply left to the event
  // filter. Returns query::Matcher::Parse's error (BadValue, ...) for an invalid filter.
  static StatusWith<BucketFilter> Make(const bson::BsonObj& filter, const BucketFilterSpec& spec);
  // The same for a filter the caller has parsed (`parsed`, with spec.expr_ctx): its tree is
  // split, not parsed again.
  static StatusWith<BucketFilter> Make(const bson::BsonObj& filter, const query::Matcher& parsed,
                                       const BucketFilterSpec& spec);

  // False only if no measurement of `bucket` can match the filter. A bucket whose control or
  // min/max objects are missing is always kept.
  bool MayMatch(const bson::BsonObj& bucket) const;

  // True when every measurement of `bucket` (one MayMatch kept) matches the filter, so the
  // caller may skip the per-event filter (MongoDB's wholeBucketFilter, spec §6.2): when the
  // filter is meta_only(), or when its other conjuncts are all date ranges on the time field
  // ($eq/$gt/$gte/$lt/$lte) and the bucket's control.min/max times lie inside them.
  bool MatchesWholeBucket(const bson::BsonObj& bucket) const;
  // The whole-bucket predicate for explain, e.g. {$and: [{"control.min.t": {$_internalExprGte:
  // d1}}, {"control.max.t": {$_internalExprLte: d2}}]}; {} when there is none.
  bson::BsonObj WholeBucketFilterToBson() const;

  // Inclusive bounds in milliseconds implied by top-level conjuncts ($eq/$gt/$gte/$lt/$lte/$in
  // with date operands, possibly inside a top-level $and) on the time field. A bucket whose
  // control.min.<time> lies outside [min - bucket_max_span, max] cannot match (computing the
  // lower edge is the caller's job: mind overflow at the extremes of the date range).
  // min > max means nothing can match.
  std::optional<int64_t> min_time_millis() const;
  std::optional<int64_t> max_time_millis() const;

  // True when every conjunct of the filter references only the metaField (or nothing at all, as
  // in {}): then meta_filter() is exactly the filter and the per-event filter may be skipped.
  bool meta_only() const;

  // The top-level conjuncts on the meta field, renamed M -> meta, as a filter to apply to bucket
  // documents with query::Matcher; {} if none.
  const bson::BsonObj& meta_filter() const;
  // meta_filter() parsed; nullptr when it is {}.
  const query::Matcher* meta_matcher() const;

  // The filter without its top-level conjuncts on the meta field when there are such (they are
  // decided exactly per bucket by MayMatch), else the whole filter: what each measurement of a
  // kept bucket must still pass. The matcher shares the filter's parsed tree.
  const query::Matcher& residual() const;
  const bson::BsonObj& residual_filter() const;

  // The read's collation (spec.expr_ctx.collator): what index bounds must be built under.
  const bson::StringComparator* collator() const;

  // A description of the whole bucket-level predicate in MongoDB's explain style, e.g.
  // {$and: [{meta: "a"}, {"control.max.temp": {$_internalExprGt: 5}}]}; {} if nothing is pushed.
  bson::BsonObj ToBson() const;

  struct State;

 private:
  std::shared_ptr<const State> state_;
};

}  // namespace hourglass::timeseries
