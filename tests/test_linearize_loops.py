"""Linearization and modes of closed-loop models (reduction to independent coordinates by
coordinate partitioning) against an energy derivation of the rigid four-bar written out here,
and convergence of the flexible crank-rocker's modes with the coupler's modes."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flexmbs
from flexmbs import equilibrium, linearize, modes
from flexmbs.model import Damping, Spring

A, B, C, D = 0.102, 0.610, 0.406, 0.559          # crank, coupler, rocker, ground [m] (four_bar.yaml)


def _perp(a: float) -> np.ndarray:
    return np.array([-math.sin(a), math.cos(a)])


def four_bar_pose(t2: float) -> tuple[float, float]:
    """Absolute coupler and rocker angles (t3, t4) [rad] for crank angle t2 [rad], rocker above
    the ground line (Freudenstein's equation, as in test_loops)."""
    K1, K2, K3 = D / A, D / C, (A ** 2 - B ** 2 + C ** 2 + D ** 2) / (2 * A * C)
    P, Q, R = K1 - math.cos(t2), -math.sin(t2), K2 * math.cos(t2) - K3
    t4 = math.atan2(Q, P) + math.acos(R / math.hypot(P, Q))
    pin = A * np.array([math.cos(t2), math.sin(t2)])
    tip = np.array([D + C * math.cos(t4), C * math.sin(t4)])
    return math.atan2(tip[1] - pin[1], tip[0] - pin[0]), t4


def four_bar_energy(model, t2: float) -> tuple[float, float]:
    """(m_eff, dt4/dt2) at crank angle t2: kinetic energy T = m_eff t2'^2 / 2 from the velocity
    loop A t2' e(t2)^ + B t3' e(t3)^ = C t4' e(t4)^ solved for the coupler and rocker rates per
    unit crank rate, with each body's mass, centre of mass and inertia (about z) of the model."""
    t3, t4 = four_bar_pose(t2)
    w3, w4 = np.linalg.solve(np.column_stack([B * _perp(t3), -C * _perp(t4)]), -A * _perp(t2))
    crank, coupler, rocker = (model.body(n) for n in ("crank", "coupler", "rocker"))
    v_g3 = A * _perp(t2) + coupler.com[0] * w3 * _perp(t3)
    m_eff = (crank.inertia[2] + crank.mass * crank.com[0] ** 2 + coupler.mass * v_g3 @ v_g3
             + coupler.inertia[2] * w3 ** 2 + (rocker.inertia[2] + rocker.mass * rocker.com[0] ** 2) * w4 ** 2)
    return m_eff, w4


def test_four_bar_with_a_rocker_spring_oscillates_at_the_energy_frequency() -> None:
    """A torsional spring k on the rocker with its rest angle at the rocker angle of crank angle
    0.4 rad: V = k (t4(t2) - t4*)^2 / 2, so omega^2 = k (dt4/dt2)^2 / m_eff at t2 = 0.4; the
    equilibrium lands there, the crank is the state, and modes gives omega to 1e-6."""
    model = flexmbs.load_model("four_bar")
    t2 = 0.4
    _, t4 = four_bar_pose(t2)
    k = 3.0
    model.joint("rocker").spring = Spring(stiffness=k, preload=t4)
    model.joint("crank").q0 = [t2 + 0.05]
    model.joint("crank").qd0 = [0.0]
    m_eff, w4 = four_bar_energy(model, t2)
    omega = math.sqrt(k * w4 ** 2 / m_eff)
    x = equilibrium(model)
    system = flexmbs.compile_model(model)
    assert x[system.joint_q["crank"][0]] == pytest.approx(t2, abs=1e-9)
    assert x[system.joint_q["rocker"][0]] == pytest.approx(t4, abs=1e-9)
    res = modes(model, n=None)
    assert res.coordinate_names == ["crank.q"]
    assert res.linear.state_names == ["crank.q", "crank.qd"]
    assert res.omega[0] == pytest.approx(omega, rel=1e-6)
    assert res.labels[0] in ("crank.q", "coupler_pin.q", "rocker.q")


def test_four_bar_linearized_about_a_moving_state_matches_the_energy_equation() -> None:
    """Free four-bar turning at 5 rad/s (no work by gravity in its plane): Lagrange's equation
    of T = m(t2) t2'^2 / 2 is t2'' = -m'(t2) t2'^2 / (2 m), so A = [[0, 1], [a, b]] with
    a = d/dt2 of that and b = -m' t2' / m (m, m', m'' by central differences of the energy
    derivation); linearize (the crank independent, coupler and rocker rates from G u = 0) agrees
    to 1e-6, and the output rocker.qd is the velocity ratio times the crank rate."""
    model = flexmbs.load_model("four_bar")
    t2, w2 = 0.7, 5.0
    model.joint("crank").q0 = [t2]
    model.joint("crank").qd0 = [w2]

    def m(t: float) -> float:
        return four_bar_energy(model, t)[0]

    h = 1e-4
    m0, m1 = m(t2), (m(t2 + h) - m(t2 - h)) / (2 * h)
    m2 = (m(t2 + h) - 2 * m0 + m(t2 - h)) / h ** 2
    a = -(m2 * m0 - m1 ** 2) / (2 * m0 ** 2) * w2 ** 2
    b = -m1 * w2 / m0
    lin = linearize(model, outputs=["rocker.qd"])
    assert lin.state_names == ["crank.q", "crank.qd"]
    assert lin.A[0, 0] == pytest.approx(0.0, abs=1e-9) and lin.A[0, 1] == pytest.approx(1.0, rel=1e-9)
    assert lin.A[1, 0] == pytest.approx(a, rel=1e-6)
    assert lin.A[1, 1] == pytest.approx(b, rel=1e-6)
    assert lin.y0[0] == pytest.approx(four_bar_energy(model, t2)[1] * w2, rel=1e-9)


def crank_rocker_modes(n: int) -> np.ndarray:
    """Natural frequencies [Hz] of He's crank-rocker (undamped coupler with n modes) about its
    (neutral) equilibrium, the zero mode of the free crank first."""
    model = flexmbs.load_model("he_crank_rocker")
    model.body("coupler").modes = n
    model.body("coupler").damping = Damping()
    return modes(model, n=5).frequencies_hz


def test_a_loop_is_closed_about_its_driven_crank_at_the_reference_time() -> None:
    """The slider-crank (crank 0.1 m driven at 10 rad/s from 0, rod 0.3 m) linearised at
    t = 0.05 s: the crank at 0.5 rad, the slider at x = r cos(th) + sqrt(l^2 - r^2 sin(th)^2)
    moving at dx/dt, as its loop closes about that crank angle; its sensor at the same x. The
    loop was closed about the file's q0 and the crank then set to its profile, leaving the
    slider at 0.400 m where it is at 0.3839 (review of stop 52)."""
    r, l, w, th = 0.1, 0.3, 10.0, 0.5
    root = math.sqrt(l**2 - (r * math.sin(th))**2)
    x = r * math.cos(th) + root
    xd = -r * w * math.sin(th) - r**2 * w * math.sin(th) * math.cos(th) / root
    lin = linearize("slider_crank", t=0.05, outputs=["crank.q", "slide.q", "slide.qd", "slider.r[1]"])
    np.testing.assert_allclose(lin.y0, [th, x, xd, x], rtol=1e-9, atol=1e-12)


def test_crank_rocker_modes_converge_with_the_coupler_modes() -> None:
    """The free crank gives one zero mode; with nested Ritz bases (the coupler's first n FE
    modes, the loop constraints eliminated exactly) every sorted elastic frequency falls
    monotonically as modes are added (Poincare separation of Rayleigh-Ritz upper bounds), and the
    first elastic frequency approaches the one with all 36 FE modes of the coupler (6 elements):
    within 2e-4 with 24 modes, closer than with 12 and 6."""
    f = {n: crank_rocker_modes(n) for n in (6, 12, 24, 36)}
    ns = sorted(f)
    for n in ns:
        assert abs(f[n][0]) < 1e-6
    for a, b in zip(ns, ns[1:]):
        assert np.all(f[a][1:] >= f[b][1:] * (1 - 1e-9)), (a, b, f[a], f[b])
    err = [abs(f[n][1] / f[36][1] - 1) for n in (6, 12, 24)]
    assert err[2] < 2e-4 and err[2] < err[1] < err[0]


def test_crank_rocker_linearized_at_a_running_state_and_labelled_modes() -> None:
    """Linearised at a state of a run (crank turning, coupler deflected): states are the crank
    and the coupler's modal coordinates (the coupler and rocker angles dependent), and the mode
    table names the coupler's bending modes in and out of the mechanism's plane."""
    model = flexmbs.load_model("he_crank_rocker")
    model.body("coupler").modes = 6
    res = flexmbs.simulate(model, 0.1, output_step=0.05, inputs=lambda t: {"crank.tau": 2.0})
    assert res["crank.qd"][-1] > 1.0
    lin = linearize(res.system, x=res.states[-1], inputs={"crank.tau": 2.0})
    assert lin.state_names[0] == "crank.q" and "coupler.eta[1]" in lin.state_names
    assert not any(n.startswith(("rocker.", "coupler_pin.")) for n in lin.state_names)
    assert np.all(np.isfinite(lin.A))
    table = modes(model, n=None).table()
    assert "coupler: in-plane bending" in table and "coupler: out-of-plane bending" in table


def test_mode_labels_of_a_cantilever_name_its_deformation_families() -> None:
    """A beam on a locked revolute about z (world z the plane normal): the modes nearest the
    analytic frequencies of a clamped-free beam are labelled by their family: first bending in
    the x-y plane (E Iz) in-plane, in x-z (E Iy) out-of-plane, first torsion
    pi/(2L) sqrt(G J / (rho Ip)) and first axial pi/(2L) sqrt(E / rho). The torsion mode, which
    moves no node sideways, gets a finite state scale (its rotation times the length)."""
    from flexmbs.model import Body, Drive, Joint, Marker, Material, Model, Profile, Section
    from flexmbs.system import state_scales

    L, E, G_, rho, w, h = 1.0, 2.0e11, 8.0e10, 7800.0, 0.02, 0.01
    beam = Body("beam", type="beam", length=L, elements=8, modes=24, material=Material(E=E, G=G_, rho=rho),
                section=Section("rectangle", width=w, height=h), markers=[Marker("root", x=0.0)])
    hinge = Joint("hinge", "revolute", "ground", "origin", "beam", "root", axis=(0, 0, 1),
                  drive=Drive("motion", profile=Profile("constant", value=0.0)))
    model = Model("cantilever", gravity=(0, 0, 0), bodies=[beam], joints=[hinge])
    system = flexmbs.compile_model(model)
    sec = system.flex["beam"].beam.section
    res = modes(system, n=None)
    f = res.frequencies_hz
    b1 = 1.8751040687 ** 2 / (2 * math.pi * L ** 2)
    expected = {"beam: in-plane bending": b1 * math.sqrt(E * sec.Iz / (rho * sec.A)),
                "beam: out-of-plane bending": b1 * math.sqrt(E * sec.Iy / (rho * sec.A)),
                "beam: torsion": math.sqrt(G_ * sec.J / (rho * (sec.Iy + sec.Iz))) / (4 * L),
                "beam: axial": math.sqrt(E / rho) / (4 * L)}
    for label, f_ref in expected.items():
        k = int(np.argmin(np.abs(f - f_ref)))
        assert f[k] == pytest.approx(f_ref, rel=0.01), label
        assert res.labels[k] == label
    # modal amplitudes that deflect the 1 m beam by about its length: order 1, none unbounded
    assert state_scales(system)[:system.nq].max() < 10.0
