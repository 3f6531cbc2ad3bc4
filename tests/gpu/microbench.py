#!/usr/bin/env python3
"""Microbenchmarks of one NVIDIA GPU through PyTorch, for the cost model's efficiencies.

Measures, on the GPU it runs on (the device tool's H200 in practice):
  gemm       bf16 GEMMs (torch.matmul → cuBLAS/cuBLASLt, fp32 accumulation) at the per-rank shapes
             of real transformer layers under tensor parallelism (forward, data gradient and weight
             gradient of QKV, attention output, FFN up and down), and square shapes;
  attention  causal and non-causal fused attention, forward and forward+backward, through PyTorch
             SDPA's FlashAttention-2 and cuDNN back ends, head dims 64 and 128;
  memory     a device-to-device copy and an elementwise pass;
  launch     the time per tiny kernel issued eagerly from Python and replayed from a CUDA graph.

Timing: CUDA events around a batch of calls after warm-up, the median of several batches; inputs
rotate among buffer sets so that no measurement reads from L2 alone; random inputs (never zeros).
Writes JSON lines to OUT_DIR/microbench.jsonl and a short table to stdout.

    python3 tests/gpu/microbench.py OUT_DIR [--quick]
"""
import json
import math
import os
import statistics
import sys
import time

import torch

OUT = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "/tmp/hetsim-gpu")
QUICK = "--quick" in sys.argv
os.makedirs(OUT, exist_ok=True)
LOG = open(os.path.join(OUT, "microbench.jsonl"), "w")
dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def emit(rec):
    LOG.write(json.dumps(rec) + "\n")
    LOG.flush()


def timed(fn, calls, batches=5, warm=3):
    """Median seconds per call of fn(i) over `batches` batches of `calls` calls each."""
    for i in range(warm):
        fn(i)
    torch.cuda.synchronize()
    out = []
    for b in range(batches):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for i in range(calls):
            fn(b * calls + i)
        e1.record()
        e1.synchronize()
        out.append(e0.elapsed_time(e1) / 1e3 / calls)
    return statistics.median(out), min(out), max(out)


props = torch.cuda.get_device_properties(0)
emit({"kind": "device", "name": props.name, "sms": props.multi_processor_count,
      "memory_bytes": props.total_memory, "torch": torch.__version__, "cuda": torch.version.cuda,
      "cudnn": torch.backends.cudnn.version()})
print(f"device: {props.name}, {props.multi_processor_count} SMs, {props.total_memory / 2**30:.1f} GiB, "
      f"torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}")

# ---- memory ---------------------------------------------------------------------------------
try:
    n = 2 * 2**30 // 2  # 2 GiB of bf16
    a = torch.randn(n, device=dev, dtype=torch.bfloat16)
    b = torch.empty_like(a)
    t, lo, hi = timed(lambda i: b.copy_(a), 10)
    emit({"kind": "copy", "bytes_moved": 2 * a.numel() * 2, "s": t, "s_min": lo, "s_max": hi})
    print(f"copy d2d 2 GiB: {2 * a.numel() * 2 / t / 1e12:.2f} TB/s (read + written)")
    t, lo, hi = timed(lambda i: torch.mul(a, 0.999, out=b), 10)
    emit({"kind": "scale", "bytes_moved": 2 * a.numel() * 2, "s": t, "s_min": lo, "s_max": hi})
    print(f"elementwise x*c 2 GiB: {2 * a.numel() * 2 / t / 1e12:.2f} TB/s")
    del a, b
except Exception as e:  # keep the other sections
    print("memory: FAILED", e)
    emit({"kind": "error", "section": "memory", "what": str(e)})

# ---- launch ---------------------------------------------------------------------------------
try:
    x = torch.randn(1024, device=dev)
    y = torch.empty_like(x)
    t, _, _ = timed(lambda i: torch.mul(x, 1.0001, out=y), 2000, batches=5)
    emit({"kind": "launch_eager", "s": t})
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            torch.mul(x, 1.0001, out=y)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        for _ in range(1000):
            torch.mul(x, 1.0001, out=y)
    tg, _, _ = timed(lambda i: g.replay(), 5, batches=5)
    emit({"kind": "launch_graph", "s": tg / 1000})
    print(f"tiny kernel: {t * 1e6:.2f} us eager from Python, {tg / 1000 * 1e6:.2f} us per kernel in a CUDA graph")
except Exception as e:
    print("launch: FAILED", e)
    emit({"kind": "error", "section": "launch", "what": str(e)})

# ---- GEMM -----------------------------------------------------------------------------------
# (name, hidden, ffn, heads, kv_heads, tokens per micro-batch)
MODELS = [
    ("gpt2-1.2b", 1536, 6144, 16, 16, 8 * 1024),  # Megatron-LM v1 (Shoeybi et al. 2019), batch 8 × 1024
    ("gpt-8.3b", 3072, 12288, 32, 32, 8 * 1024),
    ("llama3-8b", 4096, 14336, 32, 8, 8192),
    ("llama3-70b", 8192, 28672, 64, 8, 4096),
]
TPS = [1, 8] if QUICK else [1, 2, 4, 8]


def layer_gemms(h, f, heads, kv, t):
    hd = h // heads
    qkv = (heads + 2 * kv) * hd
    return [("qkv", qkv // t, h), ("out", h, h // t), ("up", f // t, h), ("down", h, f // t)]


shapes = []
for name, h, f, heads, kv, tokens in MODELS:
    for t in TPS:
        for op, n, k in layer_gemms(h, f, heads, kv, t):
            shapes.append((f"{name}/tp{t}/{op}/fwd", tokens, n, k))
            shapes.append((f"{name}/tp{t}/{op}/dgrad", tokens, k, n))
            shapes.append((f"{name}/tp{t}/{op}/wgrad", k, n, tokens))
for d in ([1024, 4096, 8192] if QUICK else [512, 1024, 2048, 4096, 8192, 16384]):
    shapes.append((f"square/{d}", d, d, d))

print(f"{'gemm (bf16)':44s} {'M':>6s} {'N':>6s} {'K':>6s} {'TFLOP/s':>8s}")
for label, m, n, k in shapes:
    try:
        flops = 2.0 * m * n * k
        one = (m * k + k * n + m * n) * 2
        sets = max(1, min(8, math.ceil(400e6 / one)))  # > 6× the 60 MB L2 in rotation
        A = [torch.randn(m, k, device=dev, dtype=torch.bfloat16) for _ in range(sets)]
        B = [torch.randn(k, n, device=dev, dtype=torch.bfloat16) for _ in range(sets)]
        C = [torch.empty(m, n, device=dev, dtype=torch.bfloat16) for _ in range(sets)]
        calls = max(3, min(200, int(0.02 / max(flops / 700e12, 3e-6))))
        t, lo, hi = timed(lambda i: torch.matmul(A[i % sets], B[i % sets], out=C[i % sets]), calls)
        emit({"kind": "gemm", "label": label, "m": m, "n": n, "k": k, "dtype": "bf16", "s": t, "s_min": lo, "s_max": hi,
              "tflops": flops / t / 1e12})
        print(f"{label:44s} {m:6d} {n:6d} {k:6d} {flops / t / 1e12:8.1f}")
        del A, B, C
    except Exception as e:
        print(label, "FAILED", e)
        emit({"kind": "error", "section": "gemm", "label": label, "what": str(e)})

# fp32 without TF32 (the calibration's reference) and fp8 where torch has it
try:
    d = 8192
    A, B = torch.randn(d, d, device=dev), torch.randn(d, d, device=dev)
    C = torch.empty(d, d, device=dev)
    t, lo, hi = timed(lambda i: torch.matmul(A, B, out=C), 5)
    emit({"kind": "gemm", "label": "square-fp32/8192", "m": d, "n": d, "k": d, "dtype": "fp32", "s": t, "tflops": 2 * d**3 / t / 1e12})
    print(f"{'square-fp32/8192 (no TF32)':44s} {d:6d} {d:6d} {d:6d} {2 * d**3 / t / 1e12:8.1f}")
    del A, B, C
except Exception as e:
    print("fp32 gemm FAILED", e)

# ---- attention ------------------------------------------------------------------------------
try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    backends = [("fa2", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]
    seqs = [2048, 8192] if QUICK else [512, 1024, 2048, 4096, 8192, 16384]
    print(f"{'attention (bf16, 16k tokens, hidden 2048)':44s} {'TFLOP/s':>8s}")
    for hd in (128, 64):
        heads = 2048 // hd
        for seq in seqs:
            batch = max(1, 16384 // seq)
            for causal in (True, False):
                q, k, v = (torch.randn(batch, heads, seq, hd, device=dev, dtype=torch.bfloat16, requires_grad=True)
                           for _ in range(3))
                do = torch.randn(batch, heads, seq, hd, device=dev, dtype=torch.bfloat16)
                fwd_flops = 4.0 * batch * heads * seq * seq * hd * (0.5 if causal else 1.0)
                for bname, be in backends:
                    label = f"{bname}/hd{hd}/seq{seq}/{'causal' if causal else 'full'}"
                    try:
                        with sdpa_kernel([be]):
                            def fwd(i):
                                with torch.no_grad():
                                    F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                            def fwdbwd(i):
                                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                o.backward(do)

                            tf, _, _ = timed(fwd, 10)
                            tb, _, _ = timed(fwdbwd, 5)
                        rec = {"kind": "attention", "label": label, "backend": bname, "head_dim": hd, "heads": heads,
                               "seq": seq, "batch": batch, "causal": causal, "fwd_s": tf, "fwdbwd_s": tb,
                               "fwd_tflops": fwd_flops / tf / 1e12, "bwd_tflops": 2.5 * fwd_flops / max(tb - tf, 1e-9) / 1e12,
                               "fwdbwd_tflops": 3.5 * fwd_flops / tb / 1e12}
                        emit(rec)
                        print(f"{label:44s} fwd {rec['fwd_tflops']:6.1f} bwd {rec['bwd_tflops']:6.1f} "
                              f"fwd+bwd {rec['fwdbwd_tflops']:6.1f}")
                    except Exception as e:
                        print(label, "FAILED", str(e).splitlines()[0][:120])
                        emit({"kind": "error", "section": "attention", "label": label, "what": str(e)[:500]})
                    q.grad = k.grad = v.grad = None
                del q, k, v, do
except Exception as e:
    print("attention: FAILED", e)
    emit({"kind": "error", "section": "attention", "what": str(e)})

LOG.close()
print("microbench done")
