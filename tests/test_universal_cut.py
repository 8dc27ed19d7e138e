"""A loop closed by a universal (Hooke) cut joint: the Cardan shaft's closed-form output angle,
and agreement with the same mechanism whose universal joint is in the tree and whose output
bearing is the cut (another formulation of the same constraints)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flexmbs
from flexmbs.model import Body, Drive, Joint, Loops, Marker, Model, ModelError, Profile, Sensor, Solver

BETA = 0.5   # angle between the input and output shafts [rad]


def _shafts() -> tuple[list[Marker], Body, Body]:
    """Ground bearings at the origin (input along x, output along x' = Rz(BETA) x) and two shafts
    whose yokes meet at the origin."""
    ground = [Marker("in"), Marker("out", rotation={"axis": (0, 0, 1), "angle": math.degrees(BETA)})]
    shaft_in = Body("input", mass=1.0, com=(-0.1, 0, 0), inertia=(2e-3, 5e-3, 5e-3),
                    markers=[Marker("bearing"), Marker("yoke")])
    shaft_out = Body("output", mass=0.5, com=(0.1, 0, 0), inertia=(1e-3, 3e-3, 3e-3),
                     markers=[Marker("bearing"), Marker("yoke")])
    return ground, shaft_in, shaft_out


def _model(name: str, ground, bodies, joints, cut: Joint) -> Model:
    return Model(name, gravity=(0, 0, 0), ground_markers=ground, bodies=bodies, joints=joints,
                 loops=Loops(cuts=[cut], independent=["in_bearing"]), sensors=[Sensor("out", "output", "bearing")],
                 solver=Solver(method="dopri5", rtol=1e-10, max_step=1e-2, output_step=0.01))


def hooke_cut(drive: Drive | None = None, qd0: float = 5.0, axis2=(0, 0, 1)) -> Model:
    """Both shafts on revolute bearings; the cross is the cut: arm axis = y fixed in the input,
    arm axis2 = z fixed in the output (perpendicular at zero angles)."""
    ground, shaft_in, shaft_out = _shafts()
    joints = [Joint("in_bearing", "revolute", "ground", "in", "input", "bearing", axis=(1, 0, 0), q0=[0.0],
                    qd0=[qd0], drive=drive or Drive()),
              Joint("out_bearing", "revolute", "ground", "out", "output", "bearing", axis=(1, 0, 0), q0=[0.1])]
    cut = Joint("cross", "universal", "input", "yoke", "output", "yoke", axis=(0, 1, 0), axis2=axis2)
    return _model("hooke_cut", ground, [shaft_in, shaft_out], joints, cut)


def hooke_tree(qd0: float = 5.0) -> Model:
    """The same shafts with the universal joint in the tree (its child marker turned by -BETA so
    that zero angles give the same pose) and the output bearing cut."""
    ground, shaft_in, shaft_out = _shafts()
    shaft_out.markers[1] = Marker("yoke", rotation={"axis": (0, 0, 1), "angle": -math.degrees(BETA)})
    joints = [Joint("in_bearing", "revolute", "ground", "in", "input", "bearing", axis=(1, 0, 0), q0=[0.0],
                    qd0=[qd0]),
              Joint("cross", "universal", "input", "yoke", "output", "yoke", axis=(0, 1, 0), axis2=(0, 0, 1),
                    q0=[0.0, 0.0])]
    cut = Joint("out_bearing", "revolute", "ground", "out", "output", "bearing", axis=(1, 0, 0))
    return _model("hooke_tree", ground, [shaft_in, shaft_out], joints, cut)


def test_cardan_shaft_output_angle_follows_the_closed_form() -> None:
    """Input driven at 2 rad/s: the output angle obeys tan t2 = tan t1 / cos BETA (the arms
    y cos t1 + z sin t1 and the output's rotated z stay perpendicular), and the cut holds."""
    model = hooke_cut(Drive("motion", profile=Profile("constant", value=0.0, rate=2.0)))
    res = flexmbs.simulate(model, 3.0)
    t1 = 2.0 * res.time
    t2 = np.unwrap(np.arctan2(np.sin(t1), np.cos(t1) * math.cos(BETA)))
    assert np.max(np.abs(res["out_bearing.q"] - t2)) < 1e-9
    assert np.max(res["cross.gap"]) < 1e-10 and np.max(res["cross.tilt"]) < 1e-10


def test_universal_cut_agrees_with_the_universal_joint_in_the_tree() -> None:
    """Released with the input at 5 rad/s and no gravity: the output's orientation and the input
    angle agree between the two formulations to 1e-9, kinetic energy is conserved in both, and
    the cross's alignment residual stays below 1e-10."""
    a = flexmbs.simulate(hooke_cut(), 2.0)
    b = flexmbs.simulate(hooke_tree(), 2.0)
    names = [f"out.R[{i},{j}]" for i in (1, 2, 3) for j in (1, 2, 3)] + ["in_bearing.q"]
    for name in names:
        assert np.max(np.abs(a[name] - b[name])) < 1e-9, name
    for res in (a, b):
        assert np.ptp(res["energy.kinetic"]) < 1e-9 * res["energy.kinetic"][0]
    assert np.max(a["cross.tilt"]) < 1e-10
    # the output turns unevenly: its rate swings between 5 cos BETA and 5 / cos BETA
    w2 = a["out_bearing.qd"] * 5.0 / a["in_bearing.qd"]
    assert np.min(w2) == pytest.approx(5 * math.cos(BETA), rel=1e-3)
    assert np.max(w2) == pytest.approx(5 / math.cos(BETA), rel=1e-3)


def test_universal_cut_needs_perpendicular_arms() -> None:
    with pytest.raises(ModelError, match=r"loops.cuts\[0\] 'cross'.axis2: .*perpendicular"):
        flexmbs.compile_model(hooke_cut(axis2=(0, 0.6, 0.8)))


def test_cardan_shaft_with_a_spring_oscillates_at_the_energy_frequency() -> None:
    """A torsional spring k on the output bearing, at rest at the output angle of input angle
    t1 = 0.6: with r = dt2/dt1 = cos BETA / (1 - sin^2 BETA cos^2 t1) (from tan t2 = tan t1 /
    cos BETA), T = (I_in + I_out r^2) t1'^2 / 2 and V'' = k r^2 at rest, so omega^2 =
    k r^2 / (I_in + I_out r^2) (the shafts' axial inertias); modes of the loop closed by the
    universal cut give it to 1e-6."""
    from flexmbs import modes
    from flexmbs.model import Spring

    t1, k = 0.6, 4.0
    model = hooke_cut(qd0=0.0)
    t2 = math.atan2(math.sin(t1), math.cos(t1) * math.cos(BETA))
    model.joint("out_bearing").spring = Spring(stiffness=k, preload=t2)
    model.joint("in_bearing").q0 = [t1 - 0.1]
    r = math.cos(BETA) / (1 - math.sin(BETA) ** 2 * math.cos(t1) ** 2)
    i_in, i_out = model.body("input").inertia[0], model.body("output").inertia[0]
    res = modes(model, n=None)
    assert res.coordinate_names == ["in_bearing.q"]
    assert res.omega[0] == pytest.approx(math.sqrt(k * r ** 2 / (i_in + i_out * r ** 2)), rel=1e-6)
