"""Closed kinematic loops in joint coordinates (cut joints with Lagrange multipliers,
projection, assembly, redundant constraints) against closed-form kinematics and conservation."""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

import flexmbs
from flexmbs.model import Drive, ModelError, Profile
from flexmbs.compile import compile_model
from flexmbs.model.catalog import models_dir

MODELS = models_dir()
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


def test_a_compiled_system_is_not_changed_afterwards() -> None:
    """The System is built once, loop assembly and its report included: its arrays and initial
    state are read-only in Python, and a kernel that wrote into them would not compile."""
    system = compile_model(four_bar())
    assert set(system.loop_corrections) == {"coupler_pin", "rocker"}   # the crank is held
    for array in (system.q0, system.u0, system.input_defaults, system.arrays.Mc, system.arrays.cr_on):
        with pytest.raises(ValueError, match="read-only"):
            array[...] = 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        system.q0 = system.q0 + 1.0

    @njit
    def write(S):
        S.Mc[0, 0, 0] = 1.0

    with pytest.raises(TypingError):
        write(system.ref)


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


def dh(theta: float, a: float, alpha: float) -> np.ndarray:
    """Denavit-Hartenberg transform Rot_z(theta) Trans_x(a) Rot_x(alpha) (4 x 4)."""
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return np.array([[ct, -st * ca, st * sa, a * ct], [st, ct * ca, -ct * sa, a * st], [0, sa, ca, 0], [0, 0, 0, 1]])


def test_bricard_has_one_redundant_constraint_and_moves_with_one_dof() -> None:
    """The trihedral Bricard 6R loop: by count 0 DOF, in fact 1. Exactly one of the cut's rows is
    redundant; the motion stays on the symmetric branch theta1 = theta3 = theta5,
    theta2 = theta4 with cos t1 + cos t2 + cos t1 cos t2 = 0, whose poses close the
    Denavit-Hartenberg loop product (computed here from the link parameters); the energy of
    the undamped linkage stays constant over 10 s."""
    model = flexmbs.load_model(MODELS / "bricard.yaml")
    system = compile_model(model)
    assert system.loop_redundant == ["j6: offset e3"]
    res = flexmbs.simulate(model, 10.0, output_step=0.01)
    t1, t2 = res["j1.q"], res["j2.q"]
    assert np.ptp(t1) > 0.5                                       # it moved
    for a, b in (("j1", "j3"), ("j1", "j5"), ("j2", "j4")):
        assert np.max(np.abs(res[f"{a}.q"] - res[f"{b}.q"])) < 1e-9
    c1, c2 = np.cos(t1), np.cos(t2)
    assert np.max(np.abs(c1 + c2 + c1 * c2)) < 1e-9
    twists = [math.pi / 2, 3 * math.pi / 2] * 3
    for k in range(0, t1.size, 97):
        T = np.eye(4)
        for i in range(6):
            T = T @ dh(t1[k] if i % 2 == 0 else t2[k], 0.3, twists[i])
        assert np.allclose(T, np.eye(4), atol=1e-9)
    e = res["energy.total"]
    assert np.max(np.abs(e - e[0])) < 1e-8 * e[0]


@pytest.mark.parametrize("run", [{}, {"method": "radau", "interpolate": True}], ids=["landing", "radau past samples"])
def test_bricard_past_its_bifurcation_stops_with_a_clear_error(run: dict) -> None:
    """Without the spring the linkage runs to the end of its branch (theta1 = 2 pi/3), where the
    dropped row becomes independent: a SolverError that says so, not a broken loop, nor (radau
    stepping past the samples, whose steps collapse there) a step size below the minimum."""
    from flexmbs.solvers.stepper import SolverError

    model = flexmbs.load_model(MODELS / "bricard.yaml")
    model.joint("j1").spring = None
    with pytest.raises(SolverError, match="loop constraints could not be restored .*bifurcation") as err:
        flexmbs.simulate(model, 10.0, output_step=0.05, **run)
    kept = err.value.partial   # the samples before the failure, on the loop
    assert 0.0 < kept.time[-1] < 10.0
    assert np.max(kept["j6.gap"]) < 1e-9 and np.max(kept["j6.tilt"]) < 1e-9


@pytest.mark.parametrize("name, held", [("bricard", ()), ("he_crank_rocker", ()), ("he_crank_rocker", ("crank",))])
def test_the_numba_projection_agrees_with_the_least_squares_one(name: str, held: tuple) -> None:
    """Two independent projections of a state 1e-4 off the loop constraints (positions by
    Newton, then velocities, least norm in the integrators' weighted norm): the integrators'
    numba one (Cholesky of the Gram matrix of the rows in use) and loops.py's (numpy's SVD least
    squares) land on the same state, on the constraints, to rounding. Bricard's loop has a
    dropped redundant row, the crank-rocker a flexible coupler whose modal weights span 3e-5 to
    0.02 (its out-of-plane rows only the modes can close); with its crank held, the crank does
    not move. The weights: 1 for a joint coordinate (its scale), the state_scales of a modal one
    over the square root of its angular frequency [rad/s], 0 where held. The velocity correction
    is the least one in that norm: it is orthogonal, in the weighted inner product, to every
    velocity that keeps the constraints (the null space of G, by scipy's SVD)."""
    from scipy.linalg import null_space

    from flexmbs.kernels.dynamics import qdot_of
    from flexmbs.loops import TOL, Loops, free_columns, project_positions, project_velocities, projection_weights
    from flexmbs.system import state_scales

    system = compile_model(flexmbs.load_model(MODELS / f"{name}.yaml"))
    loops = Loops(system.arrays, system.ref, system.arrays.cr_on.astype(bool))
    free = free_columns(system.arrays, system.joint_u, held)
    scale = state_scales(system)
    weight = projection_weights(system.arrays, free, scale)
    # each velocity coordinate's weight is the scale of the position coordinate it moves (no
    # quaternions here: each moves exactly one, at unit rate, by the integrators' qdot map),
    # over the square root of the mode's angular frequency for a modal one
    omega = np.ones(system.nq)
    for b, name in enumerate(system.bodies):
        e0, n = system.arrays.eq[b], system.arrays.nm[b]
        if n:
            omega[e0:e0 + n] = np.maximum(system.flex[name].freqs, 1.0)
    expected = np.zeros(system.nv)
    for c in range(system.nv):
        qd = np.zeros(system.nq)
        qdot_of(system.ref, system.q0, np.eye(system.nv)[c], qd)
        (k,) = np.nonzero(qd)[0]
        assert qd[k] == 1.0
        expected[c] = scale[k] / np.sqrt(omega[k]) if free[c] else 0.0
    np.testing.assert_allclose(weight, expected, rtol=1e-15, atol=0.0)
    rng = np.random.default_rng(7)
    q0 = system.q0 + 1e-4 * rng.standard_normal(system.nq)
    u0 = system.u0 + 1e-1 * rng.standard_normal(system.nv)
    q, u = q0.copy(), u0.copy()
    residual = loops.project(q, u, weight)
    q_ls, u_ls = q0.copy(), u0.copy()
    project_positions(loops, q_ls, u_ls, weight)
    project_velocities(loops, q_ls, u_ls, weight)
    assert np.max(np.abs(q - q0)) > 1e-6 and np.max(np.abs(u - u0)) > 1e-3   # it had work to do
    assert residual <= TOL and loops.residual(q, u) <= TOL
    _, G = loops.eval(q, u)
    assert np.max(np.abs(G @ u)) < 1e-12
    assert np.max(np.abs(q - q_ls)) < 1e-12 and np.max(np.abs(u - u_ls)) < 1e-11
    for joint in held:
        (k, n), (c, _) = system.joint_q[joint], system.joint_u[joint]
        assert np.all(q[k:k + n] == q0[k:k + n]) and np.all(u[c:c + n] == u0[c:c + n])
    # the least correction in the norm sum (du_c / weight_c)^2 over the free coordinates: KKT,
    # N^T diag(1/weight^2) du = 0 (unit weights give 7e-4 of the scale here on the crank-rocker)
    du = u - u0
    N = null_space(G[:, free])
    assert N.shape[1] > 0
    assert np.max(np.abs(N.T @ (du[free] / weight[free] ** 2))) < 1e-9 * np.max(np.abs(du[free] / weight[free] ** 2))


def crank_rocker(E: float = 2.07e11, modes: int = 3):
    """He's crank-rocker (flexible steel coupler in the loop) with its crank spun up smoothly to
    30 rad/s in 0.2 s (He 1993's spin-up law)."""
    model = flexmbs.load_model(MODELS / "he_crank_rocker.yaml")
    model.joint("crank").drive = Drive("motion", profile=Profile("spin_up", omega_s=30.0, t_s=0.2))
    coupler = model.body("coupler")
    coupler.material.E, coupler.material.G, coupler.modes = E, E / 2.6, modes
    # the cantilever basis these convergence studies were measured on: bending only, so the
    # departure from the rigid linkage falls as 1/E^2; with interface modes the coupler also
    # stretches, a departure falling as 1/E (tests/test_interface_modes.py covers that basis);
    # so does the centrifugal stretch among the acceleration shapes
    coupler.interface_modes = False
    coupler.acceleration_modes = False
    return model


def midspan(res) -> np.ndarray:
    """Coupler midpoint's distance from the chord between its ends [m] (sensors pin, mid, end)."""
    chord = np.column_stack([res["end.r[1]"] - res["pin.r[1]"], res["end.r[2]"] - res["pin.r[2]"]])
    arm = np.column_stack([res["mid.r[1]"] - res["pin.r[1]"], res["mid.r[2]"] - res["pin.r[2]"]])
    return (chord[:, 0] * arm[:, 1] - chord[:, 1] * arm[:, 0]) / np.linalg.norm(chord, axis=1)


def test_stiff_flexible_coupler_tends_to_the_rigid_crank_rocker() -> None:
    """Raising the coupler's E tenfold divides its bending by ten (quasi-static inertia loads)
    and brings the rocker angle to the rigid closed form (Freudenstein) of the same crank angle."""
    errors, bends = [], []
    for factor in (1.0, 10.0, 100.0):
        res = flexmbs.simulate(crank_rocker(E=2.07e11 * factor), 0.4, output_step=1e-3, rtol=1e-9)
        errors.append(np.max(np.abs(res["rocker.q"] - freudenstein(res["crank.q"]))))
        bends.append(np.max(np.abs(midspan(res))))
        assert np.max(res["rocker_pin.gap"]) < 1e-10
    assert bends[0] > 2e-4
    assert bends[1] / bends[0] == pytest.approx(0.1, rel=0.02) and bends[2] / bends[1] == pytest.approx(0.1, rel=0.02)
    assert errors[2] < 1e-9 and errors[0] / errors[1] > 50 and errors[1] / errors[2] > 50


def test_flexible_coupler_converges_with_modes_and_step_size() -> None:
    """Midspan bending against the number of coupler modes (3 keeps two in-plane modes): 5 and 7
    modes agree to 1.5e-6 m, closer than 3 and 7; and fixed-step RK4 converges at 4th order."""
    bend = {m: np.max(np.abs(midspan(flexmbs.simulate(crank_rocker(modes=m), 0.4, output_step=1e-3, rtol=1e-9))))
            for m in (3, 5, 7)}
    assert abs(bend[5] - bend[7]) < 1.5e-6 < abs(bend[3] - bend[7])
    assert abs(bend[3] - bend[7]) < 0.03 * bend[7]
    ref = midspan(flexmbs.simulate(crank_rocker(), 0.4, output_step=1e-3, rtol=1e-11))
    errors = [np.max(np.abs(midspan(flexmbs.simulate(crank_rocker(), 0.4, output_step=1e-3, method="rk4", step=h))
                            - ref)) for h in (1e-3, 5e-4, 2.5e-4)]
    order = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all((order > 3.5) & (order < 4.5)), (errors, order)


def test_loop_models_run_as_fmus_like_simulate(fmu_path) -> None:
    """The slider-crank FMU (built and validated with the others) reproduces flexmbs.simulate,
    the cut joint's reaction and gap included; the reaction is declared with the accelerations."""
    from fmpy import read_model_description, simulate_fmu

    path = fmu_path("slider_crank")
    md = read_model_description(path)
    units = {v.name: v.unit for v in md.modelVariables}
    assert units["wrist.force[1]"] == "N" and units["wrist.gap"] == "m" and units["wrist.torque[3]"] == "N.m"
    names = ["slide.q", "slide.qd", "wrist.force[1]", "wrist.gap", "crank.tau"]
    fmu = simulate_fmu(path, stop_time=0.3, output_interval=0.005, output=names)
    direct = flexmbs.simulate(flexmbs.load_model(MODELS / "slider_crank.yaml"), 0.3, output_step=0.005)
    for name in names[:3] + names[4:]:
        assert np.max(np.abs(fmu[name] - direct[name])) <= 1e-9 * max(1.0, np.max(np.abs(direct[name]))), name
    assert np.max(fmu["wrist.gap"]) < 1e-10


@pytest.mark.parametrize("method", [None, "radau"])
def test_held_input_motion_stays_on_the_loop(method) -> None:
    """A crank driven through the `input` profile (q_ref, qd_ref held between samples): each step
    starts from the profile's values projected onto the loop, so the loop stays closed; radau
    projects its steps too, the crank held where it integrated to (not at the held q_ref)."""
    model = flexmbs.load_model(MODELS / "slider_crank.yaml")
    model.joint("crank").drive = Drive("motion", profile=Profile("input"))

    def inputs(t: float) -> dict:
        return {"crank.q_ref": 10.0 * t, "crank.qd_ref": 10.0, "crank.qdd_ref": 0.0}

    res = flexmbs.simulate(model, 2.0, output_step=0.01, inputs=inputs, method=method)
    assert np.max(res["wrist.gap"]) < 1e-9
