// A running sum of doubles carried as an unevaluated pair of doubles (a leading sum and a
// small addend), by error-free transformations (Dekker's Fast2Sum, Møller and Knuth's 2Sum).
// This is how MongoDB sums the non-decimal numbers of $sum and $avg: the pair holds the exact
// total until partial sums pass about 2^106, and the result is the pair's leading part. Adding
// the same numbers in the same order gives MongoDB's result bit for bit (e.g. 0.1 + 0.2 + 0.3
// is 0.6, where plain addition gives 0.6000000000000001).
//
// The operations must not be reassociated or fused: the module builds without -ffast-math.
#pragma once

#include <cmath>
#include <cstdint>

namespace hourglass::pipeline {

class DoubleDoubleSum {
 public:
  void Add(double x) { Step(sum_, addend_, special_, x); }
  // Add's arithmetic on the parts of a sum, for a double or for a vector of doubles (GCC's
  // vector extensions: each lane a sum of its own, with the same IEEE operations in the same
  // order, so that several sums advance in one instruction stream).
  template <typename D>
  static void Step(D& sum, D& addend, D& special, D x) {
    special += x;  // a plain sum, the result when infinities make the pair NaN
    // Fold the addend (small next to the sum) into x: Fast2Sum(x, addend).
    const D folded = x + addend;
    addend -= folded - x;
    // Then the sum: 2Sum(sum, folded), whose rounding error joins the addend.
    const D s = sum + folded;
    const D sum_part = s - folded;
    const D folded_part = s - sum_part;
    addend += (sum - sum_part) + (folded - folded_part);
    sum = s;
  }
  // The parts Step works on, to load into vectors and store back.
  void Parts(double* sum, double* addend, double* special) const {
    *sum = sum_;
    *addend = addend_;
    *special = special_;
  }
  void SetParts(double sum, double addend, double special) {
    sum_ = sum;
    addend_ = addend;
    special_ = special;
  }
  // An integer exactly: as two doubles of at most 32 significant bits each (their negations
  // with `negated`, which takes away what AddLong(x) added).
  void AddLong(int64_t x, bool negated = false) {
    const int64_t high = x / (int64_t{1} << 32) * (int64_t{1} << 32);
    const double sign = negated ? -1.0 : 1.0;
    Add(sign * static_cast<double>(x - high));
    Add(sign * static_cast<double>(high));
  }
  // The total as a double: the leading part (the plain sum when that is NaN).
  double Double() const { return std::isnan(sum_) ? special_ : sum_; }
  // Whether the leading part is finite; then Leading() + Addend() is the total.
  bool Finite() const { return std::isfinite(sum_); }
  double Leading() const { return sum_; }
  double Addend() const { return addend_; }
  // The plain sum of the numbers added.
  double Plain() const { return special_; }
  // When the sum is an integer under 2^52 with no addend, how much more integer magnitude may
  // be added in any grouping with the same result (every partial sum stays exact, so the pair
  // stays (integer, 0)): 2^52 - |sum|. Otherwise -1.
  int64_t ExactIntegerHeadroom() const {
    constexpr double kLimit = 4503599627370496.0;  // 2^52
    if (!Finite() || addend_ != 0 || std::trunc(sum_) != sum_ || std::fabs(sum_) > kLimit) {
      return -1;
    }
    return static_cast<int64_t>(kLimit - std::fabs(sum_));
  }
  // Adds another sum's total (its leading part, then its addend).
  void Merge(const DoubleDoubleSum& other) {
    if (!other.Finite()) {
      Add(other.Double());
      return;
    }
    Add(other.sum_);
    Add(other.addend_);
  }

 private:
  double sum_ = 0, addend_ = 0, special_ = 0;
};

}  // namespace hourglass::pipeline
