#!/usr/bin/env python
"""Instructions per right-hand side, counted by valgrind's callgrind: a measure of a kernel
change that does not move with the machine's load.

    python benchmarks/count_rhs.py double_pendulum huang_two_link [--calls 40000]

Wall or CPU time on a shared machine moves by several per cent between runs, more than many
kernel changes are worth; callgrind counts the instructions executed, whatever else the machine
does. For each model this runs a child process twice under callgrind, with `PYTHONHASHSEED=0`:
it loads the model and calls `solvers.common.f_eval` in run.py's numba loop (`ours_rhs`), 1,000 times and
1,000 + `--calls` times; the difference of the two totals over `--calls` is one right-hand side
(the import, the model's compile and the kernels' loading cancel). The loop is cached like the
kernels, so the children compile nothing once a first run (outside valgrind, done here) has.
Repeated runs of one build agree within about 250 instructions per call. An instruction count
is not a time (a chain of dependent multiplications takes longer than as many independent
ones): confirm a change by timing it too (`run.py`, `perf_rhs.py`).

Needs valgrind (Debian package valgrind); each model takes a minute or two.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

import flexmbs  # before numba: flexmbs then compiles for the CPU its FMUs carry (_cache)

import run  # the benchmarks' numba loop of right-hand sides (run.ours_rhs)

FIRST = 1000    # calls of the shorter run


def child(model: str, calls: int) -> None:
    """Load `model` and evaluate its right-hand side `calls` times at its initial state (one
    call more: ours_rhs checks its first)."""
    system = flexmbs.compile_model(flexmbs.load_model(model))
    block, _ = run.ours_rhs(system, system.x0)
    block(calls)


def collected(model: str, calls: int) -> int:
    """callgrind's instruction total of a child run of `calls` right-hand sides."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                           __file__, "--child", model, str(calls)], env=env, capture_output=True, text=True)
    m = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode != 0 or not m:
        sys.exit(f"callgrind run of {model} failed:\n{done.stderr[-2000:]}")
    return int(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="shipped models' names or model files")
    ap.add_argument("--calls", type=int, default=40000, help="right-hand sides in the difference")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.models[0], int(args.models[1]))
        return
    if shutil.which("valgrind") is None:
        sys.exit("count_rhs.py needs valgrind (Debian: apt install valgrind)")
    for model in args.models:
        child(model, 1)     # compiles or loads the kernels and the loop outside valgrind
        short, long = collected(model, FIRST), collected(model, FIRST + args.calls)
        print(f"{model}: {(long - short) / args.calls:,.0f} instructions per right-hand side", flush=True)


if __name__ == "__main__":
    main()
