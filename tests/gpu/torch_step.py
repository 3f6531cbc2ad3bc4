#!/usr/bin/env python3
"""Whole training steps of real model shapes in plain PyTorch on one GPU, timed and profiled, and
the matching hetsim scenario for each, so that hetsim's single-device prediction can be checked
against a measured step (tests/perf/torch_step_check.py compares them).

The model is written out here (no library): pre-norm decoder layers (LayerNorm or RMSNorm;
GELU MLP or SwiGLU; learned positions or RoPE; GQA), causal attention through PyTorch SDPA forced
to FlashAttention-2, an LM head and cross-entropy on fp32 logits. Training as most plain PyTorch
code does it: fp32 parameters, bf16 autocast, fused AdamW, one micro-batch per step. Each config:
3 warm-up steps, 10 timed steps (CUDA events; the median), then one step under torch.profiler
whose kernels are summed by class (gemm, attention, norm, loss, optimizer, other) together with
the GPU's busy fraction.

    python3 tests/gpu/torch_step.py OUT_DIR [--compile] [NAME ...]

--compile runs the model through torch.compile (Inductor fuses the memory-bound ops, as Megatron-LM
and Transformer Engine do by hand); the runs are named <name>-compiled and their scenarios say
fused_kernels = true.

Writes OUT_DIR/torch_step.jsonl, OUT_DIR/<name>.toml (the hetsim scenario) and prints a table."""
import json, math, os, statistics, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {
    # GPT-style (GELU, LayerNorm, learned positions, biases, tied embeddings): the shapes of a
    # ~1.3B GPT-3 XL (Brown et al. 2020 Table 2.1: 24 layers, d 2048, 16 heads).
    "gpt-1.3b": dict(layers=24, hidden=2048, heads=16, kv_heads=16, ffn=8192, vocab=50304, seq=2048, mbs=4,
                     act="gelu", norm="layernorm", pos="learned", tied=True, bias=True),
    # GPT-3 Medium's shapes (24 layers, d 1024): a small model, where per-kernel costs weigh most.
    "gpt-350m": dict(layers=24, hidden=1024, heads=16, kv_heads=16, ffn=4096, vocab=50304, seq=2048, mbs=8,
                     act="gelu", norm="layernorm", pos="learned", tied=True, bias=True),
    # Llama 3 8B's layer shapes, 8 of its 32 layers, with its vocabulary.
    "llama3-8b-8l": dict(layers=8, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256, seq=4096, mbs=2,
                         act="swiglu", norm="rmsnorm", pos="rope", tied=False, bias=False),
}


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, hd = c["hidden"], c["hidden"] // c["heads"]
        self.c, self.hd = c, hd
        Norm = (lambda: nn.LayerNorm(h)) if c["norm"] == "layernorm" else (lambda: nn.RMSNorm(h))
        self.n1, self.n2 = Norm(), Norm()
        self.qkv = nn.Linear(h, (c["heads"] + 2 * c["kv_heads"]) * hd, bias=c["bias"])
        self.out = nn.Linear(h, h, bias=c["bias"])
        up = 2 * c["ffn"] if c["act"] == "swiglu" else c["ffn"]
        self.up = nn.Linear(h, up, bias=c["bias"])
        self.down = nn.Linear(c["ffn"], h, bias=c["bias"])

    def forward(self, x, rope):
        c, hd = self.c, self.hd
        b, s, _ = x.shape
        q, k, v = self.qkv(self.n1(x)).split([c["heads"] * hd, c["kv_heads"] * hd, c["kv_heads"] * hd], dim=-1)
        q = q.view(b, s, c["heads"], hd).transpose(1, 2)
        k = k.view(b, s, c["kv_heads"], hd).transpose(1, 2)
        v = v.view(b, s, c["kv_heads"], hd).transpose(1, 2)
        if rope is not None:
            cos, sin = rope
            def rot(t):
                t1, t2 = t[..., : hd // 2], t[..., hd // 2:]
                return t * cos.to(t.dtype) + torch.cat((-t2, t1), dim=-1) * sin.to(t.dtype)
            q, k = rot(q), rot(k)
        if c["kv_heads"] != c["heads"]:
            k = k.repeat_interleave(c["heads"] // c["kv_heads"], dim=1)
            v = v.repeat_interleave(c["heads"] // c["kv_heads"], dim=1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, s, -1))
        u = self.up(self.n2(x))
        if c["act"] == "swiglu":
            g, u = u.chunk(2, dim=-1)
            u = F.silu(g) * u
        else:
            u = F.gelu(u, approximate="tanh")
        return x + self.down(u)


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.emb = nn.Embedding(c["vocab"], c["hidden"])
        self.pos = nn.Embedding(c["seq"], c["hidden"]) if c["pos"] == "learned" else None
        self.layers = nn.ModuleList(Layer(c) for _ in range(c["layers"]))
        self.norm = nn.LayerNorm(c["hidden"]) if c["norm"] == "layernorm" else nn.RMSNorm(c["hidden"])
        self.head = nn.Linear(c["hidden"], c["vocab"], bias=False)
        if c["tied"]:
            self.head.weight = self.emb.weight
        hd = c["hidden"] // c["heads"]
        if c["pos"] == "rope":
            inv = 1.0 / (500000.0 ** (torch.arange(0, hd, 2).float() / hd))
            f = torch.outer(torch.arange(c["seq"]).float(), inv)
            f = torch.cat((f, f), dim=-1)
            self.register_buffer("cos", f.cos()[None, None], persistent=False)
            self.register_buffer("sin", f.sin()[None, None], persistent=False)

    def forward(self, idx, targets):
        x = self.emb(idx)
        if self.pos is not None:
            x = x + self.pos(torch.arange(idx.shape[1], device=idx.device))
        rope = (self.cos, self.sin) if self.c["pos"] == "rope" else None
        for layer in self.layers:
            x = layer(x, rope)
        logits = self.head(self.norm(x)).float()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def kernel_class(name):
    n = name.lower()
    if "flash" in n or "fmha" in n or "attention" in n:
        return "attention"
    if any(t in n for t in ("gemm", "nvjet", "xmma", "cutlass", "cublas", "splitk")):
        return "gemm"
    if "norm" in n:
        return "norm"
    if any(t in n for t in ("softmax", "cross_entropy", "nll_loss")):
        return "loss"
    if any(t in n for t in ("adam", "multi_tensor", "foreach")):
        return "optimizer"
    return "other"


FUSED_LOSS = 'loss_kernel = "fused"  # Inductor fuses the cross-entropy over the bf16 logits'
NATIVE_NORMS = 'norm_kernel = "native"  # nn.LayerNorm / nn.RMSNorm: PyTorch\'s own norm kernels'


def reference(step_s, max_allocated):
    """The measured step and peak (torch.cuda.max_memory_allocated) as the scenario's [reference]."""
    return f"""[reference]
step_time_s = {step_s:.6g}
peak_memory = "{max_allocated / 2**30:.3f}GiB"
peak_memory_kind = "allocated"
source = "measured by tests/gpu/torch_step.py on one H200 (median step; torch.cuda.max_memory_allocated)"
"""


def scenario(name, c, compiled=False):
    return f"""# {name}: written by tests/gpu/torch_step.py, the step it measured on one GPU in plain PyTorch
# (fp32 parameters, bf16 autocast, fused AdamW, SDPA FlashAttention-2, {'torch.compile: fused memory-bound kernels' if compiled else 'eager: one kernel per op'}).
[model]
name = "{name}"
layers = {c['layers']}
hidden = {c['hidden']}
heads = {c['heads']}
kv_heads = {c['kv_heads']}
ffn_hidden = {c['ffn']}
vocab = {c['vocab']}
activation = "{c['act']}"
norm = "{c['norm']}"
positions = "{c['pos']}"
{'max_positions = %d' % c['seq'] if c['pos'] == 'learned' else ''}
tied_embeddings = {str(c['tied']).lower()}
linear_bias = {str(c['bias']).lower()}
[training]
global_batch = {c['mbs']}
seq_len = {c['seq']}
precision = "bf16"
fused_kernels = {'true' if compiled else 'false'}
attention_kernel = "fa2"
{FUSED_LOSS if compiled else NATIVE_NORMS}
autocast = true
[[cluster.pool]]
device = "h200-sxm"
nodes = 1
devices_per_node = 1
[parallel]
tp = 1
pp = 1
dp = 1
micro_batch = {c['mbs']}
"""


def run(name, c, out, log, compiled=False):
    torch.manual_seed(0)
    model = Model(c).cuda()
    fwd = torch.compile(model) if compiled else model
    if compiled:
        name += "-compiled"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    params = sum(p.numel() for p in model.parameters())
    idx = torch.randint(0, c["vocab"], (c["mbs"], c["seq"]), device="cuda")
    tgt = torch.randint(0, c["vocab"], (c["mbs"], c["seq"]), device="cuda")
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def step():
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]), torch.autocast("cuda", dtype=torch.bfloat16):
            loss = fwd(idx, tgt)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        step()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3)
    t = statistics.median(times)
    classes, top = {}, []
    busy = None
    try:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        for ev in prof.key_averages():
            us = getattr(ev, "self_device_time_total", None)
            if us is None:
                us = getattr(ev, "self_cuda_time_total", 0)
            if us <= 0:
                continue
            k = kernel_class(ev.key)
            classes[k] = classes.get(k, 0.0) + us / 1e6
            top.append((us / 1e6, ev.key[:120], ev.count))
        top.sort(reverse=True)
        busy = sum(classes.values())
    except Exception as e:
        print(name, "profiler failed:", e)
    # 6·N·tokens plus attention (causal: 6·b·s²·h·L/2 · 2 for QKᵀ and PV... as 12·L·h·s²·b / 2)
    tokens = c["mbs"] * c["seq"]
    model_flops = 6 * params * tokens + 6 * c["layers"] * c["hidden"] * c["seq"] * tokens
    rec = {"name": name, "compiled": compiled, "config": c, "params": params, "step_s": t, "step_s_all": times,
           "gpu_busy_s": busy, "classes_s": classes, "top_kernels": top[:40],
           "tflops_6n": model_flops / t / 1e12, "max_allocated_bytes": torch.cuda.max_memory_allocated(),
           "max_reserved_bytes": torch.cuda.max_memory_reserved()}
    log.write(json.dumps(rec) + "\n")
    log.flush()
    with open(os.path.join(out, name + ".toml"), "w") as f:
        f.write(scenario(name, c, compiled) + reference(t, rec["max_allocated_bytes"]))
    cl = ", ".join(f"{k} {v * 1e3:.1f}" for k, v in sorted(classes.items(), key=lambda x: -x[1]))
    print(f"{name:14s} {params / 1e9:5.2f} B params  step {t * 1e3:8.1f} ms  (GPU busy {busy * 1e3 if busy else 0:.1f} ms: {cl})"
          f"  {rec['tflops_6n']:.0f} TFLOP/s  max alloc {rec['max_allocated_bytes'] / 2**30:.1f} GiB")
    del model, opt, fwd
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
    compiled = "--compile" in sys.argv[2:]
    names = [a for a in sys.argv[2:] if a != "--compile"] or list(CONFIGS)
    os.makedirs(out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    with open(os.path.join(out, "torch_step.jsonl"), "w") as log:
        for n in names:
            try:
                run(n, CONFIGS[n], out, log, compiled)
            except Exception as e:
                print(n, "FAILED:", type(e).__name__, str(e)[:300])


if __name__ == "__main__":
    main()
