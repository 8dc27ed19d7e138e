"""Compile time is said as such and never counted as integration: `simulate` compiles (or loads)
every kernel its run calls before the run starts, so the run itself adds no compiled signature
to any kernel (counted in a fresh process, not timed), and a preparation that lasts says it is
compiling. A model compiles only the kernels of its own forward-dynamics route, each once
(counted from an empty cache)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
import textwrap

import numpy as np
import pytest

import flexmbs
from flexmbs import compiling, warmup
from flexmbs.simulate import settings_of

COUNT = textwrap.dedent("""
    import sys
    import flexmbs
    from numba.core.registry import CPUDispatcher

    sim = sys.modules["flexmbs.simulate"]   # flexmbs.simulate is the function of that module

    def signatures():
        return {f"{m}.{k}": len(d.signatures) for m, mod in list(sys.modules.items()) if m.startswith("flexmbs")
                for k, d in vars(mod).items() if isinstance(d, CPUDispatcher)}

    after = {}
    prepare = sim.prepare

    def spy(*args, **kwargs):
        seconds = prepare(*args, **kwargs)
        after.update(signatures())
        return seconds

    sim.prepare = spy
    model = flexmbs.load_model(sys.argv[1])
    result = flexmbs.simulate(model, 0.05, method=sys.argv[2], output_step=0.01)
    grown = {k: (after.get(k, 0), n) for k, n in signatures().items() if n != after.get(k, 0)}
    print("prepared", sum(after.values()), "grown", grown, "compile_time", result.stats["compile_time"])
""")


ROUTE = textwrap.dedent("""
    import sys
    import flexmbs
    from numba import types
    from numba.core.registry import CPUDispatcher

    flexmbs.simulate(flexmbs.load_model(sys.argv[1]), 0.01, method=sys.argv[2])
    for m, mod in list(sys.modules.items()):
        for k, d in vars(mod).items():
            if m.startswith("flexmbs.") and isinstance(d, CPUDispatcher) and d.py_func.__module__ == m:
                literal = any(isinstance(a, types.Literal) for sig in d.signatures for a in sig)
                print(f"{m}.{k}", len(d.signatures), int(literal))
""")

# the kernels only a closed loop needs, and those only the composite route needs
LOOP_KERNELS = ("flexmbs.kernels.loop_closure.close_loops", "flexmbs.kernels.loop_closure._unit_solve",
                "flexmbs.kernels.dynamics.composite_loops", "flexmbs.kernels.constraints.constraint_row",
                "flexmbs.kernels.constraints.constraint_rows", "flexmbs.kernels.constraints.constrained_solve",
                "flexmbs.kernels.constraints.loop_rows", "flexmbs.kernels.projection.onto_loops")
COMPOSITE_KERNELS = ("flexmbs.kernels.dynamics.composite_accelerations", "flexmbs.kernels.dynamics.cholesky_solve")


@pytest.mark.parametrize("method, entry", [("rk4", "explicit.rk4_advance"), ("radau", "radau.radau_advance")])
def test_a_tree_compiles_its_route_only(tmp_path, method: str, entry: str) -> None:
    """From an empty cache, a run of a tree on the recursion (the double pendulum) compiles the
    recursion once and neither the loop closure nor the composite solve, and no kernel for the
    value of a constant argument (numba's literal specialisations); under radau, which projects
    each step onto a loop model's constraints, not the projection either."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("NUMBA_CACHE_DIR", None)
    run = subprocess.run([sys.executable, "-c", ROUTE, "double_pendulum", method], capture_output=True, text=True,
                         env=env, timeout=1800)
    assert run.returncode == 0, run.stderr
    count = {name: (int(n), int(lit)) for name, n, lit in (line.split() for line in run.stdout.splitlines())}
    for stage in ("_kinematics_pass", "_inertia_pass", "_acceleration_pass"):   # the recursion's passes
        assert count[f"flexmbs.kernels.articulated.{stage}"] == (1, 0), run.stdout
    assert count[f"flexmbs.solvers.{entry}"] == (1, 0), run.stdout   # the run's method
    for name in LOOP_KERNELS + COMPOSITE_KERNELS:
        assert count[name] == (0, 0), (name, run.stdout)
    assert not [name for name, (_, lit) in count.items() if lit], run.stdout


@pytest.mark.parametrize("model, method", [("huang_two_link", "dopri5"), ("double_pendulum", "rk4"),
                                           ("huang_two_link", "implicit"), ("four_bar", "dopri5")])
def test_the_run_compiles_nothing_after_prepare(model: str, method: str) -> None:
    run = subprocess.run([sys.executable, "-c", COUNT, model, method], capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    words = run.stdout.split()
    assert int(words[1]) > 0, run.stdout                   # prepare did load or compile kernels
    assert "grown {}" in run.stdout, run.stdout            # and the run added none


def test_a_long_preparation_says_it_is_compiling(monkeypatch, caplog) -> None:
    """Any preparation longer than NOTICE_AFTER is compiling (loading cached kernels takes less):
    with the threshold at 0 s the notice names the kind of run; the caller's state is untouched."""
    monkeypatch.setattr(compiling, "NOTICE_AFTER", 0.0)
    monkeypatch.setattr(warmup, "_PREPARED", set())     # as in a process that has run nothing yet
    system = flexmbs.compile_model(flexmbs.load_model("double_pendulum"))
    settings = settings_of(system.model)
    x = np.concatenate([system.q0, system.u0])
    before = x.copy()
    with caplog.at_level(logging.WARNING, logger="flexmbs"):
        seconds = warmup.prepare(system, settings, x, system.input_defaults.copy())
    assert seconds >= 0.0 and np.array_equal(x, before)
    notice = [r.getMessage() for r in caplog.records if "compiling the numba kernels" in r.getMessage()]
    assert notice and "rk4 method" in notice[0] and "once per machine" in notice[0], caplog.text


def test_a_long_compile_without_a_bar_says_it_goes_on(monkeypatch, caplog) -> None:
    """Without a progress bar (a build, an FMU's log) a compile logs a line every STILL_EVERY
    seconds with the time so far, so that minutes of compiling do not look like a hang (four
    silent minutes in a new user's trial, stop 52); none once the work is done."""
    monkeypatch.setattr(compiling, "NOTICE_AFTER", 0.0)
    monkeypatch.setattr(compiling, "STILL_EVERY", 0.3)
    monkeypatch.setattr(compiling, "remember", lambda kind, seconds: None)   # no record of a test kind
    with caplog.at_level(logging.WARNING, logger="flexmbs"):
        with compiling.Compiling("test kind", "a test's kernels", first=1.0):
            time.sleep(1.3)
        lines = len(caplog.records)
        time.sleep(0.4)
    still = [r.getMessage() for r in caplog.records if r.getMessage().startswith("still compiling")]
    assert 3 <= len(still) <= 5 and "a test's kernels" in still[0], caplog.text
    seconds = [int(m.rsplit(": ", 1)[1].split(" s so far")[0]) for m in still]   # since the work began
    assert seconds == sorted(seconds) and seconds[-1] == 1, still
    assert len(caplog.records) == lines


def test_a_process_prepares_each_kind_of_run_once(monkeypatch) -> None:
    """A second run of the same kind in one process prepares nothing (its kernels are loaded):
    counted as the throwaway integrators the preparations build, with a run of another method
    and read-only inputs (numba signatures of their own) each prepared anew, and an RK4
    preparation whose stability check found the right-hand side failing (so the Jacobian
    kernel, which only that check calls, was skipped) not remembered."""
    monkeypatch.setattr(warmup, "_PREPARED", set())
    built = []

    class Counted(warmup.Stepper):
        def __init__(self, *args, **kwargs) -> None:
            built.append(args[1].method)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(warmup, "Stepper", Counted)
    system = flexmbs.compile_model(flexmbs.load_model("double_pendulum"))
    first = flexmbs.simulate(system, 0.02, method="rk4", output_step=0.01)
    second = flexmbs.simulate(system, 0.02, method="rk4", output_step=0.01)
    assert built == ["rk4"]
    assert np.array_equal(first["elbow.q"], second["elbow.q"])
    flexmbs.simulate(system, 0.02, method="dopri5", output_step=0.01)
    assert built == ["rk4", "dopri5"]
    rk4 = settings_of(system.model, method="rk4")
    x = np.concatenate([system.q0, system.u0])
    writable = system.input_defaults.copy()
    read_only = writable.copy()
    read_only.flags.writeable = False
    for inputs in (writable, writable, read_only, read_only):
        warmup.prepare(system, rk4, x, inputs)
    assert built == ["rk4", "dopri5", "rk4", "rk4"]
    monkeypatch.setattr(warmup, "_PREPARED", set())
    # what Stepper.check_stability returns when the right-hand side fails at the state
    monkeypatch.setattr(Counted, "check_stability", lambda self, t, x, inputs: np.inf)
    warmup.prepare(system, rk4, x, writable)
    warmup.prepare(system, rk4, x, writable)
    assert built[4:] == ["rk4", "rk4"]


def test_the_compile_estimate_comes_from_a_compile_for_the_same_cpu(monkeypatch, tmp_path) -> None:
    """A compile recorded for the generic CPU (an FMU build's, often partial: 11 s where the
    host's took 141 s on a new machine) is not the estimate of a compile for the host."""
    from numba.core import config

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(config, "CPU_NAME", "generic")
    compiling.remember("dopri5 recursive tree", 11.0)
    assert compiling.last_compile("dopri5 recursive tree") == 11.0
    monkeypatch.setattr(config, "CPU_NAME", None)
    assert compiling.last_compile("dopri5 recursive tree") is None
    compiling.remember("dopri5 recursive tree", 141.0)
    assert compiling.last_compile("dopri5 recursive tree") == 141.0
    compiling.remember("dopri5 recursive tree", 5.0)     # a compile that found most kernels cached
    assert compiling.last_compile("dopri5 recursive tree") == 141.0
    monkeypatch.setattr(config, "CPU_NAME", "generic")
    assert compiling.last_compile("dopri5 recursive tree") == 11.0


def test_the_kernel_cache_follows_every_source_its_kernels_compile(tmp_path) -> None:
    """The cache folder is named by a digest of the kernel sources: an edit to a kernel module,
    or to the motor law the kernels compile from flexmbs_laws beside the package, gives a new
    folder (numba itself checks only each kernel's own file); an edit to a plain module does not."""
    import shutil
    from importlib.util import find_spec

    from flexmbs._cache import source_digest

    root = tmp_path / "site"
    for name in ("flexmbs", "flexmbs_laws"):
        shutil.copytree(os.path.dirname(find_spec(name).origin), root / name,
                        ignore=shutil.ignore_patterns("__pycache__", "models"))
    first = source_digest(root / "flexmbs")

    def edited(path) -> str:
        original = path.read_text()
        path.write_text(original + "\n# an edit\n")
        try:
            return source_digest(root / "flexmbs")
        finally:
            path.write_text(original)

    assert edited(root / "flexmbs_laws" / "motor.py") != first
    assert edited(root / "flexmbs" / "kernels" / "motor.py") != first
    assert edited(root / "flexmbs" / "names.py") == first
    assert source_digest(root / "flexmbs") == first


@pytest.mark.parametrize("env, first, target", [
    ({}, "", "generic"),                                 # one target for the FMUs built here and the runs
    ({"FLEXMBS_CPU": "host"}, "", None),                 # numba's default: the machine's own CPU
    ({"FLEXMBS_CPU": "Host", "NUMBA_CPU_NAME": "generic"}, "", None),   # ... also under a flexmbs parent
    ({"NUMBA_CPU_NAME": "x86-64-v2"}, "", "x86-64-v2"),  # the user's choice is kept
    ({}, "import numba", None),                          # numba imported first: its target is fixed
])
def test_flexmbs_compiles_for_the_cpu_its_fmus_carry_unless_told_otherwise(env, first, target) -> None:
    """Importing flexmbs makes numba compile for the generic CPU, the code the FMUs built here
    carry (fmi/kernels.py), unless the user chose a target or numba was imported before."""
    base = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_NAME", "FLEXMBS_CPU")}
    code = f"{first}\nimport flexmbs\nfrom numba.core import config\nprint(repr(config.CPU_NAME))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**base, **env})
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split()[-1] == repr(target)
