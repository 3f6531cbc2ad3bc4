#!/usr/bin/env python3
"""Candidate variants of the tile model on the published points (no fitting to validation runs)."""
import math, sys
sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from grouped_gemm_model import device, gemm_compute_time

h = device("h100-sxm5")
def comp(dtype, m, n, k, g, **kw):
    ml = h["gemm_fp8"] if dtype == "fp8" else h["gemm"]
    return gemm_compute_time(h, h["peak"][dtype], m, n, k, g, ml, **kw)
def byts(dtype, m, n, k, g):
    ge = 1 if dtype == "fp8" else 2
    return (m * k + k * n + m * n) * ge * g          # hetsim's forward byte count

pts = [  # (label, dtype, g, m, n, k, measured TFLOP/s)
 ("DG contig 4x8192 N4096 K7168", "fp8", 4, 8192, 4096, 7168, 1297),
 ("DG contig 4x8192 N7168 K2048", "fp8", 4, 8192, 7168, 2048, 1099),
 ("DG contig 8x4096 N4096 K7168", "fp8", 8, 4096, 4096, 7168, 1288),
 ("DG contig 8x4096 N7168 K2048", "fp8", 8, 4096, 7168, 2048, 1093),
 ("DG masked 1x1024 N4096 K7168", "fp8", 1, 1024, 4096, 7168, 1233),
 ("DG masked 1x1024 N7168 K2048", "fp8", 1, 1024, 7168, 2048, 925),
 ("DG masked 2x512 N4096 K7168", "fp8", 2, 512, 4096, 7168, 1040),
 ("DG masked 2x512 N7168 K2048", "fp8", 2, 512, 7168, 2048, 916),
 ("DG masked 4x256 N4096 K7168", "fp8", 4, 256, 4096, 7168, 932),
 ("DG masked 4x256 N7168 K2048", "fp8", 4, 256, 7168, 2048, 815),
 ("TE2.7 CUTLASS 8x4096 N768 K2048", "bf16", 8, 4096, 768, 2048, 650.6),
 ("TE2.7 CUTLASS 16x2048 N768 K2048", "bf16", 16, 2048, 768, 2048, 636.9),
 ("TE2.7 mstream 8x4096 N768 K2048", "bf16", 8, 4096, 768, 2048, 627.9),
 ("TE2.7 mstream 16x2048 N768 K2048", "bf16", 16, 2048, 768, 2048, 553.9),
]
BW_GEMM = 2.4e12  # (~) median achieved operand bandwidth of DeepGEMM's memory-bound M=64 dense rows (H800)
print(f"{'point':36s} {'meas':>6s} {'F0 cur':>7s} {'F1 c+m':>7s} {'F2 max,2.4TB/s':>14s} {'F3 128x128':>10s}   (model/measured)")
for lab, dt, g, m, n, k, v in pts:
    fl = 2 * g * m * n * k
    c = comp(dt, m, n, k, g); mb = byts(dt, m, n, k, g)
    m0 = mb / (h["bw"] * h["memory"])
    f0 = max(c, m0); f1 = c + m0; f2 = max(c, mb / BW_GEMM)
    f3 = max(comp(dt, m, n, k, g, tile_n=128), m0)
    r = lambda t: (fl / t / 1e12) / v
    print(f"{lab:36s} {v:6.0f} {r(f0):7.2f} {r(f1):7.2f} {r(f2):14.2f} {r(f3):10.2f}")
