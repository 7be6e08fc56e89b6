#!/usr/bin/env bash
# Installs the renderers tests/diagrams.rs draws every fixture with: Graphviz (`dot`, from
# Debian) and mermaid-cli (`mmdc`, from npm, driving the system Chromium that ui-deps.sh
# installs; puppeteer's own browser download is skipped); and groff and man-db, which
# tests/conventions/man.rs renders every manual page with. Idempotent; prints mmdc's path.
set -euo pipefail
sudo_if_needed=()
if [ "$(id -u)" -ne 0 ]; then sudo_if_needed=(sudo); fi
if ! command -v dot > /dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_if_needed[@]}" apt-get update -qq
  "${sudo_if_needed[@]}" apt-get install -y -qq --no-install-recommends graphviz > /dev/null
fi
if ! command -v groff > /dev/null || ! command -v man > /dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_if_needed[@]}" apt-get update -qq
  "${sudo_if_needed[@]}" apt-get install -y -qq --no-install-recommends groff-base man-db > /dev/null
fi
if ! command -v npm > /dev/null; then
  "${sudo_if_needed[@]}" apt-get install -y -qq nodejs npm > /dev/null
fi
dir="${XDG_CACHE_HOME:-$HOME/.cache}/fuseraft-ci/mermaid"
version=11.17.0
if ! grep -q "\"version\": \"$version\"" "$dir/node_modules/@mermaid-js/mermaid-cli/package.json" 2>/dev/null; then
  mkdir -p "$dir"
  PUPPETEER_SKIP_DOWNLOAD=1 npm install --prefix "$dir" --no-audit --no-fund --silent \
    "@mermaid-js/mermaid-cli@$version" > /dev/null
fi
echo "$dir/node_modules/.bin/mmdc"
