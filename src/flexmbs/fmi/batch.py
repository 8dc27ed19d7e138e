"""Many FMU builds side by side (`flexmbs build --all`, `-j N`).

A plant's first build on a machine spends a minute or more compiling the kernels its FMU
carries (fmi/kernels.py), and the plants of one forward-dynamics route (kernels/structs.ROUTES)
share them. So the first plant of each route starts first, and the other plants of a route
start only once that first build has ended: they then load its kernels instead of compiling
them a second time (when it failed, the next of them takes its place). Blocks and the routes'
first builds run side by side, as workers allow. The builds run in worker processes (spawned,
so no process shares pythonfmu's import state or numba's with another); their compiles and
validations are processes of their own, so N workers keep N cores busy. Every build ends in an
Outcome, whatever happens to the others: a user error, a bug, a worker that died.
"""

from __future__ import annotations

import os
import signal
import warnings
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Callable, Iterable, Literal, Optional

from flexmbs.compile import compile_model
from flexmbs.kernels.structs import route_of
from flexmbs.model import load_model
from flexmbs.model.catalog import resolve
from flexmbs.user_errors import USER_ERRORS, message, show_warning

from .build import BuildError, Built, build, build_component

MAX_DEFAULT_JOBS = 4   # a compile holds about 1 GB; more than four rarely has the memory to spare


@dataclass(frozen=True)
class Job:
    """One FMU to build: `what` a model file or shipped model name (kind "plant") or a block
    name (kind "block"); `route` the plant's forward-dynamics route when its build compiles the
    route's kernels, else None (a block, a model that does not load, a build without kernels)."""

    what: str
    kind: Literal["plant", "block"]
    route: Optional[str] = None


@dataclass(frozen=True)
class Options:
    """What every build of a batch is asked for (flexmbs build's options)."""

    out_dir: str
    check: bool
    standalone: bool
    kernels: bool
    fmi_version: int


@dataclass(frozen=True)
class Outcome:
    """How a build ended: `built` when it did, else `failed`, the message saying why."""

    job: Job
    built: Optional[Built] = None
    failed: Optional[str] = None


Work = Callable[[Job, Options], Outcome]


def default_jobs() -> int:
    """The CPUs this process may run on, at most MAX_DEFAULT_JOBS."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_DEFAULT_JOBS))


def plant_route(what: str) -> Optional[str]:
    """The forward-dynamics route of the model file or shipped model `what`; None when it does
    not load or compile, whatever the error: its build then fails with its own message, in
    turn, as the other builds go on. Its warnings are left to the build too."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return route_of(compile_model(load_model(resolve(what))).arrays)
        except Exception:  # noqa: BLE001 - reported by the model's own build
            return None


def order(jobs: Iterable[Job]) -> tuple[list[Job], dict[str, list[Job]]]:
    """The jobs that can start at once, in the order to start them (the first plant of each
    route, then the blocks and plants without a route), and, per route, the plants that wait
    for that route's first build to end."""
    first: list[Job] = []
    others: list[Job] = []
    waiting: dict[str, list[Job]] = {}
    for job in jobs:
        if job.route is None:
            others.append(job)
        elif job.route in waiting:
            waiting[job.route].append(job)
        else:
            waiting[job.route] = []
            first.append(job)
    return first + others, waiting


def release(outcome: Outcome, ready: deque, waiting: dict[str, list[Job]]) -> None:
    """A build ended: when it was its route's first and built, the route's other plants can
    start (they load its kernels); when it failed, the next of them becomes the route's first,
    and the rest still wait (each would compile the same kernels at once)."""
    followers = waiting.get(outcome.job.route)
    if not followers:
        return
    if outcome.failed is None:
        ready.extend(waiting.pop(outcome.job.route))
    else:
        ready.appendleft(followers.pop(0))


def build_one(job: Job, options: Options) -> Outcome:
    """Build one FMU; a user error (bad model, failed validation, a file) is the outcome's
    `failed` message, anything else raises."""
    try:
        if job.kind == "plant":
            built = build(job.what, options.out_dir, check=options.check, standalone=options.standalone,
                          kernels=options.kernels, fmi_version=options.fmi_version)
        else:
            built = build_component(job.what, options.out_dir, check=options.check, standalone=options.standalone,
                                    fmi_version=options.fmi_version)
    except (BuildError, *USER_ERRORS) as exc:
        return Outcome(job, failed=message(exc))
    return Outcome(job, built=built)


def _start_worker(debug: bool) -> None:
    """A worker ignores Ctrl-C while idle (no traceback of its own; the parent stops the batch)
    and shows warnings as the command line does."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not debug:
        warnings.showwarning = show_warning


def _in_worker(work: Work, job: Job, options: Options) -> Outcome:
    """work(job, options) in a worker, which Ctrl-C interrupts only while it works: its compile
    and validation processes then stop too (they start with the default disposition)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return work(job, options)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def run(jobs: list[Job], options: Options, workers: int, started: Callable[[Job, int], None],
        ended: Callable[[Outcome], None], work: Work = build_one, debug: bool = False) -> list[Outcome]:
    """Build `jobs` (work(job, options): build_one, or a module-level function the workers can
    import) with up to `workers` at a time in `order`: `started(job, k)` as the k-th build
    starts, `ended(outcome)` as each ends. One worker builds here, one job after another (an
    unexpected error then raises, with its traceback under --debug). Returns the outcomes in
    the order the builds ended."""
    ready_list, waiting = order(jobs)
    ready = deque(ready_list)
    outcomes: list[Outcome] = []

    def end(outcome: Outcome) -> None:
        outcomes.append(outcome)
        ended(outcome)
        release(outcome, ready, waiting)

    if workers <= 1 or len(jobs) <= 1:
        while ready:
            job = ready.popleft()
            started(job, len(outcomes) + 1)
            end(work(job, options))
    else:
        _run_in_pool(ready, waiting, options, workers, started, end, work, debug)
    return outcomes


def _run_in_pool(ready: deque, waiting: dict[str, list[Job]], options: Options, workers: int,
                 started: Callable[[Job, int], None], end: Callable[[Outcome], None], work: Work,
                 debug: bool) -> None:
    """run's builds in `workers` spawned processes. An unexpected error in a build fails that
    build alone; a worker that dies (the out-of-memory killer) fails the builds not ended."""
    count = 0
    running: dict[Future, Job] = {}
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"), initializer=_start_worker,
                             initargs=(debug,)) as pool:
        try:
            while ready or running:
                while ready and len(running) < workers:
                    job = ready.popleft()
                    count += 1
                    started(job, count)
                    running[pool.submit(_in_worker, work, job, options)] = job
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    job = running[future]
                    try:
                        outcome = future.result()
                    except BrokenProcessPool:
                        raise
                    except Exception as exc:  # noqa: BLE001 - a bug in one build fails that build only
                        outcome = Outcome(job, failed=f"{type(exc).__name__}: {exc} (not a model error; "
                                                      "`flexmbs --debug build -j 1 ...` shows where it came from)")
                    del running[future]
                    end(outcome)
        except BrokenProcessPool:
            lost = [*running.values(), *ready, *(j for js in waiting.values() for j in js)]
            ready.clear()
            waiting.clear()
            for job in lost:
                end(Outcome(job, failed="a build worker died (killed for lack of memory?): not built; build it "
                                        "again, with -j 1 to run one build at a time"))
        except KeyboardInterrupt:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
