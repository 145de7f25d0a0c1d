#!/usr/bin/env bash
# A year of hourly averages for one host, from a rollup and from raw buckets (issue 20's target:
# >= 100x). Expects `make release`.
# A release hourglassd on a fresh dbpath; `ts_bench load --hosts H --hours HOURS` (TSBS cpu-only,
# 10 s interval); the rollup tsbench.cpu_1h of usage_user (avg, min, max) created over the
# loaded data and waited for (its backfill time is printed); bench/rollup_queries.py (RUNS timed
# queries each) on the data just written, then again after a restart.
#
#   RUNS=20 bench/rollup_run.sh [H=10] [HOURS=8784]
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=${1:-10}
hours=${2:-8784}  # 2016 is a leap year
runs=${RUNS:-20}
bin=build/release
source bench/server.sh
fresh_dbpath hg-rollup
uri() { echo "mongodb://127.0.0.1:$port/?directConnection=true"; }
start_server
$bin/bench/ts_bench load --uri "$(uri)" --hosts "$hosts" --hours "$hours" | tail -1
/usr/bin/python3 - "$port" <<'PY'
import sys, time, pymongo
c = pymongo.MongoClient("127.0.0.1", int(sys.argv[1]), directConnection=True)
db = c.tsbench
t = time.perf_counter()
db.create_collection("cpu_1h", timeseries={"timeField": "time", "metaField": "tags",
                                           "granularity": "hours"},
                     rollupOf={"source": "cpu", "every": "1h",
                               "fields": {"usage_user": ["avg", "min", "max"]}})
while db.command("collStats", "cpu_1h")["timeseries"]["rollup"]["pendingRanges"] > 0:
    time.sleep(0.2)
st = db.command("collStats", "cpu_1h")["timeseries"]["rollup"]
print("RESULT backfill seconds=%.1f rows=%d" % (time.perf_counter() - t, st["rowsWritten"]))
PY
echo "just written:"
/usr/bin/python3 bench/rollup_queries.py "$port" --runs "$runs" --hosts "$hosts"
stop_server
start_server
echo "restarted:"
/usr/bin/python3 bench/rollup_queries.py "$port" --runs "$runs" --hosts "$hosts"
