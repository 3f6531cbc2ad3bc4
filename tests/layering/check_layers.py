#!/usr/bin/env python3
"""The layering rules of docs/architecture.md as a test.

    models <- sim <- exec,  sim <- gui   (a module includes only modules to its left;
                                          exec and gui never include each other)

Third-party headers stay in the module that owns them: Qt in gui/, CUDA/NCCL/HIP in exec/,
SimGrid in sim/, TOML++ in sim/io/ (the scenario and catalogue readers).

Usage: check_layers.py ROOT          checks the tree at ROOT; exit 1 and FILE:LINE: why per violation
       check_layers.py --self-test   builds small trees that break each rule and checks that each
                                     is caught (so that this test can fail)
"""
import os
import re
import sys
import tempfile

MAY_INCLUDE = {"models": {"models"}, "sim": {"models", "sim"}, "exec": {"models", "sim", "exec"},
               "gui": {"models", "sim", "gui"}}
OWNED = [
    (re.compile(r"^Q[A-Za-z]+$|^Qt[A-Za-z]+/"), lambda p: p.startswith("gui/"), "Qt belongs to gui/"),
    (re.compile(r"^(cuda|cublas|nccl|cuda_runtime)"), lambda p: p.startswith("exec/"), "CUDA/NCCL belong to exec/"),
    (re.compile(r"^hip/|^hipblas|^rccl|^rocblas"), lambda p: p.startswith("exec/"), "HIP belongs to exec/"),
    (re.compile(r"^simgrid/|^xbt/"), lambda p: p.startswith("sim/"), "SimGrid belongs to sim/"),
    (re.compile(r"^toml\+\+/"), lambda p: p.startswith("sim/io/"), "TOML++ belongs to sim/io/"),
]
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".hip", ".inc")


def check(root):
    problems = []
    for top in MAY_INCLUDE:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        inc = m.group(2)
                        first = inc.split("/", 1)[0]
                        if m.group(1) == '"' and first in MAY_INCLUDE and first not in MAY_INCLUDE[top]:
                            problems.append(f"{rel}:{n}: {top}/ includes {inc} ({first}/ is not below {top}/)")
                        for pattern, allowed, why in OWNED:
                            if pattern.search(inc) and not allowed(rel):
                                problems.append(f"{rel}:{n}: includes <{inc}>: {why}")
    return problems


def self_test():
    cases = {
        "models/a.hpp": '#include "sim/x.hpp"\n',
        "sim/b.cpp": '#include "exec/y.hpp"\n',
        "exec/c.cpp": '#include "gui/z.hpp"\n',
        "gui/d.cpp": '#include "exec/w.hpp"\n',
        "sim/e.cpp": "#include <QWidget>\n",
        "models/f.cpp": "#include <cuda_runtime.h>\n",
        "exec/g.cpp": "#include <simgrid/s4u.hpp>\n",
        "sim/report/h.cpp": "#include <toml++/toml.hpp>\n",
    }
    fine = {"exec/ok.cpp": '#include "sim/x.hpp"\n#include "models/y.hpp"\n#include <cuda_runtime.h>\n',
            "gui/ok.cpp": '#include "sim/x.hpp"\n#include <QWidget>\n',
            "sim/io/ok.cpp": '#include "models/x.hpp"\n#include <toml++/toml.hpp>\n'}
    failures = 0
    for rel, text in list(cases.items()) + [(None, None)]:
        with tempfile.TemporaryDirectory() as root:
            files = dict(fine)
            if rel:
                files[rel] = text
            for r, t in files.items():
                os.makedirs(os.path.join(root, os.path.dirname(r)), exist_ok=True)
                with open(os.path.join(root, r), "w") as f:
                    f.write(t)
            found = check(root)
            if rel is None and found:
                print("self-test: a clean tree reports", found)
                failures += 1
            if rel is not None and not any(p.startswith(rel + ":") for p in found):
                print("self-test: not caught:", rel, text.strip())
                failures += 1
    print(f"layering self-test: {len(cases)} broken trees, {failures} not caught")
    return 1 if failures else 0


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    print(f"layering: {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
