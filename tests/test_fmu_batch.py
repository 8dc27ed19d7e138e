"""`flexmbs build` with several FMUs (fmi/batch.py): the builds run side by side in worker
processes, the plants of a route after the first of them (which compiles the kernels they
load), every build is announced and reported, and a failing one loses none of the others."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from conftest import MODELS
from fmpy import read_model_description

from flexmbs.fmi.batch import Job, Options, Outcome, order, run

WAIT = 120.0   # [s] a fake build waits at most this long for the other one it must overlap


def _touch(folder: Path, name: str) -> None:
    (folder / name).write_text("")


def _wait_for(path: Path) -> bool:
    end = time.monotonic() + WAIT
    while not path.exists():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


def fake_build(job: Job, options: Options) -> Outcome:
    """A build that writes marks into the folder options.out_dir: '<what>.started' and
    '<what>.ended'. The first plant of a route ('first_<route>') waits until the first plant of
    every other route has started (only side by side can both pass); any other plant fails
    unless the first of its route had ended when it started."""
    folder = Path(options.out_dir)
    _touch(folder, f"{job.what}.started")
    failed = None
    if job.what.startswith("first_"):
        others = [r for r in ("a", "b") if f"first_{r}" != job.what]
        if not all(_wait_for(folder / f"first_{r}.started") for r in others):
            failed = "ran alone"
    elif job.route is not None and not (folder / f"first_{job.route}.ended").exists():
        failed = f"started before the first build of route {job.route} ended"
    _touch(folder, f"{job.what}.ended")
    return Outcome(job, failed=failed)


def _jobs() -> list[Job]:
    return [Job("first_a", "plant", "a"), Job("a2", "plant", "a"), Job("first_b", "plant", "b"),
            Job("a3", "plant", "a"), Job("b2", "plant", "b"), Job("block", "block"), Job("bad", "plant", None)]


def test_the_first_plant_of_each_route_starts_first() -> None:
    ready, waiting = order(_jobs())
    assert [j.what for j in ready] == ["first_a", "first_b", "block", "bad"]
    assert {r: [j.what for j in js] for r, js in waiting.items()} == {"a": ["a2", "a3"], "b": ["b2"]}


def test_routes_compile_side_by_side_and_their_plants_wait(tmp_path: Path) -> None:
    """Two workers (processes): the two routes' first builds overlap, no other plant of a route
    starts before its route's first build ends, every build starts once, announced 1..7."""
    starts: list[tuple[str, int]] = []
    ends: list[Outcome] = []
    outcomes = run(_jobs(), Options(str(tmp_path), True, False, True, 2), 2,
                   lambda job, k: starts.append((job.what, k)), ends.append, work=fake_build)
    assert {o.job.what: o.failed for o in outcomes} == {j.what: None for j in _jobs()}
    assert [k for _, k in starts] == list(range(1, 8))
    assert sorted(w for w, _ in starts) == sorted(j.what for j in _jobs())
    assert ends == outcomes


def test_one_worker_builds_in_order_in_this_process(tmp_path: Path) -> None:
    """-j 1: one build after another, here, each first plant before its route's others (a first
    plant waiting for the other route's would fail: 'ran alone')."""
    jobs = [Job("first_a", "plant", "a"), Job("a2", "plant", "a"), Job("block", "block")]
    order_seen: list[str] = []

    def serial(job: Job, options: Options) -> Outcome:
        order_seen.append(job.what)
        if job.what == "a2" and "first_a" not in order_seen:
            return Outcome(job, failed="before its route's first")
        return Outcome(job)

    outcomes = run(jobs, Options(str(tmp_path), True, False, True, 2), 1, lambda job, k: None, lambda o: None,
                   work=serial)
    assert order_seen == ["first_a", "block", "a2"]
    assert all(o.failed is None for o in outcomes)


def test_build_command_builds_side_by_side_and_keeps_the_good_ones(tmp_path: Path) -> None:
    """Two plants of one route, a block and a bad model with -j 2: the good three build and
    validate, the bad one is reported with its file and line, the exit status says one failed."""
    bad = tmp_path / "bad.yaml"
    bad.write_text((MODELS / "double_pendulum.yaml").read_text().replace("mass: 1.0", "mass: -1.0", 1))
    out = tmp_path / "fmus"
    run_ = subprocess.run([sys.executable, "-m", "flexmbs", "build", "-j", "2", "double_pendulum", str(bad),
                           "flywheel", "--block", "dc_motor", "-o", str(out)], capture_output=True, text=True,
                          timeout=1800)
    assert run_.returncode == 1, run_.stderr[-3000:]
    assert "1 of 4 FMUs failed" in run_.stderr and "Traceback" not in run_.stderr
    assert "FAILED" in run_.stderr and "bad.yaml:" in run_.stderr
    for k in range(1, 5):
        assert f"({k} of 4)" in run_.stderr
    assert sorted(p.name for p in out.iterdir()) == ["dc_motor.fmu", "double_pendulum.fmu", "flywheel.fmu"]
    assert run_.stdout.count("valid (fmpy validate, fmutool -check)") == 3
    assert read_model_description(str(out / "flywheel.fmu")).modelName == "flywheel"
