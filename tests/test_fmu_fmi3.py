"""The FMI 3.0 co-simulation FMUs (build --fmi-version 3, fmu_src/flexmbs_fmu/flexmbs_fmi3.c)
against independent references: fmpy's validation of the description, the FMI 2.0 FMU of the
same model (the same Python slave runs under both front ends, so the same calls must give the
same outputs and derivatives bit for bit: compared with ==), the FMI 3.0 state rules
(Modelica Association, "Functional Mock-up Interface Specification 3.0", 2022, sections 2.3
and 4.2) and a C host compiled here.

Models: Huang's flexible two-link arm (huang_two_link), a closed loop (four_bar) and a block
(dc_motor)."""

from __future__ import annotations

import ctypes as C
import math
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest
from fmpy import extract, read_model_description, simulate_fmu
from fmpy.fmi1 import FMICallException
from fmpy.fmi3 import FMU3Slave, fmi3IntermediateUpdateCallback, fmi3LogMessageCallback
from fmpy.validation import validate_fmu

from flexmbs.fmi.cosim import open_slave

MODELS = ["huang_two_link", "four_bar", "dc_motor"]
WARNING, DISCARD, ERROR = 1, 2, 3


def _inputs(md) -> list:
    return [v for v in md.modelVariables if v.causality == "input" and v.type in ("Real", "Float64")]


def _outputs(md) -> list:
    return [v for v in md.modelVariables if v.causality == "output"]


def _u(k: int, i: int, start: float) -> float:
    """The same input sequence for both FMUs: input i at communication point k."""
    return start + 0.05 * math.sin(0.7 * k + i) * (1.0 + abs(start))


class Run:
    """One instance of an FMU (FMI 2.0 or 3.0) through the master's slave API (cosim.open_slave)."""

    def __init__(self, path: str, name: str) -> None:
        self.md = read_model_description(path)
        self.dir = extract(path)
        self.slave = open_slave(self.md, self.dir, name)
        self.ins = [v.valueReference for v in _inputs(self.md)]
        self.starts = [float(v.start) for v in _inputs(self.md)]
        self.outs = [v.valueReference for v in _outputs(self.md)]

    def start(self) -> None:
        self.slave.setupExperiment(startTime=0.0)
        self.slave.enterInitializationMode()
        self.slave.exitInitializationMode()

    def step(self, k: int, h: float) -> np.ndarray:
        """Set the inputs of point k, read every output, step from k h by h."""
        if self.ins:
            self.slave.setReal(self.ins, [_u(k, i, s) for i, s in enumerate(self.starts)])
        y = np.array(self.slave.getReal(self.outs))
        self.slave.doStep(k * h, h)
        return y

    def close(self) -> None:
        self.slave.terminate()
        self.slave.freeInstance()
        shutil.rmtree(self.dir, ignore_errors=True)


# ------------------------------------------------------------------ the description


@pytest.mark.parametrize("name", MODELS)
def test_the_fmi3_description_validates_and_matches_the_fmi2_one(fmu_path, fmu3_path, name) -> None:
    """fmpy validates the FMU (schema, start values, units, display units, model structure);
    every FMI 2.0 variable is there with its name, value reference, causality, variability,
    unit and display unit, the outputs with the same dependencies; `time` is the independent
    variable; the instantiation token is not the FMI 2.0 GUID."""
    path3 = fmu3_path(name)
    assert validate_fmu(path3) == []
    md3 = read_model_description(path3, validate=True)
    md2 = read_model_description(fmu_path(name))
    assert md3.fmiVersion == "3.0" and md3.coSimulation.modelIdentifier == md2.coSimulation.modelIdentifier
    assert md3.guid and md3.guid != md2.guid
    v3 = {v.name: v for v in md3.modelVariables}
    for v in md2.modelVariables:
        w = v3[v.name]
        assert (w.valueReference, w.causality, w.variability) == (v.valueReference, v.causality, v.variability)
        assert w.type == {"Real": "Float64"}.get(v.type, v.type)
        assert (w.unit, w.displayUnit, w.start) == (v.unit, v.displayUnit, v.start), v.name
    assert [v.name for v in md3.modelVariables if v.causality == "independent"] == ["time"]
    deps2 = {u.variable.name: [d.name for d in u.dependencies] for u in md2.outputs}
    deps3 = {u.variable.name: [d.name for d in u.dependencies] for u in md3.outputs}
    assert deps3 == deps2
    assert sorted(u.variable.name for u in md3.initialUnknowns) == sorted(u.variable.name for u in md2.initialUnknowns)
    with zipfile.ZipFile(path3) as z:      # the attributes as FMI 3.0 spells them (section 4.4)
        cs = ElementTree.fromstring(z.read("modelDescription.xml")).find("CoSimulation").attrib
    for flag in ("canGetAndSetFMUState", "canSerializeFMUState", "providesDirectionalDerivatives",
                 "providesAdjointDerivatives", "canHandleVariableCommunicationStepSize"):
        assert cs[flag] == "true", flag
    assert cs["hasEventMode"] == "false" and cs["maxOutputDerivativeOrder"] == "1"


# ------------------------------------------------------------------ the same outputs


@pytest.mark.parametrize("name", MODELS)
def test_fmi3_gives_the_fmi2_outputs_bit_for_bit(fmu_path, fmu3_path, name) -> None:
    """The same inputs at every communication point: every output at every point equal (==),
    and the directional and output derivatives at the end too."""
    runs = [Run(fmu_path(name), "fmi2"), Run(fmu3_path(name), "fmi3")]
    h, n = 0.005, 60
    for r in runs:
        r.start()
    rows = [np.array([r.step(k, h) for k in range(n)]) for r in runs]
    assert rows[0].shape == (n, len(runs[0].outs)) and np.all(np.isfinite(rows[0]))
    assert np.array_equal(rows[0], rows[1])
    two, three = (r.slave for r in runs)
    outs, ins = runs[0].outs, runs[0].ins
    assert np.array_equal(two.getRealOutputDerivatives(outs, [1] * len(outs)),
                          three.getRealOutputDerivatives(outs, [1] * len(outs)))
    for vr in ins:
        assert np.array_equal(two.getDirectionalDerivative(outs, [vr], [1.0]),
                              three.getDirectionalDerivative(outs, [vr], [1.0]))
    for r in runs:
        r.close()


def test_the_adjoint_derivative_is_the_transposed_directional_one(fmu3_path) -> None:
    """fmi3GetAdjointDerivative: seed^T J over the inputs, J's columns from
    fmi3GetDirectionalDerivative (the same differences, so equal up to the order of the sums)."""
    r = Run(fmu3_path("huang_two_link"), "adjoint")
    r.start()
    for k in range(10):
        r.step(k, 0.01)
    fmu = r.slave.fmu
    seed = [0.3 * (i + 1) for i in range(len(r.outs))]
    J = np.array([fmu.getDirectionalDerivative(r.outs, [vr], [1.0]) for vr in r.ins]).T
    adjoint = fmu.getAdjointDerivative(r.outs, r.ins, seed, nSensitivity=len(r.ins))   # one per known
    assert np.allclose(adjoint, np.array(seed) @ J, rtol=1e-12, atol=1e-12 * np.max(np.abs(J)))
    r.close()


@pytest.mark.parametrize("name", ["huang_two_link", "dc_motor"])
def test_fmpy_simulates_the_fmi3_fmu_as_the_fmi2_one(fmu_path, fmu3_path, name) -> None:
    """fmpy.simulate_fmu (its own FMI 3.0 calling sequence: instantiate, enter and exit
    initialisation, doStep, terminate) gives the FMI 2.0 FMU's results, bit for bit."""
    res = [simulate_fmu(p(name), stop_time=0.05, output_interval=0.005) for p in (fmu_path, fmu3_path)]
    names = [n for n in res[0].dtype.names if n != "time"]
    assert names and names == [n for n in res[1].dtype.names if n != "time"]
    for n in ["time", *names]:
        assert np.array_equal(res[0][n], res[1][n]), n


# ------------------------------------------------------------------ calls out of sequence


def _logged(capsys) -> str:
    return capsys.readouterr().out


def _refused(call, *args) -> None:
    with pytest.raises(FMICallException) as err:
        call(*args)
    assert err.value.status == ERROR


def test_bad_calls_get_fmi3error_with_a_logged_message_and_the_host_goes_on(fmu3_path, capsys) -> None:
    r = Run(fmu3_path("huang_two_link"), "plant")
    fmu = r.slave.fmu
    _logged(capsys)
    _refused(fmu.doStep, 0.0, 0.01)
    out = _logged(capsys)
    assert "[ERROR]" in out and "fmi3DoStep is not allowed in state 'instantiated'" in out
    _refused(fmu.getOutputDerivatives, r.outs[:1], [1])
    assert "fmi3GetOutputDerivatives is not allowed in state 'instantiated'" in _logged(capsys)
    _refused(fmu.exitInitializationMode)
    assert "fmi3ExitInitializationMode is not allowed in state 'instantiated'" in _logged(capsys)
    _refused(fmu.enterInitializationMode, None, math.nan)
    assert "fmi3EnterInitializationMode: the start time nan s" in _logged(capsys)
    fmu.enterInitializationMode(startTime=0.0)
    _refused(fmu.enterStepMode)
    assert "fmi3EnterStepMode: this FMU has no Event Mode" in _logged(capsys)
    fmu.exitInitializationMode()
    _refused(fmu.enterEventMode)
    assert "fmi3EnterEventMode: this FMU has no Event Mode" in _logged(capsys)
    n = len(r.md.modelVariables)
    _refused(fmu.getFloat64, [n + 3])
    assert f"value reference {n + 3} does not exist" in _logged(capsys)
    _refused(fmu.getInt32, [r.outs[0]])
    assert "is not of this type (it is a Real variable)" in _logged(capsys)
    one = (C.c_uint32 * 1)(r.outs[0])        # a value refused by the slave: a warning, as in FMI 2.0
    assert fmu.dll.fmi3SetFloat64(C.c_void_p(fmu.component), one, 1, (C.c_double * 1)(1.0), 1) == WARNING
    assert "is an output and cannot be set" in _logged(capsys)
    assert fmu.dll.fmi3SetFloat64(C.c_void_p(fmu.component), one, 1, (C.c_double * 2)(1.0, 2.0), 2) == ERROR
    assert "2 values for 1 value references" in _logged(capsys)
    time_vr = next(v.valueReference for v in r.md.modelVariables if v.name == "time")
    _refused(fmu.setFloat64, [time_vr], [1.0])
    assert "the independent variable time" in _logged(capsys)
    _refused(fmu.doStep, 0.5, 0.01)
    assert "fmi3DoStep: the step starts at t = 0.5 s but the FMU is at t = 0.0 s" in _logged(capsys)
    _refused(fmu.doStep, 0.0, 0.0)            # section 4.2.1: communicationStepSize > 0
    assert "a finite positive step" in _logged(capsys)
    # the host goes on: a valid step, and time reads the FMU's time among the outputs
    assert fmu.doStep(0.0, 0.01) == (False, False, False, 0.01)
    values = fmu.getFloat64([r.outs[0], time_vr, r.outs[1]])
    assert values[1] == 0.01 and all(np.isfinite(values))
    r.close()


@pytest.mark.parametrize("name", ["huang_two_link", "dc_motor"])
def test_start_values_are_read_in_instantiated(fmu3_path, name) -> None:
    """FMI 3.0 (section 2.3.2) lets a host read start values before initialisation: every
    input and parameter reads its description's start value (solver.method too), `time` reads
    0, and the outputs read finite values of the start state."""
    r = Run(fmu3_path(name), "start")
    fmu = r.slave.fmu
    reals = [v for v in r.md.modelVariables if v.type == "Float64"]
    values = dict(zip((v.name for v in reals), fmu.getFloat64([v.valueReference for v in reals])))
    for v in reals:
        if v.causality in ("input", "parameter"):
            assert values[v.name] == float(v.start), v.name
    assert values["time"] == 0.0 and all(np.isfinite(list(values.values())))
    strings = [v for v in r.md.modelVariables if v.type == "String"]
    assert fmu.getString([v.valueReference for v in strings]) == [v.start for v in strings]
    r.start()                                  # and the run goes on as usual
    r.step(0, 0.01)
    r.close()


def test_a_discarded_step_refuses_steps_and_sets_until_a_state_is_restored(fmu3_path, capsys) -> None:
    """A NaN input is refused, the next step is discarded (fmi3Discard, lastSuccessfulTime its
    start); then steps and sets are refused in 'step discarded', getters answer, and restoring
    a state saved before goes on."""
    r = Run(fmu3_path("huang_two_link"), "plant")
    r.start()
    fmu, tau = r.slave.fmu, r.ins[0]
    fmu.doStep(0.0, 0.01)
    saved = fmu.getFMUState()
    fmu.setFloat64([tau], [math.nan])          # refused with a warning: the next step is discarded
    assert "was set to nan at t = 0.01 s" in _logged(capsys)
    flags = [C.c_bool(True) for _ in range(3)]
    last = C.c_double(-1.0)
    status = fmu.dll.fmi3DoStep(C.c_void_p(fmu.component), C.c_double(0.01), C.c_double(0.01), C.c_bool(True),
                                *(C.byref(f) for f in flags), C.byref(last))
    assert status == DISCARD and [f.value for f in flags] == [False, False, False] and last.value == 0.01
    _logged(capsys)
    _refused(fmu.setFloat64, [tau], [0.0])
    out = _logged(capsys)
    assert "fmi3SetFloat64 is not allowed in state 'step discarded'" in out and "fmi3SetFMUState" in out
    _refused(fmu.doStep, 0.01, 0.01)
    assert np.all(np.isfinite(fmu.getFloat64(r.outs)))
    fmu.setFMUState(saved)
    fmu.doStep(0.01, 0.01)
    fmu.freeFMUState(saved)
    r.close()


def test_instantiation_is_refused_with_a_reason(fmu3_path) -> None:
    """A wrong token, eventModeUsed, intermediate variables, a missing resource folder, Model
    Exchange: no instance, and the reason logged."""
    path = fmu3_path("dc_motor")
    md = read_model_description(path)
    folder = extract(path)
    messages: list[str] = []

    def log(env, status, category, message) -> None:
        messages.append(message.decode())

    callback = fmi3LogMessageCallback(log)
    fmu = FMU3Slave(guid=md.guid, unzipDirectory=folder,
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName="refused")
    resources = (str(Path(folder, "resources")) + "/").encode()
    cases = {
        "does not match this FMU's": (b"{not-the-token}", resources, False, 0),
        "has no Event Mode": (md.guid.encode(), resources, True, 0),
        "no intermediate updates": (md.guid.encode(), resources, False, 1),
        "is not an existing folder": (md.guid.encode(), b"/no/such/folder/", False, 0),
    }
    required = (C.c_uint32 * 1)(0)
    for words, (token, where, events, n) in cases.items():
        messages.clear()
        handle = fmu.dll.fmi3InstantiateCoSimulation(b"x", token, where, False, False, events, False, required, n,
                                                     None, callback, fmi3IntermediateUpdateCallback())
        assert not handle and any(words in m for m in messages), (words, messages)
    messages.clear()
    me = fmu.dll.fmi3InstantiateModelExchange
    me.restype = C.c_void_p
    assert not me(b"x", md.guid.encode(), resources, False, False, None, callback)
    assert "co-simulation only" in messages[0]
    shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------------ FMU states


@pytest.mark.parametrize("name", ["four_bar", "dc_motor"])
def test_a_state_round_trip_is_bit_identical(fmu3_path, name) -> None:
    """fmi3GetFMUState at t1, go on to t2; fmi3SetFMUState and the same steps again: the same
    outputs (==); the same through fmi3SerializeFMUState / fmi3DeserializeFMUState into a new
    instance; a forged handle is refused."""
    h, k1, k2 = 0.01, 10, 25
    r = Run(fmu3_path(name), "a")
    r.start()
    for k in range(k1):
        r.step(k, h)
    fmu = r.slave.fmu
    saved = fmu.getFMUState()
    blob = fmu.serializeFMUState(saved)
    first = np.array([r.step(k, h) for k in range(k1, k2)])
    fmu.setFMUState(saved)
    again = np.array([r.step(k, h) for k in range(k1, k2)])
    assert np.array_equal(first, again)

    other = Run(fmu3_path(name), "b")
    other.start()
    state = other.slave.fmu.deserializeFMUState(blob)
    other.slave.fmu.setFMUState(state)
    assert np.array_equal(np.array([other.step(k, h) for k in range(k1, k2)]), first)
    with pytest.raises(FMICallException):
        fmu.setFMUState(C.c_void_p(id(blob)))
    fmu.freeFMUState(saved)
    other.slave.fmu.freeFMUState(state)
    for x in (r, other):
        x.close()


# ------------------------------------------------------------------ a C host


def test_a_c_host_gets_the_fmi2_c_hosts_outputs(fmu_path, fmu3_path, c_program, tmp_path) -> None:
    """c_host3.c (FMI 3.0) and c_host.c (FMI 2.0), each with an empty environment, on the FMUs
    of Huang's arm with the same constant inputs: the same rows, digit for digit (17 significant
    digits: every bit), and fmi3DoStep's out-arguments right at every step."""
    rows = []
    for version, path, host in ((2, fmu_path("huang_two_link"), "c_host"),
                                (3, fmu3_path("huang_two_link"), "c_host3")):
        md = read_model_description(path)
        d = extract(path, unzipdir=str(tmp_path / f"fmu{version}"))
        vr = {v.name: v.valueReference for v in md.modelVariables}
        inputs = {"shoulder.tau": 0.3, "elbow.tau": 0.1}
        outs = ["shoulder.q", "elbow.q", "elbow.qd", "link2.eta[1]"]
        binary = Path(d, "binaries", "linux64" if version == 2 else "x86_64-linux", "huang_two_link.so")
        where = Path(d, "resources").as_uri() if version == 2 else str(Path(d, "resources")) + "/"
        args = [str(c_program(host, "dl")), str(binary), where, md.guid, "0.01", "20", str(len(inputs)),
                *(str(vr[k]) for k in inputs), *(repr(v) for v in inputs.values()), str(len(outs)),
                *(str(vr[k]) for k in outs)]
        run = subprocess.run(["env", "-i", *args], capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, run.stderr[-3000:]
        rows.append(run.stdout.splitlines())
    assert len(rows[1]) == 21 and rows[1] == rows[0]


# ------------------------------------------------------------------ masters and SSP packages


def test_the_master_and_ssp_packages_take_fmi3_fmus_next_to_fmi2_ones(fmu_dir, fmu3_path, tmp_path) -> None:
    """The servo system (Huang's arm, two motors, two controllers, two trajectories) with the
    plant and the motors as FMI 3.0 FMUs, the rest FMI 2.0: the master's run equals the all-FMI
    2.0 run (==); as an SSP package it runs with run_master to the same numbers, and fmpy's SSP
    runner, which drives FMI 2.0 only, refuses it with the reason."""
    from dataclasses import replace

    from designs import huang_servo
    from flexmbs.fmi.cosim import CosimError, Master
    from flexmbs.fmi.servo import assembly
    from flexmbs.fmi.ssp import fmi_versions, run_fmpy, run_master, write_ssp
    from flexmbs.model.catalog import models_dir

    design = replace(huang_servo(models_dir()), stop_time=0.4, step_size=5e-4, gauss_seidel=False)
    plain = assembly(design, fmu_dir)
    mixed = assembly(design, fmu_dir)
    for e in mixed.elements:
        if e.name == "arm" or e.name.startswith("m_"):
            e.fmu = Path(fmu3_path("huang_two_link" if e.name == "arm" else "dc_motor"))
    runs = []
    for asm in (plain, mixed):
        with Master(asm) as m:
            m.initialize()
            assert m.stability is not None          # from every FMU's derivatives, FMI 3.0 ones too
            runs.append(m.run(design.stop_time, design.step_size))
    assert np.ptp(runs[0]["arm.shoulder.q"]) > 0.0            # the arm did move
    for name in plain.record:
        assert np.array_equal(runs[0][name], runs[1][name]), name

    ssp = write_ssp(mixed, tmp_path / "mixed.ssp")
    versions = fmi_versions(ssp)
    assert sorted(set(versions.values())) == ["2.0", "3.0"]
    packaged = run_master(ssp, design.stop_time, design.step_size)
    for name in plain.record:
        assert np.array_equal(packaged[name], runs[1][name]), name
    with pytest.raises(CosimError, match="FMI 2.0 FMUs only"):
        run_fmpy(ssp, design.stop_time, design.step_size)


def test_build_fmu_writes_an_fmi3_block(tmp_path) -> None:
    """build_fmu.py --block trajectory --fmi-version 3: a validated FMI 3.0 FMU, said so."""
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([str(Path(sys.executable)), str(root / "build_fmu.py"), "--block", "trajectory",
                          "--fmi-version", "3", "-o", str(tmp_path)], capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "FMI 3.0" in run.stdout and "valid" in run.stdout
    md = read_model_description(str(tmp_path / "trajectory.fmu"), validate=True)
    assert md.fmiVersion == "3.0"
