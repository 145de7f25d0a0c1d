#!/usr/bin/env bash
# Compares two hourglassd builds on the same machine in one run, alternating them so that drift
# (other load, thermal state) falls on both: for each round, each build in turn (base first in odd
# rounds, new first in even ones) gets a fresh dbpath, ingests the TSBS cpu-only day with
# `ts_bench ingest`, is restarted, and answers the TSBS query set (`tsbs_queries`) and the same
# queries moved to an empty time window (`tsbs_queries --plan-only 1`: parse, resolve, plan and
# open the read, then find no bucket). The query set also runs right after the ingest, before the
# restart ("fresh:"), on data just written. The client tools are always the new build's.
#   bench/ab_run.sh --base build/base-release --new build/release [--rounds 3] [--conns 4]
#                   [--hosts 100] [--hours 24] [--tsbs-runs 10] [--types a,b,...]
# Prints, per measurement, the median over rounds for each build and new/base.
set -euo pipefail
cd "$(dirname "$0")/.."

base= new= rounds=3 conns=4 hosts=100 hours=24 tsbs_runs=10 types=
while [[ $# -gt 0 ]]; do
  case $1 in
    --base) base=$2; shift 2 ;;
    --new) new=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --conns) conns=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --hours) hours=$2; shift 2 ;;
    --tsbs-runs) tsbs_runs=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    *) echo "usage: $0 --base DIR --new DIR [--rounds N] [--conns C] [--hosts H] [--hours H] [--tsbs-runs N] [--types a,b]" >&2; exit 2 ;;
  esac
done
for b in "$base" "$new"; do
  if [[ -z $b || ! -x $b/hourglassd ]]; then echo "$0: no hourglassd in '$b'" >&2; exit 2; fi
done
tools=$new/bench
source bench/server.sh
uri() { echo "mongodb://127.0.0.1:$port/?directConnection=true"; }

queries() {  # queries [extra tsbs_queries flags]: its RESULT lines without the prefix
  $tools/tsbs_queries --uri "$(uri)" --hosts "$hosts" --hours "$hours" --runs "$tsbs_runs" \
    ${types:+--types "$types"} "$@" | sed -n 's/^RESULT //p'
}

declare -A values  # "<build> <measurement>" -> space-separated values, one per round
add() { values["$1 $2"]="${values["$1 $2"]:-} $3"; }

one() {  # one(build_name, dir)
  local name=$1 dir=$2 parent line
  bin=$dir
  parent=$(mktemp -d)
  dbpath=$parent/db
  mkdir "$dbpath"
  start_server
  line=$($tools/ts_bench ingest --uri "$(uri)" --hosts "$hosts" --hours "$hours" --conns "$conns" |
    sed -n 's/^RESULT ingest //p')
  add "$name" "ingest_measurements_per_s" "$(field measurements_per_s "$line")"
  while read -r q rest; do
    add "$name" "fresh:$q" "$(field median_ms "$rest")"
  done < <(queries)
  stop_server
  start_server
  while read -r q rest; do
    add "$name" "$q" "$(field median_ms "$rest")"
  done < <(queries)
  while read -r q rest; do
    add "$name" "plan:$q" "$(field median_ms "$rest")"
  done < <(queries --plan-only 1)
  stop_server
  rm -rf "$parent"
  dbpath=
  echo "  round $r $name done" >&2
}

for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then one base "$base"; one new "$new"; else one new "$new"; one base "$base"; fi
done

echo "base: $base  new: $new  ($rounds rounds, $conns conns, $hosts hosts x $hours h)"
printf '%-34s %14s %14s %8s   %s\n' "measurement (median of rounds)" "base" "new" "new/base" \
  "rounds base | new"
for key in "${!values[@]}"; do
  [[ $key == base\ * ]] || continue
  m=${key#base }
  b=$(tr ' ' '\n' <<<"${values["base $m"]}" | grep . | median)
  n=$(tr ' ' '\n' <<<"${values["new $m"]}" | grep . | median)
  printf '%-34s %14s %14s %8s   %s |%s\n' "$m" "$b" "$n" "$(awk "BEGIN {printf \"%.2f\", $n / $b}")" \
    "${values["base $m"]}" "${values["new $m"]}"
done | sort
