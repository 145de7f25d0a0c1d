#include "exec/multi_planner.h"

#include <algorithm>
#include <numeric>

#include "exec/plan_cache.h"

namespace hourglass::exec {

namespace {
constexpr int64_t kMinWorks = 10000;
constexpr double kCollectionFraction = 0.3;
// Keys a candidate reads per round-robin turn: 1 in the first round, growing to 8, so that
// plans that end (or fill a small limit) within a few keys are told apart as by single works.
constexpr int64_t kMaxKeysPerTurn = 8;
}  // namespace

StatusWith<TrialOutcome> RunTrial(const std::shared_ptr<catalog::Collection>& coll,
                                  storage::KvEngine* engine, PlanChoice* choice,
                                  const std::optional<query::Matcher>& filter,
                                  const bson::BsonObj& sort, int64_t target_results) {
  std::vector<QueryPlan> plans;
  plans.push_back(std::move(choice->winner));
  for (auto& p : choice->rejected) plans.push_back(std::move(p));
  choice->rejected.clear();
  const size_t n = plans.size();
  std::vector<std::unique_ptr<IndexScan>> scans;
  std::vector<bool> blocking(n);
  for (size_t i = 0; i < n; ++i) {
    blocking[i] = !sort.IsEmpty() && !plans[i].provides_sort;
    scans.push_back(std::make_unique<IndexScan>(coll, engine, plans[i], filter));
  }
  const int64_t max_works = std::max<int64_t>(
      kMinWorks,
      static_cast<int64_t>(kCollectionFraction * static_cast<double>(coll->NumRecords())));
  target_results = std::max<int64_t>(1, std::min<int64_t>(target_results, 101));
  // Results a plan has handed to its consumer: nothing before the end behind a blocking SORT.
  auto advanced = [&](size_t i) -> int64_t {
    if (blocking[i] && !scans[i]->IsEOF()) return 0;
    return scans[i]->produced();
  };
  bool finished = false;
  for (int64_t round = 1; !finished; ++round) {
    bool any_worked = false;
    for (size_t i = 0; i < n && !finished; ++i) {
      if (scans[i]->keys_examined() >= max_works) continue;
      any_worked = true;
      HG_RETURN_IF_ERROR(scans[i]->Work(std::min(round, kMaxKeysPerTurn)));
      if (scans[i]->IsEOF() || advanced(i) >= target_results) finished = true;
    }
    if (!any_worked) finished = true;
  }
  TrialOutcome out;
  out.trials.resize(n);
  for (size_t i = 0; i < n; ++i) {
    TrialStats& t = out.trials[i];
    t.n_returned = scans[i]->produced();
    t.keys_examined = scans[i]->keys_examined();
    t.docs_examined = scans[i]->docs_examined();
    // Each key is one work, and the final one that finds the end of the bounds.
    t.works = t.keys_examined + 1;
    t.eof = scans[i]->IsEOF();
    double works = static_cast<double>(t.works);
    double tie_breaker = std::min(1.0 / (10.0 * works), 1e-4);
    t.score = 1.0 + static_cast<double>(advanced(i)) / works + (t.eof ? 1.0 : 0.0) +
              (blocking[i] ? 0.0 : tie_breaker) + (plans[i].covered_fields ? tie_breaker : 0.0);
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return out.trials[a].score > out.trials[b].score; });
  std::vector<TrialStats> trials;
  for (size_t i : order) trials.push_back(out.trials[i]);
  out.trials = std::move(trials);
  out.winner_scan = std::move(scans[order[0]]);
  choice->winner = std::move(plans[order[0]]);
  for (size_t k = 1; k < n; ++k) choice->rejected.push_back(std::move(plans[order[k]]));
  return out;
}

StatusWith<std::unique_ptr<IndexScan>> RunCachedPlan(
    const std::shared_ptr<catalog::Collection>& coll, storage::KvEngine* engine, PlanChoice* choice,
    const std::optional<query::Matcher>& filter, const std::string& shape,
    const std::string& index_set, int64_t target_results) {
  PlanCache& cache = PlanCache::Instance();
  auto entry = cache.Lookup(coll->ns(), shape, index_set);
  if (!entry) return std::unique_ptr<IndexScan>();
  std::vector<QueryPlan*> plans{&choice->winner};
  for (auto& p : choice->rejected) plans.push_back(&p);
  size_t k = 0;
  while (k < plans.size() &&
         (plans[k]->index == nullptr || plans[k]->index->desc.name != entry->index_name ||
          plans[k]->wildcard_path != entry->wildcard_path)) {
    ++k;
  }
  if (k == plans.size()) {
    cache.Erase(coll->ns(), shape);
    return std::unique_ptr<IndexScan>();
  }
  auto scan = std::make_unique<IndexScan>(coll, engine, *plans[k], filter);
  const int64_t budget = 10 * std::max<int64_t>(entry->works, 1);
  target_results = std::max<int64_t>(1, std::min<int64_t>(target_results, 101));
  while (!scan->IsEOF() && scan->produced() < target_results && scan->keys_examined() <= budget) {
    HG_RETURN_IF_ERROR(scan->Work(kMaxKeysPerTurn));
  }
  if (!scan->IsEOF() && scan->produced() < target_results) {
    cache.Erase(coll->ns(), shape);  // the cached plan did poorly on these values: replan
    return std::unique_ptr<IndexScan>();
  }
  if (k != 0) std::swap(choice->winner, choice->rejected[k - 1]);
  return scan;
}

}  // namespace hourglass::exec
