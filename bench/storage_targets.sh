#!/usr/bin/env bash
# Issue 15's benchmark in one run of the machine, every figure beside the earlier build's (the
# build directory OLD: `hourglassd`, `ts_bench`, `tsbs_queries`) and PostgreSQL 15's `COPY`:
#   1. bytes per value of the peers' TSBS day (bench/peer_rows_size.sh: buckets compressed from
#      their first write, the default, and compressed when they close; zstd blocks either way);
#   2. ingest with 4 connections at 100 and at 4,000 hosts (bench/ingest_ab.sh), then
#      PostgreSQL's `COPY` of the same 4,000-host rows (../shared/peers/peers.sh pg);
#   3. ingest at 100 hosts against OLD;
#   4. the one-host-one-hour `find` at 4,000 hosts just written and after a restart, both builds;
#   5. the TSBS query set at 4,000 hosts just written and restarted, against OLD on the query
#      types OLD knows (bench/query_side_by_side.sh), then every type with more instances.
# Needs `make release`, the peers' data (`ROOT=/tmp/peers100 bash ../shared/peers/peers.sh gen`,
# its `--format ndjson` file as bench/peer_rows_size.sh says, and `HOSTS=4000 DURATION=3h
# ROOT=/tmp/peers4000 bash ../shared/peers/peers.sh gen`) and PostgreSQL installed. About an hour.
#   bench/storage_targets.sh OLD
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -ne 1 || ! -x $1/hourglassd ]]; then
  echo "usage: $0 OLD_BUILD_DIR (holding hourglassd, bench/ts_bench, bench/tsbs_queries)" >&2
  exit 2
fi
old=$1
nine=single-groupby-1-1-1,single-groupby-5-1-12,cpu-max-all-1,cpu-max-all-8,double-groupby-1
nine=$nine,double-groupby-all,high-cpu-1,lastpoint,groupby-orderby-limit

echo "== 1. bytes per value"
bench/peer_rows_size.sh
echo "== 2. ingest at 100 hosts (A) and at 4,000 (B); PostgreSQL COPY at 4,000"
bench/ingest_ab.sh --hosts 4000 --hours 3 --rounds 3 --a-client "--hosts 100 --hours 120" \
  --a "" --b ""
HOSTS=4000 DURATION=3h RUNS=3 NQ=1 ROOT=/tmp/peers4000 bash ../shared/peers/peers.sh pg 2>&1 |
  grep "COPY run" || true
echo "== 3. ingest at 100 hosts, $old (A) against build/release (B)"
bench/ingest_ab.sh --hosts 100 --hours 120 --rounds 5 --a-bin "$old" --a "" --b ""

echo "== 4. one host, one hour at 4,000 hosts (ts_bench query --queries 200)"
source bench/server.sh
for bin in "$old" build/release; do
  fresh_dbpath hgfind
  start_server
  "$bin/bench/ts_bench" ingest --uri "mongodb://127.0.0.1:$port" --conns 4 --hosts 4000 \
    --hours 3 >/dev/null
  written=$("$bin/bench/ts_bench" query --uri "mongodb://127.0.0.1:$port" --hosts 4000 --hours 3 \
    --queries 200)
  stop_server
  start_server
  restarted=$("$bin/bench/ts_bench" query --uri "mongodb://127.0.0.1:$port" --hosts 4000 \
    --hours 3 --queries 200)
  stop_server
  echo "$bin: just written $(field median_ms "$written") ms, restarted" \
    "$(field median_ms "$restarted") ms"
  rm -rf "$root"
done

echo "== 5. TSBS queries at 4,000 hosts, just written and restarted, both builds"
bench/query_side_by_side.sh --hosts 4000 --hours 3 --rounds 5 --runs 10 --types "$nine" \
  --side written:build/release:written --side restarted:build/release:restarted \
  --side old-written:"$old":written --side old-restarted:"$old":restarted
bench/query_side_by_side.sh --hosts 4000 --hours 3 --rounds 7 --runs 30 \
  --side written:build/release:written --side restarted:build/release:restarted
