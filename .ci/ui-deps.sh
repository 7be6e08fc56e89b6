#!/usr/bin/env bash
# The browser tests (tests/web_view.rs) drive Debian's headless Chromium through chromedriver.
# Installs both when missing; called by .ci/run before the tests. A machine without them
# fails those tests loudly (they are never skipped).
set -euo pipefail
if command -v chromium > /dev/null && command -v chromedriver > /dev/null; then
  echo "chromium and chromedriver are installed"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
sudo_if_needed=()
if [ "$(id -u)" -ne 0 ]; then sudo_if_needed=(sudo); fi
"${sudo_if_needed[@]}" apt-get update -qq
"${sudo_if_needed[@]}" apt-get install -y -qq --no-install-recommends chromium chromium-driver
chromium --version
chromedriver --version
