"""The FMU under a hostile host (issue 23): a C host (tests/c_hostile.c, compiled here with the
system compiler) does what real hosts do beyond a plain run, one pattern per process, and checks
every status it gets; each test asserts the host exits alive with every status as expected, and
what the pattern measures; then a Python host with a faulty slave. The subprocess timeouts only guard against a hang (a deadlock would otherwise stop the suite);
nothing here is timed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fmpy import extract, read_model_description

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def hostile(c_program) -> Path:
    return c_program("c_hostile", "dl", "pthread", "m")


@pytest.fixture(scope="module")
def host_args(fmu_path, tmp_path_factory):
    """host_args(model) -> the host's arguments after the pattern: binary, resource URI, GUID,
    the value references of a torque input and of the output elbow.q."""
    folder = tmp_path_factory.mktemp("hostile_fmus")

    def args(name: str) -> list[str]:
        path = fmu_path(name)
        md = read_model_description(path)
        d = Path(folder, name)
        if not d.is_dir():
            extract(path, unzipdir=str(d))
        vr = {v.name: v.valueReference for v in md.modelVariables}
        torque = next(v.name for v in md.modelVariables if v.causality == "input" and v.name.endswith(".tau"))
        binary = d / "binaries" / "linux64" / f"{md.coSimulation.modelIdentifier}.so"
        return [str(binary), (d / "resources").as_uri(), md.guid, str(vr[torque]), str(vr["elbow.q"])]
    return args


def run_host(hostile: Path, args: list[str], pattern: str, n: int | None = None) -> tuple[dict[str, float], str]:
    """Run one pattern; asserts the host ended alive with every status as expected. Returns its
    measurements ("NAME VALUE" lines) and its log (stderr)."""
    cmd = [str(hostile), pattern, *args] + ([str(n)] if n is not None else [])
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"exit status {run.returncode}\n{run.stderr[-3000:]}"
    lines = run.stdout.splitlines()
    assert f"ok {pattern}" in lines, run.stdout
    values = {}
    for line in lines:
        name, _, value = line.partition(" ")
        if name != "ok":
            values[name] = float(value)
    return values, run.stderr


def test_an_instance_freed_by_an_exit_handler_registered_first(hostile, host_args) -> None:
    """The host's exit handler runs after the one the FMU registered when it started Python
    (exit handlers run last registered, first): fmi2Terminate is refused with the reason (the
    runtime is finalised), fmi2FreeInstance frees the C side, and the process exits 0 (it
    segfaulted in PyGILState_Ensure before)."""
    values, log = run_host(hostile, host_args("double_pendulum"), "exit-free")
    assert values["freed-at-exit"] == 1
    assert values["terminate-at-exit"] == 3          # fmi2Error
    assert "fmi2Terminate: the Python runtime of this process has been finalised" in log


def test_a_logger_that_takes_the_hosts_lock_while_another_thread_holds_it(hostile, host_args) -> None:
    """One thread's instance logs (a NaN input refused) while a second thread, holding the lock
    the logger takes, steps another instance: the logger is called only after Python's lock is
    released, so both threads get through (a logger called with it held deadlocked every run)."""
    values, _ = run_host(hostile, host_args("double_pendulum"), "locking-logger", 200)
    assert values["refusals-logged"] >= 200
    assert values["second-thread-calls"] >= 200


def test_deserializing_again_and_again_into_one_state_keeps_memory_flat(hostile, host_args) -> None:
    """20,000 fmi2DeSerializeFMUstate calls into the same handle reuse it (it held one more
    state per call before: 19.6 kB each for Huang's arm); the state then restores."""
    values, _ = run_host(hostile, host_args("huang_two_link"), "deserialize", 20000)
    assert values["state-bytes"] > 1000
    assert values["rss-end"] - values["rss-warm"] < 1024 * 1024   # < 55 bytes per call
    assert values["rss-per-call"] < 55


def test_instantiate_and_free_cycles_keep_memory_flat(hostile, host_args) -> None:
    """300 instantiate / initialise / step / save a state / free cycles of Huang's arm after 600
    of warm-up (which fill the runtime's bounded caches): under 1 kB of RSS per cycle, although
    each cycle leaves its state (16 kB) for fmi2FreeInstance to free. Before: 17 kB per cycle
    (states outlived their instance, and each slave waited for Python's cyclic collector)."""
    values, _ = run_host(hostile, host_args("huang_two_link"), "cycles", 300)
    assert values["rss-per-cycle"] < 1024


def test_a_state_saved_while_stepping_restores_after_terminate(hostile, host_args) -> None:
    """Saved at 5 ms, restored after fmi2Terminate: the FMU steps again from 5 ms, its last
    successful time is 5 ms, and the step repeats the first run's output bit for bit."""
    run_host(hostile, host_args("double_pendulum"), "restore-after-terminate")


def test_calls_after_a_discarded_step(hostile, host_args) -> None:
    """After fmi2Discard the FMU is in stepFailed: fmi2DoStep and fmi2SetReal are refused,
    getters answer (the outputs of the last good step), and fmi2SetFMUstate or fmi2Reset bring
    it back to stepping."""
    _, log = run_host(hostile, host_args("double_pendulum"), "after-discard")
    assert "fmi2DoStep is not allowed in state 'step failed'" in log
    assert "fmi2SetReal is not allowed in state 'step failed'" in log


@pytest.mark.parametrize("model, estimate", [("double_pendulum", "1e+09 internal steps (RK4 at step 0.001 s)"),
                                             ("huang_two_link", "limits dopri5's step")])
def test_a_step_beyond_the_budget_is_refused_at_once(hostile, host_args, model, estimate) -> None:
    """One fmi2DoStep of 1e6 s (days of computing for Huang's arm): fmi2Discard before any
    integration, with the estimate in the message; the FMU goes on from a saved state."""
    _, log = run_host(hostile, host_args(model), "huge-step")
    assert estimate in log and "beyond this FMU's budget of 1e+07 per fmi2DoStep" in log


def test_sizes_and_handles_that_are_no_state_are_refused(hostile, host_args) -> None:
    """fmi2DeSerializeFMUstate with (size_t)-1, 2^62, 0, 1 or one byte too few: fmi2Error with a
    logged message, no state made, and the next fmi2DoStep works (no Python error left pending;
    it failed with "has no attribute 'do_step'" before); a forged or freed handle is refused."""
    _, log = run_host(hostile, host_args("double_pendulum"), "bad-size")
    assert "fmi2DeSerializeFMUstate: 18446744073709551615 bytes cannot be a state of this FMU" in log
    assert "deSerializeFMUstate failed: ValueError: the bytes are not a serialised state of this FMU" in log
    assert "fmi2SetFMUstate: the state was not made by fmi2GetFMUstate" in log
    assert "has no attribute" not in log


# ---------------------------------------------------------------------- Python hosts

FAULTY_FAST_PATH = """
import json, sys
import numpy as np
sys.path.insert(0, {tests!r})
from flexmbs_fmu.plant import PlantSlave
from fmu_tools import Slave

good = PlantSlave.fmi_fast_path
faults = {{
    "none": None,
    "slot out of range": lambda a: (a[0], a[1], a[2], np.full_like(a[3], 10**6), a[4]),
    "unknown kind": lambda a: (a[0], a[1], np.full_like(a[2], 7), a[3], a[4]),
    "float32 inputs": lambda a: (a[0].astype(np.float32), *a[1:]),
    "strided outputs": lambda a: (a[0], np.zeros(2 * a[1].size)[::2], *a[2:]),
    "map too short": lambda a: (a[0], a[1], a[2][:-1], a[3][:-1], a[4]),
    "not arrays": lambda a: (1, 2, 3, 4, 5),
}}
out = {{}}
for name, fault in faults.items():
    PlantSlave.fmi_fast_path = good if fault is None else (lambda self, f=fault: f(good(self)))
    s = Slave({path!r}, name.replace(" ", "_"))
    s.start()
    s.set({{"shoulder.tau": 0.3}})
    s.fmu.doStep(currentCommunicationPoint=0.0, communicationStepSize=0.01)
    out[name] = s.get(["elbow.q", "shoulder.qd", "energy.total", "shoulder.tau"]).tolist()
    s.close()
print("RESULT", json.dumps(out))
"""


def test_a_fast_path_that_does_not_fit_is_refused_whole(fmu_path) -> None:
    """A faulty slave hands over a map with slots beyond its arrays, unknown kinds, arrays of
    the wrong type or layout, or no arrays: the front end checks them when they are handed
    over, warns, and serves every call through Python, with the same values as the fast path
    (before, it used the slots unchecked: a write or read outside the arrays)."""
    script = FAULTY_FAST_PATH.format(tests=str(HERE), path=fmu_path("double_pendulum"))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(next(line for line in run.stdout.splitlines() if line.startswith("RESULT"))[7:])
    assert all(values == result["none"] for values in result.values()), result
    warnings = [line for line in run.stdout.splitlines() if "the slave's fast path does not fit this FMU" in line]
    assert len(warnings) == len(result) - 1, run.stdout
    for reason in ("has kind 1 and slot 1000000", "has kind 7", "inputs is not a one-dimensional contiguous writable "
                   "float64 array", "outputs is not a one-dimensional contiguous writable float64 array",
                   "the map covers", "inputs is not"):
        assert any(reason in w for w in warnings), (reason, warnings)
