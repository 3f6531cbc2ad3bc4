#!/usr/bin/env python3
"""What a GEMM power-cap curve would do to the H100/H200 validation runs (docs/validation.md,
"Not a GEMM power cap"). The device machine's H200 ran GEMMs at a rate that falls as the GEMMs'
share of the busy time rises (docs/microbenchmarks.md §9c, tests/perf/data/h200/dutycycle.jsonl):
760 TFLOP/s at a share of 0.26 down to 656 at 1.0. The catalogue's main loop gives about 692
TFLOP/s at 8192³ (the tile model, 0.745 of 989.4 on 132 SMs), the curve's rate at a share of
0.65. For each run this reprices its GEMM time at rate(share)/692, share = the GEMMs' part of
one micro-batch's op time (`hetsim estimate --ops`), and prints the step error before and after:
a first-order check, nothing in the model uses it.

Usage: python3 tests/perf/power_share_check.py [build/ci/bin/hetsim]
"""
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CURVE = [(0.26, 760), (0.43, 726), (0.61, 697), (0.76, 677), (0.87, 666), (1.0, 656)]
REF = 692.0


def rate(u):
    if u <= CURVE[0][0]:
        return CURVE[0][1]
    for (a, ra), (b, rb) in zip(CURVE, CURVE[1:]):
        if u <= b:
            return ra + (rb - ra) * (u - a) / (b - a)
    return CURVE[-1][1]


def main():
    hetsim = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build/ci/bin/hetsim")
    files = sorted(glob.glob(os.path.join(ROOT, "scenarios/validation/*.toml")))
    for f in files:
        out = subprocess.run([hetsim, "estimate", "--json", f], capture_output=True, text=True).stdout
        if not out:
            print(f"{os.path.basename(f)}: no estimate (does it fit?)", file=sys.stderr)
            continue
        j = json.loads(out)
        if not any(d["device"].startswith(("h100", "h200")) for d in j.get("devices", [])):
            continue
        ops = subprocess.run([hetsim, "estimate", "--ops", f], capture_output=True, text=True).stdout
        gemm = total = 0.0
        mult = 1
        for line in ops.splitlines():
            m = re.match(r"\s*layer \(× (\d+)\)", line)
            if m:
                mult = int(m.group(1))
                continue
            if line.strip() in ("embedding", "head"):
                mult = 1
                continue
            m = re.match(r"\s*(\S+)\s+(\S+)\s+([\d.]+)\s+([\d.]+)", line)
            if m and not line.strip().startswith("="):
                t = (float(m.group(3)) + float(m.group(4))) * mult
                total += t
                if m.group(2) == "gemm":
                    gemm += t
        if total == 0:
            continue
        u = gemm / total
        k = rate(u) / REF
        b = j["step_breakdown_s"]
        compute = b["compute"] + b.get("recompute", 0)
        step = j["step_time_s"]
        new = step - compute * u * (1 - 1 / k)
        ref = j.get("reference", {}).get("step_time_s")
        if not ref:
            continue
        print(f"{f.split('/')[-1][:45]:45s} share {u:.2f}  rate ×{k:.3f}  error {100 * (step / ref - 1):+.1f} % -> {100 * (new / ref - 1):+.1f} %")


if __name__ == "__main__":
    main()
