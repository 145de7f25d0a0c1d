#!/usr/bin/env bash
# Index benchmark (issue 5, see bench/README.md). Expects `make release`. Each dataset gets a
# fresh release hourglassd and temporary dbpath:
#  - time-series: the TSBS cpu-only data (100 hosts at 10 s) for --ts-hours (default "72 720":
#    3 and 30 days) loaded with `ts_bench load`; then the one-host-one-hour find with the
#    collection's meta+time index and with hint {$natural: 1} (no index);
#  - regular: `index_bench load` of --docs (default "1000000 10000000") documents with an index
#    on k; then an equality find on k with the index and with hint {$natural: 1}.
#
#   bench/index_run.sh [--ts-hours "72 720"] [--docs "1000000 10000000"] [--queries Q]
#                      [--scan-queries S] [--bin DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release
ts_hours="72 720"
docs_list="1000000 10000000"
queries=200
scan_queries=5
while [[ $# -gt 0 ]]; do
  case $1 in
    --ts-hours) ts_hours=$2; shift 2 ;;
    --docs) docs_list=$2; shift 2 ;;
    --queries) queries=$2; shift 2 ;;
    --scan-queries) scan_queries=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--ts-hours \"72 720\"] [--docs \"1000000 10000000\"] [--queries Q] [--scan-queries S] [--bin DIR]" >&2; exit 2 ;;
  esac
done
if [[ ! -x $bin/hourglassd || ! -x $bin/bench/ts_bench || ! -x $bin/bench/index_bench ]]; then
  echo "bench/index_run.sh: build hourglassd, ts_bench and index_bench in $bin first ('make release')" >&2
  exit 2
fi
source bench/server.sh
uri() { echo "mongodb://127.0.0.1:$port/?directConnection=true"; }
fresh() {  # a new server on a new dbpath
  stop_server
  if [[ -n $dbpath ]]; then rm -rf "$(dirname "$dbpath")"; fi
  dbpath=$(mktemp -d)/db
  mkdir "$dbpath"
  start_server
}

echo "hourglassd $(git rev-parse --short HEAD), $(nproc) cores"
# queries LABEL INDEX_LABEL PROGRAM ARGS...: the indexed query, then the scan (hint $natural).
queries() {
  local label=$1 index_label=$2 prog=$3
  shift 3
  for hint in 0 1; do
    local n=$queries
    [[ $hint == 1 ]] && n=$scan_queries
    local q
    q=$($bin/bench/$prog query --uri "$(uri)" "$@" --queries "$n" \
      --warmup $((n < 50 ? 1 : 50)) --hint-natural $hint | sed -n 's/^RESULT query //p')
    printf '%-58s %10s %10s\n' "$label, $([[ $hint == 1 ]] && echo 'no index' || echo "$index_label")" \
      "$(field median_ms "$q")" "$(field p90_ms "$q")"
  done
}

printf '%-58s %10s %10s\n' "query" "median ms" "p90 ms"
for hours in $ts_hours; do
  fresh
  load=$($bin/bench/ts_bench load --uri "$(uri)" --hours "$hours" | sed -n 's/^RESULT load //p')
  echo "  loaded $(field measurements "$load") measurements in $(field seconds "$load") s" >&2
  stop_server && start_server  # a checkpoint, and queries start from a settled server
  queries "time-series 1 host 1 hour, $((hours / 24)) days" "meta+time index" ts_bench \
    --hours "$hours"
done
for docs in $docs_list; do
  fresh
  load=$($bin/bench/index_bench load --uri "$(uri)" --docs "$docs" | sed -n 's/^RESULT load //p')
  echo "  loaded $docs documents (index {k: 1} maintained) in $(field insert_seconds "$load") s" >&2
  stop_server && start_server
  queries "regular k equality, $docs documents" "index {k: 1}" index_bench --docs "$docs"
done
