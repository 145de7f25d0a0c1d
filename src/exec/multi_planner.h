// The multi-planner: when the rule-based planner (query_planner.h) finds several candidate index
// plans, each runs for a short trial and the most productive one wins, as in MongoDB.
//
// The candidates' scans advance round-robin, a few keys at a time, until one of them has produced
// `target_results` documents (101, or a smaller limit) or reached its end, or every one has spent
// its work budget (max(10000, 0.3 × the collection's records), one work per key examined). Each
// is scored like MongoDB's plan ranker: 1 + results/works, plus 1 if it reached its end, plus a
// small tie-breaker each when it needs no blocking SORT and no fetch (covered). A plan that needs a
// blocking SORT produces no results before its end. Ties go to the earlier candidate (the rule
// order). The winner's scan is returned positioned after the trial, with the documents it produced
// still buffered, so running it on never reads a row twice.
//
// Thread-safety: plain functions; the scans each read in their own short storage sessions.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "base/status.h"
#include "catalog/collection.h"
#include "exec/index_scan.h"
#include "exec/query_planner.h"
#include "query/matcher.h"
#include "storage/kv_engine.h"

namespace hourglass::exec {

// One candidate's trial, for explain's allPlansExecution.
struct TrialStats {
  int64_t n_returned = 0;  // documents it produced (after the filter)
  int64_t keys_examined = 0;
  int64_t docs_examined = 0;
  int64_t works = 0;
  bool eof = false;
  double score = 0;
};

struct TrialOutcome {
  // The trials of choice.winner then choice.rejected, in that order, after the reordering.
  std::vector<TrialStats> trials;
  std::unique_ptr<IndexScan> winner_scan;  // positioned after the trial
};

// Runs the trial between choice->winner and choice->rejected (which must not be empty, and no
// plan a collection scan), then reorders `choice` so the winner comes first and the rejected
// plans follow by decreasing score. `sort` is the query's sort (a plan that does not provide it
// gets a blocking SORT). Errors: storage errors of the scans.
StatusWith<TrialOutcome> RunTrial(const std::shared_ptr<catalog::Collection>& coll,
                                  storage::KvEngine* engine, PlanChoice* choice,
                                  const std::optional<query::Matcher>& filter,
                                  const bson::BsonObj& sort, int64_t target_results = 101);

// The plan cache's side of a read (plan_cache.h): when `shape` has an entry for `index_set`
// naming one of the candidates in `choice`, runs that candidate until it produces
// `target_results` or ends within ten times the entry's works; then reorders `choice` with it
// first and returns its scan (positioned after what it read). Returns nullptr on a miss, and
// when the cached plan exceeds its budget (the entry is then dropped: replan with RunTrial).
StatusWith<std::unique_ptr<IndexScan>> RunCachedPlan(
    const std::shared_ptr<catalog::Collection>& coll, storage::KvEngine* engine, PlanChoice* choice,
    const std::optional<query::Matcher>& filter, const std::string& shape,
    const std::string& index_set, int64_t target_results);

}  // namespace hourglass::exec
