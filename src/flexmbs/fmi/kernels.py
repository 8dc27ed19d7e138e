"""Ready-compiled kernels for a plant FMU: compiled at build time for numba's generic CPU and
carried in resources/kernels, so that on another machine with the same OS, architecture,
Python minor version and numba version the first instantiation compiles nothing
(flexmbs_fmu.bundle.ready_kernels puts them where numba looks).

How: the built FMU is run in a new process of this interpreter (fmpy, the FMU's own sources,
NUMBA_CPU_NAME=generic) through initialisation, a few steps with every solver method and every
output read; its kernels are compiled into this user's cache (once per version of the sources:
later builds load them), and a run that compiles nothing names the index files it loaded and
the entries of each it loaded. Each index travels rewritten to name those entries alone, with
their object files (an entry left in without its file would, on the receiving machine, name
whatever that machine keeps under its name), and a manifest of their digests: the FMU carries
what it runs, not every specialisation this user's cache happens to hold (after `build --all`
each plant FMU carried the kernels of every route, 12-13 MB, where Huang's arm alone needs 5.6).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

from flexmbs._cache import kernel_cache, kernel_lock
from flexmbs.compiling import Compiling
from flexmbs_fmu.bundle import index_bytes, read_index

# [s] compiling the kernels of a first FMU from an empty cache (three methods, one route), wall
# time on the two-core development machine: 63-76 s one route at a time, 81-96 s two side by
# side (build --all, 2026-11-28); the estimate said until this machine has its own
FIRST_FMU_COMPILE = 90.0

# The run in a new process: instantiate, initialise, step and read every output, per method.
WARM_UP = r"""
import json, shutil, sys
import numba
from numba.core.caching import IndexDataCacheFile
from fmpy import extract, read_model_description

# every cache entry the run loads, by index file: the entries the FMU carries
loaded = {}
_load_data = IndexDataCacheFile._load_data
def _record(self, name):
    data = _load_data(self, name)       # raises OSError when the file is gone: a miss
    loaded.setdefault(self._index_path, set()).add(name)
    return data
IndexDataCacheFile._load_data = _record

from fmpy.fmi2 import FMU2Slave

path, out = sys.argv[1], sys.argv[2]
md = read_model_description(path)
h = float(md.defaultExperiment.stepSize)
vr = {v.name: v.valueReference for v in md.modelVariables}
outputs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
folder = extract(path)
for method in ("rk4", "dopri5", "implicit", "radau"):
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=folder, modelIdentifier=md.coSimulation.modelIdentifier,
                    instanceName=method)
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.setString([vr["solver.method"]], [method])
    fmu.setReal([vr["solver.step"]], [h / 4])
    fmu.exitInitializationMode()
    for k in range(3):
        fmu.getReal(outputs[:1])      # a state output alone: the state level
        fmu.getReal(outputs)          # every output: the full evaluation
        try:
            fmu.doStep(currentCommunicationPoint=k * h, communicationStepSize=h)
        except Exception:             # a step this method refuses (too stiff): its kernels are compiled
            break
    fmu.terminate()
    fmu.freeInstance()
shutil.rmtree(folder, ignore_errors=True)
misses, functions = 0, []
for name, module in list(sys.modules.items()):
    if not name.startswith("flexmbs."):
        continue
    for obj in list(vars(module).values()):
        if not isinstance(obj, numba.core.dispatcher.Dispatcher) or obj._cache is None:
            continue
        misses += sum(obj.stats.cache_misses.values())
        if obj.stats.cache_hits:
            functions.append(f"{obj.py_func.__module__}.{obj.py_func.__qualname__}")
json.dump({"used": {index: sorted(names) for index, names in sorted(loaded.items())}, "misses": misses,
           "functions": sorted(set(functions))}, open(out, "w"))
"""


def _run(fmu: Path, work: Path, log: Path) -> dict:
    """Run WARM_UP on `fmu` in the folder `work`, its compiles logged to `log` (which appears
    when a first compile begins: flexmbs._cache, FLEXMBS_COMPILE_LOG)."""
    out = work / "warm_up.json"
    env = {**os.environ, "FLEXMBS_FMU_SOURCES": "bundle", "NUMBA_CPU_NAME": "generic",
           "FLEXMBS_COMPILE_LOG": str(log)}
    for key in ("NUMBA_CPU_FEATURES", "NUMBA_CACHE_DIR"):
        env.pop(key, None)
    run = subprocess.run([sys.executable, "-c", WARM_UP, str(fmu.resolve()), str(out)], capture_output=True, text=True,
                         env=env, cwd=work)
    if run.returncode != 0:
        raise RuntimeError(f"the run that compiles the FMU's kernels failed:\n{run.stderr[-3000:]}")
    return json.loads(out.read_text())


def _estimate(folder: Path, log: Path, functions: list[str]) -> float:
    """CPU seconds it took to compile `functions` from nothing, as measured when they were
    compiled here (kept in folder/compile-seconds.json)."""
    record = folder / "compile-seconds.json"
    try:
        known = json.loads(record.read_text())
    except (OSError, ValueError):   # none yet (or unreadable): the estimate starts afresh
        known = {}
    if log.is_file():
        fresh: dict[str, float] = {}
        for line in log.read_text().splitlines():
            row = json.loads(line)
            if row["depth"] == 0:
                fresh[row["function"]] = fresh.get(row["function"], 0.0) + row["seconds"]
        known.update(fresh)
        # whole or not at all: builds side by side (fmi/batch.py) read it as another writes
        partial = record.with_name(f"{record.name}.{os.getpid()}")
        partial.write_text(json.dumps(known, indent=1))
        os.replace(partial, record)
    return round(sum(known.get(f, 0.0) for f in functions), 1)


def index_data_names(raw: bytes) -> set[str]:
    """The data files a numba cache index (its bytes) names."""
    return set(read_index(raw)[2].values())


def snapshot(generic: Path, used: dict[str, list[str]]) -> dict[str, bytes]:
    """For each index file in `used` (its path: the data files a run loaded from it), the index
    rewritten to name those files alone (its numba version and source stamp as they are) and
    their bytes, by path relative to the
    cache's `generic` folder. Each index is read with its data files under that kernel's lock
    (_cache.kernel_lock, which every save of the kernel holds): a build beside this one
    (fmi/batch.py) may be saving the same kernel for its own route, and files read part before
    and part after its save did not match (a Huang's-arm FMU built beside the composite route's
    compile carried an index whose digest failed on the receiving machine, 2026-11-28). Raises
    RuntimeError when a loaded file is no longer in its index."""
    files: dict[str, bytes] = {}
    for index, names in sorted(used.items()):
        index = Path(index)
        with kernel_lock(index):
            numba_version, stamp, entries = read_index(index.read_bytes())
            gone = set(names) - set(entries.values())
            if gone:
                raise RuntimeError(f"{index} no longer names the kernels the FMU's run loaded ({sorted(gone)}): "
                                   "another process rewrote it; build again")
            kept = {key: name for key, name in entries.items() if name in names}
            files[index.relative_to(generic).as_posix()] = index_bytes(numba_version, stamp, kept)
            for name in sorted(names):
                files[(index.parent / name).relative_to(generic).as_posix()] = (index.parent / name).read_bytes()
    return files


def carry_kernels(fmu: Path, bundle_root: Path, route: str) -> tuple[dict, dict[str, bytes]]:
    """Compile (or load from this user's cache) the generic-CPU kernels the FMU at `fmu` runs
    from its sources `bundle_root` (the folder holding the bundled flexmbs), a plant on the
    forward-dynamics `route` (kernels/structs.ROUTES: each compiles kernels of its own, so the
    compile notice's estimate is the one of the same route; 63-96 s measured). Returns the
    manifest (resources/kernels/manifest.json) and the files to carry (their bytes, as
    `snapshot` read them) by path relative to the cache's generic folder. Raises RuntimeError
    when the run fails or still compiles."""
    base = kernel_cache(bundle_root / "flexmbs")
    with tempfile.TemporaryDirectory(prefix="flexmbs_kernels_") as tmp:
        work, log = Path(tmp), Path(tmp) / "compiles.jsonl"
        # the run's output is captured, and its startup alone takes seconds: this process says
        # it is compiling once the run has begun a compile
        with Compiling(f"fmu build {route}", f"the {fmu.name.split('.')[0]} FMU (every solver method, {route} route, "
                       "for numba's generic CPU)",
                       first=FIRST_FMU_COMPILE, started=log.exists):
            found = _run(fmu, work, log)
            if found["misses"]:
                found = _run(fmu, work, work / "again.jsonl")   # now every kernel loads: the set it needs
            if found["misses"]:
                raise RuntimeError(f"the FMU's kernels still compiled in a second run ({found['misses']} compiles): "
                                   "numba does not cache them")
        seconds = _estimate(base, log, found["functions"])
    generic = base / "generic"
    files = snapshot(generic, {index: names for index, names in found["used"].items()
                               if Path(index).is_relative_to(generic)})   # ours, not other numba code's
    manifest = {"python": "%d.%d" % sys.version_info[:2], "numba": version("numba"), "machine": platform.machine(),
                "files": {rel: hashlib.sha256(data).hexdigest() for rel, data in sorted(files.items())},
                "index": sorted(rel for rel in files if rel.endswith(".nbi")), "seconds": seconds}
    return manifest, files
