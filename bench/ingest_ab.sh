#!/usr/bin/env bash
# Time-series ingest, two server configurations alternating: `ts_bench ingest` (TSBS cpu-only
# shape, 4 connections) on a fresh dbpath per run, with the server arguments A, then B, for N
# rounds; prints each run and the medians. Expects `make release`.
#
#   bench/ingest_ab.sh [--hosts H] [--hours H] [--rounds N] [--conns C] [--bin DIR]
#                      --a "ARGS" --b "ARGS"
# e.g. bench/ingest_ab.sh --hosts 4000 --hours 3 --rounds 3 \
#        --a "--setParameter hourglassTimeseriesWriteBack=false" --b ""
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release
hosts=100
hours=24
rounds=3
conns=4
a=
b=
while [[ $# -gt 0 ]]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --hours) hours=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --conns) conns=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --a) a=$2; shift 2 ;;
    --b) b=$2; shift 2 ;;
    *) echo "usage: $0 [--hosts H] [--hours H] [--rounds N] [--conns C] [--bin DIR] --a ARGS --b ARGS" >&2; exit 2 ;;
  esac
done
source bench/server.sh
declare -A rates=([a]="" [b]="")
for round in $(seq "$rounds"); do
  for side in a b; do
    dbpath=$(mktemp -d -p /tmp hgingest.XXXX)
    if [[ $side == a ]]; then HOURGLASSD_ARGS=$a; else HOURGLASSD_ARGS=$b; fi
    export HOURGLASSD_ARGS
    start_server
    line=$($bin/bench/ts_bench ingest --uri "mongodb://127.0.0.1:$port/?directConnection=true" \
      --conns "$conns" --hosts "$hosts" --hours "$hours" | sed -n 's/^RESULT ingest //p')
    stop_server
    rm -rf "$dbpath"
    dbpath=
    rate=$(field measurements_per_s "$line")
    rates[$side]+="$rate "
    echo "round=$round side=$side hosts=$hosts measurements_per_s=$rate"
  done
done
ma=$(echo "${rates[a]}" | tr ' ' '\n' | grep . | median)
mb=$(echo "${rates[b]}" | tr ' ' '\n' | grep . | median)
echo "RESULT hosts=$hosts a_median=$ma b_median=$mb b_over_a=$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.2f", b / a }')"
