"""The FMU as a host sees it: the FMI 2.0 state machine and argument checks of the C front end
(every refused call gets fmi2Error with a logged message naming the call and the state, and the
host goes on), no crash on a bad resource location, no abort at exit, a C host with an empty
environment, an atomic fmi2SetFMUstate, and which flexmbs sources the FMU imports."""

from __future__ import annotations

import ctypes
import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, fmi2Error
from fmu_tools import Slave

HERE = Path(__file__).resolve().parent
NAMES = ["shoulder.q", "elbow.q", "shoulder.qd", "elbow.qd"]


def _refused(call, *args, **kwargs) -> None:
    with pytest.raises(FMICallException) as err:
        call(*args, **kwargs)
    assert err.value.status == fmi2Error


def _started(path: str, name: str = "plant") -> Slave:
    s = Slave(path, name, logging_on=False)   # errors must be logged even with logging off
    s.start()
    return s


def _goes_on(s: Slave, t: float) -> None:
    """The host goes on: a valid step from t works and the outputs are finite."""
    s.fmu.doStep(currentCommunicationPoint=t, communicationStepSize=0.01)
    assert np.all(np.isfinite(s.get(NAMES)))


def _setup(s: Slave) -> None:
    s.fmu.setupExperiment(startTime=0.0)


def _enter(s: Slave) -> None:
    _setup(s)
    s.fmu.enterInitializationMode()


# what: (calls before the bad one, the bad call, words its message must contain, the calls that
# then bring the FMU to its first step as if nothing had happened)
SEQUENCES = {
    "doStep before initialisation": (lambda s: None, lambda s: s.fmu.doStep(0.0, 0.01),
                                     ["fmi2DoStep", "'instantiated'"], _enter),
    "doStep during initialisation": (_enter, lambda s: s.fmu.doStep(0.0, 0.01),
                                     ["fmi2DoStep", "'initialization mode'"], lambda s: None),
    "getReal before initialisation": (lambda s: None, lambda s: s.fmu.getReal([0]),
                                      ["fmi2GetReal", "'instantiated'"], _enter),
    "initialisation entered twice": (_enter, lambda s: s.fmu.enterInitializationMode(),
                                     ["fmi2EnterInitializationMode", "'initialization mode'"], lambda s: None),
    "initialisation left without entering": (lambda s: None, lambda s: s.fmu.exitInitializationMode(),
                                             ["fmi2ExitInitializationMode", "'instantiated'"], _enter),
    "setupExperiment with a NaN start": (lambda s: None, lambda s: s.fmu.setupExperiment(startTime=math.nan),
                                         ["fmi2SetupExperiment", "start time nan"], _enter),
    "setupExperiment with an infinite start": (lambda s: None, lambda s: s.fmu.setupExperiment(startTime=math.inf),
                                               ["fmi2SetupExperiment", "start time inf"], _enter),
}


@pytest.mark.parametrize("case", list(SEQUENCES))
def test_a_call_out_of_sequence_is_refused_and_the_host_goes_on(fmu_path, capsys, case) -> None:
    before, bad, words, recover = SEQUENCES[case]
    s = Slave(fmu_path("double_pendulum"), "plant", logging_on=False)
    before(s)
    capsys.readouterr()
    _refused(bad, s)
    out = capsys.readouterr().out
    assert "[ERROR]" in out and all(w in out for w in words), out
    recover(s)
    s.fmu.exitInitializationMode()
    _goes_on(s, 0.0)
    s.close()


def test_calls_after_terminate_and_bad_steps_are_refused(fmu_path, capsys) -> None:
    s = _started(fmu_path("double_pendulum"))
    for t, h in ((math.nan, 0.01), (0.0, math.nan), (0.0, math.inf), (0.0, -0.01)):
        _refused(s.fmu.doStep, t, h)
        assert "fmi2DoStep: the step from" in capsys.readouterr().out
    _goes_on(s, 0.0)                                  # the FMU time stayed 0
    s.fmu.terminate()
    _refused(s.fmu.terminate)
    assert "fmi2Terminate is not allowed in state 'terminated'" in capsys.readouterr().out
    _refused(s.fmu.doStep, 0.01, 0.01)                # no more integration after terminate
    assert "fmi2DoStep is not allowed in state 'terminated'" in capsys.readouterr().out
    _refused(s.fmu.setReal, [s.vr["elbow.tau"]], [1.0])
    q = s.get(NAMES)                                  # reading the final values is allowed
    assert np.all(np.isfinite(q))
    s.fmu.reset()                                     # and so is a reset
    s.start()
    _goes_on(s, 0.0)
    s.close()


def test_bad_value_references_are_refused(fmu_path, capsys) -> None:
    s = _started(fmu_path("double_pendulum"))
    n = len(s.md.modelVariables)
    _refused(s.fmu.getReal, [n + 5])
    assert f"value reference {n + 5} does not exist" in capsys.readouterr().out
    _refused(s.fmu.setReal, [s.vr["elbow.tau"], 10**6], [0.5, 1.0])
    assert s.get(["elbow.tau"])[0] == 0.0             # nothing of the refused call was set
    method = s.vr["solver.method"]
    _refused(s.fmu.getReal, [method])
    assert "is not of this type (it is a String variable)" in capsys.readouterr().out
    s.fmu.getString([method])                         # of the right type: read
    _goes_on(s, 0.0)
    s.close()


def test_a_string_that_is_not_utf8_is_refused_and_the_host_goes_on(fmu_path, capsys) -> None:
    """fmi2SetString of bytes that are not UTF-8 (a Latin-1 name) for the String parameter:
    fmi2Error naming the call and the decoding error, the old value kept, no crash."""
    s = Slave(fmu_path("double_pendulum"), "plant", logging_on=False)
    method = s.vr["solver.method"]
    declared = next(v.start for v in s.md.modelVariables if v.name == "solver.method")
    refs = (ctypes.c_uint32 * 1)(method)
    values = (ctypes.c_char_p * 1)(b"M\xfcller")
    _refused(s.fmu.fmi2SetString, s.fmu.component, refs, 1, values)
    out = capsys.readouterr().out
    assert "set_string" in out and "UnicodeDecodeError" in out, out
    s.start()
    assert s.fmu.getString([method]) == [declared.encode()]
    _goes_on(s, 0.0)
    s.close()


def test_outputs_follow_a_parameter_set_in_initialisation_mode(fmu_path) -> None:
    """Huang's arm released from rest: outputs read in initialisation mode, then its payload
    changed: the next read shows the elbow acceleration with the new payload, as a twin that
    never read before the change does, not the outputs computed before the change."""
    reads = []
    for early_read in (True, False):
        s = Slave(fmu_path("huang_two_link"), "plant", logging_on=False)
        _enter(s)
        before = s.get(["elbow.qdd"])[0] if early_read else None
        s.fmu.setReal([s.vr["payload"]], [2.0])
        reads.append(s.get(["elbow.qdd"])[0])
        if early_read:
            assert abs(reads[0] - before) > 1e-3 * abs(before)
        s.fmu.exitInitializationMode()
        s.close()
    assert reads[0] == reads[1]


def _instantiate_raw(path: str, guid: str | None = None, kind: int = 1,
                     name: bytes | None = b"x") -> tuple[bool, list[str]]:
    """fmi2Instantiate with a given GUID, fmuType and instance name; returns (instance made,
    messages)."""
    md = read_model_description(path)
    d = extract(path)
    messages: list[str] = []

    def log(env, name, status, category, message):
        messages.append(message.decode())

    cb = fmi2CallbackFunctions()
    cb.logger = fmi2CallbackLoggerTYPE(log)
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=md.coSimulation.modelIdentifier)
    uri = Path(d, "resources").as_uri().encode()
    c = fmu.fmi2Instantiate(name, kind, (guid or md.guid).encode(), uri, ctypes.byref(cb), 0, 0)
    if c:
        fmu.fmi2FreeInstance(c)
    fmu.freeLibrary()
    shutil.rmtree(d, ignore_errors=True)
    return bool(c), messages


def test_wrong_guid_and_model_exchange_are_refused(fmu_path) -> None:
    made, msgs = _instantiate_raw(fmu_path("dc_motor"), guid="{00000000-0000-0000-0000-000000000000}")
    assert not made and any("GUID '{00000000" in m for m in msgs), msgs
    made, msgs = _instantiate_raw(fmu_path("dc_motor"), kind=0)
    assert not made and any("Model Exchange" in m for m in msgs), msgs


def test_a_missing_instance_name_is_refused(fmu_path) -> None:
    for name in (None, b""):
        made, msgs = _instantiate_raw(fmu_path("dc_motor"), name=name)
        assert not made and any("instance name is missing" in m for m in msgs), (name, msgs)


BAD_LOCATIONS = ["file:///nonexistent/dir/resources", "", "http://example.com/resources", "file://", "not a uri"]


INSTANTIATE = """
import ctypes, sys
sys.path[:0] = [p for p in [{other!r}] if p]
{preamble}
from pathlib import Path
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
md = read_model_description({path!r})
d = extract({path!r}, unzipdir={unzip!r})
msgs = []
cb = fmi2CallbackFunctions()
cb.logger = fmi2CallbackLoggerTYPE(lambda env, name, status, cat, msg: msgs.append(msg.decode()))
fmu = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=md.coSimulation.modelIdentifier)
location = {location!r}
location = Path(d, "resources").as_uri().encode() if location is None else location
c = fmu.fmi2Instantiate(b"x", 1, md.guid.encode(), location, ctypes.byref(cb), 0, 0)
print("NULL" if not c else "INSTANCE")
print("|".join(msgs))
"""


def _instantiate_in_a_new_process(path: str, unzip: Path, location: bytes | None = None, other: str = "",
                                  preamble: str = "") -> tuple[str, str]:
    """fmi2Instantiate in a new Python process (a crash fails the test, not the suite), after
    `preamble` run with `other` first on sys.path; returns ("NULL" or "INSTANCE", the messages
    logged, joined by "|")."""
    script = INSTANTIATE.format(other=other, preamble=preamble, path=path, unzip=str(unzip), location=location)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    made, log = run.stdout.splitlines()[:2]
    return made, log


@pytest.mark.parametrize("location", BAD_LOCATIONS)
def test_a_bad_resource_location_gives_no_instance_and_no_crash(fmu_path, tmp_path, location) -> None:
    made, log = _instantiate_in_a_new_process(fmu_path("dc_motor"), tmp_path / "x", location.encode())
    assert made == "NULL"
    assert "fmi2Instantiate: " in log and ("resource location" in log), log


def _state_json(s: Slave) -> tuple[object, dict]:
    state = s.fmu.getFMUstate()
    blob = bytes(s.fmu.serializeFMUstate(state))
    s.fmu.freeFMUstate(state)
    return blob, json.loads(blob)


# what: (how the serialised state is damaged, words the refusal must contain)
DAMAGES = {
    "x too short": (lambda s: s["data"].update(x=s["data"]["x"][:-1]),
                    "the state's coordinates and velocities: expected 12 finite numbers"),
    "NaN time": (lambda s: s["data"].update(t=math.nan), "the state: field 't' = nan is not a finite float"),
    "time 1e308": (lambda s: s["data"].update(t=1e308), "the state's time = 1e+308 s is not a time within +-1e+08 s"),
    "last successful time 1e308": (lambda s: s["fmi"].update(last_successful_time=1e308),
                                   "the state's last successful time = 1e+308 s is not a time within"),
    "unknown FMI state": (lambda s: s["fmi"].update(state="stepping"),
                          "the state's FMI state 'stepping' and last successful time 0.05 s are not a state"),
    "unknown parameter": (lambda s: s["data"]["params"].update(nonsense=1.0),
                          "the state belongs to a model with other parameters"),
    # a valid change (payload) in the same state must not be applied either
    "bad solver": (lambda s: s["data"]["params"].update({"solver.method": "euler", "payload": 3.0}),
                   "solver.method 'euler' unknown"),
    "missing field": (lambda s: s["data"].pop("inputs"), "the state: expected the fields"),
    "version 1": (lambda s: s.update(version=1), "this FMU reads 'flexmbs.plant/"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_state_is_refused_whole(fmu_path, capsys, damage) -> None:
    """A serialised state is checked whole before a state is made of it: fmi2Error with the
    reason, and the instance continues exactly as if the call had not been made."""
    torques = {"shoulder.tau": 0.2, "elbow.tau": -0.1}
    s = _started(fmu_path("huang_two_link"))
    s.run(0.0, 0.05, 0.01, NAMES, lambda t: torques)
    _, good = _state_json(s)
    bad = json.loads(json.dumps(good))
    damaged, words = DAMAGES[damage]
    damaged(bad)
    blob = json.dumps(bad, allow_nan=True).encode()
    _refused(s.fmu.deSerializeFMUstate, blob)
    assert words in capsys.readouterr().out
    assert s.get(["payload"])[0] == good["data"]["params"]["payload"]
    _, here = s.run(0.05, 0.1, 0.01, NAMES, lambda t: torques)
    s.close()
    # a twin that makes the same calls without the refused one (the same communication points:
    # 0.05 + 0.01 k is not 0.01 (5 + k) to the last bit, and the plant steps from the host's time)
    ref = _started(fmu_path("huang_two_link"), "ref")
    ref.run(0.0, 0.05, 0.01, NAMES, lambda t: torques)
    _, want = ref.run(0.05, 0.1, 0.01, NAMES, lambda t: torques)
    ref.close()
    assert np.array_equal(here, want)


EXIT_PATTERN = textwrap.dedent("""
    import shutil, sys
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave
    slaves = []
    for i, p in enumerate(sys.argv[1:]):
        md = read_model_description(p)
        d = extract(p)
        s = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=md.coSimulation.modelIdentifier,
                      instanceName=f"i{i}")
        s.instantiate()
        s.setupExperiment(startTime=0.0)
        s.enterInitializationMode()
        s.exitInitializationMode()
        slaves.append((s, d))
    for k in range(10):
        for s, _ in slaves:
            s.doStep(currentCommunicationPoint=k * 1e-3, communicationStepSize=1e-3)
    for s, d in slaves:
        s.terminate()
        s.freeInstance()          # fmpy: fmi2FreeInstance, then dlclose of the binary
        shutil.rmtree(d, ignore_errors=True)
    print("ok")
""")


def _malloc_checking_env() -> dict[str, str]:
    """This environment with glibc's malloc consistency checks on (when glibc's debug malloc
    is installed), so that heap corruption aborts the process at once instead of now and then,
    and with OpenBLAS's worker threads (no OPENBLAS_NUM_THREADS), whose shutdown met the
    corruption pythonfmu's library made at exit (docs/fmu.md, "The exit abort")."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    debug = Path("/lib/x86_64-linux-gnu/libc_malloc_debug.so.0")
    if debug.exists():
        env["LD_PRELOAD"] = str(debug)
        env["GLIBC_TUNABLES"] = "glibc.malloc.check=3"
    return env


def test_no_abort_at_exit_after_the_host_unloads_the_fmus(fmu_path) -> None:
    """The crank-rocker example's pattern (a plant and two blocks in fmpy, freed and unloaded,
    then exit), 30 times in new processes: no abort."""
    paths = [fmu_path("he_crank_rocker"), fmu_path("dc_motor"), fmu_path("pid_controller")]
    env = _malloc_checking_env()
    codes = []
    for _ in range(30):
        run = subprocess.run([sys.executable, "-c", EXIT_PATTERN, *paths], capture_output=True, text=True,
                             timeout=600, env=env)
        codes.append(run.returncode)
        assert run.stdout.strip() == "ok", run.stderr
    assert codes == [0] * 30, codes


@pytest.fixture(scope="module")
def c_host(c_program) -> Path:
    return c_program("c_host", "dl")


def test_a_c_host_with_an_empty_environment_runs_the_plant(fmu_path, c_host, tmp_path) -> None:
    """A C program that dlopens the binary, with no environment variables at all (no
    LD_PRELOAD, PYTHONHOME, PYTHONPATH, HOME), reproduces fmpy's outputs to 1e-12 and exits
    cleanly."""
    path = fmu_path("double_pendulum")
    md = read_model_description(path)
    d = extract(path, unzipdir=str(tmp_path / "fmu"))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    inputs = {"shoulder.tau": 0.3, "elbow.tau": 0.1}
    outs = ["shoulder.q", "elbow.q", "shoulder.qd", "elbow.qd", "energy.total"]
    h, n = 0.01, 20
    args = [str(c_host), str(Path(d, "binaries", "linux64", "double_pendulum.so")), Path(d, "resources").as_uri(),
            md.guid, repr(h), str(n), str(len(inputs)), *(str(vr[k]) for k in inputs),
            *(repr(v) for v in inputs.values()), str(len(outs)), *(str(vr[k]) for k in outs)]
    run = subprocess.run(["env", "-i", *args], capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    got = np.array([[float(x) for x in line.split()] for line in run.stdout.splitlines()])

    s = Slave(path, "fmpy")
    s.start(inputs)
    _, want = s.run(0.0, n * h, h, outs, lambda t: inputs)
    s.close()
    assert got.shape == (n + 1, len(outs) + 1)
    assert np.allclose(got[:, 0], h * np.arange(n + 1), rtol=0, atol=1e-15)
    assert np.max(np.abs(got[:, 1:] - want)) <= 1e-12


def _sources_script(path: str) -> str:
    return textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(HERE)!r})
        from fmu_tools import Slave
        s = Slave({path!r})
        s.start()
        print(sys.modules["flexmbs_fmu"].__file__)
        s.close()
    """)


def test_the_fmu_imports_the_installed_package_when_it_is_identical(fmu_path) -> None:
    """Same sources installed: the FMU imports them (numba finds the kernels the installed
    package compiled), instead of a bundled copy at another path."""
    import flexmbs_fmu

    run = subprocess.run([sys.executable, "-c", _sources_script(fmu_path("dc_motor"))], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert Path(run.stdout.split()[-1]).parent == Path(flexmbs_fmu.__file__).parent


def test_the_bundled_sources_are_checked_against_their_digest(fmu_path, tmp_path) -> None:
    """FLEXMBS_FMU_SOURCES=bundle: the FMU's own copy, read from its resources and checked
    against its digest before anything of it is imported; a changed file makes the
    instantiation fail with a message that says so, and the changed code never runs."""
    path = fmu_path("dc_motor")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "FLEXMBS_FMU_SOURCES": "bundle"}
    first = subprocess.run([sys.executable, "-c", _sources_script(path)], capture_output=True, text=True, env=env,
                           timeout=300)
    assert first.returncode == 0, first.stderr
    used = Path(first.stdout.split()[-1])
    assert used.parts[-4:] == ("resources", "python", "flexmbs_fmu", "__init__.py"), used
    folder = tmp_path / "fmu"
    extract(path, unzipdir=str(folder))
    marker = tmp_path / "tampered"
    motor = folder / "resources" / "python" / "flexmbs_fmu" / "motor.py"
    motor.write_text(motor.read_text() + f"\nopen({str(marker)!r}, 'w').close()\n")
    made, messages = _instantiate_folder(path, folder, env)
    assert not made and "do not match their digest" in messages, messages
    assert not marker.exists()


def _instantiate_folder(path: str, folder: Path, env: dict) -> tuple[bool, str]:
    """fmi2Instantiate of the FMU `path` unpacked in `folder`, in a new process with `env`:
    (an instance was made, the messages logged)."""
    script = textwrap.dedent(f"""
        from fmpy import read_model_description
        from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
        md = read_model_description({path!r})
        msgs = []
        cb = fmi2CallbackFunctions()
        cb.logger = fmi2CallbackLoggerTYPE(lambda env, name, status, cat, msg: msgs.append(msg.decode()))
        fmu = FMU2Slave(guid=md.guid, unzipDirectory={str(folder)!r},
                        modelIdentifier=md.coSimulation.modelIdentifier, instanceName="x")
        try:
            fmu.instantiate(callbacks=cb, loggingOn=True)
            print("INSTANCE")
        except Exception:
            print("NULL")
        print("|".join(msgs))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    first, _, rest = run.stdout.partition("\n")
    return first == "INSTANCE", rest


def test_a_python_host_that_imported_another_flexmbs_gets_a_clean_error(fmu_path, tmp_path) -> None:
    """A Python host that already imported another flexmbs (a different version on its path)
    instantiates a plant FMU: no instance, and a message naming the loaded flexmbs (version,
    folder, digest of its sources) and the one the FMU needs (instead of "No module named
    'flexmbs.model'")."""
    import flexmbs

    other = tmp_path / "other"
    (other / "flexmbs").mkdir(parents=True)
    (other / "flexmbs" / "__init__.py").write_text('__version__ = "0.0.1"\n')
    made, log = _instantiate_in_a_new_process(fmu_path("double_pendulum"), tmp_path / "x", other=str(other),
                                              preamble="import flexmbs")
    assert made == "NULL"
    assert f"this process already imported flexmbs 0.0.1 from {other / 'flexmbs'}" in log, log
    assert "(its sources for this FMU have the digest (files missing))" in log
    assert f"but this FMU needs flexmbs {flexmbs.__version__} with the sources of digest" in log
    assert "No module named" not in log


def test_a_python_host_that_imported_our_host_tools_loads_a_block_fmu(fmu_path, tmp_path) -> None:
    """A script that imports the master (flexmbs.fmi.cosim, which imports flexmbs_fmu and
    flexmbs_laws but not pythonfmu) before it loads a block FMU: the FMU runs on the installed
    packages, whose sources are the ones it carries (a package the process has not imported yet
    is judged where it would be imported from, not as missing)."""
    made, log = _instantiate_in_a_new_process(fmu_path("dc_motor"), tmp_path / "x",
                                              preamble="import flexmbs.fmi.cosim, sys; assert 'pythonfmu' not in sys.modules")
    assert made == "INSTANCE", log


def test_an_unwritable_cache_folder_falls_back_to_a_temporary_one(tmp_path, caplog, monkeypatch) -> None:
    from flexmbs._cache import writable_cache

    blocker = tmp_path / "not_a_folder"      # a file where the folder should be (root ignores modes)
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    folder = writable_cache("numba", "abc")
    assert folder.is_dir() and blocker not in folder.parents
    assert "cannot be written" in caplog.text and str(blocker) in caplog.text


def test_libcosim_runs_the_ssp_package_with_the_step_it_carries(fmu_dir, tmp_path) -> None:
    """libcosim, given no step, reads the communication step from the package (without one it
    crashes): run in a new process, it reaches the end in steps of exactly that size."""
    from designs import crank_rocker_motor
    from flexmbs.fmi.ssp import write_ssp

    asm = crank_rocker_motor(fmu_dir, stop_time=0.02, step_size=2e-3)
    ssp = write_ssp(asm, tmp_path / "crank.ssp")
    folder = tmp_path / "unpacked"
    shutil.unpack_archive(ssp, folder, "zip")
    script = textwrap.dedent(f"""
        from libcosimpy.CosimExecution import CosimExecution
        ex = CosimExecution.from_ssp_file({str(folder)!r})
        ex.simulate_until(int(0.02e9))
        st = ex.status()
        print("RESULT", st.current_time, ex.num_slaves())
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    result = [line.split()[1:] for line in run.stdout.splitlines() if line.startswith("RESULT")]
    assert result, run.stdout[-2000:]
    t_ns, n = (int(x) for x in result[-1])
    assert (t_ns, n) == (20_000_000, 2)


def test_a_damaged_block_state_is_refused_whole(fmu_path, capsys) -> None:
    """The same for a block (the DC motor): a state with a bad parameter value or a non-finite
    state variable is refused with fmi2Error and the run continues as if it had not been offered."""
    def run(s: Slave, t0: float) -> np.ndarray:
        rows = []
        for k in range(10):
            s.set({"voltage": 12.0, "w_load": 1.0})
            s.fmu.doStep(currentCommunicationPoint=t0 + k * 1e-3, communicationStepSize=1e-3)
            rows.append(s.get(["tau_load"]))
        return np.array(rows)

    s = _started(fmu_path("dc_motor"), "motor")
    run(s, 0.0)
    _, good = _state_json(s)
    for damage in ("R", "x"):
        bad = json.loads(json.dumps(good))
        if damage == "R":
            bad["data"]["values"]["R"] = "two ohm"
        else:
            bad["data"]["x"] = {k: float("nan") for k in bad["data"]["x"]} or {"i": float("nan")}
        _refused(s.fmu.deSerializeFMUstate, json.dumps(bad, allow_nan=True).encode())
        assert "nothing was applied" in capsys.readouterr().out
    here = run(s, 0.01)
    s.close()
    ref = _started(fmu_path("dc_motor"), "ref")
    run(ref, 0.0)
    want = run(ref, 0.01)
    ref.close()
    assert np.array_equal(here, want)


def test_without_a_c_compiler_the_fmu_keeps_pythonfmus_binary(tmp_path, monkeypatch, caplog) -> None:
    """No compiler: the front end is skipped with a logged reason, and the FMU is pythonfmu's
    binary alone, which still runs in a Python host."""
    import zipfile

    import flexmbs.fmi.build as build
    import flexmbs.fmi.frontend as shim

    monkeypatch.setattr(shim, "compiler", lambda: None)
    assert shim.compile_front_end(tmp_path / "x.so", "{g}", [], "x", "x") == "no C compiler (cc, gcc or $CC) found"
    monkeypatch.setattr(build, "compile_front_end", shim.compile_front_end)
    built = build.build_component("dc_motor", tmp_path)
    assert "keeps pythonfmu's binary alone" in caplog.text and "no C compiler" in caplog.text
    names = zipfile.ZipFile(built.path).namelist()
    assert "binaries/linux64/dc_motor.so" in names
    assert "resources/flexmbs_python.txt" not in names
    s = Slave(str(built.path), "without_front_end")
    s.start()
    s.fmu.doStep(currentCommunicationPoint=0.0, communicationStepSize=1e-3)
    s.close()


def test_two_builds_of_one_model_each_run_their_own_model_file(fmu_path, tmp_path) -> None:
    """Two FMUs with the same model identifier (a model and a variant of it with another
    initial angle) in one process: each instance starts from its own model file's angle (the
    slave module is loaded per resource folder, not once per name)."""
    import yaml

    from flexmbs.model.catalog import models_dir
    from flexmbs.fmi.build import build

    data = yaml.safe_load((models_dir() / "double_pendulum.yaml").read_text())
    data["joints"][0]["q0"] = 0.7
    variant = tmp_path / "double_pendulum.yaml"
    variant.write_text(yaml.safe_dump(data, sort_keys=False))
    other = build(variant, tmp_path / "fmus")
    first, second = Slave(fmu_path("double_pendulum"), "shipped"), Slave(str(other.path), "variant")
    joint = data["joints"][0]["name"]
    try:
        for s in (first, second):
            s.start()
        assert first.get([f"{joint}.q"])[0] == 0.0 and second.get([f"{joint}.q"])[0] == 0.7
    finally:
        first.close()
        second.close()
