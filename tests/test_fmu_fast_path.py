"""The front end's fast path (inputs written and outputs read in C, outputs computed once per
step only when read) gives what the full evaluation gives."""

from __future__ import annotations

import numpy as np
import pytest
from fmu_tools import Slave


@pytest.mark.parametrize("name, inputs", [("huang_two_link", {"shoulder.tau": 0.3, "elbow.tau": -0.2}),
                                          ("spin_up_beam", {})])
def test_positions_read_alone_equal_those_of_a_full_read(fmu_path, name, inputs) -> None:
    """Reading only what follows from the state (positions, velocities, modal coordinates, tip
    deflections) takes the cheap level (a copy of the state with the motion-driven coordinates
    put on their profile: spin_up_beam's hub); reading every output runs the full evaluation
    (the dynamics at that state). Both give the same bits."""
    alone, full = Slave(fmu_path(name), "alone"), Slave(fmu_path(name), "full")
    states = [n for n in alone.outputs if n.endswith((".q", ".qd")) or ".eta[" in n or ".tip_deflection[" in n]
    assert states and any(n.endswith(".qdd") for n in full.outputs)
    try:
        for s in (alone, full):
            s.start()
            s.set(inputs)
        for k in range(25):
            a = alone.get(states)
            b = full.get(full.outputs)[[full.outputs.index(n) for n in states]]
            assert np.array_equal(a, b), k
            for s in (alone, full):
                s.fmu.doStep(currentCommunicationPoint=k * 2e-3, communicationStepSize=2e-3)
    finally:
        alone.close()
        full.close()


def test_an_input_set_between_two_reads_reaches_the_feedthrough_outputs(fmu_path) -> None:
    """Accelerations depend on the torque inputs within the instant (direct feedthrough): after
    a new input the next read is computed again. The elbow acceleration is affine in the elbow
    torque (M qdd = Q with Q affine in tau), so three reads at one state lie on a line."""
    s = Slave(fmu_path("huang_two_link"), "feedthrough")
    try:
        s.start()
        s.fmu.doStep(currentCommunicationPoint=0.0, communicationStepSize=1e-2)
        reads = []
        for tau in (0.3, -0.2, 0.05):
            s.set({"elbow.tau": tau})
            reads.append(s.get(["elbow.qdd", "elbow.q"]))
        (a1, q1), (a2, q2), (a3, q3) = reads
        assert q1 == q2 == q3          # the state did not move
        assert a1 != a2
        slope = (a2 - a1) / (-0.2 - 0.3)
        assert a3 == pytest.approx(a1 + slope * (0.05 - 0.3), rel=1e-10, abs=1e-12)
    finally:
        s.close()


@pytest.mark.parametrize("method", ["dopri5", "implicit", "rk4", "radau"])
def test_reading_outputs_between_steps_leaves_the_run_as_it_was(method) -> None:
    """The output evaluation shares the integrator's workspace: reading every output, at both
    levels, before and after each new input leaves the run bit for bit as a twin's that never
    reads (state, step size, step counts, the implicit method's memory)."""
    from flexmbs.model import load_model
    from flexmbs.model.catalog import shipped_models
    from flexmbs_fmu.plant import Plant

    def run(read: bool) -> dict:
        p = Plant(load_model(shipped_models()["huang_two_link"]))
        p.set_parameter("solver.method", method)
        p.initialize(0.0)
        for k in range(30):
            if read:
                p.refresh(2)
            p.set_input(0, 0.3 * np.sin(k))
            if read:
                p.refresh(1)
                p.refresh(2)
            p.step(0.01 * k, 0.01)
        return p.save()

    assert run(read=True) == run(read=False)


def test_the_effort_estimate_is_made_once_per_parameter_set(monkeypatch) -> None:
    """A step beyond the budget is refused on an estimate of its internal steps (step_rate:
    dopri5's stability bound from the highest kept mode, RK4's 1 / step), which depends on the
    model and the solver settings only: it is made when they are applied, not at every
    communication step (it took 5 us of a 47 us step of Huang's arm); a state restored with
    other settings makes it anew, and the budget then refuses by the new estimate (RK4 at 1 ms:
    2e7 steps for 2e4 s; RK4 has no max_step bound that would refuse it otherwise)."""
    import flexmbs_fmu.plant as plant_module
    from flexmbs.model import load_model
    from flexmbs.model.catalog import shipped_models
    from flexmbs_fmu.base import StepRefused
    from flexmbs_fmu.plant import Plant

    calls = []
    real = plant_module.step_rate
    monkeypatch.setattr(plant_module, "step_rate", lambda *args: calls.append(args[1].method) or real(*args))
    model = load_model(shipped_models()["huang_two_link"])
    p, other = Plant(model), Plant(model)
    p.initialize(0.0)
    for k in range(20):
        p.step(k * 1e-3, 1e-3)
    assert calls == ["dopri5"]
    other.set_parameter("solver.method", "rk4")
    other.initialize(0.0)
    p.restore(other.save())
    assert calls == ["dopri5", "rk4", "rk4"]
    with pytest.raises(StepRefused, match="RK4 at step 0.001 s"):
        p.step(p.t, 2e4)
