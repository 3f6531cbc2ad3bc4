#!/usr/bin/env python3
"""Mutation campaign over hetsim's command lines: what a new user might type or feed it.

    python3 tests/robustness/campaign.py [--runs N] [--seed S] [--bin build/release/bin]

Mutates the bundled scenarios (values of every type replaced by nonsense, keys deleted,
duplicated or misspelt, files truncated), plans written by `simulate --save-plan`, traces and
command-line values, and runs `hetsim estimate | simulate | plan` and `hetsim-exec compare | run`
on them. Every run must end within its time limit with exit 0, 1 (environment: only where the
case touches the file system), 2 (bad input) or 3 (does not fit); never a signal, never 4
(internal). With --json, stdout must be exactly one JSON document; a failing run must say why on
stderr, naming the input file when the input is at fault; estimate and simulate must agree on
whether a scenario fits. Findings are written to --findings (build/campaign/findings)/<n>/ (command, input,
stdout, stderr) and the script exits 1. Deterministic for a given --seed.
"""
import argparse
import collections
import json
import os
import pathlib
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]

NASTY = [
    "0", "-1", "1", "-0.0", "1e400", "-1e400", "nan", "inf", "-inf", "1e-300", "1e300",
    "9223372036854775807", "-9223372036854775808", "18446744073709551616", "2147483648",
    "4294967297", "0.5", "3.7", '""', '"x"', '"\\u0000"', '"\\n\\t"', '"1e300GiB"', '"-5GB"',
    '"0GB"', '"nanGiB"', '"12 parsecs"', '"h100-sxm5"', '"v100-sxm2"', '"tpu-v5p"', '"mi300x"',
    "true", "false", "[]", "[1, 2]", "{}", '{ a = 1 }', "1979-05-27", '"' + "y" * 5000 + '"',
]
GARBAGE_LINES = ["[", "]]", "x = ", "= 1", "[model", "[[cluster.pool]", "schema = 1", "\x00",
                 "[model]", "[parallel]", "a.b.c = 1", "key = 'unterminated", "\ufeff", "🙂 = 1"]


def mutate_toml(text, rng):
    lines = text.split("\n")
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        kv = [i for i, l in enumerate(lines) if re.match(r"^\s*[A-Za-z_][\w.]*\s*=", l)]
        op = rng.random()
        num = [i for i in kv if re.match(r"^[^=]*=\s*-?[0-9.]+(e[0-9]+)?\s*(#.*)?$", lines[i])]
        if num and op < 0.30:  # a plausible number changed: most stay valid and stress the model
            i = rng.choice(num)
            key, val = lines[i].split("=", 1)
            v = float(val.split("#")[0])
            new = v * rng.choice([0, 0.5, 2, 3, 7, 10, 100, 1e4]) if rng.random() < 0.7 else rng.randint(1, 16)
            lines[i] = f"{key}= {int(new) if float(new).is_integer() and abs(new) < 2**62 else new}"
        elif kv and op < 0.55:  # replace a value by nonsense
            i = rng.choice(kv)
            key = lines[i].split("=", 1)[0]
            lines[i] = f"{key}= {rng.choice(NASTY)}"
        elif kv and op < 0.65:  # delete a key
            lines[rng.choice(kv)] = ""
        elif kv and op < 0.72:  # duplicate a key
            i = rng.choice(kv)
            lines.insert(i + 1, lines[i])
        elif kv and op < 0.80:  # misspell a key
            i = rng.choice(kv)
            k, v = lines[i].split("=", 1)
            lines[i] = k.rstrip() + rng.choice(["x", "_", "s"]) + " =" + v
        elif op < 0.88:  # garbage line
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(GARBAGE_LINES))
        elif op < 0.94:  # truncate
            return "\n".join(lines)[: rng.randrange(max(1, len(text)))]
        else:  # a huge count where a count is
            i = rng.choice(kv) if kv else 0
            if kv:
                key = lines[i].split("=", 1)[0]
                lines[i] = f"{key}= {rng.choice(['1048577', '4194304', '65536', '100000000'])}"
    return "\n".join(lines)


def mutate_json(text, rng):
    if rng.random() < 0.12:  # textual damage
        cut = rng.randrange(max(1, len(text)))
        return rng.choice([text[:cut], text[:cut] + "}" + text[cut:], text.replace(":", "::", 1),
                           text.replace("{", '{"groups": 1, ', 1)])
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    leaves = []

    def walk(o, path):
        if isinstance(o, dict):
            for k in list(o):
                leaves.append((o, k))
                walk(o[k], path + [k])
        elif isinstance(o, list):
            for i in range(len(o)):
                leaves.append((o, i))
                walk(o[i], path + [i])

    walk(doc, [])
    values = [0, -1, 1, 1e308, -1e308, 2 ** 63, 2 ** 64, -(2 ** 63), 0.5, "", "x", None, True,
              [], {}, "1f1b", "zzz", 1e-300, 4096, 65536, 1048577]
    for _ in range(rng.choice([1, 1, 2, 3])):
        if not leaves:
            break
        holder, k = rng.choice(leaves)
        op = rng.random()
        try:
            if op < 0.35 and isinstance(holder[k], (int, float)) and not isinstance(holder[k], bool):
                holder[k] = type(holder[k])(holder[k] * rng.choice([0, 0.5, 2, 3, 10]) + rng.choice([0, 1, -1]))
            elif op < 0.7:
                holder[k] = rng.choice(values)
            elif op < 0.85 and isinstance(holder, dict):
                del holder[k]
            elif isinstance(holder, list) and holder:
                holder.append(holder[0])
            else:
                holder[str(k) + "x"] = 1
        except (KeyError, IndexError, TypeError):
            pass
    out = json.dumps(doc, indent=1)
    if rng.random() < 0.1:  # special numbers and duplicate keys JSON libraries must refuse
        out = out.replace("1e+308", rng.choice(["1e400", "NaN", "Infinity"]), 1)
        out = out.replace("{", '{"version": 1, "version": 2, ', 1)
    return out


class Campaign:
    def __init__(self, args):
        self.args = args
        self.bin = pathlib.Path(args.bin).resolve()
        self.rng = random.Random(args.seed)
        self.work = pathlib.Path(tempfile.mkdtemp(prefix="hetsim-campaign-"))
        self.findings_dir = pathlib.Path(args.findings).resolve()
        self.findings = 0
        self.counts = collections.Counter()
        self.n = 0
        scen = sorted((ROOT / "scenarios").glob("*.toml")) + sorted((ROOT / "scenarios" / "validation").glob("*.toml"))
        self.scenarios = [s for s in scen if "cpu-pipeline" not in s.name]
        self.plans = []
        for s in self.scenarios[:6]:  # plans as `simulate --save-plan` writes them, beside their scenario
            p = self.work / (s.stem + ".plan.json")
            r = subprocess.run([self.bin / "hetsim", "estimate", str(s), "--save-plan", str(p)],
                               capture_output=True, timeout=60, cwd=ROOT)
            if r.returncode in (0, 3) and p.exists():
                self.plans.append((s, p.read_text()))
        self.traces = [(ROOT / "tests/fuzz/seeds/trace" / n).read_text() for n in ("predicted.json", "measured.json")]

    def write(self, name, text):
        p = self.work / name
        p.write_bytes(text.encode("utf-8", "surrogatepass"))
        return p

    def run(self, label, cmd, json_out, input_path=None, timeout=60, env_ok=False, names=None):
        self.n += 1
        start = time.monotonic()
        try:
            timeout *= self.args.timeout_scale
            r = subprocess.run([str(c) for c in cmd], capture_output=True, timeout=timeout, cwd=self.work)
        except subprocess.TimeoutExpired:
            self.finding(label, cmd, input_path, b"", b"", f"no answer within {timeout} s")
            return None
        took = time.monotonic() - start
        rc = r.returncode
        self.counts[(label, rc)] += 1
        problems = []
        if rc < 0:
            problems.append(f"killed by signal {-rc}")
        elif rc == 4:
            problems.append("exit 4 (internal error) on user input")
        elif rc == 1 and not env_ok:
            problems.append("exit 1 (environment) where only the input was mutated")
        elif rc not in (0, 1, 2, 3):
            problems.append(f"exit {rc}")
        err = r.stderr.decode("utf-8", "replace")
        if rc != 0 and not err.strip() and not json_out:
            problems.append("failed without a message on stderr")
        named = [p.name for p in (names or ([input_path] if input_path is not None else []))]
        if rc == 2 and named and not any(n in err for n in named) and not json_out:
            problems.append(f"bad-input message does not name {input_path.name}")
        for bad in ("Assertion", "terminate called", "AddressSanitizer", "runtime error:", "this is a bug"):
            if bad in err:
                problems.append(f"stderr says '{bad}'")
        doc = None
        if json_out:
            out = r.stdout
            strs = [str(c) for c in cmd]
            if rc == 0 and "-o" in strs:  # the report went to the -o file; stdout stays empty
                out = (self.work / strs[strs.index("-o") + 1]).read_bytes()
                if r.stdout:
                    problems.append("stdout not empty although the report went to -o")
            try:
                doc = json.loads(out.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                problems.append(f"--json stdout is not one JSON document ({e})")
            if doc is not None and rc == 2 and named:
                text = json.dumps(doc.get("error", {}) if isinstance(doc, dict) else doc)
                if not any(n in text for n in named):
                    problems.append(f"error JSON does not name {input_path.name}")
        if problems:
            self.finding(label, cmd, input_path, r.stdout, r.stderr, "; ".join(problems))
        return rc, doc, took

    def finding(self, label, cmd, input_path, out, err, why):
        self.findings += 1
        d = self.findings_dir / str(self.findings)
        d.mkdir(parents=True, exist_ok=True)
        (d / "why.txt").write_text(f"{label}: {why}\n{' '.join(map(str, cmd))}\n")
        if input_path is not None and input_path.exists():
            shutil.copy(input_path, d / input_path.name)
        (d / "stdout").write_bytes(out)
        (d / "stderr").write_bytes(err)
        print(f"FINDING {self.findings}: {label}: {why} ({d})", flush=True)

    # --- cases ------------------------------------------------------------------------------
    def scenario_case(self, i):
        base = self.rng.choice(self.scenarios)
        s = self.write(f"s{i}.toml", mutate_toml(base.read_text(), self.rng))
        hs = self.bin / "hetsim"
        est = self.run("estimate", [hs, "estimate", "--json", s], True, s)
        sim = self.run("simulate", [hs, "simulate", "--json", s], True, s)
        if est and sim and est[0] in (0, 3) and sim[0] in (0, 3) and est[0] != sim[0]:
            self.finding("fits", ["estimate/simulate", s], s, b"", b"",
                         f"estimate exits {est[0]}, simulate {sim[0]}: they disagree on whether it fits")
        if self.rng.random() < 0.25:
            self.run("plan", [hs, "plan", "--json", "--verify", "3", s], True, s, timeout=120)

    def plan_case(self, i):
        scen, text = self.rng.choice(self.plans)
        p = self.write(f"p{i}.json", mutate_json(text, self.rng))
        cmd = self.rng.choice(["estimate", "simulate"])
        self.run(f"{cmd} --plan", [self.bin / "hetsim", cmd, "--json", "--plan", p, scen], True, p)

    def trace_case(self, i):
        pred, meas = self.traces
        if self.rng.random() < 0.5:
            a, b = self.write(f"t{i}.json", mutate_json(pred, self.rng)), self.write(f"m{i}.json", meas)
            bad = a
        else:
            a, b = self.write(f"t{i}.json", pred), self.write(f"m{i}.json", mutate_json(meas, self.rng))
            bad = b
        # A mismatch between the two files may be reported against either of them.
        self.run("compare", [self.bin / "hetsim-exec", "compare", "--json", a, b], True, bad, names=(a, b))

    def cli_case(self, i):
        hs, ex = self.bin / "hetsim", self.bin / "hetsim-exec"
        s = self.rng.choice(self.scenarios)
        out_vals = ["", "/", str(self.work), "/nonexistent/dir/x.json", "/proc/self/x", "ok.json"]
        choices = [
            ([hs, self.rng.choice(["estimate", "simulate"]), s, "-o", self.rng.choice(out_vals)], True),
            ([hs, "simulate", s, "--trace", self.rng.choice(out_vals), "-o", "ok.txt"], True),
            ([hs, "simulate", s, "--engine", self.rng.choice(["foo", "", "native" if self.args.no_simgrid else "simgrid"])], True),
            ([hs, self.rng.choice(["estimate", "simulate", "plan"]), self.rng.choice(["/dev/zero", "/", "", "missing.toml", "/etc/passwd"])], True),
            ([hs, "plan", s, "--top", self.rng.choice(["0", "-1", "1e9", "x", "101", "3"])], False),
            ([hs, "plan", s, "--verify", self.rng.choice(["0", "1001", "nan", "2"]), "--objective", self.rng.choice(["time", "cost", "speed"])], False),
            ([hs, self.rng.choice(["estimate", "simulate"]), s, self.rng.choice(["--bogus", "--json=1", "--plan", "--plan=/"])], True),
            ([ex, "run", ROOT / "scenarios/cpu-pipeline.toml", "--memory", self.rng.choice(["nan", "1e-10", "-1", "inf", "0", "1e300", "x"])], False),
            ([ex, "run", ROOT / "scenarios/cpu-pipeline.toml", "--devices", self.rng.choice(["0", "-2", "4097", "1e3", "2x"])], False),
            ([ex, "run", ROOT / "scenarios/cpu-pipeline.toml", "--backend", self.rng.choice(["gpu", "", "tpu"])], False),
            # Per-pool options: only values that are refused, so no case runs the plan.
            ([ex, "run", ROOT / "scenarios/cpu-pipeline.toml", "--cores",
              self.rng.choice(["cpu=0", "cpu=-1", "cpu=257", "cpu=1e3", "cpu=+2", "cpu= 2", "cpu", "=2", "nopool=2", "cpu=\x01"])], False),
            ([ex, "run", ROOT / "scenarios/cpu-pipeline.toml", "--pool-memory",
              self.rng.choice(["cpu=0", "cpu=nan", "cpu=inf", "cpu=0x10", "cpu=1e400", "cpu=-1", "cpu=", "nopool=1", "cpu=0.0001"])], False),
            ([ex, "run", ROOT / "scenarios/cpu-pipeline.toml", "--pool-devices",
              self.rng.choice(["cpu=H100", "cpu=A100,0", "cpu=a", "cpu=99999", "cpu=0-", "cpu=ñ", "cpu=" + "x" * 300])], False),
            ([ex, "compare", self.rng.choice(["/dev/zero", "/", "missing.json"]), ROOT / "tests/fuzz/seeds/trace/measured.json"], False),
            ([ex, "calibrate", "--name", self.rng.choice(["a\nb", "\x01", '"q"', "x" * 300]), "--out", self.rng.choice(out_vals)], False),
        ]
        cmd, env_ok = self.rng.choice(choices)
        if self.rng.random() < 0.5:
            cmd = cmd + ["--json"]
        strs = [str(c) for c in cmd]
        # `--plan --json` makes "--json" the plan's file name (CLI11 takes it as the value).
        json_out = "--json" in strs and "calibrate" not in strs and strs[strs.index("--json") - 1] != "--plan"
        # The file system is part of these cases: exit 1 (environment) is a right answer.
        self.run("cli " + str(cmd[1]), cmd, json_out, None, timeout=120, env_ok=True)

    def go(self):
        kinds = [(self.scenario_case, 0.55), (self.plan_case, 0.2), (self.trace_case, 0.15), (self.cli_case, 0.10)]
        t0 = time.monotonic()
        for i in range(self.args.runs):
            r, acc = self.rng.random(), 0.0
            for f, w in kinds:
                acc += w
                if r < acc:
                    f(i)
                    break
            if (i + 1) % 100 == 0:
                print(f"{i + 1}/{self.args.runs} cases, {self.n} runs, {self.findings} findings, "
                      f"{time.monotonic() - t0:.0f} s", flush=True)
        shutil.rmtree(self.work, ignore_errors=True)
        print(f"campaign: {self.args.runs} cases, {self.n} runs in {time.monotonic() - t0:.0f} s, "
              f"{self.findings} findings")
        by = collections.defaultdict(dict)
        for (label, rc), n in sorted(self.counts.items()):
            by[label][rc] = n
        for label, rcs in sorted(by.items()):
            print(f"  {label:18s} " + ", ".join(f"exit {rc}: {n}" for rc, n in sorted(rcs.items())))
        return 1 if self.findings else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=1000, help="cases to try (default 1000)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--bin", default=str(ROOT / "build/release/bin"), help="folder with hetsim and hetsim-exec")
    ap.add_argument("--findings", default=str(ROOT / "build/campaign/findings"),
                    help="where failing cases are written (emptied first)")
    ap.add_argument("--timeout-scale", type=float, default=1.0,
                    help="multiply every time limit (sanitizer builds run several times slower)")
    ap.add_argument("--no-simgrid", action="store_true",
                    help="never pick the simgrid engine (its largest runs take minutes under sanitizers)")
    args = ap.parse_args()
    shutil.rmtree(args.findings, ignore_errors=True)
    sys.exit(Campaign(args).go())


if __name__ == "__main__":
    main()
