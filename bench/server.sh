# Sourced by the benchmark scripts: a release hourglassd on a free port with its data in $dbpath.
#   start_server   starts $bin/hourglassd on $dbpath (a new free port each time; sets $port, $pid),
#                  with the extra arguments in $HOURGLASSD_ARGS (e.g. "--setParameter x=y")
#   stop_server    stops it cleanly (its shutdown writes a WiredTiger checkpoint)
#   field K LINE   the value of key=value pair K in LINE
#   median         the median of the numbers on stdin
#   fresh_dbpath   a new temporary $root and $dbpath
# On exit the server is stopped and $dbpath (when set) removed.
pid=
dbpath=
port=
stop_server() {
  if [[ -n $pid ]]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
  fi
}
cleanup() {
  stop_server
  if [[ -n $dbpath ]]; then rm -rf "$dbpath"; fi
}
trap cleanup EXIT
# fresh_dbpath NAME: a new directory $root (/tmp/NAME.XXXXXX) with an empty $dbpath in it, both
# removed on exit.
fresh_dbpath() {
  root=$(mktemp -d "/tmp/$1.XXXXXX")
  dbpath=$root/db
  mkdir -p "$dbpath"
  trap 'cleanup; rm -rf "$root"' EXIT
}
start_server() {
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  # shellcheck disable=SC2086
  $bin/hourglassd --port "$port" --dbpath "$dbpath" --quiet ${HOURGLASSD_ARGS:-} \
    2>>"$dbpath/../hourglassd.log" &
  pid=$!
  for _ in $(seq 100); do
    (echo > /dev/tcp/127.0.0.1/"$port") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "hourglassd did not start; log:" >&2
  cat "$dbpath/../hourglassd.log" >&2
  exit 1
}
field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }
median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
