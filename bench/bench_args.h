// Helpers of the benchmark programs that need no driver: medians and percentiles, "--name value"
// flags, comma-separated lists. bench_util.h adds the libmongoc ones.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace hourglass::bench {

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

// Reads the "--name value" pairs of argv[first..]: `set` takes each and returns false for a name
// it does not know. False for an unknown name or a name without its value.
inline bool ParseFlags(int argc, char** argv, int first,
                       const std::function<bool(std::string_view name, const char* value)>& set) {
  for (int i = first; i < argc; i += 2) {
    if (i + 1 >= argc || !set(argv[i], argv[i + 1])) return false;
  }
  return true;
}

// The items of a comma-separated list ("a,b,,c" -> a, b, c).
inline std::vector<std::string> SplitList(std::string_view list) {
  std::vector<std::string> out;
  for (size_t p = 0; p <= list.size();) {
    size_t q = std::min(list.find(',', p), list.size());
    if (q > p) out.emplace_back(list.substr(p, q - p));
    p = q + 1;
  }
  return out;
}

}  // namespace hourglass::bench
