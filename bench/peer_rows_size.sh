#!/usr/bin/env bash
# Bytes per value on disk (after a checkpoint) of the peers' TSBS day (../shared/peers: generate it
# first with `ROOT=/tmp/peers100 bash ../shared/peers/peers.sh gen`) in a release hourglassd, with
# buckets compressed from their first write (the default, `always`) and version-1 buckets
# compressed when they close (`closed`): loads the rows with the peers' Node.js loader, restarts
# the server (its clean shutdown checkpoints), then reads collStats.
#   bench/peer_rows_size.sh [ROWS_NDJSON]
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$repo/build/release
for mode in always closed; do
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  db=$(mktemp -d -p /tmp hgsize.XXXX)
  extra=""; [[ $mode == closed ]] && extra="--setParameter hourglassTimeseriesAlwaysCompressBuckets=false"
  "$bin"/hourglassd --port $port --dbpath $db --quiet $extra 2>/dev/null & pid=$!
  sleep 1
  NODE_PATH="$repo/node_modules" node "$repo/../shared/peers/mongo_bench.cjs" --url "mongodb://127.0.0.1:$port/?directConnection=true" \
    --ndjson "${1:-/tmp/peers100/data/cpu_100h_1d.ndjson}" --queries /dev/null --batch 5000 --workers 2 --runs 1 >/dev/null 2>&1
  kill $pid; wait $pid
  "$bin"/hourglassd --port $port --dbpath $db --quiet $extra 2>/dev/null & pid=$!
  sleep 1
  /usr/bin/python3 - "$port" "$mode" <<'PY'
import sys, pymongo
c = pymongo.MongoClient(f"mongodb://127.0.0.1:{sys.argv[1]}/?directConnection=true")
dbs = [d for d in c.list_database_names() if d not in ("admin", "local", "config")]
for d in dbs:
    for name in c[d].list_collection_names():
        if name.startswith("system."): continue
        st = c[d].command("collStats", name)
        if "timeseries" not in st: continue
        ts = st["timeseries"]
        print(f"buckets={sys.argv[2]} db={d} coll={name} size={st['size']} storageSize={st['storageSize']} "
              f"bytes_per_value={st['storageSize']/8640000:.3f} logical_per_value={st['size']/8640000:.3f} "
              f"buckets={ts['bucketCount']}")
PY
  kill $pid; wait $pid
  rm -rf $db
done
