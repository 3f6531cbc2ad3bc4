#!/usr/bin/env python3
"""hetsim's estimate of a one-GPU training step against the step measured in plain PyTorch on the
device machine's H200 (tests/gpu/torch_step.py; data and scenarios in
tests/perf/data/h200/torch_step/ and, through torch.compile, torch_step_compiled/;
docs/microbenchmarks.md §9f): step time, and time per kernel
class (gemm, attention, optimizer, and everything else: norms, loss, elementwise, copies), and peak
memory (torch.cuda.max_memory_allocated against hetsim's "allocated" peak, from the scenarios'
[reference]).
Usage: python3 tests/perf/torch_step_check.py [HETSIM]   (default build/release/bin/hetsim)"""
import json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA_DIRS = [os.path.join(ROOT, "tests/perf/data/h200", d) for d in ("torch_step", "torch_step_compiled")]


def predicted_classes(j):
    """Seconds per class of one step (one micro-batch per step in these scenarios)."""
    c = {"gemm": 0.0, "attention": 0.0, "rest": 0.0}
    for part in j["ops"][0]["parts"]:
        for op in part["ops"]:
            t = (op["fwd"]["time_s"] + op["bwd"]["time_s"]) * part["repeat"]
            k = op["kind"] if op["kind"] in ("gemm", "attention") else "rest"
            c[k] += t
    c["optimizer"] = j["step_breakdown_s"].get("optimizer", 0.0)
    return c


def main():
    hetsim = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/release/bin/hetsim")
    rows = [(d, json.loads(l)) for d in DATA_DIRS for l in open(os.path.join(d, "torch_step.jsonl"))]
    print("one H200, plain PyTorch (fp32 params, bf16 autocast, fused AdamW, SDPA FA2; -compiled: torch.compile), "
          "ms: measured / predicted (error)")
    print(f"{'run':22s} {'step':>22s} {'gemm':>20s} {'attention':>20s} {'optimizer':>18s} {'rest':>20s} "
          f"{'peak memory, GiB':>24s}")
    for d, r in rows:
        toml = os.path.join(d, r["name"] + ".toml")
        j = json.loads(subprocess.run([hetsim, "estimate", "--json", "--ops", toml], capture_output=True, text=True).stdout)
        p = predicted_classes(j)
        m = dict(r["classes_s"])
        m_rest = sum(v for k, v in m.items() if k not in ("gemm", "attention", "optimizer"))
        cells = [(r["step_s"], j["step_time_s"]), (m.get("gemm", 0), p["gemm"]), (m.get("attention", 0), p["attention"]),
                 (m.get("optimizer", 0), p["optimizer"]), (m_rest, p["rest"])]
        out = [f"{a * 1e3:6.1f} / {b * 1e3:6.1f} ({100 * (b / a - 1):+4.0f} %)" for a, b in cells]
        ref = j.get("reference") or {}
        if ref.get("peak_memory_bytes"):
            out.append(f"{ref['peak_memory_bytes'] / 2**30:5.1f} / {ref['predicted_peak_memory_bytes'] / 2**30:5.1f} "
                       f"({100 * ref['peak_memory_error']:+4.1f} %)")
        print(f"{r['name']:22s} " + " ".join(f"{x:>20s}" for x in out))


if __name__ == "__main__":
    main()
