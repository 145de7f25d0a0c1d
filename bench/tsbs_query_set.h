// The TSBS "cpu-only" query set as MongoDB aggregation pipelines (Extended JSON), shared by the
// programs that run it: tsbs_queries (through a driver) and plan_bench (in process). The data is
// what `ts_bench ingest` loads: `hosts` hosts from 2016-01-01 at 10 s, metaField `tags` holding
// {hostname}, timeField `time`, ten usage_* fields. Random choices come from the caller's rng.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace hourglass::bench {

struct QuerySetOptions {
  int hosts = 100;
  int hours = 24;
  // Every window moved 10 years past the data (still before 2038, so the time bounds narrow
  // the bucket scan): the aggregate parses, resolves, plans and opens its read, finds no bucket,
  // and its latency is parse-and-plan plus one round trip (ping's median is printed beside).
  // Query types without a time window (lastpoint, groupby-orderby-limit) are left out.
  bool plan_only = false;
};

constexpr int64_t kStartMs = 1451606400000LL;  // 2016-01-01T00:00:00Z, as ts_bench
constexpr int64_t kIntervalMs = 10 * 1000;
constexpr int64_t kHourMs = 3600 * 1000;
inline const char* const kFields[10] = {
    "usage_user", "usage_system",  "usage_idle",  "usage_nice",  "usage_iowait",
    "usage_irq",  "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"};

constexpr int64_t kPlanOnlyShiftMs = 10LL * 365 * 24 * 3600 * 1000;

inline std::string Date(int64_t ms) {
  return "{\"$date\": {\"$numberLong\": \"" + std::to_string(ms) + "\"}}";
}

inline std::string Host(int h) { return "\"host_" + std::to_string(h) + "\""; }

// A random window [from, from + len) on a 10 s boundary inside the data.
inline int64_t WindowStart(std::mt19937_64& rng, const QuerySetOptions& o, int64_t len_ms) {
  // A window longer than the data (8 or 12 hours over TSBS's 3-hour, 4,000-host set) starts at
  // the data's start and covers all of it.
  const int64_t span = std::max<int64_t>(0, static_cast<int64_t>(o.hours) * kHourMs - len_ms);
  const int64_t steps = span / kIntervalMs + 1;
  return kStartMs + (o.plan_only ? kPlanOnlyShiftMs : 0) +
         static_cast<int64_t>(rng() % static_cast<uint64_t>(steps)) * kIntervalMs;
}

inline std::vector<int> DistinctHosts(std::mt19937_64& rng, const QuerySetOptions& o, int n) {
  std::set<int> s;
  while (static_cast<int>(s.size()) < n) s.insert(static_cast<int>(rng() % o.hosts));
  return {s.begin(), s.end()};
}

inline std::string TimeRange(int64_t from, int64_t len) {
  return "\"time\": {\"$gte\": " + Date(from) + ", \"$lt\": " + Date(from + len) + "}";
}

inline std::string Trunc(const char* unit) {
  return std::string("{\"$dateTrunc\": {\"date\": \"$time\", \"unit\": \"") + unit + "\"}}";
}

// `op` ($max / $avg) of the first n fields, as $group output fields.
inline std::string Aggs(const char* op, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += std::string(", \"") + (op + 1) + "_" + kFields[i] + "\": {\"" + op + "\": \"$" +
         kFields[i] + "\"}";
  }
  return s;
}

inline std::string HostsIn(const std::vector<int>& hosts) {
  std::string s = "\"tags.hostname\": {\"$in\": [";
  for (size_t i = 0; i < hosts.size(); ++i) s += (i ? ", " : "") + Host(hosts[i]);
  return s + "]}";
}

// Builds one random instance (a pipeline as JSON) of a query type.
using QueryGen = std::function<std::string(std::mt19937_64&, const QuerySetOptions&)>;

inline std::string SingleGroupby(std::mt19937_64& rng, const QuerySetOptions& o, int fields,
                                 int hours) {
  int64_t from = WindowStart(rng, o, hours * kHourMs);
  auto host = DistinctHosts(rng, o, 1);
  return "[{\"$match\": {" + HostsIn(host) + ", " + TimeRange(from, hours * kHourMs) +
         "}}, {\"$group\": {\"_id\": " + Trunc("minute") + Aggs("$max", fields) +
         "}}, {\"$sort\": {\"_id\": 1}}]";
}

inline std::string CpuMaxAll(std::mt19937_64& rng, const QuerySetOptions& o, int nhosts) {
  int64_t from = WindowStart(rng, o, 8 * kHourMs);
  auto hosts = DistinctHosts(rng, o, nhosts);
  return "[{\"$match\": {" + HostsIn(hosts) + ", " + TimeRange(from, 8 * kHourMs) +
         "}}, {\"$group\": {\"_id\": " + Trunc("hour") + Aggs("$max", 10) +
         "}}, {\"$sort\": {\"_id\": 1}}]";
}

// double-groupby's pipeline with `hour` as the expression of the key's hour.
inline std::string DoubleGroupbyByHour(std::mt19937_64& rng, const QuerySetOptions& o,
                                       const std::string& hour, int fields) {
  int64_t from = WindowStart(rng, o, 12 * kHourMs);
  return "[{\"$match\": {" + TimeRange(from, 12 * kHourMs) +
         "}}, {\"$group\": {\"_id\": {\"host\": \"$tags.hostname\", \"hour\": " + hour + "}" +
         Aggs("$avg", fields) + "}}, {\"$sort\": {\"_id.host\": 1, \"_id.hour\": 1}}]";
}

inline std::string DoubleGroupby(std::mt19937_64& rng, const QuerySetOptions& o, int fields) {
  return DoubleGroupbyByHour(rng, o, Trunc("hour"), fields);
}

// double-groupby-1 with a stage before the $group that computes what it reads, as users also
// write it: the host and the hour by $project ("project"), the hour by $set ("set"), or the
// averaged value by $addFields ("arith": usage_user as a fraction).
inline std::string DoubleGroupbyComputedBefore(std::mt19937_64& rng, const QuerySetOptions& o,
                                               const std::string& form) {
  int64_t from = WindowStart(rng, o, 12 * kHourMs);
  std::string stage, key = "{\"host\": \"$tags.hostname\", \"hour\": " + Trunc("hour") + "}";
  std::string input = "\"$usage_user\"";
  if (form == "project") {
    stage = "{\"$project\": {\"host\": \"$tags.hostname\", \"hour\": " + Trunc("hour") +
            ", \"usage_user\": 1}}";
    key = "{\"host\": \"$host\", \"hour\": \"$hour\"}";
  } else if (form == "set") {
    stage = "{\"$set\": {\"hour\": " + Trunc("hour") + "}}";
    key = "{\"host\": \"$tags.hostname\", \"hour\": \"$hour\"}";
  } else {
    stage = "{\"$addFields\": {\"user\": {\"$divide\": [\"$usage_user\", 100]}}}";
    input = "\"$user\"";
  }
  return "[{\"$match\": {" + TimeRange(from, 12 * kHourMs) + "}}, " + stage +
         ", {\"$group\": {\"_id\": " + key + ", \"avg_usage_user\": {\"$avg\": " + input +
         "}}}, {\"$sort\": {\"_id.host\": 1, \"_id.hour\": 1}}]";
}

// double-groupby-1 keyed by the local hour of a named time zone ($hour in America/New_York),
// and a histogram of usage_user over the same window ($bucket by 25-point bins): spellings whose
// keys are computed per bin rather than per row.
inline std::string DoubleGroupbyZoneHour(std::mt19937_64& rng, const QuerySetOptions& o) {
  return DoubleGroupbyByHour(
      rng, o, "{\"$hour\": {\"date\": \"$time\", \"timezone\": \"America/New_York\"}}", 1);
}
inline std::string UsageHistogram(std::mt19937_64& rng, const QuerySetOptions& o) {
  int64_t from = WindowStart(rng, o, 12 * kHourMs);
  return "[{\"$match\": {" + TimeRange(from, 12 * kHourMs) +
         "}}, {\"$bucket\": {\"groupBy\": \"$usage_user\", \"boundaries\": [0, 25, 50, 75, 101], "
         "\"default\": \"other\", \"output\": {\"n\": {\"$sum\": 1}, \"avg_system\": {\"$avg\": "
         "\"$usage_system\"}}}}]";
}

inline std::vector<std::pair<std::string, QueryGen>> QueryTypes() {
  return {
      {"single-groupby-1-1-1", [](auto& r, auto& o) { return SingleGroupby(r, o, 1, 1); }},
      {"single-groupby-5-1-12", [](auto& r, auto& o) { return SingleGroupby(r, o, 5, 12); }},
      {"cpu-max-all-1", [](auto& r, auto& o) { return CpuMaxAll(r, o, 1); }},
      {"cpu-max-all-8", [](auto& r, auto& o) { return CpuMaxAll(r, o, 8); }},
      {"double-groupby-1", [](auto& r, auto& o) { return DoubleGroupby(r, o, 1); }},
      {"double-groupby-all", [](auto& r, auto& o) { return DoubleGroupby(r, o, 10); }},
      {"double-groupby-1-project",
       [](auto& r, auto& o) { return DoubleGroupbyComputedBefore(r, o, "project"); }},
      {"double-groupby-1-set",
       [](auto& r, auto& o) { return DoubleGroupbyComputedBefore(r, o, "set"); }},
      {"double-groupby-1-arith",
       [](auto& r, auto& o) { return DoubleGroupbyComputedBefore(r, o, "arith"); }},
      {"double-groupby-1-zone-hour", [](auto& r, auto& o) { return DoubleGroupbyZoneHour(r, o); }},
      {"usage-histogram", [](auto& r, auto& o) { return UsageHistogram(r, o); }},
      {"high-cpu-1",
       [](auto& r, auto& o) {
         int64_t from = WindowStart(r, o, 12 * kHourMs);
         auto host = DistinctHosts(r, o, 1);
         return "[{\"$match\": {" + HostsIn(host) + ", " + TimeRange(from, 12 * kHourMs) +
                ", \"usage_user\": {\"$gt\": 90}}}, {\"$sort\": {\"time\": 1}}]";
       }},
      {"lastpoint",
       [](auto&, auto&) {
         // Per series: the metaField `tags` holds one hostname per host, so grouping by it is
         // grouping by host (the shape MongoDB's last-point optimization recognises).
         return std::string(
             "[{\"$sort\": {\"tags\": 1, \"time\": -1}}, {\"$group\": {\"_id\": "
             "\"$tags\", \"last\": {\"$first\": \"$$ROOT\"}}}, {\"$sort\": {\"_id\": 1}}]");
       }},
      // The same question as users also spell it (issue 17's last-point family): by the meta
      // subfield, with $top, and sorted by time alone.
      {"lastpoint-hostname",
       [](auto&, auto&) {
         return std::string(
             "[{\"$sort\": {\"tags.hostname\": 1, \"time\": -1}}, {\"$group\": {\"_id\": "
             "\"$tags.hostname\", \"last\": {\"$first\": \"$$ROOT\"}}}, {\"$sort\": {\"_id\": "
             "1}}]");
       }},
      {"lastpoint-top",
       [](auto&, auto&) {
         return std::string(
             "[{\"$group\": {\"_id\": \"$tags.hostname\", \"last\": {\"$top\": {\"sortBy\": "
             "{\"time\": -1}, \"output\": \"$usage_user\"}}}}, {\"$sort\": {\"_id\": 1}}]");
       }},
      // The latest 5 readings per host: "latest N per series".
      {"lastpoint-top5",
       [](auto&, auto&) {
         return std::string(
             "[{\"$group\": {\"_id\": \"$tags.hostname\", \"last\": {\"$topN\": {\"n\": 5, "
             "\"sortBy\": {\"time\": -1}, \"output\": \"$usage_user\"}}}}, {\"$sort\": "
             "{\"_id\": 1}}]");
       }},
      {"lastpoint-time",
       [](auto&, auto&) {
         return std::string(
             "[{\"$sort\": {\"time\": -1}}, {\"$group\": {\"_id\": \"$tags.hostname\", "
             "\"u\": {\"$first\": \"$usage_user\"}}}, {\"$sort\": {\"_id\": 1}}]");
       }},
      {"groupby-orderby-limit",
       [](auto& r, auto& o) {
         int64_t end = WindowStart(r, o, 0);
         return "[{\"$match\": {\"time\": {\"$lt\": " + Date(end) +
                "}}}, {\"$group\": {\"_id\": " + Trunc("minute") +
                ", \"max_usage_user\": {\"$max\": \"$usage_user\"}}}, {\"$sort\": {\"_id\": -1}}, "
                "{\"$limit\": 5}]";
       }},
  };
}

}  // namespace hourglass::bench
