#!/usr/bin/env bash
# Installs Microsoft's SARIF Multitool (npm `@microsoft/sarif-multitool`, a self-contained
# Linux build) that tests/sarif.rs validates `fuseraft check --format sarif` with, GitHub's
# ingestion rules included. Idempotent; prints the binary's path.
set -euo pipefail
dir="${XDG_CACHE_HOME:-$HOME/.cache}/fuseraft-ci/sarif"
bin="$dir/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool"
version=5.7.0
if [ ! -x "$bin" ] || ! grep -q "\"version\": \"$version\"" "$dir/node_modules/@microsoft/sarif-multitool/package.json" 2>/dev/null; then
  if ! command -v npm > /dev/null; then
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq nodejs npm > /dev/null
    else sudo apt-get update -qq && sudo apt-get install -y -qq nodejs npm > /dev/null; fi
  fi
  mkdir -p "$dir"
  (cd "$dir" && npm install --no-audit --no-fund --silent "@microsoft/sarif-multitool@$version" > /dev/null)
  # npm leaves install scripts unrun: the binary's executable bit is set here instead.
  chmod u+x "$bin"
fi
echo "$bin"
