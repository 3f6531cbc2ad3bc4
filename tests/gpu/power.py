#!/usr/bin/env python3
"""Power and clocks of one GPU under each kind of kernel a training step runs, held alone for a few
seconds: the inputs of a power-cap model (which clock a step's GEMMs get depends on what else the
step runs; docs/microbenchmarks.md §9c). NVML is only read.

Workloads, each for SECONDS after a 1 s rest: bf16 GEMMs 8192³ and 8192×14336×4096; fused
attention (SDPA FlashAttention-2 and cuDNN, causal, 16k tokens, hidden 2048, fwd+bwd); a large
elementwise pass (1 GiB bf16 x·c); a copy of 1 GiB; many small elementwise kernels (1 MiB each,
launch-bound); LayerNorm over 8192×4096 bf16; idle. Per workload: its rate (TFLOP/s or TB/s or
kernels/s), the median SM clock, power and the clock-event reasons seen.

    python3 tests/gpu/power.py OUT_DIR [SECONDS]

Writes OUT_DIR/power.jsonl and prints a table."""
import json, os, statistics, sys, time
import torch
import torch.nn.functional as F

out = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
secs = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
import pynvml
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)


def nvml():
    return (pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM), pynvml.nvmlDeviceGetPowerUsage(h) / 1000,
            pynvml.nvmlDeviceGetCurrentClocksEventReasons(h))


dev = "cuda"
bf = torch.bfloat16
work = {}

A = [torch.randn(8192, 8192, device=dev, dtype=bf) for _ in range(3)]
Cq = torch.empty(8192, 8192, device=dev, dtype=bf)
work["gemm 8192^3"] = (lambda i: torch.matmul(A[i % 3], A[(i + 1) % 3], out=Cq), 2.0 * 8192 ** 3, "TFLOP/s")
X = torch.randn(8192, 4096, device=dev, dtype=bf)
W = torch.randn(4096, 14336, device=dev, dtype=bf)
Y = torch.empty(8192, 14336, device=dev, dtype=bf)
work["gemm 8192x14336x4096"] = (lambda i: torch.matmul(X, W, out=Y), 2.0 * 8192 * 14336 * 4096, "TFLOP/s")
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(4, 16, 4096, 128, device=dev, dtype=bf, requires_grad=True) for _ in range(3))
do = torch.randn(4, 16, 4096, 128, device=dev, dtype=bf)
att_flops = 3.5 * 4.0 * 4 * 16 * 4096 ** 2 * 128 / 2


def attn(backend):
    def f(i):
        with sdpa_kernel([backend]):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o.backward(do)
        q.grad = k.grad = v.grad = None
    return f


work["attention fa2 fwd+bwd"] = (attn(SDPBackend.FLASH_ATTENTION), att_flops, "TFLOP/s")
work["attention cudnn fwd+bwd"] = (attn(SDPBackend.CUDNN_ATTENTION), att_flops, "TFLOP/s")
big = torch.randn(512 << 20, device=dev, dtype=bf)
big2 = torch.empty_like(big)
work["elementwise 1 GiB"] = (lambda i: torch.mul(big, 0.999, out=big2), 2.0 * big.numel() * 2, "TB/s")
work["copy 1 GiB"] = (lambda i: big2.copy_(big), 2.0 * big.numel() * 2, "TB/s")
small = torch.randn(512 << 10, device=dev, dtype=bf)
small2 = torch.empty_like(small)
work["small elementwise 1 MiB"] = (lambda i: torch.mul(small, 0.999, out=small2), 1.0, "kernels/s")
ln_x = torch.randn(8192, 4096, device=dev, dtype=bf)
ln = torch.nn.LayerNorm(4096, device=dev, dtype=bf)
work["layernorm 8192x4096"] = (lambda i: ln(ln_x), 2.0 * ln_x.numel() * 2, "TB/s")

log = open(os.path.join(out, "power.jsonl"), "w")
print(f"{'workload':28s} {'rate':>18s} {'SM MHz':>7s} {'W':>6s}  reasons")
for name, (fn, per_call, unit) in list(work.items()) + [("idle", (None, 0, ""))]:
    torch.cuda.synchronize()
    time.sleep(1.0)
    t0 = time.perf_counter()
    calls, readings, gpu_s, timed = 0, [], 0.0, 0
    while time.perf_counter() - t0 < secs:
        if fn is None:
            time.sleep(0.1)
        else:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            n = 0
            while True:
                for _ in range(10):
                    fn(calls)
                    calls += 1
                    n += 1
                e1.record()
                e1.synchronize()
                if e0.elapsed_time(e1) > 100:
                    break
            if time.perf_counter() - t0 > 1.0:  # steady state only
                gpu_s += e0.elapsed_time(e1) / 1e3
                timed += n
        if time.perf_counter() - t0 > 1.0:
            readings.append(nvml())
    rate = per_call * timed / gpu_s if gpu_s > 0 else 0.0
    if unit in ("TFLOP/s", "TB/s"):
        rate /= 1e12
    rec = {"workload": name, "rate": rate, "unit": unit, "sm_mhz": statistics.median(r[0] for r in readings),
           "power_w": statistics.median(r[1] for r in readings), "reasons": sorted({hex(r[2]) for r in readings})}
    log.write(json.dumps(rec) + "\n")
    log.flush()
    print(f"{name:28s} {rate:8.1f} {unit:9s} {rec['sm_mhz']:7.0f} {rec['power_w']:6.0f}  {','.join(rec['reasons'])}")
log.close()
