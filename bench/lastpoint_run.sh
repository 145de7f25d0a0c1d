#!/usr/bin/env bash
# The last-point family just written and after a restart. Expects `make release`.
# A release hourglassd on a fresh dbpath, `ts_bench ingest --hosts H --hours HOURS --conns 4`,
# then `tsbs_queries` over TYPES with and without the time-series rewrites (medians of RUNS
# instances), then the server restarted on the same data and the same queries with the rewrites.
#
#   RUNS=5 TYPES=lastpoint-hostname,lastpoint-top,lastpoint-top5 bench/lastpoint_run.sh H HOURS
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=${1:-4000}
hours=${2:-3}
types=${TYPES:-lastpoint-hostname,lastpoint-top,lastpoint-top5}
runs=${RUNS:-5}
bin=build/release
source bench/server.sh
fresh_dbpath hg-lastpoint
uri() { echo "mongodb://127.0.0.1:$port/?directConnection=true"; }
start_server
$bin/bench/ts_bench ingest --uri "$(uri)" --hosts "$hosts" --hours "$hours" --conns 4 | tail -1
echo "just written:"
$bin/bench/tsbs_queries --uri "$(uri)" --types "$types" --runs "$runs" \
  --toggle-param hourglassTimeseriesRewrites | grep RESULT
stop_server
start_server
echo "restarted:"
$bin/bench/tsbs_queries --uri "$(uri)" --types "$types" --runs "$runs" | grep RESULT
