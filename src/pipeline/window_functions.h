// Window functions of $setWindowFields ($sum ... $linearFill). Internal to src/pipeline.
//
// A WindowFunction is the parsed, immutable form of one output field's spec, e.g.
// {$sum: "$x", window: {documents: [-1, 1]}}. Compute() fills one output value per document of
// one partition, the documents already in partition + sortBy order (see window_stage.cc). It
// keeps no state between calls, so one parsed function may serve several streams; each call
// uses the caller's Variables.
//
// Errors follow MongoDB 7.0: parse errors are mostly FailedToParse (9); window bounds as
// window_bounds.h says; $rank-style functions 5371601/5371602/5371603; $derivative
// 5624900-5624903; $integral 5423900-5423902; $linearFill 605001, 6050106, TypeMismatch (14);
// $percentile 7750300-7750303; $top/$bottom/$topN/$bottomN/$firstN/$lastN/$minN/$maxN the
// $group accumulators' option errors (accumulator.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "pipeline/expression.h"
#include "pipeline/value.h"
#include "pipeline/window_bounds.h"

namespace hourglass::pipeline {

class WindowFunction {
 public:
  virtual ~WindowFunction() = default;
  // Fills `out` with one value per document of `p`. A missing value (e.g. $shift onto a
  // document without the field) means the output field is absent, as in MongoDB.
  // Returns the function's runtime errors (bad sortBy values for range windows, ...).
  virtual Status Compute(const WindowPartition& p, Variables& vars,
                         std::vector<Value>* out) const = 0;
};

// Parses one output spec ({$fn: args, window: {...}}) of $setWindowFields.
StatusWith<std::unique_ptr<WindowFunction>> ParseWindowFunction(const bson::BsonObj& spec,
                                                                const WindowSortInfo& sort,
                                                                const ParseContext& pc);

}  // namespace hourglass::pipeline
