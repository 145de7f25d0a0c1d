// Building the read of a find, count or distinct over one namespace: the scan the planner (or
// the time-series read plan) chooses, then sort, skip, limit and the projection. The commands
// parse the request into a ReadPlan; explain reads back what was chosen (ReadExecInfo).
//
// Thread-safety: the returned stream belongs to one command or client cursor at a time; it reads
// in short storage sessions of its own (collection_scan.h, index_scan.h), so it pins no snapshot.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/namespace.h"
#include "exec/multi_planner.h"
#include "exec/namespace_resolver.h"
#include "exec/near_read.h"
#include "exec/query_planner.h"
#include "exec/read_context.h"
#include "pipeline/pipeline.h"
#include "query/matcher.h"
#include "query/projection.h"

namespace hourglass::exec {

struct ReadPlan {
  std::optional<query::Matcher> filter;
  bson::BsonObj filter_spec;  // the filter document `filter` was parsed from`
  bson::BsonObj sort;
  int64_t skip = 0;
  int64_t limit = 0;  // 0 = none
  std::optional<query::Projection> projection;
  bson::BsonObj hint;                  // {hint: <name or key pattern>}, or empty
  std::optional<bool> allow_disk_use;  // the command's allowDiskUse, for the sort
  bool count_index_use = true;         // $indexStats: false for explain
  // The projection as given (time-series reads decode only the columns it needs; covered plans,
  // query_planner.h CoveredFields), and whether only the number of matches matters (count: then
  // an exact index scan fetches nothing).
  bson::BsonObj projection_spec;
  bool count_only = false;
  // find's min/max (index key bounds of the hinted index), returnKey and showRecordId.
  bson::BsonObj min, max;
  bool return_key = false;
  bool show_record_id = false;
  // A read ordered by distance (near_read.h): `filter` is then the rest of the filter, and the
  // sort, skip and limit apply after the distance order.
  std::optional<NearRead> near;
  // What `filter` may read besides the documents ($$NOW, the command's `let`); a time-series
  // read parses filter_spec again with it.
  query::ExpressionContext expr_ctx = query::ExpressionContext::Now();
};

class CollectionScan;
class IndexScan;

// What BuildReadStream chose, for explain. The scan pointers borrow the returned stream.
struct ReadExecInfo {
  std::optional<PlanChoice> choice;  // unset for time-series and missing collections
  const CollectionScan* collection_scan = nullptr;
  const IndexScan* index_scan = nullptr;
  // With several candidate plans, the multi-planner's trials (multi_planner.h): the winner's
  // first, then those of choice->rejected in order.
  std::vector<TrialStats> trials;
  bool blocking_sort = false;  // a SORT stage runs after the scan
  int64_t scan_returned = 0;   // documents the scan passed on (counted as they are read)
};

// The documents of `ns` that the plan selects, in order. A missing collection (or a time-series
// view whose buckets are gone) yields an empty stream.
// A regular collection's scan is chosen by the planner (query_planner.h); `info`, when given,
// receives the choice. Errors: the planner's (bad hint: BadValue 2).
StatusWith<std::unique_ptr<pipeline::DocumentStream>> BuildReadStream(const ReadContext& rctx,
                                                                      const ResolvedNamespace& ns,
                                                                      ReadPlan plan,
                                                                      ReadExecInfo* info = nullptr);

// Sets pctx's allow_disk_use (the command's allowDiskUse, else the allowDiskUseByDefault
// parameter), memory limits (server parameters) and spill directory (<dbpath>/_tmp).
void ApplyDiskUse(const ReadContext& rctx, std::optional<bool> allow_disk_use,
                  pipeline::PipelineContext* pctx);
}  // namespace hourglass::exec
