"""The notice that numba kernels are compiling: work that loads cached kernels in well under
NOTICE_AFTER seconds takes a minute or more when it compiles them. Once the work has lasted
NOTICE_AFTER seconds (and, for work given a `started` check, once that says a compile has
begun), a line on the `flexmbs` logger says what is compiling and about how long it takes (with
`progress`, a bar counts the seconds; without, a line every STILL_EVERY seconds), and the time
is recorded per kind of work, in the cache folder of this process's CPU target, as the next
estimate. Used around a run's preparation
(warmup.prepare) and around the run that compiles the kernels an FMU carries
(fmi/kernels.carry_kernels, with `started`: that run's startup alone takes seconds).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Callable

from ._cache import cpu_target, numba_cache_folder, private_folder

NOTICE_AFTER = 2.0   # [s] preparing longer than this is compiling (loading cached kernels takes less)
STILL_EVERY = 30.0   # [s] without a bar, a line this often says the compile goes on (not a hang)
# [s] a first compile of one run's kernels (one route, one method) from an empty cache, wall
# time on the two-core development machine (benchmarks/first_start.py, simulate case): the
# estimate said until this machine has its own
FIRST_COMPILE = 70.0
_LOG = logging.getLogger("flexmbs")


def _record() -> Path:
    """The compile times of this process's CPU target, in its cache folder: a compile for one
    target says nothing of one for another."""
    return numba_cache_folder() / cpu_target() / "compile_times.json"


def last_compile(kind: str) -> float | None:
    """Seconds the longest compile of `kind` for this CPU target took on this machine, if recorded."""
    try:
        return float(json.loads(_record().read_text())[kind])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remember(kind: str, seconds: float) -> None:
    """Record `seconds` for `kind` unless a longer compile of it is on record: a compile that
    found part of its kernels cached (11 s, where the first took 141 s) must not become the
    estimate of the next whole one (a new flexmbs version has a record of its own)."""
    try:
        private_folder(numba_cache_folder(), cpu_target())   # the kernels' own folder, made as they make it
        data = json.loads(_record().read_text()) if _record().is_file() else {}
        data[kind] = max(round(seconds, 1), float(data.get(kind, 0.0)))
        _record().write_text(json.dumps(data))
    except (OSError, ValueError):
        pass   # a missing estimate next time is all that is lost


class Compiling:
    """`with Compiling(kind, what):` around work that compiles or loads kernels. It compiles
    when it lasts longer than NOTICE_AFTER seconds or, given `started` (a check that a compile
    has begun, for work whose own startup takes longer: a new process), once that says so. Then
    a notice (with the longest compile of `kind` on this machine, else `first` [s]), and on
    leaving, the seconds recorded under `kind` and a line saying the kernels are cached.
    `seconds`: how long the work took [s]."""

    def __init__(self, kind: str, what: str, progress: bool = False, first: float = FIRST_COMPILE,
                 started: Callable[[], bool] | None = None) -> None:
        self.kind, self.what, self.progress, self.first, self.started = kind, what, progress, first, started
        self.seconds = 0.0
        self._done = threading.Event()
        self._watcher = threading.Thread(target=self._notice, daemon=True)

    def _compiled(self) -> bool:
        return self.started() if self.started else self.seconds > NOTICE_AFTER

    def _notice(self) -> None:
        """After NOTICE_AFTER seconds (and `started`) without the work done: say that it is
        compiling, with the longest compile of its kind here, then count the seconds."""
        if self._done.wait(NOTICE_AFTER):
            return
        while self.started and not self.started():
            if self._done.wait(0.5):
                return
        last = last_compile(self.kind)
        about = f"at most about {last:.0f} s, the longest it took on this machine" if last else \
            f"about {self.first:.0f} s on two free cores, longer on a busy machine"
        _LOG.warning("compiling the numba kernels of %s (once per machine and flexmbs version; %s)", self.what, about)
        if not self.progress:
            while not self._done.wait(STILL_EVERY):
                _LOG.warning("still compiling the numba kernels of %s: %.0f s so far%s", self.what,
                             time.perf_counter() - self._start, f" of about {last:.0f} s" if last else "")
            return
        from tqdm import tqdm

        with tqdm(total=round(last) if last else None, desc="compiling kernels", unit="s",
                  initial=round(NOTICE_AFTER), bar_format="{desc}: {n_fmt}{total_fmt} s elapsed" if not last else None) \
                as bar:
            while not self._done.wait(1.0):
                bar.update(1)

    def __enter__(self) -> Compiling:
        self._start = time.perf_counter()
        self._watcher.start()
        return self

    def __exit__(self, error_type: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._done.set()
        self._watcher.join()
        self.seconds = time.perf_counter() - self._start
        if error is None and self._compiled():
            remember(self.kind, self.seconds)
            _LOG.warning("compiled the numba kernels of %s in %.0f s; they are cached for later runs", self.what,
                         self.seconds)
