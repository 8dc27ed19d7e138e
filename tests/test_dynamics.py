"""Multibody dynamics against independent references: analytic solutions, equations derived
here, conservation laws, the rigid limit, and refinement."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import flexmbs
from flexmbs.solvers.stepper import SolverError

from mechanisms import (compound_pendulum, double_pendulum, huang_arm, spin_up_angle, spin_up_beam)

G = 9.81


def test_small_angle_pendulum_period():
    m, d, ic = 2.0, 0.4, 0.05
    amp = 1e-3
    model = compound_pendulum(m, d, ic, q0=-np.pi / 2 + amp)
    i_pivot = ic + m * d**2
    period = 2 * np.pi * np.sqrt(i_pivot / (m * G * d))
    r = flexmbs.simulate(model, 2.2 * period, method="dopri5", rtol=1e-11, output_step=period / 400)
    q = r["hinge.q"] + np.pi / 2
    # zero crossings from + to - of the swing, interpolated
    k = np.where((q[:-1] > 0) & (q[1:] <= 0))[0]
    tz = r.time[k] - q[k] * (r.time[k + 1] - r.time[k]) / (q[k + 1] - q[k])
    measured = tz[1] - tz[0]
    # finite-amplitude correction (1 + amp^2/16) is 6e-8: below the tolerance
    assert measured == pytest.approx(period, rel=1e-6)


def _double_pendulum_reference(t_eval, L=1.0, m=1.0):
    """Lagrange equations of two uniform rods in absolute angles, derived independently."""
    def f(t, y):
        t1, t2, w1, w2 = y
        c = np.cos(t1 - t2)
        s = np.sin(t1 - t2)
        M = np.array([[m * L**2 / 3 + m * L**2, m * L**2 / 2 * c], [m * L**2 / 2 * c, m * L**2 / 3]])
        rhs = np.array([-m * L**2 / 2 * s * w2**2 - 1.5 * m * G * L * np.cos(t1),
                        m * L**2 / 2 * s * w1**2 - 0.5 * m * G * L * np.cos(t2)])
        a = np.linalg.solve(M, rhs)
        return [w1, w2, a[0], a[1]]
    sol = solve_ivp(f, (0, t_eval[-1]), [0, 0, 0, 0], method="DOP853", rtol=1e-12, atol=1e-12, t_eval=t_eval)
    return sol.y[0], sol.y[1] - sol.y[0]


def test_double_pendulum_matches_independent_equations():
    r = flexmbs.simulate(double_pendulum(), 2.0, method="rk4", step=1e-3, output_step=0.01)
    th1, th2 = _double_pendulum_reference(r.time)
    assert np.abs(r["j1.q"] - th1).max() < 2e-9
    assert np.abs(r["j2.q"] - th2).max() < 2e-9
    e = r["energy.total"]
    assert np.abs(e - e[0]).max() < 1e-6 * r["energy.kinetic"].max()


def test_rk4_is_fourth_order():
    errs = []
    t_ref = None
    for h in (4e-3, 2e-3, 1e-3):
        r = flexmbs.simulate(double_pendulum(), 1.0, method="rk4", step=h, output_step=0.1)
        if t_ref is None:
            t_ref = r.time
            th1, _ = _double_pendulum_reference(t_ref)
        errs.append(abs(r["j1.q"][-1] - th1[-1]))
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(orders > 3.7) and np.all(orders < 4.3), orders


@pytest.mark.parametrize("method", ["dopri5", "implicit", "radau"])
def test_adaptive_methods_agree_with_reference(method):
    r = flexmbs.simulate(double_pendulum(), 1.0, method=method, rtol=1e-8, output_step=0.1)
    th1, th2 = _double_pendulum_reference(r.time)
    tol = 1e-4 if method == "implicit" else 1e-6
    assert np.abs(r["j1.q"] - th1).max() < tol
    assert np.abs(r["j2.q"] - th2).max() < tol


def test_flexible_arm_conserves_energy():
    """Seed 000 demands energy errors far below the strain energy: here below 1e-4 of its maximum."""
    r = flexmbs.simulate(huang_arm(), 2.0)
    e = r["energy.total"]
    strain = r["energy.strain"].max()
    assert strain > 1e-3  # the link really deforms
    assert np.abs(e - e[0]).max() < 1e-4 * strain


def test_flexible_arm_without_stiffening_conserves_energy():
    r = flexmbs.simulate(huang_arm(stiffening=False, modes=2), 1.0)
    e = r["energy.total"]
    assert np.abs(e - e[0]).max() < 1e-4 * r["energy.strain"].max()


def test_structural_damping_dissipates_energy():
    r = flexmbs.simulate(huang_arm(alpha=3e-4), 2.0)
    e = r["energy.total"]
    assert np.all(np.diff(e) < 1e-9)
    assert e[-1] < e[0] - 1e-3


def test_rigid_limit():
    """A flexible link with E x 1e4 moves like the rigid link with the same mass distribution."""
    stiff = flexmbs.simulate(huang_arm(E_factor=1e4, modes=2), 1.5, output_step=0.05)
    rigid = flexmbs.simulate(huang_arm(flexible=False), 1.5, output_step=0.05)
    soft = flexmbs.simulate(huang_arm(modes=2), 1.5, output_step=0.05)
    for j in ("shoulder.q", "elbow.q"):
        assert np.abs(stiff[j] - rigid[j]).max() < 2e-5
    # and the real link differs visibly: flexibility matters (Huang 1998, Ch. 3)
    assert np.abs(soft["elbow.q"] - rigid["elbow.q"]).max() > 1e-2


def test_flexible_pendulum_gravity_sag_converges_to_rigid_with_stiffness():
    """Tip deflection scales as 1/E (linear elasticity) while joint motion converges."""
    a = flexmbs.simulate(huang_arm(E_factor=1e2, modes=2), 0.5, output_step=0.05)
    b = flexmbs.simulate(huang_arm(E_factor=1e3, modes=2), 0.5, output_step=0.05)
    ta = np.abs(a["link2.tip_deflection[3]"]).max()
    tb = np.abs(b["link2.tip_deflection[3]"]).max()
    assert ta / tb == pytest.approx(10.0, rel=0.05)


@pytest.mark.parametrize("omega_s", [4.0, 6.0])
def test_spin_up_bounded_with_geometric_stiffening(omega_s):
    r = flexmbs.simulate(spin_up_beam(omega_s), 20.0)
    tip = r["beam.tip_deflection[2]"]
    np.testing.assert_allclose(r["hub.q"], spin_up_angle(r.time, omega_s), rtol=0, atol=1e-12)
    assert np.abs(tip).max() < 1.0
    late = r.time >= 15.0
    assert np.abs(tip[late]).max() < 0.02  # settles near the straight beam after spin-up


@pytest.mark.parametrize("omega_s", [4.0, 6.0])
def test_spin_up_diverges_without_geometric_stiffening(omega_s):
    """Above the first bending frequency (3.80 rad/s) the linear floating-frame model is unstable."""
    try:
        r = flexmbs.simulate(spin_up_beam(omega_s, stiffening=False), 20.0)
        assert np.abs(r["beam.tip_deflection[2]"]).max() > 10.0
    except SolverError:
        pass


def test_spin_up_bounded_both_ways_below_first_frequency():
    with_kg = flexmbs.simulate(spin_up_beam(2.0), 20.0)["beam.tip_deflection[2]"]
    without = flexmbs.simulate(spin_up_beam(2.0, stiffening=False), 20.0)["beam.tip_deflection[2]"]
    assert np.abs(with_kg).max() < 0.5 and np.abs(without).max() < 0.5
    # stiffening makes the beam stiffer, hence a smaller lag
    assert np.abs(with_kg).max() < np.abs(without).max()


def test_spin_up_converges_with_modes_and_elements():
    """Tip history at 6 rad/s against a fine model (32 elements, 8 modes): the error falls as
    in-plane modes (every other mode) and elements are added."""
    def tip(elements, modes):
        return flexmbs.simulate(spin_up_beam(6.0, elements=elements, modes=modes), 20.0,
                                rtol=1e-10)["beam.tip_deflection[2]"]
    ref = tip(32, 8)
    by_modes = [np.abs(tip(16, m) - ref).max() for m in (2, 4, 6)]
    by_elements = [np.abs(tip(e, 8) - ref).max() for e in (2, 4, 8)]
    assert by_modes[0] > by_modes[1] > by_modes[2]
    assert by_elements[0] > by_elements[1] > by_elements[2]
    assert by_modes[2] < 5e-4 and by_elements[2] < 2e-5


def _cantilever(segments: int, elements: int, modes: int):
    from flexmbs.model import Body, Joint, Marker, Material, Model, Section, Sensor
    beam = Body("beam", type="beam", length=2.0, elements=elements, modes=modes, segments=segments,
                material=Material(E=7e10, G=2.7e10, rho=3000.0),
                section=Section("explicit", A=4e-4, Iy=2e-7, Iz=2e-7, J=4e-7),
                markers=[Marker("root", x=0.0), Marker("tip", x=2.0)])
    return Model("cantilever", gravity=(0, -9.81, 0), bodies=[beam],
                 joints=[Joint("clamp", "fixed", "ground", "origin", "beam", "root")],
                 sensors=[Sensor("tip", "beam", "tip")])


@pytest.mark.parametrize("segments, rel", [(1, 5e-4), (2, 2e-5), (4, 2e-5)])
def test_cantilever_sag_single_frame_and_chain(segments, rel):
    """Static tip sag under self-weight: q L^4 / (8 EI), for one floating frame (8 modes, of which
    3 bend in the load plane: truncation ~1e-4) and for chains of segments, whose static tip modes
    carry the interface loads exactly."""
    from flexmbs.linearize import equilibrium
    system = flexmbs.compile_model(_cantilever(segments, 16, 8))
    r = flexmbs.simulate(system, 1e-3, x0=equilibrium(system), output_step=1e-3)
    analytic = -3000.0 * 4e-4 * G * 2.0**4 / (8 * 7e10 * 2e-7)
    assert r["tip.r[2]"][0] == pytest.approx(analytic, rel=rel)


def test_spin_up_two_routes_agree():
    """The single floating frame with foreshortening and a chain of two corotational frames give
    the same spin-up tip history (within the second-order truncation of the first, 0.3 %)."""
    from flexmbs.model import Sensor

    def tip(segments, elements, modes):
        model = spin_up_beam(6.0, elements=elements, modes=modes)
        model.body("beam").segments = segments
        model.sensors = [Sensor("tip", "beam", "tip")]
        r = flexmbs.simulate(model, 20.0)
        th = r["hub.q"]
        return -np.sin(th) * r["tip.r[1]"] + np.cos(th) * r["tip.r[2]"]  # in the hub frame

    single = tip(1, 16, 8)
    chain = tip(2, 8, 4)
    assert np.abs(single).max() == pytest.approx(np.abs(chain).max(), rel=5e-3)
    assert np.abs(single - chain).max() < 3e-3


def test_joint_on_flexible_parent_conserves_energy():
    """A flexible link hinged at the tip of another flexible link: the hinge frame moves and turns
    with the parent's deformation (small rotation exp(Psi eta)), so the kinematics of markers on
    flexible bodies, their Jacobians and velocity-product terms must be mutually consistent for the
    energy to stay constant."""
    from flexmbs.model import Body, Joint, Marker, Material, Model, Section
    links = [Body(name, type="beam", length=0.8, elements=3, modes=4, tip_mass=0.3,
                  material=Material(E=0.69e11, G=0.26e11, rho=2770.0),
                  section=Section("box_tube", width=0.0127, height=0.0127, thickness=0.0016),
                  markers=[Marker("root", x=0.0), Marker("tip", x=0.8, rotation={"axis": (1, 0, 0), "angle": 30})])
             for name in ("a", "b")]
    joints = [Joint("j1", "revolute", "ground", "origin", "a", "root", axis=(0, 0, 1), q0=(0.3,)),
              Joint("j2", "revolute", "a", "tip", "b", "root", axis=(0, 0, 1), q0=(0.5,))]
    model = Model("flexible_double_pendulum", gravity=(0, -9.81, 0), bodies=links, joints=joints)
    r = flexmbs.simulate(model, 1.5, method="dopri5", rtol=1e-10, output_step=0.01)
    e = r["energy.total"]
    strain = r["energy.strain"].max()
    assert strain > 1e-3
    assert np.abs(e - e[0]).max() < 1e-5 * strain


def test_superelement_body_matches_beam_body(tmp_path):
    """A beam exported as M, K and node coordinates (.npz), imported as a superelement, swings
    like the beam body itself (first-order inertia terms are identical; the second-order ones are
    lumped, a 1 % difference on terms that are small here)."""
    from flexmbs.flex.beam import Beam, beam_matrices
    from flexmbs.flex.sections import rectangle
    from flexmbs.model import Body, Joint, Marker, Material, Model, Section
    L, n_el, E, rho = 1.0, 8, 7e10, 2700.0
    # with rotary inertia in the FE mass matrix, so that the superelement's rigid-body inertia
    # R^T M R holds the section inertia that the beam body always includes
    beam = Beam(L, n_el, E, E / 2.6, rho, rectangle(0.02, 0.01), rotary_inertia=True)
    M, K = beam_matrices(beam)
    np.savez(tmp_path / "link.npz", M=M, K=K, nodes=beam.node_positions)

    def pendulum(body):
        joint = Joint("hinge", "revolute", "ground", "origin", "link", "root", axis=(0, 0, 1), q0=(-0.3,))
        return Model("p", gravity=(0, -9.81, 0), bodies=[body], joints=[joint])

    as_beam = Body("link", type="beam", length=L, elements=n_el, modes=4, geometric_stiffening=False,
                   rotary_inertia=True,
                   material=Material(E=E, G=E / 2.6, rho=rho), section=Section("rectangle", width=0.02, height=0.01),
                   markers=[Marker("root", x=0.0), Marker("tip", x=L)])
    as_se = Body("link", type="superelement", file=str(tmp_path / "link.npz"), modes=4,
                 markers=[Marker("root", node=0), Marker("tip", node=n_el)])
    a = flexmbs.simulate(pendulum(as_beam), 1.0, method="dopri5", rtol=1e-9, output_step=0.01)
    b = flexmbs.simulate(pendulum(as_se), 1.0, method="dopri5", rtol=1e-9, output_step=0.01)
    assert np.abs(a["hinge.q"] - b["hinge.q"]).max() < 1e-5
    tip_a, tip_b = a["link.tip_deflection[2]"], b["link.tip_deflection[2]"]
    assert np.abs(tip_a).max() > 1e-4
    assert np.abs(tip_a - tip_b).max() < 1e-2 * np.abs(tip_a).max()


@pytest.mark.parametrize("name, segments", [("huang_two_link", None), ("three_link_arm_motors", None),
                                            ("verlinden_slider_crank", None), ("he_crank_rocker", None),
                                            ("spin_up_beam", 2), ("he_space_manipulator", None)])
def test_kinetic_energy_body_by_body_is_half_u_m_u(name, segments):
    """The kinetic energy output, summed body by body (1/2 z^T Mb z per body, rotors, rods with
    mass), equals 1/2 u^T M u with the assembled mass matrix M(q) of the composite route, at
    states away from the initial one: flexible bodies with moments and foreshortening, rotor
    inertias, elastic rods with mass, cut loops, chains of floating frames."""
    from dataclasses import replace

    from flexmbs.kernels.entry import assemble
    from flexmbs.kernels.structs import box, make_workspace
    from flexmbs.signals import Evaluator, output_width, signal_table
    from flexmbs.system import state_scales

    model = flexmbs.load_model(name)
    if segments:
        model.bodies[0] = replace(model.bodies[0], segments=segments)
    system = flexmbs.compile_model(model)
    nq, nv = system.nq, system.nv
    rng = np.random.default_rng(3)
    X = np.tile(np.array(system.x0, float), (4, 1))
    X[:, :nq] += rng.uniform(-0.05, 0.05, (4, nq)) * state_scales(system)[:nq]
    X[:, nq:nq + nv] = rng.uniform(-2.0, 2.0, (4, nv))
    arrays = make_workspace(system.arrays)     # the box holds these arrays, read here after assemble
    W = box(arrays)
    Y = np.zeros((4, output_width(system)))
    Evaluator(system, W).evaluate(np.zeros(4), X, np.tile(system.input_defaults, (4, 1)), Y)
    (slot,) = [s.index for s in signal_table(system) if s.name == "energy.kinetic"]
    for k in range(4):
        q, u = Y[k, :nq].copy(), Y[k, nq:nq + nv].copy()    # the state with exact prescribed values
        assemble(system.ref, W, 0.0, q, u, system.input_defaults)
        assert Y[k, slot] == pytest.approx(0.5 * u @ arrays.M @ u, rel=1e-12)
        assert Y[k, slot] > 0.0


@pytest.mark.parametrize("name", ["huang_two_link", "verlinden_slider_crank", "he_crank_rocker", "bricard"])
def test_output_samples_do_not_depend_on_the_sample_before(name):
    """An output sample reads the bodies' world motion that its own accelerations left in the
    workspace (energies and sensors do not compute it again): the same states evaluated in
    reverse order give the same rows, bit for bit, on each route (recursion on a tree, the
    composite route with elastic rods, cut loops on the recursion and on the composite route)."""
    from flexmbs.signals import Evaluator, output_width
    from flexmbs.system import state_scales

    system = flexmbs.compile_model(flexmbs.load_model(name))
    nq, nv = system.nq, system.nv
    rng = np.random.default_rng(5)
    X = np.tile(np.array(system.x0, float), (5, 1))
    X[:, :nq] += rng.uniform(-0.05, 0.05, (5, nq)) * state_scales(system)[:nq]
    X[:, nq:nq + nv] = rng.uniform(-2.0, 2.0, (5, nv))
    U = np.tile(system.input_defaults, (5, 1))
    rows = []
    for order in (np.arange(5), np.arange(5)[::-1]):
        Y = np.zeros((5, output_width(system)))
        Evaluator(system, system.workspace()).evaluate(np.zeros(5), X[order], U, Y)
        rows.append(Y[np.argsort(order)])
    assert np.array_equal(rows[0], rows[1], equal_nan=True)


@pytest.mark.parametrize("name", ["spin_up_beam", "he_crank_rocker"])
def test_pose_signals_alone_are_evaluated_without_the_dynamics(name):
    """simulate(signals=...) naming pose signals only (a joint angle and a sensor): the run is
    the same (states bit for bit), every pose signal equals the full run's (the sensors from
    forward kinematics instead of the dynamics' own pass: to 1e-12 of their range), and the
    result holds no signal of the dynamics (accelerations, torques, energies), whose samples it
    did not evaluate; naming one of those gives the full result; an unknown name is a KeyError
    naming the closest, before the run. On a tree with a motion drive and a loop model."""
    system = flexmbs.compile_model(flexmbs.load_model(name))
    joint, sensor = next(iter(system.joints)), next(iter(system.sensors))
    full = flexmbs.simulate(system, 0.5)
    poses = flexmbs.simulate(system, 0.5, signals=[f"{joint}.q", f"{sensor}.r[1]"])
    assert np.array_equal(poses.states, full.states)
    assert f"{sensor}.v[2]" in poses and "energy.total" not in poses and f"{joint}.qdd" not in poses
    for n in poses.names:
        assert np.abs(poses[n] - full[n]).max() <= 1e-12 * max(1.0, np.ptp(full[n])), n
    assert "energy.total" in flexmbs.simulate(system, 0.1, signals=[f"{joint}.q", f"{joint}.qdd"])
    with pytest.raises(KeyError, match=f"{joint}.q"):
        flexmbs.simulate(system, 1e9, signals=[f"{joint}.qq"])
