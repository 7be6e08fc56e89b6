#!/usr/bin/env bash
# Installs the PyPI `check-jsonschema` CLI that tests/schema.rs validates configs with
# against `fuseraft schema`, into a virtual environment in the CI cache. Idempotent; prints
# the binary's path.
set -euo pipefail
dir="${XDG_CACHE_HOME:-$HOME/.cache}/fuseraft-ci/check-jsonschema"
bin="$dir/venv/bin/check-jsonschema"
version=0.39.0
if [ ! -x "$bin" ] || ! "$dir/venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('check-jsonschema') != '$version')" 2> /dev/null; then
  python="$(command -v python3 || true)"
  if [ -z "$python" ]; then
    echo "python3 is needed for check-jsonschema" >&2
    exit 1
  fi
  mkdir -p "$dir"
  "$python" -m venv "$dir/venv"
  "$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check "check-jsonschema==$version"
fi
echo "$bin"
