#!/usr/bin/env bash
# Both engines run every bundled scenario: `hetsim simulate --engine simgrid` on each, its step
# within −15 %…+5 % of the native engine's (contention slows it; fabric the native worst case
# does not count — unsaturated uplinks, NICs a node's devices do not all use — speeds it up).
# Slow (about a minute): ctest label `slow`, not run under the sanitizers.
set -u
pass=0 fail=0
for f in "$SRC"/scenarios/*.toml; do
  out=$("$HETSIM" simulate --engine simgrid --json "$f" 2>/dev/null) || { fail=$((fail + 1)); echo "FAIL: $f: $out" | head -5; continue; }
  if echo "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
e = j["engine"]
r = j["step_time_s"] / e["native_step_time_s"]
sys.exit(0 if e["engine"] == "simgrid" and 0.85 <= r <= 1.05 else 1)'; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL: $f: simgrid step off the native one"
  fi
done
echo "simgrid on bundled scenarios: $pass passed, $fail failed"
[ $fail -eq 0 ]
