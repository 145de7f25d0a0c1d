// Writes to a time-series collection: inserts (spec §5: each measurement is checked, staged into
// the bucket catalog and committed batch by batch), deletes and updates (spec §8;
// timeseries_modify.cc).
#pragma once

#include <functional>
#include <optional>

#include "bson/bson.h"
#include "catalog/transaction_table.h"
#include "commands/command.h"
#include "commands/command_request.h"
#include "timeseries/bucket_catalog.h"

namespace hourglass::commands {

struct InsertOutcome {
  int64_t n = 0;
  // (index in `documents`, error), ascending.
  std::vector<std::pair<int, Status>> errors;
};

// A retryable write's part in an insert of measurements: whether the measurement at an index of
// the documents ran before, and the record it carries into its bucket's commit otherwise.
struct MeasurementStatements {
  std::function<bool(int index)> ran_before;
  std::function<catalog::StatementRecord(int index)> record;
};

// Inserts `documents` (the insert command's array or document sequence) into `coll`. Each
// measurement must be a document whose time field holds a Date (BadValue otherwise); a missing
// `_id` is generated. Ordered: stops at the first failing measurement; unordered: every valid one
// is inserted. A retryable write (`statements`) skips the measurements an earlier attempt
// inserted (counting them in `n`) and records the others with the commits of their buckets.
StatusWith<InsertOutcome> InsertMeasurements(CommandContext& ctx,
                                             const timeseries::TimeseriesCollection& coll,
                                             const DocumentArray& documents, bool ordered,
                                             const MeasurementStatements* statements = nullptr);

// How a delete or update of measurements goes: `dry_run` changes nothing (explain) but counts
// the same; `stats`, when set, receives the work done.
struct ModifyStats {
  bson::BsonObj bucket_filter;   // the bucket-level predicate (BucketFilter::ToBson)
  bool meta_only = false;        // ... which decides every bucket whole
  int64_t buckets_examined = 0;  // bucket documents read
  int64_t buckets_matched = 0;   // ... that the bucket-level filter kept
  int64_t buckets_unpacked = 0;  // ... whose measurements were tested one by one
  // How the buckets were found (exec::BucketScanPlan), without and with the walk's statistics.
  bson::BsonObj input_plan, input_plan_run;
};
struct ModifyOptions {
  bool dry_run = false;
  ModifyStats* stats = nullptr;
  // A delete's first deleted measurement (findAndModify's value), when set.
  std::optional<bson::BsonObj>* first_deleted = nullptr;
  // {hint: <the statement's hint>} (HintOf), or empty: the index that finds the buckets.
  bson::BsonObj hint;
  // When set, only measurements equal to this one in every field (names and values, in any
  // order) match: a sorted findAndModify's pick, found by a read.
  const bson::BsonObj* only = nullptr;
  // A retryable write's statement (never multi): called in the transaction that writes its
  // change with what it matched and modified, to record it; and the record a measurement it
  // upserts carries into its bucket's commit (`upserted_id`: {"": _id}).
  std::function<Status(storage::Session&, int64_t matched, int64_t modified)> before_commit;
  std::function<catalog::StatementRecord(const bson::BsonObj& upserted_id)> upsert_statement;
};

// A sorted findAndModify's pick: the first measurement matching `filter` in `sort`'s order, read
// as a find reads it ({} when none matches: it equals no measurement, and an upsert still takes
// the filter's equalities). `hint`: the command's (HintOf).
StatusWith<bson::BsonObj> FirstMeasurementInOrder(
    CommandContext& ctx, const timeseries::TimeseriesCollection& coll, const bson::BsonObj& filter,
    const bson::BsonObj& sort, const bson::BsonObj& hint, const query::ExpressionContext& expr_ctx);

// Deletes the measurements of `coll` matching `filter` (all of them, or the first one found when
// !multi) and returns how many (spec §8.2, MongoDB 7.0): buckets whose measurements all match go
// whole (a filter on the metaField alone never unpacks), partly matching buckets are rewritten
// under the same _id with the measurements that remain. `expr_ctx`: what the filter's $expr
// reads ($$NOW, the command's `let`).
StatusWith<int64_t> DeleteMeasurements(CommandContext& ctx,
                                       const timeseries::TimeseriesCollection& coll,
                                       const bson::BsonObj& filter, bool multi,
                                       const query::ExpressionContext& expr_ctx,
                                       ModifyOptions options = {});

struct UpdateOutcome {
  int64_t matched = 0;                       // measurements matched
  int64_t modified = 0;                      // ... that the update changed
  std::optional<bson::BsonObj> upserted_id;  // {"": _id} of the measurement an upsert inserted
  // The first measurement matched, and the first as the update left it (or the upserted one).
  std::optional<bson::BsonObj> before, after;
};

// Updates the measurements of `coll` matching `filter` (all of them, or the first one found when
// !multi). Two ways, as MongoDB has them:
// - Spec §8.3 (MongoDB 5.1-7.0): an operator-style update of the metaField alone with a filter
//   on the metaField alone, `multi` set and no `upsert`, changes the meta of whole buckets; n and
//   nModified count their measurements. That is all the server takes while the server parameter
//   hourglassTimeseriesArbitraryUpdates is false: each rule broken is InvalidOptions (72) with
//   MongoDB's message.
// - MongoDB 8.0's updates of any field (the default): operator, replacement and pipeline updates,
//   upserts; the measurements an update changes leave their buckets (rewritten with the others,
//   or removed) and are written into new buckets in the same transaction. An updated measurement
//   must keep a Date in the time field (BadValue) and suit the bucket indexes (5930501...).
// `array_filters` serve the update's $[<identifier>] operators, as for regular collections.
StatusWith<UpdateOutcome> UpdateMeasurements(
    CommandContext& ctx, const timeseries::TimeseriesCollection& coll, const bson::BsonObj& filter,
    const bson::BsonElement& update, const bson::BsonObj& array_filters, bool multi, bool upsert,
    const query::ExpressionContext& expr_ctx, ModifyOptions options = {});

// Registers hourglassTimeseriesArbitraryUpdates (Hourglass's own server parameter, default true).
void RegisterTimeseriesWriteParameters();

}  // namespace hourglass::commands
