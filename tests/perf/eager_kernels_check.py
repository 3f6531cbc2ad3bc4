#!/usr/bin/env python3
"""The bandwidth PyTorch's non-vectorized eager kernels reach on the device machine's H200, from the
torch.profiler kernel sums of the three eager training steps tests/gpu/torch_step.py measured
(tests/perf/data/h200/torch_step/torch_step.jsonl; docs/microbenchmarks.md §9g). The catalogue's
`unvectorized_memory` of h200-sxm is the combined figure over its 4.8 TB/s peak.

Two kernel families, with the bytes each call moves worked out from the model's shapes:
- 16-bit -> fp32 casts ("unrolled_elementwise_kernel<direct_copy_kernel_cuda ...>", TensorIterator's
  dynamic-cast path): under autocast with fp32 parameters, per layer every weight gradient (bias
  included) and the two norm-input gradients; in the head the output weight's gradient, the final
  norm's input gradient and the logits' .float(); 2 bytes read + 4 written per element.
- strided or broadcast operands (llama3-8b-8l only: rotate-half RoPE on transposed heads and
  SwiGLU on the chunked halves of the fused gate+up output): the negations (q and k halves,
  forward and backward), the bf16 products (4 RoPE products on q and on k per layer, 2 SwiGLU
  gradient products), SiLU and its gradient.
Usage: python3 tests/perf/eager_kernels_check.py"""
import json, os

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data/h200/torch_step/torch_step.jsonl")
PEAK = 4.8e12


def kernel_time(run, *needles, exclude=()):
    """Seconds and calls of the kernels whose name contains every needle and no excluded one."""
    t = n = 0
    for s, name, calls in run["top_kernels"]:
        if all(k in name for k in needles) and not any(k in name for k in exclude):
            t += s
            n += calls
    return t, n


def cast_bytes(c):
    """Bytes of the 16-bit -> fp32 casts of one step (see the module's docstring)."""
    h, f, tok = c["hidden"], c["ffn"], c["seq"] * c["mbs"]
    hd = h // c["heads"]
    qkv = (c["heads"] + 2 * c["kv_heads"]) * hd  # columns of the fused projection
    up = (2 if c["act"] == "swiglu" else 1) * f
    weights = h * qkv + h * h + h * up + f * h
    if c["bias"]:
        weights += qkv + h + up + h
    per_layer = weights + 2 * tok * h
    head = c["vocab"] * h + tok * h + tok * c["vocab"]  # output weight, final norm input, logits
    return 6.0 * (c["layers"] * per_layer + head)


def strided_bytes(c):
    """Bytes of the strided/broadcast kernels of llama3-8b-8l's step: negations, products, SiLU."""
    h, f, tok, L = c["hidden"], c["ffn"], c["seq"] * c["mbs"], c["layers"]
    kv = c["kv_heads"] * (h // c["heads"])
    neg = 2 * (tok * h + tok * kv)                 # half of q and k, read + write, fwd and bwd
    rope_mul = 4 * 2 * 2 * (tok * h + tok * kv)    # 4 products each on q and k, read + write
    swiglu_mul = 2 * 3 * 2 * tok * f               # two gradient products, 3 tensors each
    silu = 2 * 2 * tok * f + 3 * 2 * tok * f       # SiLU (2 tensors), its gradient (3)
    return L * (neg + rope_mul + swiglu_mul), L * silu


def main():
    runs = [json.loads(l) for l in open(DATA)]
    tot_b = tot_t = 0.0
    print("16-bit -> fp32 casts (direct_copy, unrolled), from the step profiles:")
    for r in runs:
        t, n = kernel_time(r, "unrolled_elementwise_kernel", "direct_copy")
        b = cast_bytes(r["config"])
        tot_b += b
        tot_t += t
        print(f"  {r['name']:14s} {n:4d} calls  {b / 1e9:6.2f} GB in {t * 1e3:6.2f} ms = {b / t / 1e12:.2f} TB/s")
    llama = next(r for r in runs if r["name"] == "llama3-8b-8l")
    mul_neg_b, silu_b = strided_bytes(llama["config"])
    t_neg, _ = kernel_time(llama, "neg_kernel")
    t_mul, _ = kernel_time(llama, "gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFloat16")
    t_silu, _ = kernel_time(llama, "silu")
    print("strided or broadcast operands (llama3-8b-8l):")
    print(f"  negations + products {mul_neg_b / 1e9:6.2f} GB in {(t_neg + t_mul) * 1e3:6.2f} ms = "
          f"{mul_neg_b / (t_neg + t_mul) / 1e12:.2f} TB/s")
    print(f"  SiLU and its gradient {silu_b / 1e9:5.2f} GB in {t_silu * 1e3:6.2f} ms = {silu_b / t_silu / 1e12:.2f} TB/s")
    tot_b += mul_neg_b + silu_b
    tot_t += t_neg + t_mul + t_silu
    print(f"all: {tot_b / 1e9:.1f} GB in {tot_t * 1e3:.1f} ms = {tot_b / tot_t / 1e12:.2f} TB/s "
          f"= {tot_b / tot_t / PEAK:.3f} of the H200's {PEAK / 1e12:.1f} TB/s (catalogue unvectorized_memory)")


if __name__ == "__main__":
    main()
