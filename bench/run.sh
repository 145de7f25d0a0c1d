#!/usr/bin/env bash
# Expects `make release` (or use `make bench`). Starts the release hourglassd on a free port with a fresh
# temporary dbpath, runs bench/wire_bench against it, and stops it. Extra arguments go to
# wire_bench (e.g. --seconds 5 --runs 7). With --auth first, the server runs with --auth and the
# benchmark logs in (SCRAM-SHA-256) as a root user it creates through the localhost exception.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release
if [[ ! -x $bin/hourglassd || ! -x $bin/bench/wire_bench ]]; then
  echo "bench/run.sh: run 'make release' first (or 'make bench')" >&2
  exit 2
fi
auth=0
if [[ ${1:-} == --auth ]]; then
  auth=1
  shift
fi
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
dbpath=$(mktemp -d)
server_args=(--port "$port" --dbpath "$dbpath" --quiet)
((auth)) && server_args+=(--auth)
$bin/hourglassd "${server_args[@]}" 2>"$dbpath/log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dbpath"' EXIT
for _ in $(seq 50); do
  (echo > /dev/tcp/127.0.0.1/"$port") 2>/dev/null && break
  sleep 0.1
done
uri="mongodb://127.0.0.1:$port/?directConnection=true"
if ((auth)); then
  /usr/bin/python3 -c "import pymongo; pymongo.MongoClient('127.0.0.1', $port).admin.command(
    'createUser', 'bench', pwd='bench-pw', roles=['root'])"
  uri="mongodb://bench:bench-pw@127.0.0.1:$port/?directConnection=true&authMechanism=SCRAM-SHA-256"
fi
echo "hourglassd $(git rev-parse --short HEAD) on 127.0.0.1:$port, $(nproc) cores, auth=$auth"
$bin/bench/wire_bench --uri "$uri" "$@"
