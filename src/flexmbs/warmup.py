"""The numba kernels a run needs, compiled (or loaded from the cache) before the run starts, so
that compile time is said as such and never counted as integration time, in a real-time factor
or in a progress bar's estimate.

numba compiles a kernel at its first call. Loading compiled kernels from the cache takes well
under NOTICE_AFTER seconds, compiling them about a minute or more: when preparing lasts longer than that, a
line on the `flexmbs` logger says so (and, with `progress`, a bar counts the seconds against the
time the longest compile of the same kind took on this machine, kept in the cache folder).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import warnings
from pathlib import Path

import numpy as np

from ._cache import cpu_target, numba_cache_folder, private_folder
from .kernels.structs import route_of
from .signals import Evaluator, output_width
from .solvers.stepper import Settings, StabilityWarning, Stepper
from .system import System

NOTICE_AFTER = 2.0   # [s] preparing longer than this is compiling
# [s] a first compile of one run's kernels (one route, one method) from an empty cache, wall
# time on the two-core development machine (benchmarks/first_start.py, simulate case): the
# estimate said until this machine has its own
FIRST_COMPILE = 70.0
_LOG = logging.getLogger("flexmbs")


def _record() -> Path:
    """The compile times of this process's CPU target, beside its kernels: a compile for one
    target says nothing of one for another."""
    return numba_cache_folder() / cpu_target() / "compile_times.json"


def _last_compile(kind: str) -> float | None:
    """Seconds the longest compile of `kind` for this CPU target took on this machine, if recorded."""
    try:
        return float(json.loads(_record().read_text())[kind])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _remember(kind: str, seconds: float) -> None:
    """Record `seconds` for `kind` unless a longer compile of it is on record: the FMU builds
    and the runs of this machine share a target and a record, and a compile that found part of
    its kernels cached (11 s, where the first took 141 s) must not become the estimate of the
    next whole one (a new flexmbs version has a record of its own)."""
    try:
        private_folder(numba_cache_folder(), cpu_target())   # the kernels' own folder, made as they make it
        data = json.loads(_record().read_text()) if _record().is_file() else {}
        data[kind] = max(round(seconds, 1), float(data.get(kind, 0.0)))
        _record().write_text(json.dumps(data))
    except (OSError, ValueError):
        pass   # a missing estimate next time is all that is lost


def _notice(kind: str, done: threading.Event, progress: bool) -> None:
    """After NOTICE_AFTER seconds without `done`: say that kernels are compiling (with the
    time the last compile of `kind` took here), then count the seconds while it lasts."""
    if done.wait(NOTICE_AFTER):
        return
    last = _last_compile(kind)
    about = f"at most about {last:.0f} s, the longest it took on this machine" if last else \
        f"about {FIRST_COMPILE:.0f} s on two free cores, longer on a busy machine"
    method, route = kind.split(" ", 1)
    _LOG.warning("compiling the numba kernels of the %s method on the %s route (once per machine and flexmbs version; "
                 "%s)", method, route, about)
    if not progress:
        done.wait()
        return
    from tqdm import tqdm

    with tqdm(total=round(last) if last else None, desc="compiling kernels", unit="s", initial=round(NOTICE_AFTER),
              bar_format="{desc}: {n_fmt}{total_fmt} s elapsed" if not last else None) as bar:
        while not done.wait(1.0):
            bar.update(1)


def prepare(system: System, settings: Settings, x: np.ndarray, inputs: np.ndarray, t: float = 0.0,
            progress: bool = False) -> float:
    """Compile or load every kernel a run of `system` with `settings` calls (the integrator
    entered for a zero-length step, the outputs evaluated once), on throwaway copies: nothing of
    the caller's changes. Returns the seconds it took (compiling, when above NOTICE_AFTER)."""
    kind = f"{settings.method} {route_of(system.arrays)}"   # what compiles: kernels/structs.ROUTES
    done = threading.Event()
    watcher = threading.Thread(target=_notice, args=(kind, done, progress), daemon=True)
    start = time.perf_counter()
    watcher.start()
    try:
        stepper = Stepper(system, settings)
        with warnings.catch_warnings():   # RK4's stability check warns in the run itself
            warnings.simplefilter("ignore", StabilityWarning)
            stepper.advance(t, x.copy(), t, inputs)
        y = np.zeros((1, output_width(system)))
        Evaluator(system, stepper.W).evaluate(np.array([t]), x[None, :].copy(), inputs[None, :], y)
    finally:
        done.set()
        watcher.join()
    seconds = time.perf_counter() - start
    if seconds > NOTICE_AFTER:
        _remember(kind, seconds)
        _LOG.warning("compiled the numba kernels in %.0f s; they are cached for later runs", seconds)
    return seconds
