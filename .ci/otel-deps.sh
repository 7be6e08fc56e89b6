#!/usr/bin/env bash
# The OpenTelemetry tier (tests/telemetry.rs) sends a run's trace to a real OpenTelemetry
# backend and reads it back through the backend's own API: Arize Phoenix from PyPI, which
# takes OTLP over HTTP at /v1/traces and serves the spans again at /v1/projects/*/spans.
# Installs it into a Python venv under the cache dir, idempotently; a second run that finds
# it does nothing. Prints the venv's python; tests/telemetry.rs finds it in the same place
# (override the place with FUSERAFT_OTEL_DIR).
set -euo pipefail

otel_dir="${FUSERAFT_OTEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fuseraft-ci/otel}"
venv="$otel_dir/venv"
phoenix_version="20.26.1"

python="$venv/bin/python"
if [ -x "$python" ] \
  && "$python" -c 'import phoenix, sys; sys.exit(phoenix.__version__ != sys.argv[1])' "$phoenix_version" 2> /dev/null; then
  echo "OpenTelemetry tier is installed: $python (arize-phoenix $phoenix_version)"
  exit 0
fi

mkdir -p "$otel_dir"
if [ ! -x "$python" ]; then
  # Debian's own python3 makes venvs only with its python3-venv package.
  if ! python3 -c 'import ensurepip, venv' 2> /dev/null; then
    sudo_if_needed=()
    if [ "$(id -u)" -ne 0 ]; then sudo_if_needed=(sudo); fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_if_needed[@]}" apt-get update -qq
    "${sudo_if_needed[@]}" apt-get install -y -qq --no-install-recommends python3-venv
  fi
  python3 -m venv "$venv"
fi
"$python" -m pip install --quiet --upgrade pip
started=$(date +%s)
"$python" -m pip install --quiet "arize-phoenix==$phoenix_version"
"$python" -c 'import phoenix.server.main'
echo "arize-phoenix $phoenix_version installed in $(( $(date +%s) - started ))s: $python"
