#!/usr/bin/env python
"""Where one right-hand side spends its time, by numba function, sampled with Linux `perf`.

    python benchmarks/perf_rhs.py huang_two_link [--seconds 5] [--top 15]

numba's machine code has no symbols that perf can read. This process therefore writes the perf
map /tmp/perf-<pid>.map (perf's format for JIT code: start address, size, name), with the
address of every function in the loaded kernels, as llvmlite's execution engine gives it, the
size up to the next one (4 KiB for the last) and the Python-qualified name numba mangles; it
removes the map at the end. Then it calls `solvers.common.f_eval` in a numba loop (run.py's
`ours_rhs`) while `perf record` samples this process, and prints `perf report`'s share of each
function. Functions that numba inlines (`kernel(inline=True)`) count towards their caller.

The kernels are compiled anew in an empty cache folder of this process's own (about a minute):
numba's cached code loads with no function addresses to map, and the map came out empty.

Needs `perf` (Debian package linux-perf) and a kernel.perf_event_paranoid that lets a user
sample their own processes (1 or less, or root).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
_CACHE = tempfile.TemporaryDirectory(prefix="perf_rhs-")   # see the module docstring
os.environ["XDG_CACHE_HOME"] = _CACHE.name
os.environ["NUMBA_CACHE_DIR"] = _CACHE.name   # a user's NUMBA_CACHE_DIR would win over it

import flexmbs  # noqa: E402  (before numba: the kernels' cache and CPU)
from numba.core.registry import cpu_target  # noqa: E402

import run  # noqa: E402
from flexmbs.solvers.common import f_eval  # noqa: E402


def qualified(symbol: str) -> str:
    """flexmbs.kernels.body.body_terms for numba's _ZN7flexmbs7kernels4body10body_termsB...:
    the Itanium-style length-prefixed parts before the ABI tag; the symbol itself otherwise."""
    m = re.match(r"_ZN((?:\d+\w+?)+?)B\d", symbol)
    if not m:
        return symbol[:80]
    rest, parts = m.group(1), []
    while rest and rest[0].isdigit():
        n = re.match(r"\d+", rest).group(0)
        parts.append(rest[len(n):len(n) + int(n)])
        rest = rest[len(n) + int(n):]
    return ".".join(parts)


def write_perf_map(dispatchers: list, path: Path) -> int:
    """Write the perf map `path` for the functions defined in the libraries of `dispatchers`'
    compiled overloads; returns how many."""
    engine = cpu_target.target_context.codegen()._engine
    names = {fn.name for d in dispatchers for cres in d.overloads.values()
             for fn in cres.library._final_module.functions if not fn.is_declaration}
    starts = sorted((a, n) for n in names if (a := engine.get_function_address(n)))
    with open(path, "w") as out:
        for (a, n), (b, _) in zip(starts, starts[1:] + [(starts[-1][0] + 4096, "")]):
            out.write(f"{a:x} {b - a:x} {qualified(n)}\n")
    return len(starts)


def sample(block, seconds: float) -> str:
    """perf report (by symbol) of this process while it runs block(20000) for `seconds` [s]."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "perf.data"
        rec = subprocess.Popen(["perf", "record", "-q", "-F", "5000", "-p", str(os.getpid()), "-o", str(data),
                                "--", "sleep", str(seconds)], stderr=subprocess.PIPE, text=True)
        end = time.time() + seconds + 1.0
        while time.time() < end and rec.poll() is None:
            block(20000)
        if rec.wait() != 0:
            sys.exit(f"perf record failed: {rec.stderr.read().strip()}")
        return subprocess.run(["perf", "report", "-i", str(data), "--sort", "symbol", "--stdio"],
                              capture_output=True, text=True, check=True).stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="a shipped model's name or a model file")
    ap.add_argument("--seconds", type=float, default=5.0, help="sampling time [s]")
    ap.add_argument("--top", type=int, default=15, help="functions listed")
    args = ap.parse_args()
    if shutil.which("perf") is None:
        sys.exit("perf_rhs.py needs Linux perf (Debian: apt install linux-perf)")
    system = flexmbs.compile_model(flexmbs.load_model(args.model))
    block, _ = run.ours_rhs(system, system.x0)
    perf_map = Path(f"/tmp/perf-{os.getpid()}.map")    # where perf looks for this process's map
    try:
        print(f"{write_perf_map([run.repeat_f_eval, f_eval], perf_map)} functions mapped", file=sys.stderr)
        report = sample(block, args.seconds)
    finally:
        perf_map.unlink(missing_ok=True)
    rows = [line for line in report.splitlines() if line.strip() and not line.startswith("#")]
    print(f"{args.model}: share of the samples while f_eval runs in a numba loop")
    for line in rows[:args.top]:
        share, _, name = line.split(None, 2)     # "39.98%  [.] flexmbs.kernels...  -  -"
        print(f"  {share:>7}  {name.split()[0]}")


if __name__ == "__main__":
    main()
