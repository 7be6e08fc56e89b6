#!/usr/bin/env bash
# The durable-sessions tier (tests/serve.rs) runs `fuseraft serve` workers for a real Restate
# server: npm's @restatedev/restate-server (a Linux x64 binary, BSL 1.1 with a use grant that
# allows products exposing their own API), and Debian's HAProxy as the per-request HTTP/2
# balancer in front of two workers. Installs the pinned server under the cache dir,
# idempotently; a second run that finds it does nothing. Prints the server binary; the tests
# find it in the same place (override the place with FUSERAFT_RESTATE_DIR).
set -euo pipefail

if ! command -v haproxy > /dev/null; then
  sudo_if_needed=()
  if [ "$(id -u)" -ne 0 ]; then sudo_if_needed=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_if_needed[@]}" apt-get update -qq
  "${sudo_if_needed[@]}" apt-get install -y -qq --no-install-recommends haproxy
fi

restate_dir="${FUSERAFT_RESTATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fuseraft-ci/restate}"
version="1.7.12"
server="$restate_dir/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server"

if [ -x "$server" ] && "$server" --version 2> /dev/null | grep -q "$version"; then
  echo "Restate server $version is installed: $server"
  exit 0
fi
if ! command -v npm > /dev/null; then
  sudo_if_needed=()
  if [ "$(id -u)" -ne 0 ]; then sudo_if_needed=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_if_needed[@]}" apt-get update -qq
  "${sudo_if_needed[@]}" apt-get install -y -qq --no-install-recommends nodejs npm
fi
mkdir -p "$restate_dir"
started=$(date +%s)
(cd "$restate_dir" && npm install --no-audit --no-fund --ignore-scripts --silent "@restatedev/restate-server@$version")
"$server" --version > /dev/null
echo "Restate server $version installed in $(( $(date +%s) - started ))s: $server"
