#!/usr/bin/env bash
# The TSBS query set on several servers loaded with the same rows, alternating among them round
# by round, so that the machine's noise (large on shared 2-core machines: single runs of one
# build differ by 30%) falls on every side alike. Each side is LABEL:BUILD_DIR:STATE, where STATE
# is `written` (queried right after `ts_bench ingest`) or `restarted` (stopped cleanly after the
# ingest and started again on the same dbpath). Prints every side's median per query (of the
# rounds' medians) and its ratio to the first side. Expects `make release` (and the other build
# directories' `hourglassd`, `ts_bench` and `tsbs_queries`).
#
#   bench/query_side_by_side.sh [--hosts H] [--hours H] [--rounds N] [--runs N] [--types a,b]
#                               --side LABEL:DIR:STATE [--side ...]
# e.g. data just written against the same data after a restart:
#   bench/query_side_by_side.sh --hosts 4000 --hours 3 \
#     --side written:build/release:written --side restarted:build/release:restarted
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=100
hours=24
rounds=5
runs=10
types=
sides=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --hours) hours=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --side) sides+=("$2"); shift 2 ;;
    *) echo "usage: $0 [--hosts H] [--hours H] [--rounds N] [--runs N] [--types a,b] --side LABEL:DIR:STATE ..." >&2; exit 2 ;;
  esac
done
if [[ ${#sides[@]} -lt 1 ]]; then
  echo "$0: give at least one --side LABEL:DIR:STATE" >&2
  exit 2
fi

work=$(mktemp -d -p /tmp hgsides.XXXX)
declare -A pids ports
source bench/server.sh
cleanup() {  # replaces server.sh's: every side's server, then the work directory
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
start() {  # start LABEL DIR: DIR's hourglassd on a free port over $work/LABEL
  bin=$2
  dbpath=$work/$1
  start_server
  pids[$1]=$pid
  ports[$1]=$port
  pid=
  dbpath=
}
uri() { echo "mongodb://127.0.0.1:${ports[$1]}/?directConnection=true"; }

# Restarted sides are loaded first, so that the written sides are queried closest to their load.
for state in restarted written; do
  for side in "${sides[@]}"; do
    IFS=: read -r label dir st <<<"$side"
    [[ $st == "$state" ]] || continue
    if [[ $st != written && $st != restarted ]]; then
      echo "$0: side $label: state must be written or restarted" >&2
      exit 2
    fi
    mkdir -p "$work/$label"
    start "$label" "$dir"
    line=$("$dir/bench/ts_bench" ingest --uri "$(uri "$label")" --conns 4 --hosts "$hosts" \
      --hours "$hours" | sed -n 's/^RESULT ingest //p')
    echo "$label: ingest $line"
    if [[ $st == restarted ]]; then
      kill "${pids[$label]}"
      wait "${pids[$label]}" || true
      start "$label" "$dir"
    fi
  done
done

type_args=()
[[ -n $types ]] && type_args=(--types "$types")
for round in $(seq "$rounds"); do
  for side in "${sides[@]}"; do
    IFS=: read -r label dir _ <<<"$side"
    "$dir/bench/tsbs_queries" --uri "$(uri "$label")" --hosts "$hosts" --hours "$hours" \
      --runs "$runs" "${type_args[@]}" |
      sed -n "s/^RESULT \([^ ]*\) median_ms=\([^ ]*\).*/$label \1 \2/p" >>"$work/results"
  done
done

labels=()
for side in "${sides[@]}"; do labels+=("${side%%:*}"); done
/usr/bin/python3 - "$work/results" "$hosts" "$hours" "$rounds" "$runs" "${labels[@]}" <<'PY'
import collections
import statistics
import sys

path, hosts, hours, rounds, runs, *labels = sys.argv[1:]
times = collections.defaultdict(list)
order = []
for line in open(path):
    label, query, ms = line.split()
    times[(label, query)].append(float(ms))
    if query not in order:
        order.append(query)
print(f"# {hosts} hosts x {hours} h; medians (ms) of {rounds} rounds of {runs} instances; "
      f"ratio to {labels[0]}")
print("query " + " ".join(labels))
for query in order:
    # A side whose build does not know the query (an older tsbs_queries) shows "-".
    first = statistics.median(times[(labels[0], query)]) if times[(labels[0], query)] else None
    cells = []
    for label in labels:
        if not times[(label, query)]:
            cells.append("-")
            continue
        m = statistics.median(times[(label, query)])
        ratio = "" if label == labels[0] or first is None else f"({m / first:.2f}x)"
        cells.append(f"{m:.3f}" + ratio)
    print(f"{query} " + " ".join(cells))
PY
