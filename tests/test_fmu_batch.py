"""`flexmbs build` with several FMUs (fmi/batch.py): the builds run side by side in worker
processes, the plants of a route after the first of them (which compiles the kernels they
load), every build is announced and reported, and a failing one loses none of the others."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import MODELS
from fmpy import read_model_description

from flexmbs.fmi.batch import Job, Options, Outcome, order, run

WAIT = 120.0   # [s] a fake build waits at most this long for what it must see


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
    """A build (in a worker) that marks '<what>.started' and '<what>.ended' in the folder
    options.out_dir. 'first_a' ends a little after 'block' has (so that a scheduler releasing
    route a's plants at any build's end starts them too early), and 'first_b' only once 'a2' has
    ended: route a's other plants must run while route b's first build still does. A name with
    'fail' fails; 'bug' raises; 'oom' kills its worker once 'block' has ended, as the
    out-of-memory killer would."""
    folder = Path(options.out_dir)
    _touch(folder, f"{job.what}.started")
    failed = None
    if job.what == "first_a" and _wait_for(folder / "block.ended"):
        time.sleep(0.2)
    if job.what == "first_b" and not _wait_for(folder / "a2.ended"):
        failed = "route a's plants did not run beside route b's first build"
    if job.what == "bug":
        raise RuntimeError("a bug in one build")
    if job.what == "oom" and _wait_for(folder / "block.ended"):
        os.kill(os.getpid(), signal.SIGKILL)
    if "fail" in job.what:
        failed = "its own error"
    _touch(folder, f"{job.what}.ended")
    return Outcome(job, failed=failed)


def _run(jobs: list[Job], folder: Path, workers: int) -> tuple[list[Outcome], list[tuple[str, str]]]:
    """run the fake builds; returns the outcomes and the events ('start' | 'end', what) as this
    process saw them, in order."""
    events: list[tuple[str, str]] = []
    outcomes = run(jobs, Options(str(folder), True, False, True, 2), workers,
                   lambda job, k: events.append(("start", job.what)), lambda o: events.append(("end", o.job.what)),
                   work=fake_build)
    return outcomes, events


def _after(events: list[tuple[str, str]], later: tuple[str, str], earlier: tuple[str, str]) -> bool:
    return events.index(later) > events.index(earlier)


def test_the_first_plant_of_each_route_starts_first() -> None:
    jobs = [Job("first_a", "plant", "a"), Job("a2", "plant", "a"), Job("first_b", "plant", "b"),
            Job("a3", "plant", "a"), Job("b2", "plant", "b"), Job("block", "block"), Job("bad", "plant", None)]
    ready, waiting = order(jobs)
    assert [j.what for j in ready] == ["first_a", "first_b", "block", "bad"]
    assert {r: [j.what for j in js] for r, js in waiting.items()} == {"a": ["a2", "a3"], "b": ["b2"]}


def test_a_routes_plants_start_after_its_first_build_and_beside_another_routes(tmp_path: Path) -> None:
    """Three workers (processes): route a's first build ends, its other plants then run while
    route b's first build is still running (it waits for a2 to end), and b2 starts only after
    first_b ended; each build starts once and ends once."""
    jobs = [Job("first_a", "plant", "a"), Job("a2", "plant", "a"), Job("first_b", "plant", "b"),
            Job("b2", "plant", "b"), Job("block", "block")]
    outcomes, events = _run(jobs, tmp_path, 3)
    assert {o.job.what: o.failed for o in outcomes} == {j.what: None for j in jobs}
    assert sorted(events) == sorted([(e, j.what) for j in jobs for e in ("start", "end")])
    assert _after(events, ("start", "a2"), ("end", "first_a"))
    assert _after(events, ("start", "b2"), ("end", "first_b"))   # first_b itself waited for a2 to end


def test_when_a_routes_first_build_fails_the_next_takes_its_place(tmp_path: Path) -> None:
    """Two workers, route a's first build fails: a2 becomes the first (it compiles), and a3,
    which a free worker could start, waits for a2 to end instead of compiling beside it."""
    jobs = [Job("first_a_fails", "plant", "a"), Job("a2", "plant", "a"), Job("a3", "plant", "a")]
    outcomes, events = _run(jobs, tmp_path, 2)
    assert {o.job.what: o.failed for o in outcomes} == {"first_a_fails": "its own error", "a2": None, "a3": None}
    assert _after(events, ("start", "a2"), ("end", "first_a_fails"))
    assert _after(events, ("start", "a3"), ("end", "a2"))


def test_a_bug_or_a_dead_worker_fails_its_builds_only(tmp_path: Path) -> None:
    """An unexpected error in one build fails that build, named; a worker killed mid-build (the
    out-of-memory killer) fails the builds it takes down, saying so; the builds that ended
    stay built, and every build has one outcome."""
    for name in ("bug", "oom"):
        (tmp_path / name).mkdir()
    outcomes, _ = _run([Job("bug", "block"), Job("block", "block"), Job("later", "block")], tmp_path / "bug", 2)
    failed = {o.job.what: o.failed for o in outcomes}
    assert set(failed) == {"bug", "block", "later"} and len(outcomes) == 3
    assert failed["block"] is None and failed["later"] is None
    assert failed["bug"].startswith("RuntimeError: a bug in one build")
    outcomes, _ = _run([Job("block", "block"), Job("oom", "block"), Job("later", "block")], tmp_path / "oom", 2)
    failed = {o.job.what: o.failed for o in outcomes}
    assert set(failed) == {"block", "oom", "later"} and len(outcomes) == 3
    assert failed["block"] is None and "worker died" in failed["oom"]


def test_one_worker_builds_in_order_in_this_process(tmp_path: Path) -> None:
    """-j 1: one build after another, here, each route's first plant before its others."""
    jobs = [Job("first_a", "plant", "a"), Job("a2", "plant", "a"), Job("block", "block")]
    order_seen: list[str] = []

    def serial(job: Job, options: Options) -> Outcome:
        order_seen.append(job.what)
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


def test_kernels_are_copied_whole_while_a_build_beside_saves_them(tmp_path: Path) -> None:
    """A build copies the kernels its FMU carries while a build beside it may be saving the same
    kernel for another route: an index is read with its data files under the kernel's lock,
    which every save holds. Here a save in progress holds the lock, has written an index that
    names a second data file and not yet that file: the copy waits for the save and carries the
    index with both data files (read without the lock, it found the index naming a file that was
    not there yet)."""
    import pickle
    import threading

    from flexmbs._cache import kernel_lock
    from flexmbs.fmi.kernels import index_data_names, snapshot

    folder = tmp_path / "generic" / "flexmbs"
    folder.mkdir(parents=True)
    index = folder / "f-1.py311.nbi"

    def write_index(names: list[str]) -> None:
        index.write_bytes(pickle.dumps("0.68") + pickle.dumps(("stamp", {(k,): n for k, n in enumerate(names)})))

    write_index(["f-1.py311.1.nbc"])
    (folder / "f-1.py311.1.nbc").write_bytes(b"first")
    copied: list[dict] = []
    with kernel_lock(index):
        write_index(["f-1.py311.1.nbc", "f-1.py311.2.nbc"])
        loaded = {str(index): ["f-1.py311.1.nbc", "f-1.py311.2.nbc"]}
        reader = threading.Thread(target=lambda: copied.append(snapshot(tmp_path / "generic", loaded)))
        reader.start()
        time.sleep(0.3)             # the copy's chance to read too early, were it not locked out
        (folder / "f-1.py311.2.nbc").write_bytes(b"second")
    reader.join(timeout=WAIT)
    assert copied, "the copy failed"
    files = copied[0]
    assert index_data_names(files["flexmbs/f-1.py311.nbi"]) == {"f-1.py311.1.nbc", "f-1.py311.2.nbc"}
    assert files["flexmbs/f-1.py311.2.nbc"] == b"second"


def test_an_fmu_carries_only_the_cache_entries_its_run_loaded(tmp_path: Path) -> None:
    """A kernel's cache index holds an entry per specialisation this user compiled (each route,
    each model's types); the FMU carries the index rewritten to the entries its run loaded and
    their object files alone. Read back by numba's own cache reader on the receiving side, the
    kept specialisation is found with its data and the dropped one is a miss, and a loaded file
    the index no longer names (rewritten by another process) fails the build."""
    import pytest
    from numba.core.caching import IndexDataCacheFile

    from flexmbs.fmi.kernels import snapshot

    generic = tmp_path / "generic"
    built = IndexDataCacheFile(str(generic / "flexmbs"), "f-1.py311", "stamp")
    (generic / "flexmbs").mkdir(parents=True)
    built.save(("tree",), ("object code", "of the tree route"))
    built.save(("loops",), ("object code", "of the loop route"))
    index = generic / "flexmbs" / "f-1.py311.nbi"
    names = sorted(p.name for p in index.parent.glob("*.nbc"))
    tree = next(n for n in names if b"tree" in (index.parent / n).read_bytes())

    files = snapshot(generic, {str(index): [tree]})
    assert sorted(files) == sorted(["flexmbs/f-1.py311.nbi", f"flexmbs/{tree}"])
    received = tmp_path / "received" / "flexmbs"
    received.mkdir(parents=True)
    for rel, data in files.items():
        (received.parent / rel).write_bytes(data)
    reader = IndexDataCacheFile(str(received), "f-1.py311", "stamp")
    assert reader.load(("tree",)) == ("object code", "of the tree route")
    assert reader.load(("loops",)) is None

    with pytest.raises(RuntimeError, match="no longer names"):
        snapshot(generic, {str(index): [tree, "f-1.py311.9.nbc"]})


def test_carried_kernels_join_those_in_the_cache(tmp_path: Path) -> None:
    """Two FMUs of other routes, each carrying one entry of a kernel under the same file name
    (their builders numbered them alike), received one after the other: the first's go in as
    they are; the second's join them (the index gains its key, its data file takes the next free
    number), so numba's own reader finds both. Placing the first again, as the first FMU of a
    new process does, keeps the second's entry (put over the index, its carried subset would
    drop it, and the second's kernels would compile again); an entry whose data file is gone
    gets the carried file back. Were the second's index put over the first's, the first's entry
    would be a miss."""
    import hashlib

    from numba.core.caching import IndexDataCacheFile

    from flexmbs.fmi.kernels import snapshot
    from flexmbs_fmu.bundle import _place_kernels

    def carried(route: str) -> tuple[Path, dict]:
        """An FMU's resources/kernels carrying the kernel f's entry of `route`, with its digests."""
        generic = tmp_path / f"builder {route}" / "generic"
        (generic / "flexmbs").mkdir(parents=True)
        IndexDataCacheFile(str(generic / "flexmbs"), "f-1.py311", "stamp").save((route,), f"code of the {route} route")
        index = generic / "flexmbs" / "f-1.py311.nbi"
        files = snapshot(generic, {str(index): ["f-1.py311.1.nbc"]})
        folder = tmp_path / f"fmu {route}"
        for rel, data in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(data)
        return folder, {rel: hashlib.sha256(data).hexdigest() for rel, data in files.items()}

    tree, loops = carried("tree"), carried("loops")
    target = tmp_path / "receiver" / "generic"
    reader = IndexDataCacheFile(str(target / "flexmbs"), "f-1.py311", "stamp")

    def both_found() -> None:
        assert reader.load(("tree",)) == "code of the tree route"
        assert reader.load(("loops",)) == "code of the loops route"

    _place_kernels(tree[0], target, tree[1])
    assert reader.load(("tree",)) == "code of the tree route" and reader.load(("loops",)) is None
    _place_kernels(loops[0], target, loops[1])
    both_found()
    assert sorted(p.name for p in (target / "flexmbs").glob("*.nbc")) == ["f-1.py311.1.nbc", "f-1.py311.2.nbc"]
    for fmu in (tree, loops, tree):
        _place_kernels(fmu[0], target, fmu[1])
        both_found()
    assert len(list((target / "flexmbs").glob("*.nbc"))) == 2
    (target / "flexmbs" / "f-1.py311.1.nbc").unlink()
    _place_kernels(tree[0], target, tree[1])
    both_found()
