#!/usr/bin/env bash
# Everything the tests drive that is not a Rust crate, installed when missing (idempotent):
# Debian's headless Chromium and chromedriver (the web view's browser tests), Microsoft's
# SARIF Multitool (tests/sarif.rs), PyPI's check-jsonschema (tests/schema.rs), Graphviz
# and mermaid-cli (tests/diagrams.rs), groff and man-db (the manual pages,
# tests/conventions/man.rs), the MCP servers (tests/mcp.rs), Arize Phoenix, an OpenTelemetry
# backend (tests/telemetry.rs), the Restate server (tests/serve.rs), and the live tier's model server and model (tests/live.rs;
# built from source the first time). The README's test command runs this first.
set -euo pipefail
cd "$(dirname "$0")"
bash ui-deps.sh
echo "SARIF Multitool: $(bash sarif-deps.sh)"
echo "check-jsonschema: $(bash schema-deps.sh)"
echo "mermaid-cli: $(bash diagram-deps.sh)"
bash mcp-deps.sh
bash otel-deps.sh
bash restate-deps.sh
bash live-deps.sh
