#!/usr/bin/env bash
# Time-series ingest benchmark (TSBS cpu-only shape, see bench/README.md). Expects `make release`.
# For each connection count and each run: a release hourglassd on a free port with a fresh
# temporary dbpath, `ts_bench ingest` (timed insertMany of all measurements). After the first run
# of each connection count the server is stopped cleanly (its shutdown writes a WiredTiger
# checkpoint), restarted on the same dbpath, and `ts_bench storage` and `ts_bench query` measure
# bytes per field value and the one-host-one-hour find latency.
#
#   bench/ts_run.sh [--runs N] [--conns "1 4"] [--queries Q] [--hosts H] [--hours H]
#                   [--bin DIR] [--batch-size B]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release
runs=3
conns_list="1 4"
queries=200
hosts=100
hours=24
batch_size=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --conns) conns_list=$2; shift 2 ;;
    --queries) queries=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --hours) hours=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --batch-size) batch_size=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--conns \"1 4\"] [--queries Q] [--hosts H] [--hours H] [--bin DIR] [--batch-size B]" >&2; exit 2 ;;
  esac
done
if [[ ! -x $bin/hourglassd || ! -x $bin/bench/ts_bench ]]; then
  echo "bench/ts_run.sh: build hourglassd and ts_bench in $bin first ('make release')" >&2
  exit 2
fi

pid=
dbpath=
port=
stop_server() {
  if [[ -n $pid ]]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
  fi
}
cleanup() {
  stop_server
  if [[ -n $dbpath ]]; then rm -rf "$dbpath"; fi
}
trap cleanup EXIT
start_server() {  # on $dbpath, a new free port each time
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  $bin/hourglassd --port "$port" --dbpath "$dbpath" --quiet 2>>"$dbpath/../hourglassd.log" &
  pid=$!
  for _ in $(seq 100); do
    (echo > /dev/tcp/127.0.0.1/"$port") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "hourglassd did not start; log:" >&2
  cat "$dbpath/../hourglassd.log" >&2
  exit 1
}
tsb() {  # ts_bench MODE [args]: prints its RESULT line's key=value pairs
  local mode=$1; shift
  $bin/bench/ts_bench "$mode" --uri "mongodb://127.0.0.1:$port/?directConnection=true" \
    --hosts "$hosts" --hours "$hours" "$@" | sed -n "s/^RESULT $mode //p"
}
field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }
median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

echo "hourglassd $(git rev-parse --short HEAD), $(nproc) cores; $hosts hosts x $hours h" \
  "= $((hosts * hours * 360)) measurements, insertMany(1000), $runs run(s) per connection count"
declare -A rate_med rate_all storage_line query_line
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
