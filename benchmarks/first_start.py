#!/usr/bin/env python
"""First starts (issue "The FMU travels"): how long a received FMU takes from a new process to
the end of its first step, and where the package's own cold start goes.

    python benchmarks/first_start.py [--runs 3] [--model huang_two_link] [--skip other,simulate]

Cases, each in new processes with an empty HOME (so an empty cache), CPU time (the process and
its children, getrusage) and wall time of the whole process, min / median / max over --runs:

* same:       the FMU in a second virtual environment of this Python holding only numpy,
              scipy, numba, llvmlite, pyyaml, threadpoolctl and fmpy (the versions installed here), through
              fmpy: instantiate, initialise, one step; it loads the kernels it carries;
* other:      the same from another minor version of Python (the newest found with pyenv or
              on PATH), which compiles the kernels (one run: minutes);
* standalone: the --standalone build through the C host (tests/c_host.c) with an environment
              holding only an empty HOME and PATH=/usr/bin:/bin;
* generic:    what numba's generic CPU target (the kernels an FMU carries) costs in speed:
              `flexmbs.simulate` of the model for 10 s, in processes alternating between the
              host CPU's kernels and the generic ones (both cached), 5 timed runs each; the
              ratio generic / host of the per-process best CPU times, min / median / max;
* simulate:   `flexmbs.simulate` of the model for one output step from an empty numba cache
              in this venv (one run: minutes), and its compile table: every function numba
              compiled, its signature's first type, the seconds of CPU it took (with and without
              the functions compiled inside it) and the object code cached for it, the
              functions compiled for more than one signature, and a second process on
              that cache (which should compile nothing).

Goals (issue 25): same and standalone under 5 s to the end of the first step; simulate from an
empty cache under 20 s of CPU (a goal for later).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

ONE_STEP = """
import sys
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave
md = read_model_description(sys.argv[1])
fmu = FMU2Slave(guid=md.guid, unzipDirectory=extract(sys.argv[1]), modelIdentifier=md.coSimulation.modelIdentifier,
                instanceName="first")
fmu.instantiate()
fmu.setupExperiment(startTime=0.0)
fmu.enterInitializationMode()
fmu.exitInitializationMode()
fmu.doStep(currentCommunicationPoint=0.0, communicationStepSize=1e-3)
"""

COLD_SIMULATE = """
import sys
import flexmbs
from flexmbs.model.catalog import resolve
flexmbs.simulate(flexmbs.load_model(resolve(sys.argv[1])), t_end=0.01)
"""


SPEED = """
import sys, time
import flexmbs
from flexmbs.model.catalog import resolve
model = flexmbs.load_model(resolve(sys.argv[1]))
flexmbs.simulate(model, t_end=0.01)
best = float("inf")
for _ in range(5):
    start = time.process_time()
    flexmbs.simulate(model, t_end=10.0)
    best = min(best, time.process_time() - start)
print(best)
"""


def generic_cost(model: str, rounds: int) -> dict:
    """Best CPU seconds of a 1 s simulation with the host's and the generic kernels, alternating."""
    times: dict[str, list[float]] = {"host": [], "generic": []}
    for _ in range(rounds):
        for target in times:
            env = {**os.environ, "NUMBA_CPU_NAME": "generic"} if target == "generic" else \
                {**os.environ, "FLEXMBS_CPU": "host"}    # flexmbs compiles for the generic CPU unless told
            if target == "host":
                env.pop("NUMBA_CPU_NAME", None)
            run = subprocess.run([sys.executable, "-c", SPEED, model], env=env, capture_output=True, text=True,
                                 check=True)
            times[target].append(float(run.stdout.split()[-1]))
    ratios = [g / h for g, h in zip(times["generic"], times["host"])]
    print(f"generic     10 s of {model}: host {spread(times['host'])} s, generic {spread(times['generic'])} s of CPU; "
          f"generic / host {spread(ratios)} ({rounds} rounds)", flush=True)
    return {"case": "generic", **times, "ratio": ratios}


def timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of `cmd` in a new process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed:\n{run.stderr[-2000:]}")
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def spread(values: list[float]) -> str:
    return f"{min(values):6.2f} / {statistics.median(values):6.2f} / {max(values):6.2f}"


def runs(name: str, cmd: list[str], n: int, work: Path, extra: dict | None = None) -> dict:
    """n runs, each with a new empty HOME."""
    cpu, wall = [], []
    for k in range(n):
        home = work / f"home {name} {k}"
        home.mkdir()
        c, w = timed(cmd, {"HOME": str(home), "PATH": "/usr/bin:/bin", **(extra or {})})
        cpu.append(c)
        wall.append(w)
    print(f"{name:11s} CPU {spread(cpu)} s   wall {spread(wall)} s   ({n} runs, min / median / max)", flush=True)
    return {"case": name, "cpu_s": cpu, "wall_s": wall}


def venv(python: str, folder: Path, pins: bool) -> Path:
    subprocess.run([python, "-m", "venv", str(folder)], check=True)
    dists = ("numpy", "scipy", "numba", "llvmlite", "PyYAML", "threadpoolctl", "FMPy")
    subprocess.run([str(folder / "bin" / "python"), "-m", "pip", "install", "-q",
                    *(f"{d}=={version(d)}" if pins else d for d in dists)], check=True)
    return folder / "bin" / "python"


def c_host_args(work: Path, fmu: Path) -> list[str]:
    from fmpy import extract, read_model_description
    from flexmbs.fmi.frontend import compiler

    exe = work / "c_host"
    subprocess.run([compiler(), "-O1", "-o", str(exe), str(HERE.parent / "tests" / "c_host.c"), "-ldl"], check=True)
    md = read_model_description(str(fmu))
    folder = Path(extract(str(fmu), unzipdir=str(work / "standalone unpacked")))
    binary = folder / "binaries" / "linux64" / f"{md.coSimulation.modelIdentifier}.so"
    return [str(exe), str(binary), (folder / "resources").as_uri(), md.guid, "0.001", "1", "0", "0"]


def compile_table(log: Path, cache: Path) -> list[dict]:
    """Rows of the compile log with the object code cached for each function (its .nbc files)."""
    sizes: dict[str, int] = {}
    for nbc in cache.rglob("*.nbc"):
        key = f"{nbc.parent.name}/{nbc.name.split('-')[0]}"     # folder/module.qualname
        sizes[key] = sizes.get(key, 0) + nbc.stat().st_size
    rows = []
    for line in log.read_text().splitlines():
        row = json.loads(line)
        module, _, qualname = row["function"].rpartition(".")
        parts = module.split(".")
        row["cached_MB"] = sizes.get(f"{parts[-2]}/{parts[-1]}.{qualname}", 0) / 1e6 if len(parts) > 1 else 0.0
        rows.append(row)
    return rows


def cold_simulate(model: str, work: Path) -> dict:
    home = work / "home simulate"
    home.mkdir()
    log = home / "compiles.jsonl"
    env = {**os.environ, "XDG_CACHE_HOME": str(home / "cache"), "FLEXMBS_COMPILE_LOG": str(log)}
    env.pop("NUMBA_CACHE_DIR", None)
    cpu, wall = timed([sys.executable, "-c", COLD_SIMULATE, model], env)
    rows = compile_table(log, home / "cache")
    cached = sum(p.stat().st_size for p in (home / "cache").rglob("*.nb*"))
    print(f"simulate    CPU {cpu:6.1f} s   wall {wall:6.1f} s   from an empty cache: {len(rows)} functions compiled, "
          f"{sum(r['own_seconds'] for r in rows):.1f} s of CPU in numba, {cached / 1e6:.0f} MB cached")
    again = collections.Counter(r["function"] for r in rows if r["function"].startswith("flexmbs"))
    print("  compiled for more than one signature:",
          ", ".join(f"{f.split('.', 2)[-1]} {n}" for f, n in again.most_common() if n > 1) or "none")
    log.unlink()
    cpu2, wall2 = timed([sys.executable, "-c", COLD_SIMULATE, model], env)
    print(f"  a second process on that cache: CPU {cpu2:.1f} s, wall {wall2:.1f} s, "
          f"{len(log.read_text().splitlines()) if log.exists() else 0} functions compiled")
    print("\n  own s  incl s  cached MB  depth  function (the entry points Python calls first, then by own time)")
    for r in sorted(rows, key=lambda r: (-r["seconds"] if r["depth"] == 0 else 0, -r["own_seconds"]))[:40]:
        print(f"  {r['own_seconds']:5.1f}  {r['seconds']:6.1f}  {r['cached_MB']:9.1f}  {r['depth']:5d}  "
              f"{r['function']}")
    for r in rows:
        r["signature"] = r["signature"][:120]
    return {"case": "simulate", "cpu_s": [cpu], "wall_s": [wall], "cached_MB": cached / 1e6,
            "second_cpu_s": cpu2, "compiles": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model", default="huang_two_link")
    parser.add_argument("--skip", default="", help="comma-separated cases to leave out")
    parser.add_argument("--json", action="store_true", help="one JSON line per case on stdout")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    from flexmbs.fmi.build import build
    from flexmbs.model.catalog import resolve
    from test_fmu_travel import _other_python

    results = []
    with tempfile.TemporaryDirectory(prefix="flexmbs_first_") as tmp:
        work = Path(tmp)
        if {"same", "other"} - skip:
            fmu = build(resolve(args.model), work / "fmus").path
            print(f"{fmu.name}: {fmu.stat().st_size / 1e6:.1f} MB", flush=True)
        if "same" not in skip:
            python = venv(sys._base_executable, work / "venv same", pins=True)
            results.append(runs("same", [str(python), "-c", ONE_STEP, str(fmu)], args.runs, work))
        other = _other_python()
        if "other" not in skip and other:
            python = venv(other, work / "venv other", pins=False)
            results.append(runs(f"other {other.split('/')[-3]}", [str(python), "-c", ONE_STEP, str(fmu)], 1, work))
        if "standalone" not in skip:
            alone = build(resolve(args.model), work / "standalone", standalone=True).path
            from flexmbs.fmi.standalone import unpacked_size

            print(f"standalone {alone.name}: {alone.stat().st_size / 1e6:.1f} MB, "
                  f"{unpacked_size(alone) / 1e6:.1f} MB unpacked", flush=True)
            results.append(runs("standalone", c_host_args(work, alone), args.runs, work))
        if "generic" not in skip:
            results.append(generic_cost(args.model, args.runs))
        if "simulate" not in skip:
            results.append(cold_simulate(args.model, work))
    if args.json:
        for r in results:
            print(json.dumps(r))


if __name__ == "__main__":
    main()
