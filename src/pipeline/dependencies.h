// Dependency analysis: which top-level fields of its input documents a pipeline (or a $match
// filter, or an expression) can read. The time-series read path uses it to decode only the
// bucket columns a query needs (spec timeseries.md §6.3: "dependency analysis yields an implicit
// include list"); it works on the stages' BSON, before or without parsing them.
//
// The answer is conservative: it may name fields that are not needed, never omit one that is.
// Anything it does not understand (an unknown stage, $$ROOT, $getField, $where, $lookup, a
// pipeline whose output is the input documents themselves...) answers "the whole document".
//
// Pure functions, thread-safe.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bson/bson.h"

namespace hourglass::pipeline {

struct FieldDependencies {
  // True when the whole input document may be read or returned; `fields` is then meaningless.
  bool needs_whole_document = false;
  // The top-level field names read ("a" for "$a.b"); may be empty (e.g. a lone $count).
  std::set<std::string> fields;
  // True when the expression draws random numbers ($rand): rows whose fields are equal may still
  // get different values, so it must be evaluated for every row.
  bool random = false;

  void Add(std::string_view path);  // adds the top-level name of a dotted path
  void AddAll(const FieldDependencies& other);
};

// The fields of the input documents that `stages` (aggregation stage documents, in order) need.
// The walk stops at the first stage that replaces its input ($group, $count, an inclusion
// $project, $replaceRoot, $bucket, $sortByCount...): later stages read its output, not the input.
// A pipeline that never replaces its input returns it, so needs the whole document.
FieldDependencies PipelineDependencies(const std::vector<bson::BsonObj>& stages);

// Whether a projection value excludes its field (false, 0, 0.0...).
bool IsExclusionValue(const bson::BsonElement& v);

// The fields a query filter ($match / find filter) reads.
FieldDependencies FilterDependencies(const bson::BsonObj& filter);

// The fields an aggregation expression (the value of `e`) reads.
FieldDependencies ExpressionDependencies(const bson::BsonElement& e);

// The field f when `e` is the string "$f" of one top-level field (no "$$" variable, no dotted
// path), as block processing reads a column by name; nullopt otherwise.
std::optional<std::string_view> TopLevelFieldReference(const bson::BsonElement& e);

}  // namespace hourglass::pipeline
