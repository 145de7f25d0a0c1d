#!/usr/bin/env bash
set -euo pipefail
# Bytes per value and ingest rate of the ts_bench day (100 hosts, 4 connections) with each block
# compressor for the bucket collection (ts_bench --block-compressor), two alternating rounds, each
# on a fresh server restarted before the storage figure (its clean shutdown checkpoints).
cd "$(dirname "$0")/.."
bin=build/release
source bench/server.sh
for round in 1 2; do
  for c in snappy zstd zlib none; do
    parent=$(mktemp -d); dbpath=$parent/db; mkdir "$dbpath"
    start_server
    line=$($bin/bench/ts_bench ingest --uri "mongodb://127.0.0.1:$port/?directConnection=true" --conns 4 --block-compressor $c | sed -n 's/^RESULT ingest //p')
    stop_server; start_server
    s=$($bin/bench/ts_bench storage --uri "mongodb://127.0.0.1:$port/?directConnection=true" | sed -n 's/^RESULT storage //p')
    echo "round=$round compressor=$c rate=$(field measurements_per_s "$line") storage_bpv=$(field storage_bytes_per_value "$s") total_bpv=$(field total_bytes_per_value "$s") storageSize=$(field storageSize "$s")"
    stop_server; rm -rf "$parent"; dbpath=
  done
done
