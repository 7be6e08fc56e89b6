#!/usr/bin/env bash
# Builds the starting corpora under fuzz/corpus/<target>/ from the repository's fixtures.
# The corpora are not committed (fuzz/.gitignore); run this once before `cargo fuzz run`.
# Needs a built `fuseraft` (cargo build) for the IR seeds.
set -euo pipefail
cd "$(dirname "$0")"
root=..
bin=${FUSERAFT:-$root/target/debug/fuseraft}
mkdir -p corpus/{config,tama,condition,ir_text,replay,vm,vm_ir}

n=0
# config: selector byte (even = YAML, odd = JSON) + the file.
while IFS= read -r -d '' file; do
  n=$((n + 1))
  case "$file" in
    *.json) { printf '\x01'; cat "$file"; } > "corpus/config/fixture-$n" ;;
    *) { printf '\x00'; cat "$file"; } > "corpus/config/fixture-$n" ;;
  esac
done < <(find "$root/fixtures/compile" "$root/fixtures/check" "$root/fixtures/run" \
  \( -name '*.yaml' -o -name '*.yml' -o -name '*.json' \) -not -name 'case.yaml' \
  -not -name 'replay.yaml' -print0)

# tama: every AGENT.md.
while IFS= read -r -d '' file; do
  n=$((n + 1))
  cp "$file" "corpus/tama/agent-$n"
done < <(find "$root/fixtures" -name AGENT.md -print0)

# condition: the conditions the fixtures use, plus a few edge forms.
grep -rhoE "(Condition|When): *\"[^\"]+\"" "$root/fixtures" | sed -E 's/^[^"]*"//; s/"$//' |
  sort -u | while IFS= read -r cond; do
  n=$((n + 1))
  printf '%s' "$cond" > "corpus/condition/cond-$n"
done || true
printf '%s' "verdict == 'approved' && !exists(review.blockers)" > corpus/condition/seed-1
printf '%s' "contains(last_message, \"PASS\") || (\`a b\`.c != 5 && true)" > corpus/condition/seed-2
printf '%s' "!(!(a == null)) || false" > corpus/condition/seed-3

# ir_text and vm_ir: the IR of every fixture that compiles.
if [ -x "$bin" ]; then
  while IFS= read -r -d '' file; do
    n=$((n + 1))
    if "$bin" compile "$file" --emit ir -o "corpus/ir_text/ir-$n" 2>/dev/null; then
      { cat "corpus/ir_text/ir-$n"; printf '\0\0'; head -c 256 /dev/urandom; } > "corpus/vm_ir/ir-$n"
    else
      rm -f "corpus/ir_text/ir-$n"
    fi
  done < <(find "$root/fixtures/compile/ok" "$root/fixtures/run" \
    \( -name '*.yaml' -o -name '*.json' \) -not -name 'case.yaml' -not -name 'replay.yaml' -print0)
else
  echo "seed.sh: $bin not built; no IR seeds" >&2
fi

# replay: selector byte 0 (YAML) + every replay file.
while IFS= read -r -d '' file; do
  n=$((n + 1))
  { printf '\x00'; cat "$file"; } > "corpus/replay/replay-$n"
done < <(find "$root/fixtures" -name 'replay.yaml' -print0)

# vm: random answers. libFuzzer never mutates an input past the largest seed until coverage
# stalls (-len_control), and 512 bytes answer only a few turns: half the seeds are 4 KiB
# (libFuzzer's default -max_len), enough for most runs to reach their own end.
for i in 1 2 3 4; do
  head -c 512 /dev/urandom > "corpus/vm/random-$i"
done
for i in 5 6 7 8; do
  head -c 4096 /dev/urandom > "corpus/vm/random-$i"
done
for dir in corpus/*; do
  echo "$dir: $(ls "$dir" | wc -l) seeds"
done
