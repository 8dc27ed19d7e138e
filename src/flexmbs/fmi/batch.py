"""Many FMU builds side by side (`flexmbs build --all`, `-j N`).

A plant's first build on a machine spends a minute or more compiling the kernels its FMU
carries (fmi/kernels.py), and the plants of one forward-dynamics route (kernels/structs.ROUTES)
share them. So the first plant of each route starts first, and the other plants of a route
start only once that first build has ended: they then load its kernels instead of compiling
them a second time. Blocks and the routes' first builds run side by side. The builds run in
worker processes (spawned, so no process shares pythonfmu's import state or numba's with
another); their compiles and validations are processes of their own, so N workers keep N cores
busy.
"""

from __future__ import annotations

import os
import signal
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Callable, Iterable, Optional

from flexmbs.user_errors import message
from flexmbs.compile import compile_model
from flexmbs.kernels.structs import route_of
from flexmbs.model import ModelError, load_model
from flexmbs.model.catalog import resolve

from .build import BuildError, Built, build, build_component

MAX_DEFAULT_JOBS = 4   # a compile holds about 1 GB; more than four rarely has the memory to spare


@dataclass(frozen=True)
class Job:
    """One FMU to build: `what` a model file or shipped model name (kind "plant") or a block
    name (kind "block"); `route` the plant's forward-dynamics route, None for a block or a
    model that does not load (its build then fails with the model's own message)."""

    what: str
    kind: str
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


def default_jobs() -> int:
    """The CPUs this process may run on, at most MAX_DEFAULT_JOBS."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_DEFAULT_JOBS))


def plant_route(what: str) -> Optional[str]:
    """The forward-dynamics route of the model file or shipped model `what`, None when it does
    not load (the build says why)."""
    try:
        return route_of(compile_model(load_model(resolve(what))).arrays)
    except (ModelError, BuildError, OSError):
        return None


def order(jobs: Iterable[Job]) -> tuple[list[Job], dict[str, list[Job]]]:
    """The jobs that can start at once, in the order to start them (the first plant of each
    route, then the blocks and the models that do not load), and, per route, the plants that
    wait for that route's first build to end."""
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
    except (BuildError, ModelError, OSError) as exc:
        return Outcome(job, failed=message(exc))
    return Outcome(job, built=built)


def _in_worker(work: Callable[[Job, Options], Outcome], job: Job, options: Options) -> Outcome:
    """work(job, options) in a worker, which Ctrl-C interrupts only while it works: its compile
    and validation processes then stop too (they start with the default disposition), and an
    idle worker does not print a traceback."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return work(job, options)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run(jobs: list[Job], options: Options, workers: int, started: Callable[[Job, int], None],
        ended: Callable[[Outcome], None], work: Callable[[Job, Options], Outcome] = build_one) -> list[Outcome]:
    """Build `jobs` (work(job, options): build_one, a module-level function for the workers to
    import) with up to `workers` at a time in `order`: `started(job, k)` as the k-th build
    starts, `ended(outcome)` as each ends. One worker builds in this process, one job after
    another. Returns the outcomes in the order the builds ended."""
    ready_list, waiting = order(jobs)
    ready = deque(ready_list)
    outcomes: list[Outcome] = []
    if workers <= 1 or len(jobs) <= 1:
        while ready:
            job = ready.popleft()
            started(job, len(outcomes) + 1)
            outcomes.append(work(job, options))
            ended(outcomes[-1])
            ready.extend(waiting.pop(job.route, []))
        return outcomes
    count = 0
    running: dict[Future, Job] = {}
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"),
                             initializer=_ignore_interrupts) as pool:
        try:
            while ready or running:
                while ready and len(running) < workers:
                    job = ready.popleft()
                    count += 1
                    started(job, count)
                    running[pool.submit(_in_worker, work, job, options)] = job
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    job = running.pop(future)
                    outcomes.append(future.result())
                    ended(outcomes[-1])
                    ready.extend(waiting.pop(job.route, []))   # the route's kernels are compiled now
        except KeyboardInterrupt:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return outcomes
