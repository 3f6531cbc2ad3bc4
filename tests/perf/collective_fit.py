#!/usr/bin/env python3
"""The all-reduce cost of one 8-GPU node, t(S) = a + 2(n-1)/n · S / B, fitted through two points of
published all-reduce sweeps (docs/microbenchmarks.md §2a: 16 MB and 8 GB; NCCL's small-message
protocols make smaller sizes faster than this line): B is the plateau bus bandwidth, and
a − call_latency spread over the ring's 2(n−1) steps is the per-hop latency the catalogue uses.
Usage: python3 tests/perf/collective_fit.py"""
SWEEPS = {  # name: {size bytes: busbw GB/s}
    "8x A100 80GB NVSwitch (Azure ND A100 v4)": {16e6: 109.22, 64e6: 166.63, 256e6: 213.87, 1e9: 228.10, 8e9: 231.58},
    "8x H100 NVLS (Azure ND H100 v5)": {16e6: 234.45, 64e6: 361.78, 256e6: 423.38, 1e9: 466.35, 8e9: 478.87},
    "8x MI300X RCCL (Azure ND MI300X v5 fork)": {16e6: 171.46, 64e6: 266.34, 256e6: 302.80, 1e9: 313.92, 8e9: 316.82},
}
N, CALL = 8, 8.4e-6  # ranks; NCCL's base latency per call (ring, Simple)
f = 2 * (N - 1) / N
for name, pts in SWEEPS.items():
    t = {s: s * f / (bw * 1e9) for s, bw in pts.items()}
    slope = (t[8e9] - t[16e6]) / (8e9 - 16e6)
    a = t[16e6] - 16e6 * slope
    B = f / slope
    hop = (a - CALL) / (2 * (N - 1))
    print(f"{name}: plateau {B / 1e9:.0f} GB/s, a = {a * 1e6:.0f} us -> per-hop latency {hop * 1e6:.1f} us")
    for s, bw in pts.items():
        model = s * f / (a + s * slope) / 1e9
        print(f"  {s / 1e6:7.0f} MB: measured {bw:6.1f} GB/s, fitted {model:6.1f} ({100 * (model / bw - 1):+.0f} %)")
