#!/usr/bin/env bash
# What a rollup costs its source's ingest: `ts_bench ingest --hosts 100 --hours 24 --conns 4` on
# fresh servers, alternating without and with a rollup of tsbench.cpu created first (maintenance
# runs during the ingest), three times each. Expects `make release`.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release
source bench/server.sh
fresh_dbpath hg-ingest-rollup
for mode in none rollup none rollup none rollup; do
  rm -rf "$dbpath"; mkdir -p "$dbpath"
  start_server
  if [[ $mode == rollup ]]; then
    /usr/bin/python3 - "$port" <<'PY'
import sys, pymongo
db = pymongo.MongoClient("127.0.0.1", int(sys.argv[1]), directConnection=True).tsbench
db.create_collection("cpu", timeseries={"timeField": "time", "metaField": "tags", "granularity": "seconds"})
db.create_collection("cpu_1h", timeseries={"timeField": "time", "metaField": "tags", "granularity": "hours"},
                     rollupOf={"source": "cpu", "every": "1h", "fields": {"usage_user": ["avg", "min", "max"], "usage_system": ["avg"]}})
PY
  fi
  echo "$mode $($bin/bench/ts_bench ingest --uri "mongodb://127.0.0.1:$port/?directConnection=true" --hosts 100 --hours 24 --conns 4 | grep RESULT)"
  stop_server
done
