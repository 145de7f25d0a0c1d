#!/usr/bin/env bash
# Time-series ingest, two server configurations alternating: `ts_bench ingest` (TSBS cpu-only
# shape, 4 connections) on a fresh dbpath per run, with the server arguments A, then B (and, if
# given, the hourglassd of build directory A, then B), for N rounds; prints each run with the
# server's CPU seconds (user + system: steadier than the rate on a shared machine; then user and
# system apart: the user time is the server's own work, the system time mostly the kernel's page
# zeroing and file copies, which move with the machine from one stretch to the next), and the
# medians. Expects `make release`.
#
#   bench/ingest_ab.sh [--hosts H] [--hours H] [--rounds N] [--conns C] [--bin DIR]
#                      [--a-bin DIR] [--b-bin DIR] [--a-client ARGS] [--b-client ARGS]
#                      --a "ARGS" --b "ARGS"
# (--a-client/--b-client: extra ts_bench arguments of each side, e.g. "--block-compressor snappy")
# e.g. bench/ingest_ab.sh --hosts 4000 --hours 3 --rounds 3 \
#        --a "--setParameter hourglassTimeseriesWriteBack=false" --b ""
#      bench/ingest_ab.sh --hosts 4000 --hours 3 --a-bin /tmp/old-build --a "" --b ""
#      bench/ingest_ab.sh --hosts 4000 --hours 3 --a-client "--hosts 100 --hours 120" --a "" --b ""
#        (the same build at 100 hosts, then at 4,000: the later --hosts/--hours win)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release
hosts=100
hours=24
rounds=3
conns=4
a=
b=
a_bin=
b_bin=
a_client=
b_client=
while [[ $# -gt 0 ]]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --hours) hours=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --conns) conns=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --a-bin) a_bin=$2; shift 2 ;;
    --b-bin) b_bin=$2; shift 2 ;;
    --a-client) a_client=$2; shift 2 ;;
    --b-client) b_client=$2; shift 2 ;;
    --a) a=$2; shift 2 ;;
    --b) b=$2; shift 2 ;;
    *) echo "usage: $0 [--hosts H] [--hours H] [--rounds N] [--conns C] [--bin DIR] [--a-bin DIR] [--b-bin DIR] [--a-client ARGS] [--b-client ARGS] --a ARGS --b ARGS" >&2; exit 2 ;;
  esac
done
client=$bin/bench/ts_bench
a_bin=${a_bin:-$bin}
b_bin=${b_bin:-$bin}
source bench/server.sh
declare -A rates=([a]="" [b]="") cpus=([a]="" [b]="") users=([a]="" [b]="")
ticks=$(getconf CLK_TCK)
for round in $(seq "$rounds"); do
  for side in a b; do
    dbpath=$(mktemp -d -p /tmp hgingest.XXXX)
    if [[ $side == a ]]; then
      HOURGLASSD_ARGS=$a; bin=$a_bin; client_args=$a_client
    else
      HOURGLASSD_ARGS=$b; bin=$b_bin; client_args=$b_client
    fi
    export HOURGLASSD_ARGS
    start_server
    line=$($client ingest --uri "mongodb://127.0.0.1:$port/?directConnection=true" \
      --conns "$conns" --hosts "$hosts" --hours "$hours" $client_args | sed -n 's/^RESULT ingest //p')
    cpu=$(awk -v t="$ticks" '{ printf "%.1f", ($14 + $15) / t }' "/proc/$pid/stat")
    user=$(awk -v t="$ticks" '{ printf "%.1f", $14 / t }' "/proc/$pid/stat")
    sys=$(awk -v t="$ticks" '{ printf "%.1f", $15 / t }' "/proc/$pid/stat")
    stop_server
    rm -rf "$dbpath"
    dbpath=
    rate=$(field measurements_per_s "$line")
    rates[$side]+="$rate "
    cpus[$side]+="$cpu "
    users[$side]+="$user "
    # The side's own host count: its client arguments' --hosts, if any, win.
    side_hosts=$(echo "--hosts $hosts $client_args" | grep -o -- '--hosts [0-9]*' | tail -1 | cut -d' ' -f2)
    echo "round=$round side=$side hosts=$side_hosts measurements_per_s=$rate server_cpu_s=$cpu user_s=$user sys_s=$sys"
  done
done
med() { echo "$1" | tr ' ' '\n' | grep . | median; }
ma=$(med "${rates[a]}")
mb=$(med "${rates[b]}")
echo "RESULT hosts=$hosts a_median=$ma b_median=$mb b_over_a=$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.2f", b / a }') a_cpu_median=$(med "${cpus[a]}") b_cpu_median=$(med "${cpus[b]}") a_user_median=$(med "${users[a]}") b_user_median=$(med "${users[b]}")"
