#!/usr/bin/env bash
# Prints the markdown table of docs/validation.md: hetsim's estimate of every published run in
# scenarios/validation/ beside its measured step time. Usage (from the repository root):
#   tests/perf/validation_table.sh build/release/bin/hetsim
set -euo pipefail
hetsim=${1:-build/release/bin/hetsim}
echo "| run | devices | plan | measured step (s) | predicted step (s) | error | predicted TFLOP/s/device | published TFLOP/s/device | predicted MFU |"
echo "|---|---|---|---|---|---|---|---|---|"
for f in scenarios/validation/*.toml; do
  grep -q "^step_time_s" "$f" || continue  # memory-only runs: see the memory table
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

# Peak memory where the source measured it, as the source measured it (docs/validation.md).
echo
echo "| run | measured peak per device | kind | predicted | error |"
echo "|---|---|---|---|---|"
for f in scenarios/validation/*.toml; do
  grep -q "^peak_memory" "$f" || continue
  { "$hetsim" estimate --json "$f" 2>/dev/null || true; } | python3 -c '
import json, sys
j = json.load(sys.stdin); r = j["reference"]; G = 2.0 ** 30
print("| %s | %.2f GiB | %s | %.2f GiB | %+.1f %% |" % (j["scenario"], r["peak_memory_bytes"] / G, r["peak_memory_kind"],
      r["predicted_peak_memory_bytes"] / G, 100 * r["peak_memory_error"]))'
done

# Where the predicted step goes, per run (the sources publish no such split, except the per-layer
# timings of Korthikanti et al. 2022, Table 4, printed after this table).
echo
echo "| run | compute | recompute | tp comm | pp comm | bubble | dp comm | optimizer |"
echo "|---|---|---|---|---|---|---|---|"
for f in scenarios/validation/*.toml; do
  grep -q "^step_time_s" "$f" || continue
  { "$hetsim" estimate --json "$f" 2>/dev/null || true; } | python3 -c '
import json, sys
j = json.load(sys.stdin)
b = j["step_breakdown_s"]; t = j["step_time_s"]
print("| %s | %s |" % (j["scenario"], " | ".join("%.0f %%" % (100 * b[k] / t) for k in
      ("compute", "recompute", "tp comm", "pp comm", "pipeline bubble", "dp comm", "optimizer"))))'
done
echo
echo "Korthikanti et al. 2022 Table 4, 22B, one layer (ms): published forward / backward (backward includes the recompute) beside predicted (forward + its exposed TP collectives / backward + recompute + theirs):"
for run in "korthikanti-22b-full 7.7 19.5" "korthikanti-22b-selective-sp 7.2 13.1"; do
  set -- $run
  "$hetsim" estimate --json "scenarios/validation/$1.toml" | python3 -c '
import json, sys
j = json.load(sys.stdin); st = j["stages"][0]; L = st["layers"]; p = st["per_micro_batch_s"]
tp = st["tp_comm_by_pass_s"]
f, b, r = (1e3 * p[k] / L for k in ("forward", "backward", "recompute"))
pf = f + 1e3 * tp["forward"] / L; pb = b + r + 1e3 * (tp["backward"] + tp["recompute"]) / L
print("- %s: published %s / %s, predicted %.1f / %.1f" % (sys.argv[1], sys.argv[2], sys.argv[3], pf, pb))' "$1" "$2" "$3"
done
