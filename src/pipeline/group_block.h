// Block processing for $group: folding column blocks (column_block.h) into the groups without a
// document per row, for $group stages whose key and accumulators read only top-level fields.
//
// Eligible: an _id whose field references are top-level or dotted paths ("$f", "$meta.host")
// without $$ROOT/$$CURRENT, and accumulators without options ($sum, $avg, $min, $max, $first,
// $last, $push, ...) whose argument is a top-level path "$f" or a constant ($count included).
// The result is exactly the document path's: rows are visited in order, each accumulator gets
// the same value the expression "$f" would produce for the row (missing included), and the key
// is evaluated by the stage's own _id expression on a document made of the fields it reads.
//
// The key is evaluated once per block instead of once per row when the fields it reads are
// constant in the block, or when the one field that varies is read only as the `date` of
// `$dateTrunc`s and date parts ($hour, $dateToString... in a constant time zone: date_bins.h), with
// the other fields constant, and the block's earliest and latest dates truncate alike and fall
// in the same bins of the parts: truncation never decreases with time, and a part's bins are
// intervals, so every row then has the same key.
// Such a date field that no accumulator reads is taken by its bounds where the source can give
// them (a time-series bucket's control.min/max), and its cells are decoded only when the bins
// of the bounds differ.
// Otherwise, when those $dateTrunc bins are fixed spans of time (units up to an hour; a date
// part's always are), a row
// whose date falls in the bins of the last row the key was evaluated for reuses that key, and so
// does a row whose varying fields hold the same cells as that row's. A key that draws $rand
// numbers is not eligible.
// $bucket is such a $group (MakeBucket); by a column of numbers, each bin's rows are folded at
// once.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "pipeline/accumulator.h"
#include "pipeline/column_arith.h"
#include "pipeline/column_block.h"
#include "pipeline/date_bins.h"
#include "pipeline/expression.h"

namespace hourglass::pipeline {

class GroupBlockPlan {
 public:
  // What an accumulator folds, per row.
  struct AccInput {
    std::optional<std::string> field;  // a top-level field, or
    std::shared_ptr<Expression> expr;  // an expression of the top-level fields `reads`, or
    std::vector<std::string> reads;
    // The expression as arithmetic of number columns (column_arith.h), when it is one.
    std::shared_ptr<const ColumnArith> arith;
    Value constant;  // a constant (when neither)
  };

  // nullopt when the stage is not eligible. `id` is the $group's _id element; `accumulators`
  // the {$op: arg} elements of its output fields, in order.
  static std::optional<GroupBlockPlan> Make(const bson::BsonElement& id,
                                            const std::vector<bson::BsonElement>& accumulators);

  // A $bucket's plan: Make's for a $group whose _id is `group_by`, and, when that is a top-level
  // field "$f" or column arithmetic (column_arith.h) and every boundary is a number a double
  // holds exactly, a block whose groupBy values are doubles or integers (a double holds them)
  // has its rows put in the boundaries' bins by comparing doubles, as $bucket compares numbers
  // (bin i holds [b[i], b[i+1]); the rest, NaN and missing values included, go to `default_key`,
  // or fail with `no_bin` when it is missing), and each bin's key is its lower boundary,
  // without evaluating the key per row. `boundaries` passed $bucket's checks (at least two,
  // ascending, one type bracket).
  static std::optional<GroupBlockPlan> MakeBucket(
      const bson::BsonElement& group_by, const std::vector<Value>& boundaries,
      const Value& default_key, const Status& no_bin,
      const std::vector<bson::BsonElement>& accumulators);

  // The top-level fields the stage reads (key and accumulators).
  std::vector<std::string> RequiredFields() const;

  // Callbacks into the $group's table: the key of a document (the stage's _id expression), the
  // accumulators of a key's group (created on first use), and memory accounting (bytes added;
  // true when the table was spilled, which forgets every group handed out; an error stops the
  // stage).
  struct Sink {
    std::function<StatusWith<Value>(const bson::BsonObj& doc)> key;
    std::function<StatusWith<std::vector<std::unique_ptr<Accumulator>>*>(const Value& key)> group;
    std::function<StatusWith<bool>(int64_t added_bytes)> account;
  };
  // Folds every block of `source` into the groups.
  Status Consume(BlockSource& source, const Sink& sink) const;

 private:
  // A key field read only as the `date` of these $dateTrunc expressions and date parts.
  struct TruncOnly {
    std::string field;
    std::vector<std::shared_ptr<Expression>> truncs;
    std::vector<int64_t> widths;  // each one's fixed bin width in ms, 0 for calendar bins
    std::vector<DatePartBins> parts;
  };
  // A $bucket's field and its boundaries, as values and as doubles (MakeBucket).
  struct Bins {
    std::string field;                         // groupBy "$f", or
    std::shared_ptr<const ColumnArith> arith;  // groupBy as column arithmetic
    std::vector<Value> boundaries;
    std::vector<double> bounds;
    Value default_key;  // missing: none
    Status no_bin = Status::OK();
  };
  std::optional<Bins> bins_;
  bool has_expressions_ = false;  // some input is an expression: rows are folded one by one
  bool all_arith_ = true;         // ... unless every expression is column arithmetic
  std::vector<std::string> key_fields_;
  std::vector<TruncOnly> trunc_only_;
  std::vector<AccInput> inputs_;
};

}  // namespace hourglass::pipeline
