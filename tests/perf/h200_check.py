#!/usr/bin/env python3
"""The catalogue's h200-sxm against what the device machine's H200 measured (tests/perf/data/h200/,
written by tests/gpu/microbench.py and sustained.py; docs/microbenchmarks.md §9):
  GEMM       the tile model (models/cost/compute.cpp gemm_compute_time, with the memory roofline
             and one launch gap) against cuBLAS bf16 at per-rank transformer shapes;
  attention  models/cost/compute.cpp attention_efficiency (causal fwd+bwd, hdim 128 and 64)
             against cuDNN, and × attention_fa2 against FlashAttention-2;
  memory     memory_bandwidth × memory against the measured copy;
  sustained  the 8192³ GEMM over 12 s with clocks and power.
Usage: python3 tests/perf/h200_check.py [--shapes]   (--shapes: every GEMM shape)"""
import json, math, os, statistics, sys, tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from xla_gemm_check import model_time  # noqa: E402  (the tile model, one copy)


def number(s):
    """'989TFLOPS' / '4.8TB/s' / '3us' → SI value."""
    units = {"TFLOPS": 1e12, "TB/s": 1e12, "GB/s": 1e9, "us": 1e-6}
    for u, f in units.items():
        if str(s).endswith(u):
            return float(str(s)[: -len(u)]) * f
    return float(s)


def catalogue(name):
    with open(os.path.join(ROOT, "models/catalog/nvidia.toml"), "rb") as f:
        for d in tomllib.load(f)["device"]:
            if d["name"] == name:
                return d
    raise SystemExit(f"{name} not in the catalogue")


def main():
    dev = catalogue("h200-sxm")
    e = dev["efficiency"]
    peak = number(dev["peak"]["bf16"])
    bw = number(dev["memory_bandwidth"])
    p = dict(peak=peak, main=e["gemm"], sms=e["sms"], tm=e["tile_m"], tn=e["tile_n"], t0=number(e["tile_overhead"]),
             mem=bw * e["memory"], launch=number(e["launch_overhead"]))
    rows = [json.loads(l) for l in open(os.path.join(ROOT, "tests/perf/data/h200/microbench.jsonl"))]
    dev_row = next(r for r in rows if r["kind"] == "device")
    print(f"measured on: {dev_row['name']}, torch {dev_row['torch']}, CUDA {dev_row['cuda']}, cuDNN {dev_row['cudnn']}")
    print(f"catalogue h200-sxm: main loop {e['gemm']}, tiles {e['tile_m']}x{e['tile_n']}, attention {e['attention']} "
          f"half_seq {e['attention_half_seq']}, fa2 {e.get('attention_fa2')}, memory {e['memory']}")

    # Throughput, model / measured − 1 (negative: the model is slower), as xla_gemm_check.py.
    g = []
    for r in rows:
        if r["kind"] == "gemm" and r["dtype"] == "bf16" and min(r["m"], r["n"], r["k"]) >= 1024 or \
           r["kind"] == "gemm" and r["dtype"] == "bf16" and r["label"].startswith(("gpt", "llama")):
            g.append((r, r["s"] / model_time(r["m"], r["n"], r["k"], 1, **p) - 1))
    print("\nGEMM bf16 (cuBLAS via torch.matmul, bursts of ~0.1 s), throughput model / measured − 1:")
    for name, sel in (("all transformer shapes", lambda r: True),
                      ("min(m, n, k) ≥ 2048", lambda r: min(r["m"], r["n"], r["k"]) >= 2048),
                      ("min(m, n, k) < 1024 (TP-sliced)", lambda r: min(r["m"], r["n"], r["k"]) < 1024)):
        v = [x for r, x in g if sel(r)]
        if v:
            print(f"  {name:34s} {len(v):3d} shapes, signed mean {100 * statistics.mean(v):+6.1f} %, "
                  f"mean |error| {100 * statistics.mean(map(abs, v)):5.1f} %, max {100 * max(v, key=abs):+6.1f} %")
    if "--shapes" in sys.argv:
        for r, x in g:
            print(f"    {r['label']:34s} {r['m']:6d} {r['n']:6d} {r['k']:6d} measured {r['tflops']:6.1f} TFLOP/s, "
                  f"model {r['tflops'] * (1 + x):6.1f} ({100 * x:+.0f} %)")

    # Attention: η(s) = attention·s/(s+half)·head factor, fwd+bwd, against cuDNN; × fa2 against FA2.
    hh = e.get("attention_head_half", 0)
    print("\nattention fwd+bwd, 16k tokens per call (TFLOP/s: measured / model; throughput model / measured − 1):")
    for backend in ("cudnn", "fa2"):
        for hd in (128, 64):
            cells, errs = [], []
            for r in sorted((r for r in rows if r["kind"] == "attention" and r["backend"] == backend and r["head_dim"] == hd
                             and r["causal"]), key=lambda r: r["seq"]):
                s = r["seq"]
                eta = e["attention"] * s / (s + e["attention_half_seq"])
                if hh:
                    eta *= min(1.0, (hd / (hd + hh)) / (128 / (128 + hh)))
                if backend == "fa2":
                    eta *= e.get("attention_fa2", 1.0)
                cells.append(f"{s}: {r['fwdbwd_tflops']:.0f}/{eta * peak / 1e12:.0f}")
                errs.append(eta * peak / 1e12 / r["fwdbwd_tflops"] - 1)
            print(f"  {backend:5s} hdim {hd:3d} causal: " + ", ".join(cells) +
                  f"  ({100 * statistics.mean(errs):+.1f} % on average)")

    cp = next(r for r in rows if r["kind"] == "copy")
    print(f"\nmemory: copy {cp['bytes_moved'] / cp['s'] / 1e12:.2f} TB/s measured, catalogue {bw * e['memory'] / 1e12:.2f} TB/s")
    le = next((r for r in rows if r["kind"] == "launch_eager"), None)
    lg = next((r for r in rows if r["kind"] == "launch_graph"), None)
    if le and lg:
        print(f"launch: {le['s'] * 1e6:.2f} us per tiny kernel from eager PyTorch (catalogue host_overhead "
              f"{e['host_overhead']}), {lg['s'] * 1e6:.2f} us in a CUDA graph (launch_overhead {e['launch_overhead']})")
    sus = [json.loads(l) for l in open(os.path.join(ROOT, "tests/perf/data/h200/sustained.jsonl"))]
    steady = [r for r in sus if r.get("t", -1) >= 2]
    if steady:
        print(f"sustained 8192³ bf16 over {steady[-1]['t']:.0f} s: {statistics.median(r['tflops'] for r in steady):.0f} TFLOP/s "
              f"(median after 2 s), SM {statistics.median(r['sm_mhz'] for r in steady):.0f} MHz, "
              f"{statistics.median(r['power_w'] for r in steady):.0f} W of {steady[0]['power_limit_w']:.0f}, "
              f"clock-event reasons {steady[-1]['throttle']} (0x4: software power cap); idle SM clock {sus[0].get('sm_mhz')} MHz")


if __name__ == "__main__":
    main()
