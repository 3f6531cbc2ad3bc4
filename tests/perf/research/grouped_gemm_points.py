#!/usr/bin/env python3
"""Published grouped-GEMM measurements vs hetsim's tile model (h100-sxm5 keys)."""
import math, sys
sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from grouped_gemm_model import device, gemm_compute_time, fwd_op_time, tflops

h = device("h100-sxm5")
bw = h["bw"] * h["memory"]

def model(dtype, m, n, k, g, ragged=None, **kw):
    """Kernel time (max(compute, memory), no launch gap) as hetsim prices a grouped op of g
    groups of m rows; with `ragged` (list of per-group rows) also the same tile rules applied
    to each group's own rows (tiles pooled, as hetsim does for uniform groups)."""
    t, _ = fwd_op_time(h, dtype, m, n, k, g, grouped=True, launch=False, **kw)
    return t

def ragged_model(dtype, ms, n, k, **kw):
    peak = h["peak"][dtype]
    ml = h["gemm_fp8"] if dtype == "fp8" else h["gemm"]
    # pool the tiles of all groups: sum of per-group tile counts; each tile runs full k
    tm, tn = h["tile_m"], h["tile_n"]
    tiles = sum(math.ceil(m / tm) for m in ms) * math.ceil(n / tn)
    rate_sm = peak * ml / h["sms"]
    waves = math.ceil(tiles / h["sms"])
    return waves * (2.0 * tm * tn * k / rate_sm + h["tile_overhead"])

rows = []
def add(src, gpu, dtype, g, m, n, k, meas, note="", ragged=None):
    flops = 2 * m * n * k * g if ragged is None else 2 * sum(ragged) * n * k
    if ragged is None:
        t = model(dtype, m, n, k, g)
    else:
        t_uniform = model(dtype, sum(ragged) / g, n, k, g)
        t = ragged_model(dtype, ragged, n, k)
        note += f" [uniform-mean model {flops/t_uniform/1e12:.0f}]"
    mod = flops / t / 1e12
    rows.append((src, gpu, dtype, g, m if ragged is None else f"{sum(ragged)/g:.0f} (ragged)", n, k, meas, mod, mod / meas, t * 1e6, note))

# A. DeepGEMM README (initial release), H800, FP8 1x128 block scaling
for g, m, n, k, v, lay in [(4, 8192, 4096, 7168, 1297, "contig"), (4, 8192, 7168, 2048, 1099, "contig"),
                           (8, 4096, 4096, 7168, 1288, "contig"), (8, 4096, 7168, 2048, 1093, "contig"),
                           (1, 1024, 4096, 7168, 1233, "masked"), (1, 1024, 7168, 2048, 925, "masked"),
                           (2, 512, 4096, 7168, 1040, "masked"), (2, 512, 7168, 2048, 916, "masked"),
                           (4, 256, 4096, 7168, 932, "masked"), (4, 256, 7168, 2048, 815, "masked"),
                           (1, 128, 4096, 7168, 533, "dense"), (1, 128, 7168, 2048, 510, "dense"),
                           (1, 128, 2112, 7168, 352, "dense"), (1, 64, 4096, 7168, 287, "dense"),
                           (1, 64, 7168, 2048, 295, "dense")]:
    add("DeepGEMM README " + lay, "H800", "fp8", g, m, n, k, v)
# B. DeepGEMM PR #74 (128x160 block tiles), H800
add("DeepGEMM PR#74 contig (opt)", "H800", "fp8", 4, 8192, 4096, 7168, 1381)
add("DeepGEMM PR#74 contig (opt)", "H800", "fp8", 4, 8192, 7168, 2048, 1262)
# F. DeepGEMM PR #95 k-grouped wgrad (output m x n per group, reduction over the group's tokens)
for g, m, n, k, v, hv in [(4, 7168, 4096, 4096, 939, 813), (4, 2048, 7168, 4096, 900, 814),
                          (4, 7168, 4096, 8192, 1044, 858), (4, 2048, 7168, 8192, 1033, 873),
                          (8, 7168, 4096, 4096, 942, 816)]:
    add("DeepGEMM PR#95 wgrad", "H800", "fp8", g, m, n, k, v)
    add("DeepGEMM #107 wgrad (78d8362)", "H200", "fp8", g, m, n, k, hv)
# C. TE PR #2045, H100 BF16 (g, m, n, k)
for g, m, n, k, vals in [(8, 4096, 768, 2048, [("TE2.2 multi-stream", 508.77), ("CUTLASS v1", 568.63), ("TE2.7 multi-stream", 627.903), ("TE2.7 CUTLASS", 650.574)]),
                         (16, 2048, 768, 2048, [("TE2.2 multi-stream", 398.81), ("CUTLASS v1", 534.75), ("TE2.7 multi-stream", 553.945), ("TE2.7 CUTLASS", 636.927)])]:
    for lab, v in vals:
        add("TE PR#2045 " + lab, "H100", "bf16", g, m, n, k, v)
# D. torchao PR #2490, H100: M=8192 total rows, ragged offsets, E=16
offs1 = [272, 832, 1744, 2288, 2768, 3056, 4160, 4352, 4544, 4800, 5056, 5360, 6432, 7760, 7872, 8192]
offs2 = [464, 1008, 1664, 2608, 2912, 3296, 3584, 3968, 4960, 5024, 5232, 5952, 7440, 7760, 7984, 8192]
r1 = [b - a for a, b in zip([0] + offs1[:-1], offs1)]
r2 = [b - a for a, b in zip([0] + offs2[:-1], offs2)]
fl = 2 * 8192 * 5120 * 8192
add("torchao PR#2490 torch._grouped_mm", "H100", "bf16", 16, 0, 8192, 5120, fl / 1.31e-3 / 1e12, "(K5120,N8192)", ragged=r1)
add("torchao PR#2490 fp8 rowwise _scaled_grouped_mm", "H100", "fp8", 16, 0, 8192, 5120, fl / 8.85e-4 / 1e12, "(K5120,N8192)", ragged=r1)
add("torchao PR#2490 torch._grouped_mm", "H100", "bf16", 16, 0, 5120, 8192, fl / 1.26e-3 / 1e12, "(K8192,N5120)", ragged=r2)
# E. tgale96/grouped_gemm PR #37, H100, Qwen3-30B-A3B up_proj, 128 experts, K=2048, N=1536, 65536 tokens
for m, lab in [(512, "65536 rows total"), (4096, "65536 tokens x top-8")]:
    for name, v in [("cuBLAS loop", 129.5), ("CUTLASS SM90 coop", 160.5)]:
        add(f"grouped_gemm PR#37 {name}", "H100", "bf16", 128, m, 1536, 2048, v, f"if {lab}")

print(f"{'source':44s} {'gpu':5s} {'dt':4s} {'g':>3s} {'m/group':>14s} {'n':>5s} {'k':>5s} {'meas':>7s} {'model':>7s} {'mod/meas':>8s} {'model us':>8s}  note")
for r in rows:
    print(f"{r[0]:44s} {r[1]:5s} {r[2]:4s} {r[3]:3d} {str(r[4]):>14s} {r[5]:5d} {r[6]:5d} {r[7]:7.0f} {r[8]:7.0f} {r[9]:8.2f} {r[10]:8.1f}  {r[11]}")
