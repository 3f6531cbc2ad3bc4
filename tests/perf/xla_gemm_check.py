#!/usr/bin/env python3
"""The GEMM tile model (models/cost/compute.cpp gemm_compute_time, with the memory roofline and one
launch gap) against XLA's default GEMM performance table (tests/perf/data/, extracted from
openxla/xla; b ∈ {1,2,4}, m, n, k ∈ {256 … 4096}, measured by XLA per architecture).
Usage: python3 tests/perf/xla_gemm_check.py [--shapes]   (summary per architecture and size class;
--shapes prints every b = 1 shape with min(m, n, k) ≥ 2048).
The catalogue figures below are copied from models/catalog/*.toml (main loop, SMs/CUs, tile,
per-tile overhead, triad bandwidth = memory_bandwidth × memory, launch_overhead)."""
import csv, math, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ARCH = {
    "sm_90 (H100 SXM: h100-sxm5)": ("xla_matmul_sm_90.csv",
        dict(peak=989e12, main=0.745, sms=132, tm=128, tn=256, t0=3e-6, mem=3.35e12 * 0.887, launch=2.5e-6)),
    "sm_100 (B200: b200)": ("xla_matmul_sm_100_B200.csv",
        dict(peak=2250e12, main=0.776, sms=148, tm=128, tn=256, t0=3e-6, mem=8.0e12 * 0.85, launch=2.5e-6)),
    "gfx942 (MI300X: mi300x)": ("xla_matmul_gfx942.csv",
        dict(peak=1307.4e12, main=0.481, sms=304, tm=128, tn=128, t0=2e-6, mem=5.3e12 * 0.774, launch=2.5e-6)),
}


def model_time(m, n, k, b, peak, main, sms, tm, tn, t0, mem, launch):
    rate = peak * main / sms
    tiles = math.ceil(m / tm) * math.ceil(n / tn) * b
    best = math.inf
    for split in (1, 2, 4, 8, 16):
        if split > 1 and (tiles * split / 2 >= sms or k / split < 128):
            break
        waves = math.ceil(tiles * split / sms)
        t = waves * (2 * tm * tn * math.ceil(k / split) / rate + t0)
        if split > 1:
            t += 2 * split * m * n * b * 4 / mem
        best = min(best, t)
    return max(best, (m * k + k * n + m * n) * 2 * b / mem) + launch


def main():
    shapes = "--shapes" in sys.argv
    for name, (fname, p) in ARCH.items():
        seen, rows = set(), []
        for r in csv.DictReader(open(os.path.join(HERE, "data", fname))):
            key = tuple(int(r[x]) for x in "bmnk")
            if r["dtype"] != "bf16xbf16->bf16" or key in seen:  # gfx942 lists 256³ twice: the first kept
                continue
            seen.add(key)
            b, m, n, k = key
            meas = float(r["flops_per_s"])
            rows.append((b, m, n, k, meas, 2 * m * n * k * b / model_time(m, n, k, b, **p)))
        print(f"{name}, bf16: model / measured − 1")
        for lo in (256, 1024, 2048, 4096):
            e = [pr / me - 1 for b, m, n, k, me, pr in rows if min(m, n, k) >= lo]
            print(f"  min(m, n, k) ≥ {lo:4d}: {len(e):3d} shapes, signed mean {100 * sum(e) / len(e):+6.1f} %, "
                  f"mean |error| {100 * sum(map(abs, e)) / len(e):5.1f} %")
        if shapes:
            for b, m, n, k, me, pr in rows:
                if b == 1 and min(m, n, k) >= 2048:
                    print(f"    {m}x{n}x{k}: measured {me / 1e12:6.0f} TFLOP/s, model {pr / 1e12:6.0f} ({100 * (pr / me - 1):+.0f} %)")


if __name__ == "__main__":
    main()
