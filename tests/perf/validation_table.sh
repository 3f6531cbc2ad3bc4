#!/usr/bin/env bash
# Prints the markdown table of docs/validation.md: hetsim's estimate of every published run in
# scenarios/validation/ beside its measured step time. Usage (from the repository root):
#   tests/perf/validation_table.sh build/release/bin/hetsim
set -euo pipefail
hetsim=${1:-build/release/bin/hetsim}
echo "| run | devices | plan | measured step (s) | predicted step (s) | error | predicted TFLOP/s/device | published TFLOP/s/device | predicted MFU |"
echo "|---|---|---|---|---|---|---|---|---|"
for f in scenarios/validation/*.toml; do
  # A plan that does not fit still prints its estimate (exit 3); it is marked in the table.
  { "$hetsim" estimate --json "$f" 2>/dev/null || true; } | python3 -c '
import json, sys
j = json.load(sys.stdin)
r = j["reference"]
pub = "%.1f" % r["tflops_per_device"] if r["tflops_per_device"] else "–"
n = sum(d["count"] for d in j["devices"])
fit = "" if j["fits"] else " (does not fit)"
print("| %s%s | %d | %s | %.2f | %.2f | %+.1f %% | %.1f | %s | %.1f %% |" % (j["scenario"], fit, n, j["plan"].split(";")[0].replace("|", "/"),
      r["step_time_s"], j["step_time_s"], 100 * r["step_time_error"], j["tflops_per_device"], pub, 100 * j["mfu"]))'
done
