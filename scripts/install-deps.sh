#!/usr/bin/env bash
# Installs the Debian packages Hourglass needs to build, run and test. Idempotent: packages that
# are already installed are skipped, and apt is not touched at all when nothing is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libwiredtiger-dev wiredtiger libbson-dev libmongoc-dev libasio-dev libssl-dev
  libsnappy-dev zlib1g-dev libzstd-dev libpcre2-dev libyaml-cpp-dev libcli11-dev libicu-dev libs2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libhowardhinnant-date-dev tzdata libintelrdfpmath-dev libgoogle-perftools-dev
  libmicrohttpd-dev libprotobuf-dev protobuf-compiler libraft-dev libuv1-dev
  python3 python3-pytest python3-pymongo python3-prometheus-client python3-snappy
  python3-influxdb nodejs npm
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# node and npm may come from outside Debian's packages; accept any working installation.
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=()
  for p in "${missing[@]}"; do
    [[ "$p" == nodejs || "$p" == npm ]] || filtered+=("$p")
  done
  missing=("${filtered[@]}")
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "Installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${missing[@]}"
