// The pipelines of rollups (timeseries/rollup_spec.h): the one over a source that computes a
// rollup's rows, and the rewrite of an aggregate over a source into one over its rollup.
//
// A source's aggregate is answered from a rollup when it is, in MongoDB's terms, a $group the
// rollup's bins can build: an optional first $match of predicates on the metaField (and its
// subfields) and of $gte/$lt bounds on the time field that fall on bin boundaries; then a $group
// whose _id uses only the metaField, constants, and $dateTrunc of the time field into bins that
// are unions of the rollup's bins (UTC); and whose accumulators are $avg, $sum, $min or $max of
// fields the rollup keeps those statistics of. The stages after the $group run unchanged. The
// $group then reads the rollup's rows — $avg as the sum of the rows' sums over the sum of their
// counts — except in the bins still pending, which it reads from the source through a $unionWith
// that computes their rows as maintenance would.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bson/bson.h"
#include "timeseries/rollup_marks.h"
#include "timeseries/rollup_spec.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::commands {

struct RollupTarget {
  std::string source;  // collection names, in one database
  std::string rollup;
  timeseries::RollupSpec spec;
  timeseries::TimeseriesOptions source_options;
  timeseries::TimeseriesOptions rollup_options;
};

// {<field>: {$gte: Date(from), $lt: Date(to)}}'s element, appended to a filter being built.
void AppendTimeRange(bson::BsonBuilder& b, const std::string& field, int64_t from, int64_t to);

// The stages over the source that compute the rollup's rows of the measurements matching
// `match`: {$match}, {$group} by bin and series, {$sort} by bin, {$replaceWith} the row
// ({<time>, <meta>, <field>: {<statistic>: ...}}).
bson::BsonObj RollupRowsPipeline(const RollupTarget& t, const bson::BsonObj& match);

// The stages over the rollup that answer `stages` (a pipeline over the source), with the bins in
// `pending` (sorted, disjoint, bin-aligned) computed from the source; nullopt when the rollup
// cannot answer them.
std::optional<bson::BsonObj> AnswerFromRollup(const RollupTarget& t, const bson::BsonObj& stages,
                                              const std::vector<timeseries::DirtyRange>& pending);

}  // namespace hourglass::commands
