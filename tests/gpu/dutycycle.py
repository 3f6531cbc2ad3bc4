#!/usr/bin/env python3
"""How fast a power-capped GPU runs GEMMs when they share the step with memory-bound kernels.

A training step interleaves tensor-core GEMMs (high power) with memory-bound kernels (lower
power). Under a power cap the clocks follow the average, so the GEMM rate depends on the mix.
This runs, for each pattern, 8192×8192×8192 bf16 GEMMs (random operands, 4 sets rotating)
alternating with J device-to-device copies of 1 GiB, for SECONDS each; CUDA events time every
GEMM group and every copy group; NVML (read-only) gives clocks and power. Per pattern, from the
second second on: the GEMM TFLOP/s, the copy TB/s, the GEMM share of the time, SM clock, power.

    python3 tests/gpu/dutycycle.py OUT_DIR [SECONDS]

Writes OUT_DIR/dutycycle.jsonl and prints a table."""
import json, os, statistics, sys, time
import torch

out = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
secs = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
try:
    import pynvml
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
except Exception as e:
    print("NVML unavailable:", e)
    h = None


def nvml():
    if h is None:
        return {}
    try:
        return {"sm_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000,
                "throttle": pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)}
    except Exception as e:
        return {"nvml_error": str(e)}


d = 8192
A = [torch.randn(d, d, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
B = [torch.randn(d, d, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
C = [torch.empty(d, d, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
src = torch.randn(512 << 20, device="cuda", dtype=torch.bfloat16)  # 1 GiB
dst = torch.empty_like(src)
gemm_flops = 2.0 * d ** 3
copy_bytes = 2.0 * src.numel() * 2  # read + written
log = open(os.path.join(out, "dutycycle.jsonl"), "w")
print(f"{'pattern':22s} {'GEMM TFLOP/s':>12s} {'copy TB/s':>10s} {'GEMM share':>10s} {'SM MHz':>7s} {'W':>5s}")
# (GEMMs, copies) per round; (0, 1): copies alone.
for gemms, copies in ((1, 0), (2, 1), (1, 1), (1, 2), (1, 4), (1, 8), (0, 1)):
    torch.cuda.synchronize()
    time.sleep(1.0)  # let the clocks recover between patterns
    t0 = time.perf_counter()
    g_ms, c_ms, readings = [], [], []
    i = 0
    while time.perf_counter() - t0 < secs:
        evs = []
        for _ in range(8):  # rounds per sync
            e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
            e[0].record()
            for _ in range(gemms):
                torch.matmul(A[i % 4], B[i % 4], out=C[i % 4])
                i += 1
            e[1].record()
            for _ in range(copies):
                dst.copy_(src)
            e[2].record()
            evs.append(e)
        evs[-1][2].synchronize()
        now = time.perf_counter() - t0
        if now > 1.0:  # steady state only
            for e in evs:
                g_ms.append(e[0].elapsed_time(e[1]))
                c_ms.append(e[1].elapsed_time(e[2]))
            readings.append(nvml())
    G, Cc = sum(g_ms), sum(c_ms)
    rec = {"gemms": gemms, "copies": copies, "seconds": secs,
           "gemm_tflops": gemms * len(g_ms) * gemm_flops / (G / 1e3) / 1e12 if gemms and G > 0 else None,
           "copy_tbs": copies * len(c_ms) * copy_bytes / (Cc / 1e3) / 1e12 if copies and Cc > 0 else None,
           "gemm_share": G / (G + Cc) if G + Cc > 0 else None,
           "sm_mhz": statistics.median(r["sm_mhz"] for r in readings) if readings and "sm_mhz" in readings[0] else None,
           "power_w": statistics.median(r["power_w"] for r in readings) if readings and "power_w" in readings[0] else None,
           "throttle": sorted({r.get("throttle") for r in readings if "throttle" in r})}
    log.write(json.dumps(rec) + "\n")
    log.flush()
    fmt = lambda x, f: (f % x) if x is not None else "-"
    print(f"{gemms} GEMM + {copies} copy{'':10s} {fmt(rec['gemm_tflops'], '%12.1f')} {fmt(rec['copy_tbs'], '%10.2f')} "
          f"{fmt(rec['gemm_share'], '%10.2f')} {fmt(rec['sm_mhz'], '%7.0f')} {fmt(rec['power_w'], '%5.0f')}")
log.close()
