// $group accumulators ($sum, $avg, $min, $max, $first, $last, $push, $addToSet, $count,
// $stdDevPop, $stdDevSamp, $mergeObjects). One Accumulator instance holds the running state of
// one output field of one group; it is not thread-safe. Process() returns an error for inputs
// the operator rejects ($mergeObjects of a non-object: 40400).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "base/status.h"
#include "pipeline/value.h"

namespace hourglass::pipeline {

class Accumulator {
 public:
  virtual ~Accumulator() = default;
  // Folds in the value of the accumulator's expression for one input document (may be missing).
  virtual Status Process(const Value& v) = 0;
  virtual Value Finalize() const = 0;
  // Approximate bytes of state held, for the $group memory limit.
  virtual int64_t ApproxBytes() const { return 32; }
};

// True if `op` ("$sum", ...) names a supported accumulator.
bool IsAccumulatorName(std::string_view op);
// A fresh accumulator for `op` (which must satisfy IsAccumulatorName).
std::unique_ptr<Accumulator> MakeAccumulator(std::string_view op);

}  // namespace hourglass::pipeline
