#!/usr/bin/env bash
# Line-protocol ingest through the HTTP port (issue 20's benchmark): the TSBS cpu-only file the
# InfluxDB peer loads (../shared/peers/gen_cpu.py --format influx, seed 123), POSTed to
# /write?db=benchmark&precision=ns in batches by the peers' own loader
# (../shared/peers/influx_client.py: keep-alive connections, one thread each), on a fresh dbpath
# per run; prints each run's rows/s and the server's CPU seconds, then the median. With
# --influx, InfluxDB 1.x (Debian's influxdb) loads the same file with the same loader, alternating
# run by run. Expects `make release`.
#
#   bench/lp_ingest.sh [--hosts 100] [--duration 1d] [--runs 3] [--workers 4] [--batch 5000]
#                      [--influx]
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=100
duration=1d
runs=3
workers=4
batch=5000
influx=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --influx) influx=1; shift ;;
    *) echo "usage: $0 [--hosts H] [--duration D] [--runs N] [--workers W] [--batch B] [--influx]" >&2; exit 2 ;;
  esac
done
peers=../shared/peers
data=/tmp/hglp
mkdir -p "$data"
lp=$data/cpu_${hosts}_${duration}.lp
if [[ ! -s $lp ]]; then
  /usr/bin/python3 "$peers/gen_cpu.py" --hosts "$hosts" --duration "$duration" --seed 123 \
    --format influx --out "$lp" >&2
fi
bin=build/release
source bench/server.sh
ticks=$(getconf CLK_TCK)
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
hg_rates=()
influx_rates=()
for run in $(seq "$runs"); do
  dbpath=$(mktemp -d -p /tmp hglp.XXXX)
  http_port=$(free_port)
  HOURGLASSD_ARGS="--httpPort $http_port"
  start_server
  line=$(/usr/bin/python3 "$peers/influx_client.py" load --file "$lp" --port "$http_port" \
           --batch "$batch" --workers "$workers")
  read -r -a st < "/proc/$pid/stat"
  cpu=$(awk -v u="${st[13]}" -v s="${st[14]}" -v t="$ticks" 'BEGIN {printf "%.1f", (u + s) / t}')
  rate=$(/usr/bin/python3 -c "import json,sys; print(json.loads(sys.argv[1])['rows_per_s'])" "$line")
  count=$(/usr/bin/python3 -c "import pymongo,sys; print(pymongo.MongoClient(port=int(sys.argv[1])).benchmark.cpu.count_documents({}))" "$port")
  echo "run=$run engine=hourglass rows_per_s=$rate server_cpu_s=$cpu rows_stored=$count"
  hg_rates+=("$rate")
  stop_server
  rm -rf "$dbpath"
  dbpath=
  if [[ $influx == 1 ]]; then
    ip=$(free_port)
    d=$(mktemp -d -p /tmp hginflux.XXXX)
    cat > "$d/influxdb.conf" <<EOF
reporting-disabled = true
bind-address = "127.0.0.1:$(free_port)"
[meta]
  dir = "$d/meta"
[data]
  dir = "$d/data"
  wal-dir = "$d/wal"
  query-log-enabled = false
[monitor]
  store-enabled = false
[http]
  bind-address = "127.0.0.1:$ip"
  log-enabled = false
[continuous_queries]
  enabled = false
EOF
    influxd -config "$d/influxdb.conf" > "$d/influxd.log" 2>&1 &
    ipid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$ip/ping" >/dev/null && break; sleep 0.2; done
    curl -sf -XPOST "http://127.0.0.1:$ip/query" --data-urlencode "q=CREATE DATABASE benchmark" >/dev/null
    line=$(/usr/bin/python3 "$peers/influx_client.py" load --file "$lp" --port "$ip" \
             --batch "$batch" --workers "$workers")
    rate=$(/usr/bin/python3 -c "import json,sys; print(json.loads(sys.argv[1])['rows_per_s'])" "$line")
    read -r -a st < "/proc/$ipid/stat"
    cpu=$(awk -v u="${st[13]}" -v s="${st[14]}" -v t="$ticks" 'BEGIN {printf "%.1f", (u + s) / t}')
    echo "run=$run engine=influxdb rows_per_s=$rate server_cpu_s=$cpu"
    influx_rates+=("$rate")
    kill "$ipid"; wait "$ipid" 2>/dev/null || true
    rm -rf "$d"
  fi
done
hg_median=$(printf '%s\n' "${hg_rates[@]}" | median)
echo "RESULT hosts=$hosts duration=$duration workers=$workers batch=$batch hourglass_median=$hg_median" \
  "$([[ $influx == 1 ]] && echo "influxdb_median=$(printf '%s\n' "${influx_rates[@]}" | median)")"
