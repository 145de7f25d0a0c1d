#!/usr/bin/env bash
# TSBS queries on the ts_bench day, just loaded and restarted, with closed-bucket compression off
# and on, alternating, two rounds: how reads of compressed (version-2) buckets compare with
# version-1 ones. Release build: BIN=build/release (default) bench/read_cmp.sh
# Both modes set hourglassTimeseriesCompressClosedBuckets explicitly, whatever its default.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-build/release}
for round in 1 2; do
for mode in off on; do
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  db=$(mktemp -d -p /tmp hgread.XXXX)
  extra="--setParameter hourglassTimeseriesCompressClosedBuckets=false"
  [[ $mode == on ]] && extra="--setParameter hourglassTimeseriesCompressClosedBuckets=true"
  $bin/hourglassd --port $port --dbpath $db --quiet $extra 2>/dev/null & pid=$!
  sleep 1
  ing=$($bin/bench/ts_bench ingest --uri "mongodb://127.0.0.1:$port/?directConnection=true" --conns 4 | sed -n 's/^RESULT ingest //p')
  echo "round=$round mode=$mode ingest $(echo "$ing" | grep -o 'measurements_per_s=[0-9]*')"
  $bin/bench/tsbs_queries --uri "mongodb://127.0.0.1:$port/?directConnection=true" --runs 10 | sed -n "s/^RESULT /round=$round mode=$mode fresh:/p"
  kill $pid; wait $pid
  $bin/hourglassd --port $port --dbpath $db --quiet $extra 2>/dev/null & pid=$!
  sleep 1
  $bin/bench/tsbs_queries --uri "mongodb://127.0.0.1:$port/?directConnection=true" --runs 10 | sed -n "s/^RESULT /round=$round mode=$mode /p"
  kill $pid; wait $pid
  rm -rf $db
done
done
