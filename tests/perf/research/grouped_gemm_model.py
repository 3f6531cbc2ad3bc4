#!/usr/bin/env python3
"""Re-implementation of hetsim's gemm_compute_time (models/cost/compute.cpp) and the
forward GEMM op pricing (op_time_parts, OpKind::Gemm, forward branch), reading the device's
efficiency keys from models/catalog/nvidia.toml. Read-only; for research notes only."""
import math, re, sys, tomllib

import os
CATALOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "models", "catalog", "nvidia.toml")

def parse_dur(s):
    m = re.fullmatch(r"([0-9.]+)\s*(us|ms|s|ns)", s)
    v = float(m.group(1)); u = m.group(2)
    return v * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[u]

def parse_rate(s):
    m = re.fullmatch(r"([0-9.]+)\s*(TFLOPS|TB/s|GB/s)", s)
    v = float(m.group(1))
    return v * {"TFLOPS": 1e12, "TB/s": 1e12, "GB/s": 1e9}[m.group(2)]

def device(name):
    with open(CATALOG, "rb") as f:
        cat = tomllib.load(f)
    d = next(x for x in cat["device"] if x["name"] == name)
    e = d["efficiency"]
    return {
        "peak": {k: parse_rate(v) for k, v in d["peak"].items()},
        "bw": parse_rate(d["memory_bandwidth"]),
        "gemm": e["gemm"], "gemm_fp8": e.get("gemm_fp8", 0.0),
        "sms": e["sms"], "tile_m": e["tile_m"], "tile_n": e["tile_n"],
        "tile_overhead": parse_dur(e["tile_overhead"]),
        "memory": e["memory"], "launch": parse_dur(e["launch_overhead"]),
    }

def gemm_compute_time(dev, peak, m, n, k, batch=1, main_loop=0.0, tile_overhead=None,
                      tile_m=None, tile_n=None):
    g = main_loop if main_loop > 0 else dev["gemm"]
    tm = tile_m or dev["tile_m"]; tn = tile_n or dev["tile_n"]
    to = dev["tile_overhead"] if tile_overhead is None else tile_overhead
    m = max(1.0, math.ceil(m)); n = max(1.0, math.ceil(n)); k = max(1.0, math.ceil(k))
    batch = max(1.0, math.ceil(batch))
    sms = dev["sms"]
    rate_sm = peak * g / sms
    tiles = math.ceil(m / tm) * math.ceil(n / tn) * batch
    bw = dev["bw"] * dev["memory"]
    best = math.inf
    split = 1
    while split <= 16:
        if split > 1 and (tiles * split / 2 >= sms or k / split < 128):
            break
        sl = math.ceil(k / split)
        waves = math.ceil(tiles * split / sms)
        t = waves * (2.0 * tm * tn * sl / rate_sm + to)
        if split > 1:
            t += 2.0 * split * m * n * batch * 4 / bw
        best = min(best, t)
        split *= 2
    return best

def fwd_op_time(dev, dtype, m, n, k, groups, grouped=True, launch=True, **kw):
    """Forward pass of a hetsim Gemm op: max(compute, memory) (+ launch), grouped or loop."""
    peak = dev["peak"][dtype]
    ml = dev["gemm_fp8"] if (dtype == "fp8" and dev["gemm_fp8"] > 0) else dev["gemm"]
    ge = 1 if dtype == "fp8" else 2
    bw = dev["bw"] * dev["memory"]
    batch = groups if grouped else 1
    repeat = 1 if grouped else groups
    comp = gemm_compute_time(dev, peak, m, n, k, batch, ml, **kw)
    mem = (m * k + k * n + m * n) * ge * batch / bw
    return (max(comp, mem) + (dev["launch"] if launch else 0)) * repeat, comp * repeat

def tflops(m, n, k, groups, t):
    return 2 * m * n * k * groups / t / 1e12

if __name__ == "__main__":
    h100 = device("h100-sxm5")
    # self-check against `hetsim estimate --ops` (qwen3-30b-a3b, EP 8, fp8): expert_up fwd
    # 2048 rows x 1536 x 2048 in 16 groups -> 0.190 ms, 1084.9 TF/s; expert_down 2048 x 2048 x 768
    for name, (m, n, k) in {"expert_up": (2048, 1536, 2048), "expert_down": (2048, 2048, 768)}.items():
        t, c = fwd_op_time(h100, "fp8", m, n, k, 16)
        print(name, f"{t*1e3:.3f} ms", f"{tflops(m, n, k, 16, t):.1f} TF/s")
