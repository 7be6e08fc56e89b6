#!/usr/bin/env bash
# The MCP tests (tests/mcp/) run real MCP servers: two from npm
# (@modelcontextprotocol/server-filesystem, @modelcontextprotocol/server-everything) and one
# written with Python's `mcp` package (tests/mcp/crashy_server.py). Installs them, when
# missing, into one cache directory and prints it; the tests read FUSERAFT_MCP_DEPS or this
# same default path, and fail (never skip) when the servers are absent.
set -euo pipefail
dir="${FUSERAFT_MCP_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/fuseraft-ci/mcp}"
mkdir -p "$dir"

if ! command -v npm > /dev/null || ! command -v node > /dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  sudo_if_needed=()
  if [ "$(id -u)" -ne 0 ]; then sudo_if_needed=(sudo); fi
  "${sudo_if_needed[@]}" apt-get update -qq
  "${sudo_if_needed[@]}" apt-get install -y -qq --no-install-recommends nodejs npm
fi

# Pinned: the tests snapshot what these servers answer.
npm_packages=(@modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-everything@2026.8.31)
installed() { grep -qs '"version": "2026.8.31"' "$dir/node_modules/@modelcontextprotocol/$1/package.json"; }
if installed server-filesystem && installed server-everything; then
  echo "npm MCP servers are installed"
else
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "${npm_packages[@]}"
fi

python="$(command -v python3 || true)"
if [ -z "$python" ]; then
  echo "python3 is needed for the Python MCP server" >&2
  exit 1
fi
if [ -x "$dir/venv/bin/python" ] && "$dir/venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("mcp") != "2.3.0")' 2> /dev/null; then
  echo "python mcp is installed"
else
  "$python" -m venv "$dir/venv"
  "$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==2.3.0"
fi

echo "FUSERAFT_MCP_DEPS=$dir"
