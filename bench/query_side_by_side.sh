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
#                               [--then-restart] [--settle S] --side LABEL:DIR:STATE [--side ...]
# e.g. data just written against the same data after a restart:
#   bench/query_side_by_side.sh --hosts 4000 --hours 3 \
#     --side written:build/release:written --side restarted:build/release:restarted
# --then-restart: after the rounds, restart the `written` sides on their own dbpaths and run the
# rounds again (those sides' second phase is LABEL@restarted). Each written side is then compared
# with itself, on the very same files, rather than with another load of the same rows; a
# `restarted` side queried in both phases measures how the machine drifted between them, and the
# written side's ratio is shown divided by that drift too.
# --settle S: wait S seconds after the loads before the first round (e.g. past the written sides'
# first checkpoint, which is otherwise written while the first rounds run).
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=100
hours=24
rounds=5
runs=10
types=
then_restart=0
settle=0
sides=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --hours) hours=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --side) sides+=("$2"); shift 2 ;;
    --then-restart) then_restart=1; shift ;;
    --settle) settle=$2; shift 2 ;;
    *) echo "usage: $0 [--hosts H] [--hours H] [--rounds N] [--runs N] [--types a,b] [--then-restart] [--settle S] --side LABEL:DIR:STATE ..." >&2; exit 2 ;;
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
restart() {  # restart LABEL DIR: stop LABEL's server cleanly and start it again on its dbpath
  kill "${pids[$1]}"
  wait "${pids[$1]}" || true
  start "$1" "$2"
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
      restart "$label" "$dir"
    fi
  done
done

type_args=()
[[ -n $types ]] && type_args=(--types "$types")
# run_rounds PHASE: the rounds on every side, into $work/resultsPHASE; in phase 2 the written
# sides' results are filed under LABEL@restarted.
run_rounds() {
  for round in $(seq "$rounds"); do
    for side in "${sides[@]}"; do
      IFS=: read -r label dir st <<<"$side"
      name=$label
      [[ $1 == 2 && $st == written ]] && name=$label@restarted
      "$dir/bench/tsbs_queries" --uri "$(uri "$label")" --hosts "$hosts" --hours "$hours" \
        --runs "$runs" "${type_args[@]}" |
        sed -n "s/^RESULT \([^ ]*\) median_ms=\([^ ]*\).*/$name \1 \2/p" >>"$work/results$1"
    done
  done
}
sleep "$settle"
run_rounds 1
if [[ $then_restart == 1 ]]; then
  for side in "${sides[@]}"; do
    IFS=: read -r label dir st <<<"$side"
    [[ $st == written ]] || continue
    restart "$label" "$dir"
  done
  run_rounds 2
  # The restarted sides' second phase, kept apart from their first, measures the drift.
  sed 's/^\([^ @]*\) /\1@phase2 /' "$work/results2" >>"$work/results1"
fi
/usr/bin/python3 - "$work/results1" "$hosts" "$hours" "$rounds" "$runs" "$then_restart" \
  "${sides[@]}" <<'PY'
import collections
import statistics
import sys

path, hosts, hours, rounds, runs, then_restart, *sides = sys.argv[1:]
states = dict(side.split(":")[0::2] for side in sides)
labels = list(states)
if then_restart == "1":
    labels += [label + "@restarted" for label, st in states.items() if st == "written"]
    labels += [label + "@phase2" for label, st in states.items() if st == "restarted"]
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

if then_restart == "1":
    # Each written side over itself after its restart; divided by each restarted side's
    # phase-1-over-phase-2 ratio, the machine's drift between the phases taken out.
    written = [label for label, st in states.items() if st == "written"]
    controls = [label for label, st in states.items() if st == "restarted"]
    print("# just written over the same files restarted; /drift: divided by the control's phase 1 "
          "over phase 2")
    print("query " + " ".join(" ".join([w] + [f"{w}/drift({c})" for c in controls])
                              for w in written))
    med = lambda label, query: statistics.median(times[(label, query)])
    for query in order:
        cells = []
        for w in written:
            if not times[(w, query)] or not times[(w + "@restarted", query)]:
                cells += ["-"] * (1 + len(controls))
                continue
            raw = med(w, query) / med(w + "@restarted", query)
            cells.append(f"{raw:.2f}x")
            for c in controls:
                if times[(c, query)] and times[(c + "@phase2", query)]:
                    drift = med(c, query) / med(c + "@phase2", query)
                    cells.append(f"{raw / drift:.2f}x")
                else:
                    cells.append("-")
        print(f"{query} " + " ".join(cells))
PY
