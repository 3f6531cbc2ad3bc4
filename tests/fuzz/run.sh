#!/usr/bin/env bash
# Runs every libFuzzer target of the readers from its seed corpus for SECONDS each (default 30):
#   cmake --preset fuzz && cmake --build --preset fuzz && tests/fuzz/run.sh [SECONDS] [BUILD_DIR]
# A finding (crash, sanitizer report, timeout, leak) stops with the failing input saved in
# build/fuzz/findings/ and exit 1. The corpus grows in build/fuzz/corpus/<target>/ between runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-30}
build=${2:-build/fuzz}
declare -A seeds=(
  [scenario]="scenarios scenarios/validation scenarios/purchase tests/fuzz/seeds/scenario"
  [catalog]="models/catalog scenarios/profiles"
  [plan]="tests/fuzz/seeds/plan"
  [trace]="tests/fuzz/seeds/trace"
)
mkdir -p "$build/findings"
# Two targets at a time (CI machines have two cores); each reports when both of its pair end.
fuzz_one() {  # TARGET: fuzz it, then print its stats or its finding; status 1 on a finding
  local t=$1 corpus="$build/corpus/$1"
  if ! "$build/bin/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
       -artifact_prefix="$build/findings/$t-" -print_final_stats=1 "$corpus" > "$build/fuzz_$t.log" 2>&1; then
    echo "fuzz_$t: FINDING (log: $build/fuzz_$t.log)"; tail -30 "$build/fuzz_$t.log"; return 1
  fi
  echo "fuzz_$t: $(grep -E "stat::number_of_executed_units|stat::new_units_added" "$build/fuzz_$t.log" | tr '\n' ' ')"
}
status=0
for t in scenario catalog plan trace; do
  corpus="$build/corpus/$t"
  mkdir -p "$corpus"
  # Seeds are copied in (libFuzzer reads directories; only the files of each seed folder).
  for d in ${seeds[$t]}; do
    find "$d" -maxdepth 1 -type f \( -name '*.toml' -o -name '*.json' \) -exec cp -n {} "$corpus"/ \;
  done
  echo "fuzz_$t: ${seconds} s from $(find "$corpus" -type f | wc -l) inputs"
done
for pair in "scenario catalog" "plan trace"; do
  pids=()
  for t in $pair; do
    fuzz_one "$t" > "$build/fuzz_$t.report" &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || status=1
  done
  for t in $pair; do cat "$build/fuzz_$t.report"; done
done
exit $status
