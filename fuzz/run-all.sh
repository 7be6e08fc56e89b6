#!/usr/bin/env bash
# Runs every fuzz target in turn for SECONDS_PER_TARGET (default 600), niced, one at a time,
# in libFuzzer's fork mode so that a crash is saved under artifacts/<target>/ and fuzzing
# goes on. Logs go to logs/<target>.log. Usage: fuzz/run-all.sh [target...]
set -uo pipefail
cd "$(dirname "$0")"
budget=${SECONDS_PER_TARGET:-600}
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(config tama condition ir_text replay vm vm_ir)
mkdir -p logs
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target" "artifacts/$target"
  echo "== $target: $(date -u +%H:%M:%S) for ${budget}s"
  nice -n 19 cargo +nightly fuzz run "$target" "corpus/$target" -- \
    -max_total_time="$budget" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    > "logs/$target.log" 2>&1
  echo "   exit $?; $(grep -E '^#[0-9]+' "logs/$target.log" | tail -1)"
  echo "   artifacts: $(ls "artifacts/$target" | wc -l)"
done
