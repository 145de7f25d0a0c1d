// Arithmetic over columns of numbers, for block processing: an expression such as
// {$multiply: ["$usage_user", 2]} or {$add: ["$a", "$b"]} computed for a run of rows at once
// instead of per row on a document of the row's cells ($group's accumulator inputs, fields that
// $addFields/$set/$project compute). Only $add, $multiply, $subtract and $divide of top-level
// field paths, numbers (int32, int64, double) and such expressions, each with a field in it, and
// $cond choosing between two of them by a comparison ($eq, $ne, $gt, $gte, $lt, $lte) of two of
// them (as {$sum: {$cond: [{$gt: ["$f", 90]}, 1, 0]}} counts), over columns of int32, int64 or
// double without missing cells. The result is a column of one type with every value what
// expr_arith.cc gives per row, to the bit:
//  - with a double operand (or under $divide), doubles, computed with the same operations in
//    the same order ($add from 0 and $multiply from 1, left to right; a - b; a / b), integer
//    operands converted as the per-row path converts them;
//  - otherwise exact integers: int32 when every operand is (and every result fits), else int64.
//  - a $cond's value is its chosen branch's, when both branches give one type (or every row
//    chooses the same one); numbers compare by value, NaN equal to itself and below the others.
// A run the per-row path would answer otherwise (an integer overflow, which it turns into a
// double or a long for some rows only; a zero divisor, which it reports; branches of two types)
// is left to it, also when the row would not have evaluated the branch that needed it.
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
  // The program for the expression `spec`, or nullopt when it is anything else.
  static std::optional<ColumnArith> Compile(const bson::BsonElement& spec);

  // The top-level fields it reads, each once.
  const std::vector<std::string>& fields() const { return fields_; }

  // Computes rows run[0..n) into out[run[i]] (a NumberColumn's values of type *type: kDouble,
  // kInt32 or kInt64), given columns[k] for fields()[k]; false (nothing computed) unless every
  // one is a column of those types without missing cells, and the run is left to no one else.
  bool Evaluate(const std::vector<const NumberColumn*>& columns, const uint32_t* run, size_t n,
                uint64_t* out, bson::BsonType* type) const;

 private:
  // The type of a node's values over a run, in MongoDB's order of promotion.
  enum class Kind { kInt, kLong, kDouble };
  struct Node {
    enum class Op { kField, kConstant, kAdd, kMultiply, kSubtract, kDivide, kCompare, kCond } op;
    enum class Compare { kEq, kNe, kGt, kGte, kLt, kLte } compare = Compare::kEq;  // kCompare
    int field = -1;  // kField: index into fields_
    Kind constant_kind = Kind::kInt;
    double constant = 0;       // kConstant: the number as a double, and
    int64_t int_constant = 0;  // as an integer when constant_kind is kInt or kLong
    std::vector<int> children;
  };
  // A node's values for the run: doubles, or exact integers (kInt: every one fits an int32).
  struct Dense {
    Kind kind = Kind::kInt;
    std::vector<double> doubles;
    std::vector<int64_t> ints;
    // The values as doubles, as the per-row path converts an integer operand.
    const double* AsDoubles();
  };
  // Adds the node for `e` (and its children); its index, or -1 if `e` is not compilable. Sets
  // *reads_field when a field is under it.
  int Add(const bson::BsonElement& e, bool* reads_field);
  // Adds a number-valued operand (a child of an operator): -1 unless it reads a field or is a
  // constant.
  int AddOperand(const bson::BsonElement& e, bool* reads_field);
  // Adds the comparison `e` (a $cond's condition), or -1.
  int AddComparison(const bson::BsonElement& e, bool* reads_field);
  // The comparison node's answer for rows run[0..n) into mask; false when it is left to the
  // per-row path.
  bool Test(int node, const std::vector<const NumberColumn*>& columns, const uint32_t* run,
            size_t n, std::vector<uint8_t>& mask) const;
  // The node's values for rows run[0..n) into `dense`; false when the run is left to the per-row
  // path.
  bool Run(int node, const std::vector<const NumberColumn*>& columns, const uint32_t* run, size_t n,
           Dense& dense) const;

  std::vector<Node> nodes_;
  int root_ = -1;
  std::vector<std::string> fields_;
};

}  // namespace hourglass::pipeline
