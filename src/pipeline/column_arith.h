// Arithmetic over columns of doubles, for $group's block folding: an accumulator's input such
// as {$multiply: ["$usage_user", 2]} or {$add: ["$a", "$b"]} computed for a run of rows at once
// instead of per row on a document of the row's cells. Only $add, $multiply, $subtract and
// $divide of top-level field paths, numbers (int32, int64, double) and such expressions, each
// with a field in it, over columns of doubles without missing cells: their results are then
// doubles, computed with the operations and in the order expr_arith.cc applies per row ($add from
// 0 and $multiply from 1, left to right; a - b; a / b), so every value is the same to the bit. A
// run with a zero divisor is left to the per-row path, which reports it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bson/bson.h"
#include "pipeline/column_block.h"

namespace hourglass::pipeline {

class ColumnArith {
 public:
  // The program for the accumulator argument `spec`, or nullopt when it is anything else.
  static std::optional<ColumnArith> Compile(const bson::BsonElement& spec);

  // The top-level fields it reads, each once.
  const std::vector<std::string>& fields() const { return fields_; }

  // Computes rows run[0..n) into out[run[i]], given columns[k] for fields()[k]; false (nothing
  // computed) unless every one is a column of doubles without missing cells, and no divisor is
  // zero.
  bool Evaluate(const std::vector<const NumberColumn*>& columns, const uint32_t* run, size_t n,
                double* out) const;

 private:
  struct Node {
    enum class Op { kField, kConstant, kAdd, kMultiply, kSubtract, kDivide } op;
    int field = -1;       // kField: index into fields_
    double constant = 0;  // kConstant
    std::vector<int> children;
  };
  // Adds the node for `e` (and its children); its index, or -1 if `e` is not compilable. Sets
  // *reads_field when a field is under it.
  int Add(const bson::BsonElement& e, bool* reads_field);
  // The node's values for rows run[0..n) into dense[0..n); false on a zero divisor.
  bool Run(int node, const std::vector<const NumberColumn*>& columns, const uint32_t* run, size_t n,
           double* dense) const;

  std::vector<Node> nodes_;
  int root_ = -1;
  std::vector<std::string> fields_;
};

}  // namespace hourglass::pipeline
