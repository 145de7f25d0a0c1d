// $group accumulators ($sum, $avg, $min, $max, $first, $last, $push, $addToSet, $count,
// $stdDevPop, $stdDevSamp, $mergeObjects, and with options $top $bottom $topN $bottomN $firstN
// $lastN $minN $maxN $median $percentile). One Accumulator instance holds the running state of
// one output field of one group; it is not thread-safe. Process() returns an error for inputs
// the operator rejects ($mergeObjects of a non-object: 40400).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "base/status.h"
#include "bson/bson.h"
#include "pipeline/column_block.h"
#include "pipeline/double_double_sum.h"
#include "pipeline/expression.h"
#include "pipeline/value.h"

namespace hourglass::pipeline {

class Accumulator {
 public:
  virtual ~Accumulator() = default;
  // Folds in the value of the accumulator's expression for one input document (may be missing).
  virtual Status Process(const Value& v) = 0;
  // The same for a value that is a BSON element (EOO: missing), as block processing hands over
  // cells; accumulators override it to fold common types without building a Value.
  virtual Status ProcessElement(const bson::BsonElement& e) {
    return Process(Value::FromElement(e));
  }
  // ProcessElement for cells[rows[0]], cells[rows[1]], ... in that order (a run of rows of a
  // column block that share a group).
  virtual Status ProcessElements(const bson::BsonElement* cells, const uint32_t* rows, size_t n) {
    for (size_t i = 0; i < n; ++i) HG_RETURN_IF_ERROR(ProcessElement(cells[rows[i]]));
    return Status::OK();
  }
  // The same for the rows of a column of numbers: ProcessElement of each row's cell, in order.
  // $sum, $avg, $min and $max fold the numbers without an element per row.
  virtual Status ProcessNumbers(const NumberColumn& col, const uint32_t* rows, size_t n) {
    CellScratch scratch;
    for (size_t i = 0; i < n; ++i)
      HG_RETURN_IF_ERROR(ProcessElement(col.Element(rows[i], scratch)));
    return Status::OK();
  }
  // Process(v) n times (a constant input over a run of rows); $sum and $avg of an integer add
  // it once, multiplied, when that gives the same state.
  virtual Status ProcessRepeated(const Value& v, size_t n) {
    for (size_t i = 0; i < n; ++i) HG_RETURN_IF_ERROR(Process(v));
    return Status::OK();
  }
  // For folding several accumulators' columns together: when ProcessNumbers of a column of
  // doubles adds each present one to a double-double (and counts it), that double-double, else
  // null. A caller that adds a run's doubles to it itself, in row order, then calls
  // DoublesAdded with how many it added.
  virtual DoubleDoubleSum* DoubleLane() { return nullptr; }
  virtual void DoublesAdded(size_t /*n*/) {}
  virtual Value Finalize() const = 0;
  // Approximate bytes of state held, for the $group memory limit.
  virtual int64_t ApproxBytes() const { return 32; }

  // For $group's spilling: the state as a value (an array for most kinds) that MergePartial of
  // an accumulator of the same kind folds in. Merging the partial states of consecutive slices
  // of the input, in input order, into a fresh accumulator gives the state the whole input
  // would ($first, $push, $topN's ties... stay right). The window-only accumulators cannot be
  // merged (InternalError).
  virtual Value PartialState() const { return Finalize(); }
  virtual Status MergePartial(const Value& partial);
};

// True if `op` ("$sum", ...) names a supported accumulator.
bool IsAccumulatorName(std::string_view op);
// A fresh accumulator for `op` (which must satisfy IsAccumulatorName); $min, $max and $addToSet
// compare strings under `strings` (null: simple; the caller keeps it alive).
std::unique_ptr<Accumulator> MakeAccumulator(std::string_view op,
                                             const bson::StringComparator* strings = nullptr);

// An accumulator as written in a stage spec: the expression evaluated per input document (its
// value is what Process() receives) and a factory of fresh per-group state.
struct ParsedAccumulator {
  ExpressionPtr input;
  std::function<std::unique_ptr<Accumulator>()> make;
  // Set instead of `make` when the state depends on the group: an `n` that is an expression is
  // evaluated with the group key (a document) as the root (5787902 / 5787903 / 5787908 when it
  // is not a positive integer).
  std::function<StatusWith<std::unique_ptr<Accumulator>>(const Value& group_key)> make_for_group;
};

// True for every name ParseAccumulator accepts: IsAccumulatorName's plus the accumulators with
// options ($topN: {n, sortBy, output}, $percentile: {input, p, method}, ...).
bool IsAnyAccumulatorName(std::string_view op);
// Parses the argument `arg` of `{op: arg}` (its name is ignored). Unknown op: 15952; simple
// accumulators parse `arg` as one expression. Comparisons ($min, $maxN, $top's sortBy...) are
// under ctx.strings(). Option errors carry MongoDB's codes: 5787900 /
// 5787801 / 5788001 (spec not an object), 5787901 / 5788002 (unknown field), 5787906 / 5788003
// (missing n), 5787907 (missing input), 5788004 (missing output), 5788005 (missing sortBy),
// 5787902 / 5787903 / 5787908 (n not a positive integer), 7750300-7750303 (bad p), 40414 /
// 40415 (missing / unknown $percentile field), 2 (method other than 'approximate').
StatusWith<ParsedAccumulator> ParseAccumulator(std::string_view op, const bson::BsonElement& arg,
                                               const ParseContext& ctx);

// MongoDB's validation of an `n` argument: a positive integral number (5787902 / 5787903 /
// 5787908).
StatusWith<int64_t> ValidateAccumulatorN(const Value& n);
// A fresh $firstN / $lastN / $minN / $maxN accumulator keeping `n` values (n > 0); used by the
// expression forms of these operators too.
std::unique_ptr<Accumulator> MakeNAccumulator(std::string_view op, int64_t n,
                                              const bson::StringComparator* strings = nullptr);

}  // namespace hourglass::pipeline
