#!/usr/bin/env python3
"""Gaudi 2's fused causal attention rate, from a published whole-model measurement
(docs/microbenchmarks.md §1d; the catalogue's gaudi2 `attention`).

NAVER-INTEL-Co-Lab/gaudi-perf `prefill/README.md` times the forward pass (prefill) of
Llama 3.1 70B in bf16 on 2, 4 and 8 Gaudi 2 (tensor parallel, DeepSpeed inference, SynapseAI
1.17.0) at batch 1 and sequence 1k-32k; `prefill/llama.py` runs it with Intel's FusedSDPA
(`use_flash_attention`, `flash_attention_causal_mask`, `flash_attention_fast_softmax`, bf16
softmax). Every term of a forward pass grows linearly with the sequence (GEMMs, norms, RoPE, the
tensor-parallel all-reduces) except attention's two batched matmuls, which grow with its square.
So the latency is fitted, per TP degree, as t(s) = c + a·s + b·s² (least squares on the relative
error) over s ≥ 2048 (at 1024 the TP 8 run is bound by something else: 152 ms, against 173 ms at
twice the work), and b is the attention's time per s²: 2·h·L causal FLOPs per s² (QKᵀ and PV, 2·s²·h per
layer of which a causal kernel runs half), shared by the TP ranks. Nothing of hetsim is used.

Usage: python3 tests/perf/gaudi_attention_fit.py
"""

PEAK_BF16 = 432e12  # Gaudi 2 (HL-225H) dense bf16, the catalogue's figure
HIDDEN, LAYERS = 8192, 80  # Llama 3.1 70B
FFN, KV_HEADS, HEAD_DIM, VOCAB = 28672, 8, 128, 128256
MIN_SEQ = 2048
# prefill/README.md (SynapseAI 1.17.0.495): sequence length -> mean latency (ms), per TP degree.
LATENCY_MS = {
    2: [(1024, 295), (2048, 599), (4096, 1256), (8192, 2659), (16384, 6080), (32768, 15999)],
    4: [(1024, 170), (2048, 308), (4096, 653), (8192, 1385), (16384, 3143), (32768, 8065)],
    8: [(1024, 152), (2048, 173), (4096, 350), (8192, 777), (16384, 1682), (32768, 4367)],
}


def solve(rows, ys):
    """Least squares by the normal equations (three unknowns; no numpy needed)."""
    n = len(rows[0])
    m = [[sum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
    v = [sum(r[i] * y for r, y in zip(rows, ys)) for i in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            f = m[j][i] / m[i][i]
            m[j] = [x - f * y for x, y in zip(m[j], m[i])]
            v[j] -= f * v[i]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (v[i] - sum(m[i][k] * x[k] for k in range(i + 1, n))) / m[i][i]
    return x


def main():
    causal_flops_per_s2 = 2 * HIDDEN * LAYERS
    # The linear layers' FLOPs per token (Q, K, V, O, the SwiGLU MLP, the output head), for the
    # cross-check of the linear term.
    per_layer = 2 * HIDDEN * HIDDEN + 2 * HIDDEN * KV_HEADS * HEAD_DIM + 3 * HIDDEN * FFN
    linear_flops_per_token = 2 * (LAYERS * per_layer + HIDDEN * VOCAB)
    rates = []
    print("tp  attention TFLOP/s per HPU  of bf16 peak  c (ms)  max |residual|  linear term, of peak")
    for tp, all_points in LATENCY_MS.items():
        points = [(s, t) for s, t in all_points if s >= MIN_SEQ]
        # Relative errors: each row divided by its own latency.
        rows = [[1 / t, s / t, s * s / t] for s, t in points]
        c, a, b = solve(rows, [1.0] * len(points))
        worst = max(abs((c + a * s + b * s * s) / t - 1) for s, t in points)
        rate = causal_flops_per_s2 / (b / 1000) / tp
        rates.append(rate)
        linear = linear_flops_per_token / (a / 1000) / tp
        print(f"{tp:2d}  {rate / 1e12:24.0f}  {rate / PEAK_BF16:12.3f}  {c:6.1f}  {100 * worst:12.1f} %"
              f"  {linear / PEAK_BF16:20.3f}")
    mean = sum(rates) / len(rates)
    print(f"mean {mean / 1e12:.0f} TFLOP/s = {mean / PEAK_BF16:.3f} of the bf16 peak (causal FLOPs, forward)")


if __name__ == "__main__":
    main()
