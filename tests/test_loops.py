"""Closed kinematic loops in joint coordinates (cut joints with Lagrange multipliers,
projection, assembly, redundant constraints) against closed-form kinematics and conservation."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest

import flexmbs
from flexmbs.model import Drive, ModelError, Profile
from flexmbs.system import compile_model

MODELS = Path(__file__).resolve().parent.parent / "models"
A, B, C, D = 0.102, 0.610, 0.406, 0.559          # crank, coupler, rocker, ground [m]


def four_bar():
    return flexmbs.load_model(MODELS / "four_bar.yaml")


def freudenstein(theta2: np.ndarray) -> np.ndarray:
    """Rocker angle theta4 of the four-bar (ground pivots at 0 and D on x) for crank angle
    theta2, on the branch with the rocker above the ground line: Freudenstein's equation
    K1 cos t4 - K2 cos t2 + K3 = cos(t2 - t4) solved as P cos t4 + Q sin t4 = R."""
    K1, K2, K3 = D / A, D / C, (A ** 2 - B ** 2 + C ** 2 + D ** 2) / (2 * A * C)
    P = K1 - np.cos(theta2)
    Q = -np.sin(theta2)
    R = K2 * np.cos(theta2) - K3
    # P cos t4 + Q sin t4 = R  ->  t4 = phi + acos(R / rho) with phi = atan2(Q, P)
    rho = np.hypot(P, Q)
    return np.arctan2(Q, P) + np.arccos(R / rho)


def test_assembly_finds_the_closed_pose_and_three_redundant_rows() -> None:
    """From approximate coupler and rocker angles with the crank held, Newton closes the loop at
    the triangle's angles; the cut's offset along the axis and its two tilts are redundant in a
    planar loop (Gruebler: -2 DOF by count, 1 in fact) and are reported and dropped."""
    system = compile_model(four_bar())
    q = dict(zip(system.joints, system.q0))
    cos_alpha = (B ** 2 + (D - A) ** 2 - C ** 2) / (2 * B * (D - A))
    alpha = math.acos(cos_alpha)
    tip = np.array([A + B * math.cos(alpha), B * math.sin(alpha)])
    assert q["crank"] == 0.0
    assert q["coupler_pin"] == pytest.approx(alpha, abs=1e-10)
    assert q["rocker"] == pytest.approx(math.atan2(tip[1], tip[0] - D), abs=1e-10)
    assert system.loop_redundant == ["rocker_pin: offset e3", "rocker_pin: tilt e3.e1'", "rocker_pin: tilt e3.e2'"]
    # the held crank keeps its rate; the others follow from G u = 0
    u = dict(zip(system.joints, system.u0))
    assert u["crank"] == 5.0
    w3 = u["crank"] + u["coupler_pin"]          # absolute coupler rate
    pin_v = 5.0 * A * np.array([0.0, 1.0])
    tip_v_coupler = pin_v + w3 * B * np.array([-math.sin(alpha), math.cos(alpha)])
    rel = tip - np.array([D, 0.0])
    tip_v_rocker = u["rocker"] * np.array([-rel[1], rel[0]])
    assert np.allclose(tip_v_coupler, tip_v_rocker, atol=1e-10)


def test_four_bar_follows_freudenstein_over_a_full_crank_turn() -> None:
    """Crank driven at 2 pi rad/s: the rocker angle equals the closed-form solution over one turn
    and the two sides of the cut joint stay together (projection after every step)."""
    model = four_bar()
    model.joint("crank").drive = Drive("motion", profile=Profile("constant", value=0.0, rate=2 * math.pi))
    res = flexmbs.simulate(model, 1.0, output_step=0.005)
    theta2 = 2 * math.pi * res.time
    assert np.max(np.abs(res["rocker.q"] - freudenstein(theta2))) < 1e-8
    gap = np.max(np.abs(np.column_stack([res[f"coupler_end.r[{k}]"] - res[f"rocker_tip.r[{k}]"] for k in (1, 2, 3)])))
    assert gap < 1e-10
    # the rocker swings between its limits, where crank and coupler line up (A-C = B -+ A)
    lo, hi = (math.acos((C ** 2 + D ** 2 - (B + s * A) ** 2) / (2 * C * D)) for s in (-1, 1))
    assert np.min(math.pi - res["rocker.q"]) == pytest.approx(lo, abs=1e-4)
    assert np.max(math.pi - res["rocker.q"]) == pytest.approx(hi, abs=1e-4)


@pytest.mark.parametrize("method", ["dopri5", "rk4"])
def test_free_four_bar_conserves_energy(method: str) -> None:
    """Released with the crank at 5 rad/s, no damping and no work by gravity: kinetic energy is
    constant (the constraint forces do no work) over 5 s, about 4 crank turns."""
    settings = {"dopri5": {"rtol": 1e-10}, "rk4": {"step": 2e-4}}[method]
    res = flexmbs.simulate(four_bar(), 5.0, method=method, output_step=0.01, **settings)
    e = res["energy.total"]
    assert res["crank.q"][-1] > 4 * 2 * math.pi * 0.5
    assert np.max(np.abs(e - e[0])) < 1e-8 * e[0]


def test_slider_crank_follows_the_analytic_slider_position() -> None:
    """Crank at 10 rad/s: x = r cos(theta) + sqrt(l^2 - r^2 sin(theta)^2), and its rate, over
    1.6 turns; the drive torque does the work the kinetic energy shows (trapezoidal work at
    1 ms samples: quadrature error ~6e-5 J)."""
    res = flexmbs.simulate(flexmbs.load_model(MODELS / "slider_crank.yaml"), 1.0, output_step=1e-3)
    th = 10.0 * res.time
    x = 0.1 * np.cos(th) + np.sqrt(0.09 - 0.01 * np.sin(th) ** 2)
    xd = -1.0 * np.sin(th) - 0.01 * 10.0 * np.sin(th) * np.cos(th) / np.sqrt(0.09 - 0.01 * np.sin(th) ** 2)
    assert np.max(np.abs(res["slide.q"] - x)) < 1e-10
    assert np.max(np.abs(res["slide.qd"] - xd)) < 1e-8
    power = res["crank.tau"] * 10.0
    work = np.concatenate([[0.0], np.cumsum(0.5 * (power[1:] + power[:-1]) * np.diff(res.time))])
    e = res["energy.kinetic"]
    assert np.max(np.abs(e - e[0] - work)) < 2e-4 * np.ptp(e)


def test_a_loop_that_cannot_close_is_a_clear_error() -> None:
    """A coupler too short to reach the rocker: the error names the cut and the gap."""
    model = copy.deepcopy(four_bar())
    model.body("coupler").markers[1].position = (0.04, 0.0, 0.0)    # 0.04 + 0.406 < 0.457
    with pytest.raises(ModelError, match=r"loops.cuts\[0\] .rocker_pin.: the loop cannot close: .*constraint "
                                         r".rocker_pin: offset e\d. is off by 0\.\d+ \(m\)"):
        compile_model(model)


def test_cut_joint_input_errors() -> None:
    model = copy.deepcopy(four_bar())
    model.loops.cuts[0].type = "screw"
    model.loops.independent = ["crank", "nope"]
    with pytest.raises(ModelError) as err:
        compile_model(model)
    text = str(err.value)
    assert "loops.cuts[0] 'rocker_pin'.type: unknown 'screw'" in text
    assert "loops.independent[1]: unknown joint 'nope'" in text


def test_reactions_at_the_cut_obey_newton_on_the_child_body() -> None:
    """The cut joint's force on its child is the only force along the slider's rail, so it equals
    m_slider x''; on the four-bar's rocker the tip force alone turns it about its pivot,
    I_pivot theta4'' = ((r_tip - r_D) x F)_z. Redundant directions report 0."""
    res = flexmbs.simulate(flexmbs.load_model(MODELS / "slider_crank.yaml"), 0.5)
    assert np.max(np.abs(res["wrist.force[1]"] - 2.0 * res["slide.qdd"])) < 1e-8
    assert np.ptp(res["wrist.force[1]"]) > 10.0
    assert np.max(np.abs(res["wrist.force[3]"])) == 0.0 and np.max(np.abs(res["wrist.torque[3]"])) == 0.0
    assert np.max(res["wrist.gap"]) < 1e-10

    res = flexmbs.simulate(four_bar(), 1.0)
    i_pivot = 0.0109891 + 0.8 * 0.203 ** 2
    arm = np.column_stack([res["rocker_tip.r[1]"] - D, res["rocker_tip.r[2]"]])
    moment = arm[:, 0] * res["rocker_pin.force[2]"] - arm[:, 1] * res["rocker_pin.force[1]"]
    assert np.max(np.abs(i_pivot * res["rocker.qdd"] - moment)) < 1e-8 * np.max(np.abs(moment))
    assert np.max(res["rocker_pin.gap"]) < 1e-10 and np.max(res["rocker_pin.tilt"]) < 1e-10
