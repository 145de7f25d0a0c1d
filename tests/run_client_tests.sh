#!/usr/bin/env bash
# Runs the client-level test suites (pymongo, mongosh, Node.js driver) against
# a real hourglassd. Usage:
#   HOURGLASSD=/abs/path/to/hourglassd tests/run_client_tests.sh [pytest args...]
# Installs the npm dev dependencies (npm ci) when node_modules is missing or
# older than package-lock.json. Exits with pytest's exit code.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

if [[ -z "${HOURGLASSD:-}" ]]; then
  echo "run_client_tests.sh: HOURGLASSD is not set (absolute path to the hourglassd binary)" >&2
  exit 2
fi
case "$HOURGLASSD" in
  /*) ;;
  *) HOURGLASSD="$repo/$HOURGLASSD" ;;
esac
if [[ ! -x "$HOURGLASSD" ]]; then
  echo "run_client_tests.sh: $HOURGLASSD is not an executable file" >&2
  exit 2
fi
export HOURGLASSD

# npm's stamp of a finished install; compare it with the lock file.
stamp="node_modules/.package-lock.json"
if [[ ! -d node_modules || ! -f "$stamp" || package-lock.json -nt "$stamp" ]]; then
  echo "run_client_tests.sh: installing npm dev dependencies (npm ci)" >&2
  npm ci --no-audit --no-fund
fi

set +e
/usr/bin/python3 -m pytest tests/integration -q "$@"
rc=$?
set -e
exit "$rc"
