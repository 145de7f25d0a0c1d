// Helpers shared by the benchmark programs (ts_bench, tsbs_queries, index_bench, wire_bench).
#pragma once

#include <mongoc/mongoc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace hourglass::bench {

// Runs `cmd` on `db`; prints the error unless `quiet`. `reply` may be null.
inline bool RunCommand(mongoc_client_t* client, const char* db, bson_t* cmd,
                       bson_t* reply = nullptr, bool quiet = false) {
  bson_error_t err;
  bson_t local;
  bool ok = mongoc_client_command_simple(client, db, cmd, nullptr, reply ? reply : &local, &err);
  if (!ok && !quiet) std::fprintf(stderr, "command failed: %s\n", err.message);
  if (reply == nullptr) bson_destroy(&local);
  return ok;
}

// The p-quantile (0 <= p <= 1) of `v`, interpolating between neighbours; 0 for no values.
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double idx = p * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(idx));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (idx - static_cast<double>(lo));
}

inline double Median(std::vector<double> v) { return Percentile(std::move(v), 0.5); }

}  // namespace hourglass::bench
