#!/usr/bin/env python3
"""Sustained bf16 GEMM throughput over time, with the GPU's clocks, power and throttle reasons
(NVML, read-only), to tell a GEMM's burst rate from the rate a training step sustains.

    python3 tests/gpu/sustained.py OUT_DIR [SECONDS]

Runs 8192×8192×8192 bf16 products back to back (rotating among 4 operand sets) for SECONDS
(default 12), and every 0.5 s writes the throughput of that half second and NVML's readings to
OUT_DIR/sustained.jsonl; prints a short table."""
import json, os, sys, time
import torch

out = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
secs = float(sys.argv[2]) if len(sys.argv) > 2 else 12.0
try:
    import pynvml
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
except Exception as e:  # keep the throughput without the readings
    print("NVML unavailable:", e)
    h = None


def nvml():
    if h is None:
        return {}
    r = {}
    for key, fn in (("sm_mhz", lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)),
                    ("mem_mhz", lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)),
                    ("power_w", lambda: pynvml.nvmlDeviceGetPowerUsage(h) / 1000),
                    ("power_limit_w", lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000),
                    ("temp_c", lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)),
                    ("throttle", lambda: hex(pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)))):
        try:
            r[key] = fn()
        except Exception as e:
            r[key] = f"n/a ({type(e).__name__})"
    return r


d = 8192
A = [torch.randn(d, d, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
B = [torch.randn(d, d, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
C = [torch.empty(d, d, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
flops = 2.0 * d ** 3
log = open(os.path.join(out, "sustained.jsonl"), "w")
print("idle:", nvml())
log.write(json.dumps({"t": -1, **nvml()}) + "\n")
torch.cuda.synchronize()
t0 = time.perf_counter()
i = 0
while time.perf_counter() - t0 < secs:
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    n = 0
    while True:
        for _ in range(20):
            torch.matmul(A[i % 4], B[i % 4], out=C[i % 4])
            i += 1
            n += 1
        e1.record()
        e1.synchronize()
        if e0.elapsed_time(e1) > 500:
            break
    tf = flops * n / (e0.elapsed_time(e1) / 1e3) / 1e12
    rec = {"t": round(time.perf_counter() - t0, 2), "tflops": round(tf, 1), **nvml()}
    log.write(json.dumps(rec) + "\n")
    print(rec)
log.close()
