#!/usr/bin/env bash
# Expects `make release` (or use `make bench`). Starts the release hourglassd on a free port with a fresh
# temporary dbpath, runs bench/wire_bench against it, and stops it. Extra arguments go to
# wire_bench (e.g. --seconds 5 --runs 7). With --auth first, the server runs with --auth and the
# benchmark logs in (SCRAM-SHA-256) as a root user it creates through the localhost exception.
# With --tls first (also with --auth), the server requires TLS with a certificate, CA and client
# certificate made here by the openssl command (EC P-256), and the benchmark connects with them.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release
if [[ ! -x $bin/hourglassd || ! -x $bin/bench/wire_bench ]]; then
  echo "bench/run.sh: run 'make release' first (or 'make bench')" >&2
  exit 2
fi
auth=0
tls=0
while [[ ${1:-} == --auth || ${1:-} == --tls ]]; do
  [[ $1 == --auth ]] && auth=1
  [[ $1 == --tls ]] && tls=1
  shift
done
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
dbpath=$(mktemp -d)
server_args=(--port "$port" --dbpath "$dbpath" --quiet)
((auth)) && server_args+=(--auth)
tls_query=
py_tls=
if ((tls)); then
  certs=$dbpath/certs
  mkdir "$certs"
  key=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -noenc)
  openssl req -x509 "${key[@]}" -keyout "$certs/ca.key" -out "$certs/ca.pem" -days 1 \
    -subj "/O=Bench/CN=Bench CA" 2>/dev/null
  for who in server client; do
    openssl req "${key[@]}" -keyout "$certs/$who.key" -out "$certs/$who.csr" \
      -subj "/O=Bench $who/CN=localhost" 2>/dev/null
    echo "subjectAltName=DNS:localhost,IP:127.0.0.1" > "$certs/san.ext"
    openssl x509 -req -in "$certs/$who.csr" -CA "$certs/ca.pem" -CAkey "$certs/ca.key" \
      -CAcreateserial -days 1 -extfile "$certs/san.ext" -out "$certs/$who.crt" 2>/dev/null
    cat "$certs/$who.crt" "$certs/$who.key" > "$certs/$who.pem"
  done
  server_args+=(--tlsMode requireTLS --tlsCertificateKeyFile "$certs/server.pem"
    --tlsCAFile "$certs/ca.pem")
  tls_query="&tls=true&tlsCAFile=$certs/ca.pem&tlsCertificateKeyFile=$certs/client.pem"
  py_tls=", tls=True, tlsCAFile='$certs/ca.pem', tlsCertificateKeyFile='$certs/client.pem'"
fi
$bin/hourglassd "${server_args[@]}" 2>"$dbpath/log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dbpath"' EXIT
for _ in $(seq 50); do
  (echo > /dev/tcp/127.0.0.1/"$port") 2>/dev/null && break
  sleep 0.1
done
uri="mongodb://127.0.0.1:$port/?directConnection=true$tls_query"
if ((auth)); then
  /usr/bin/python3 -c "import pymongo; pymongo.MongoClient('127.0.0.1', $port$py_tls).admin.command(
    'createUser', 'bench', pwd='bench-pw', roles=['root'])"
  uri="mongodb://bench:bench-pw@127.0.0.1:$port/?directConnection=true&authMechanism=SCRAM-SHA-256$tls_query"
fi
echo "hourglassd $(git rev-parse --short HEAD) on 127.0.0.1:$port, $(nproc) cores, auth=$auth, tls=$tls"
$bin/bench/wire_bench --uri "$uri" "$@"
