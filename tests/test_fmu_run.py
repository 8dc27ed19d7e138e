"""A built plant FMU driven by fmpy gives what flexmbs.simulate gives on the same model and
inputs, for any communication step; its parameters act on the physics they name."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import MODELS
from fmpy import simulate_fmu
from fmu_tools import Slave

import flexmbs
from flexmbs.model.paths import set_value


def _assert_same(fmu_rows: np.ndarray, names, ref: flexmbs.Result, rtol: float = 1e-9) -> None:
    for i, name in enumerate(names):
        want = ref[name]
        scale = max(np.max(np.abs(want)), 1e-12)
        err = np.max(np.abs(fmu_rows[:, i] - want)) / scale
        assert err <= rtol, f"{name}: relative difference {err:.2e}"


CASES = [("double_pendulum", 1.0, {"shoulder.tau": 0.7, "elbow.tau": -0.3}),
         ("huang_two_link", 0.4, {"shoulder.tau": 0.4, "elbow.tau": -0.2}),
         ("three_link_arm_motors", 0.2, {"shoulder.voltage": -4.0, "elbow.voltage": -2.5, "wrist.voltage": -0.5})]


@pytest.mark.parametrize("name, t_end, torques", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("h", [1e-3, 1e-2])
def test_simulate_fmu_reproduces_flexmbs_simulate(fmu_path, name, t_end, torques, h) -> None:
    res = simulate_fmu(fmu_path(name), stop_time=t_end, output_interval=h, start_values=torques)
    assert res["time"][-1] == pytest.approx(t_end, abs=1e-12), "fmpy stopped early"
    assert res["time"].size == round(t_end / h) + 1
    ref = flexmbs.simulate(flexmbs.load_model(MODELS / f"{name}.yaml"), t_end, output_step=h, inputs=torques)
    names = [n for n in res.dtype.names if n != "time"]
    assert len(names) > 20 and "energy.total" in names
    _assert_same(np.column_stack([res[n] for n in names]), names, ref)


def _torques(t: float) -> dict:
    return {"shoulder.tau": 0.5 * np.sin(2 * np.pi * t), "elbow.tau": 0.2 * np.cos(3 * t)}


@pytest.mark.parametrize("name", ["double_pendulum", "huang_two_link"])
def test_fmu2slave_with_changing_inputs_reproduces_simulate(fmu_path, name) -> None:
    """Inputs set before every step (zero-order hold), as a controller would."""
    s = Slave(fmu_path(name))
    s.start()
    names = ["shoulder.q", "elbow.qd", "elbow.qdd", "tip.r[2]", "energy.kinetic"]
    times, rows = s.run(0.0, 0.5, 1e-2, names, _torques)
    s.close()
    ref = flexmbs.simulate(flexmbs.load_model(MODELS / f"{name}.yaml"), 0.5, output_step=1e-2, inputs=_torques)
    assert times[-1] == pytest.approx(0.5)
    _assert_same(rows, names, ref)


def test_outputs_are_right_at_t0(fmu_path) -> None:
    """Set initial angles: the first row is the analytic geometry of the two links."""
    q1, q2, g = 0.3, 0.5, 9.81
    s = Slave(fmu_path("double_pendulum"))
    s.start({"shoulder.q0": q1, "elbow.q0": q2})
    r = s.get(["shoulder.q", "elbow.q", "tip.r[1]", "tip.r[2]", "energy.potential", "energy.kinetic",
               "shoulder.qdd"])
    s.close()
    assert r[0] == q1 and r[1] == q2
    assert r[2] == pytest.approx(np.cos(q1) + np.cos(q1 + q2), abs=1e-14)
    assert r[3] == pytest.approx(np.sin(q1) + np.sin(q1 + q2), abs=1e-14)
    assert r[4] == pytest.approx(g * (0.5 * np.sin(q1) + np.sin(q1) + 0.5 * np.sin(q1 + q2)), rel=1e-13)
    assert r[5] == 0.0
    assert r[6] < 0.0          # released from rest above the horizontal: it starts to fall


def test_parameters_reach_the_physics(fmu_path) -> None:
    """No gravity and no torque: nothing moves. A payload set as parameter runs like the model
    file with that tip mass."""
    s = Slave(fmu_path("double_pendulum"))
    s.start({"gravity[2]": 0.0, "elbow.q0": 0.4, "elbow.qd0": 0.0})
    _, rows = s.run(0.0, 1.0, 0.1, ["shoulder.q", "elbow.q"])
    s.close()
    assert np.all(rows[:, 0] == 0.0) and np.all(rows[:, 1] == 0.4)

    s = Slave(fmu_path("huang_two_link"))
    s.start({"payload": 1.25})
    names = ["elbow.q", "link2.tip_deflection[2]"]
    _, rows = s.run(0.0, 0.2, 1e-2, names)
    s.close()
    model = flexmbs.load_model(MODELS / "huang_two_link.yaml")
    set_value(model, "bodies.link2.tip_mass", 1.25)
    _assert_same(rows, names, flexmbs.simulate(model, 0.2, output_step=1e-2))


def test_solver_parameters_select_the_method(fmu_path) -> None:
    s = Slave(fmu_path("double_pendulum"))
    s.start({"solver.method": "dopri5", "solver.rtol": 1e-10, "solver.max_step": 0.005})
    names = ["shoulder.q", "elbow.q"]
    _, rows = s.run(0.0, 0.5, 0.05, names)
    s.close()
    model = flexmbs.load_model(MODELS / "double_pendulum.yaml")
    _assert_same(rows, names, flexmbs.simulate(model, 0.5, output_step=0.05, method="dopri5", rtol=1e-10,
                                               max_step=0.005))


def test_any_communication_step_works(fmu_path) -> None:
    """Irregular steps from 1e-7 s to 0.3 s (above the solver's max_step) end where a tight
    reference run ends."""
    steps = [1e-7, 0.3, 0.0123, 1e-4, 0.05, 0.2377, 0.1, 0.1 - 1e-7 - 1e-4]
    s = Slave(fmu_path("huang_two_link"))
    s.start({"solver.rtol": 1e-10})
    t = 0.0
    for h in steps:
        s.fmu.doStep(currentCommunicationPoint=t, communicationStepSize=h)
        t += h
    end = s.get(["shoulder.q", "elbow.q", "link2.eta[1]"])
    s.close()
    ref = flexmbs.simulate(flexmbs.load_model(MODELS / "huang_two_link.yaml"), t, rtol=1e-10, output_step=t)
    assert end == pytest.approx([ref["shoulder.q"][-1], ref["elbow.q"][-1], ref["link2.eta[1]"][-1]], rel=1e-7)


def test_two_plant_fmus_run_in_one_process(fmu_path) -> None:
    a, b = Slave(fmu_path("double_pendulum"), "a"), Slave(fmu_path("huang_two_link"), "b")
    a.start()
    b.start()
    ra, rb = [], []
    for k in range(20):
        ra.append(a.get(["elbow.q"]))
        rb.append(b.get(["elbow.q"]))
        a.fmu.doStep(currentCommunicationPoint=k * 0.01, communicationStepSize=0.01)
        b.fmu.doStep(currentCommunicationPoint=k * 0.01, communicationStepSize=0.01)
    ra.append(a.get(["elbow.q"]))
    rb.append(b.get(["elbow.q"]))
    a.close()
    b.close()
    for name, rows in (("double_pendulum", ra), ("huang_two_link", rb)):
        ref = flexmbs.simulate(flexmbs.load_model(MODELS / f"{name}.yaml"), 0.2, output_step=0.01)
        _assert_same(np.array(rows), ["elbow.q"], ref)


def test_one_fmu_instantiates_many_times_in_one_process(fmu_path) -> None:
    """pythonfmu 0.7 drops a reference to the slave module at each instantiation; the third
    instance used to fail. Six in a row, each running, and three alive at once."""
    for _ in range(6):
        s = Slave(fmu_path("double_pendulum"))
        s.start()
        s.fmu.doStep(currentCommunicationPoint=0.0, communicationStepSize=0.01)
        assert s.get(["elbow.q"])[0] != 0.0
        s.close()
    alive = [Slave(fmu_path("double_pendulum"), f"p{i}") for i in range(3)]
    for s in alive:
        s.start()
        s.close()
