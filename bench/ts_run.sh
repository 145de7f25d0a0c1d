#!/usr/bin/env bash
# Time-series ingest benchmark (TSBS cpu-only shape, see bench/README.md). Expects `make release`.
# For each connection count and each run: a release hourglassd on a free port with a fresh
# temporary dbpath, `ts_bench ingest` (timed insertMany of all measurements). After the first run
# of each connection count the server is stopped cleanly (its shutdown writes a WiredTiger
# checkpoint), restarted on the same dbpath, and `ts_bench storage` and `ts_bench query` measure
# bytes per field value and the one-host-one-hour find latency. With --tsbs-runs N (N > 0) the
# same restarted server of the last connection count then runs the TSBS query set
# (tsbs_queries: median of N random instances per type, with and without the time-series
# rewrites when --toggle-param names the server parameter that turns them off; several
# space-separated names run the set once per parameter, e.g. "hourglassTimeseriesRewrites
# hourglassTimeseriesBucketFilters" for "without rewrites" and "unpack everything").
#
#   bench/ts_run.sh [--runs N] [--conns "1 4"] [--queries Q] [--hosts H] [--hours H]
#                   [--bin DIR] [--batch-size B] [--tsbs-runs N] [--toggle-param NAME]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release
runs=3
conns_list="1 4"
queries=200
hosts=100
hours=24
batch_size=0
tsbs_runs=0
toggle_param=
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --conns) conns_list=$2; shift 2 ;;
    --queries) queries=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --hours) hours=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --batch-size) batch_size=$2; shift 2 ;;
    --tsbs-runs) tsbs_runs=$2; shift 2 ;;
    --toggle-param) toggle_param=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--conns \"1 4\"] [--queries Q] [--hosts H] [--hours H] [--bin DIR] [--batch-size B] [--tsbs-runs N] [--toggle-param NAME]" >&2; exit 2 ;;
  esac
done
if [[ ! -x $bin/hourglassd || ! -x $bin/bench/ts_bench ]]; then
  echo "bench/ts_run.sh: build hourglassd and ts_bench in $bin first ('make release')" >&2
  exit 2
fi

source bench/server.sh
tsb() {  # ts_bench MODE [args]: prints its RESULT line's key=value pairs
  local mode=$1; shift
  $bin/bench/ts_bench "$mode" --uri "mongodb://127.0.0.1:$port/?directConnection=true" \
    --hosts "$hosts" --hours "$hours" "$@" | sed -n "s/^RESULT $mode //p"
}

echo "hourglassd $(git rev-parse --short HEAD), $(nproc) cores; $hosts hosts x $hours h" \
  "= $((hosts * hours * 360)) measurements, insertMany(1000), $runs run(s) per connection count"
declare -A rate_med rate_all storage_line query_line tsbs_lines
for conns in $conns_list; do
  rates=()
  for ((r = 1; r <= runs; r++)); do
    parent=$(mktemp -d)
    dbpath=$parent/db
    mkdir "$dbpath"
    start_server
    line=$(tsb ingest --conns "$conns")
    rate=$(field measurements_per_s "$line")
    if [[ -z $rate ]]; then echo "ingest with $conns connection(s) failed" >&2; exit 1; fi
    rates+=("$rate")
    echo "  ingest conns=$conns run $r: $rate measurements/s ($(field seconds "$line") s)" >&2
    if [[ $r -eq 1 ]]; then
      stop_server  # clean shutdown = final checkpoint
      start_server
      storage_line[$conns]=$(tsb storage)
      query_line[$conns]=$(tsb query --queries "$queries" --batch-size "$batch_size")
      if [[ $tsbs_runs -gt 0 && $conns == "${conns_list##* }" ]]; then
        for param in ${toggle_param:-""}; do
          tsbs_lines[$param]=$($bin/bench/tsbs_queries \
            --uri "mongodb://127.0.0.1:$port/?directConnection=true" \
            --hosts "$hosts" --hours "$hours" --runs "$tsbs_runs" \
            ${param:+--toggle-param "$param"} | sed -n "s/^RESULT //p")
        done
        [[ -n $toggle_param ]] || tsbs_lines[none]=$($bin/bench/tsbs_queries \
          --uri "mongodb://127.0.0.1:$port/?directConnection=true" \
          --hosts "$hosts" --hours "$hours" --runs "$tsbs_runs" | sed -n "s/^RESULT //p")
      fi
    fi
    stop_server
    rm -rf "$parent"
    dbpath=
  done
  rate_all[$conns]="${rates[*]}"
  rate_med[$conns]=$(printf '%s\n' "${rates[@]}" | median)
done

echo
printf '%-44s %16s   %s\n' "measurement" "median" "runs / details"
for conns in $conns_list; do
  printf '%-44s %16.0f   [ %s ]\n' "ingest, $conns conn(s), measurements/s" "${rate_med[$conns]}" \
    "${rate_all[$conns]}"
  printf '%-44s %16.0f\n' "ingest, $conns conn(s), field values/s" \
    "$(awk "BEGIN {print ${rate_med[$conns]} * 10}")"
done
for conns in $conns_list; do
  s=${storage_line[$conns]}
  printf '%-44s %16s   storageSize %s B / %s values; totalSize %s B; %s buckets\n' \
    "bytes/field value on disk ($conns-conn data)" "$(field storage_bytes_per_value "$s")" \
    "$(field storageSize "$s")" "$(field field_values "$s")" "$(field totalSize "$s")" \
    "$(field buckets "$s")"
done
for conns in $conns_list; do
  q=${query_line[$conns]}
  printf '%-44s %16s   p90 %s ms, p99 %s ms, %s runs x %s docs\n' \
    "1-host-1-hour find, ms ($conns-conn data)" "$(field median_ms "$q")" "$(field p90_ms "$q")" \
    "$(field p99_ms "$q")" "$(field runs "$q")" "$(field docs "$q")"
done
for param in "${!tsbs_lines[@]}"; do
  echo
  printf '%-24s %12s %16s %8s\n' "TSBS query" "median ms" "$param=false ms" "ratio"
  while read -r name rest; do
    printf '%-24s %12s %16s %8s\n' "$name" "$(field median_ms "$rest")" \
      "$(field param_off_ms "$rest")" "$(field speedup "$rest")"
  done <<<"${tsbs_lines[$param]}"
done
