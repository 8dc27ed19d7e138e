"""Linearization, equilibrium and modes against independent references: small-oscillation
formulas written out by hand, the analytic cantilever frequencies and the Southwell coefficient of
a rotating cantilever computed here by quadrature of the analytic mode shape."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg
from scipy.integrate import quad
from scipy.optimize import brentq

from flexmbs import LinearSystem, ModesResult, equilibrium, linearize, modes
from flexmbs.model import Body, Drive, Joint, Marker, Material, Model, Section

G = 9.81


# --- models -------------------------------------------------------------------------------------


def rigid_link(name: str, m: float, d: float, Ic: float, length: float | None = None) -> Body:
    """A planar link: pivot marker at the origin, centre of mass at (d, 0, 0), inertia Ic about
    the z axis through the centre of mass, and a tip marker at (length, 0, 0)."""
    markers = [Marker("pivot")]
    if length is not None:
        markers.append(Marker("tip", position=(length, 0.0, 0.0)))
    return Body(name, mass=m, com=(d, 0.0, 0.0), inertia=(0.3 * Ic, Ic, Ic), markers=markers)


def pendulum(m=2.0, d=0.4, Ic=0.05, drive: Drive | None = None) -> Model:
    """Compound pendulum, revolute about z, gravity -y, hanging at q = -pi/2."""
    joint = Joint("pivot", "revolute", "ground", "origin", "link", "pivot", axis=(0.0, 0.0, 1.0),
                  q0=[-math.pi / 2], drive=drive or Drive())
    return Model(name="pendulum", gravity=(0.0, -G, 0.0), bodies=[rigid_link("link", m, d, Ic)], joints=[joint])


# --- rigid pendulums ----------------------------------------------------------------------------


def test_compound_pendulum_frequency():
    m, d, Ic = 2.0, 0.4, 0.05
    I_pivot = Ic + m * d * d
    f_ref = math.sqrt(m * G * d / I_pivot) / (2 * math.pi)
    res = modes(pendulum(m, d, Ic))
    assert isinstance(res, ModesResult)
    assert res.coordinate_names == ["pivot.q"]
    assert res.frequencies_hz.shape == (1,)
    assert res.frequencies_hz[0] == pytest.approx(f_ref, rel=1e-6)
    assert res.omega[0] == pytest.approx(2 * math.pi * f_ref, rel=1e-6)
    assert abs(res.damping_ratios[0]) < 1e-6
    assert "pivot.q" in res.table()
    # the equilibrium from a guess off the hanging position
    x = equilibrium(pendulum(m, d, Ic), x_guess=[-1.2, 0.3])
    assert x == pytest.approx([-math.pi / 2, 0.0], abs=1e-10)


def test_pendulum_torque_input_B_C_D():
    m, d, Ic = 2.0, 0.4, 0.05
    I_pivot = Ic + m * d * d
    lin = linearize(pendulum(m, d, Ic, Drive(type="torque")), outputs=["pivot.q", "pivot.qd", "pivot.qdd"])
    assert isinstance(lin, LinearSystem)
    assert lin.state_names == ["pivot.q", "pivot.qd"]
    assert lin.input_names == ["pivot.tau"]
    # xdot = [qd; -(m g d / I) dq + tau / I]
    assert lin.A == pytest.approx(np.array([[0.0, 1.0], [-m * G * d / I_pivot, 0.0]]), rel=1e-7, abs=1e-9)
    assert lin.B[:, 0] == pytest.approx([0.0, 1.0 / I_pivot], rel=1e-8, abs=1e-10)
    assert lin.C[:2] == pytest.approx(np.eye(2), abs=1e-9)
    assert lin.D[:2, 0] == pytest.approx([0.0, 0.0], abs=1e-9)
    # the acceleration output has the B row as its feedthrough
    assert lin.C[2] == pytest.approx(lin.A[1], rel=1e-7, abs=1e-9)
    assert lin.D[2, 0] == pytest.approx(1.0 / I_pivot, rel=1e-8)
    assert lin.y0 == pytest.approx([-math.pi / 2, 0.0, 0.0], abs=1e-12)
    ss = lin.to_scipy()
    assert ss.A.shape == (2, 2) and ss.B.shape == (2, 1)


def test_double_pendulum_small_oscillations():
    m1, d1, I1c, L1 = 1.5, 0.3, 0.04, 0.7
    m2, d2, I2c = 0.8, 0.25, 0.02
    link1 = rigid_link("link1", m1, d1, I1c, length=L1)
    link2 = rigid_link("link2", m2, d2, I2c)
    model = Model(name="double", gravity=(0.0, -G, 0.0), bodies=[link1, link2], joints=[
        Joint("j1", "revolute", "ground", "origin", "link1", "pivot", q0=[-math.pi / 2]),
        Joint("j2", "revolute", "link1", "tip", "link2", "pivot", q0=[0.0]),
    ])
    # absolute angles th1, th2 from the downward vertical:
    # T = 1/2 (I1c + m1 d1^2) th1'^2 + 1/2 m2 (L1^2 th1'^2 + 2 L1 d2 th1' th2' + d2^2 th2'^2) + 1/2 I2c th2'^2
    # V = 1/2 (m1 g d1 + m2 g L1) th1^2 + 1/2 m2 g d2 th2^2
    M = np.array([[I1c + m1 * d1**2 + m2 * L1**2, m2 * L1 * d2], [m2 * L1 * d2, I2c + m2 * d2**2]])
    K = np.diag([m1 * G * d1 + m2 * G * L1, m2 * G * d2])
    w2, vec = scipy.linalg.eigh(K, M)
    res = modes(model)
    assert res.coordinate_names == ["j1.q", "j2.q"]
    assert res.omega == pytest.approx(np.sqrt(w2), rel=1e-6)
    # shapes in joint coordinates q1 = th1, q2 = th2 - th1
    T = np.array([[1.0, 0.0], [-1.0, 1.0]])
    for k in range(2):
        ref = T @ vec[:, k]
        ref = ref / ref[np.argmax(np.abs(ref))]
        assert res.shapes[:, k] == pytest.approx(ref, abs=1e-6)


def test_a_sensor_pose_is_an_output_with_the_kinematic_jacobian():
    """The double pendulum's tip sensor (two 1 m links, hinges along z) at q = (0.3, 0.5) rad,
    moving at u = (0.2, -0.4) rad/s: its position r = L (cos q1 + cos q12, sin q1 + sin q12, 0)
    and velocity v = dr/dq u give C = [dr/dq, 0] and [dv/dq, dr/dq], written out here, and
    y0 = r, v (the sensor's outputs were refused as unknown, a new user's trial, stop 52)."""
    q1, q2, u1, u2 = 0.3, 0.5, 0.2, -0.4
    q12 = q1 + q2
    x = np.array([q1, q2, u1, u2])
    lin = linearize("double_pendulum", x=x, outputs=["tip.r[1]", "tip.r[2]", "tip.v[1]", "tip.v[2]"])
    assert lin.state_names == ["shoulder.q", "elbow.q", "shoulder.qd", "elbow.qd"]
    Jr = np.array([[-np.sin(q1) - np.sin(q12), -np.sin(q12)], [np.cos(q1) + np.cos(q12), np.cos(q12)]])
    w1, w12 = u1, u1 + u2       # v = Jr u; its derivative along q at fixed u:
    dv = np.array([[-np.cos(q1) * w1 - np.cos(q12) * w12, -np.cos(q12) * w12],
                   [-np.sin(q1) * w1 - np.sin(q12) * w12, -np.sin(q12) * w12]])
    C = np.block([[Jr, np.zeros((2, 2))], [dv, Jr]])
    np.testing.assert_allclose(lin.C, C, atol=1e-7)
    np.testing.assert_allclose(lin.D, 0.0, atol=1e-9)
    r = [np.cos(q1) + np.cos(q12), np.sin(q1) + np.sin(q12)]
    np.testing.assert_allclose(lin.y0, np.r_[r, Jr @ [u1, u2]], atol=1e-12)


def test_spherical_pendulum_quaternion_coordinates():
    """Minimal rotation-vector coordinates of a quaternion joint: two pendulum modes and the free
    rotation about the vertical (zero frequency)."""
    m, d, Ic = 2.0, 0.4, 0.05
    body = Body("bob", mass=m, com=(0.0, -d, 0.0), inertia=(Ic, 0.5 * Ic, Ic), markers=[Marker("pivot")])
    model = Model(gravity=(0.0, -G, 0.0), bodies=[body], joints=[
        Joint("ball", "spherical", "ground", "origin", "bob", "pivot", q0=[1.0, 0.0, 0.0, 0.0])])
    lin = linearize(model)
    assert lin.state_names == ["ball.rot[1]", "ball.rot[2]", "ball.rot[3]", "ball.w[1]", "ball.w[2]", "ball.w[3]"]
    res = modes(model, about="initial")
    w = math.sqrt(m * G * d / (Ic + m * d * d))
    assert res.omega == pytest.approx([0.0, w, w], rel=1e-6, abs=1e-6)
    assert abs(res.shapes[1, 0]) == pytest.approx(1.0)  # the zero mode turns about the vertical y


def test_free_body_rigid_modes_counted_as_zero():
    """A free-floating body (free joint, no gravity): six rigid-body modes at frequency 0; the
    linear model is the double integrator xdot = [v; w], vdot = wdot = 0."""
    body = Body("sat", mass=3.0, com=(0.1, 0.0, 0.0), inertia=(0.2, 0.3, 0.4), markers=[Marker("o")])
    model = Model(gravity=(0.0, 0.0, 0.0), bodies=[body], joints=[
        Joint("float", "free", "ground", "origin", "sat", "o", q0=[0.0, 0.0, 0.0, 0.3, -0.2, 0.1])])
    lin = linearize(model)
    assert lin.state_names[:6] == ["float.r[1]", "float.r[2]", "float.r[3]", "float.rot[1]", "float.rot[2]",
                                   "float.rot[3]"]
    assert lin.A[:6, 6:] == pytest.approx(np.eye(6), abs=1e-8)
    assert np.abs(lin.A[6:]).max() < 1e-8 and np.abs(lin.A[:6, :6]).max() < 1e-8
    res = modes(model, n=None, about="initial")
    assert res.omega.shape == (6,) and np.all(res.omega == 0.0)


# --- flexible beams -----------------------------------------------------------------------------


def cantilever_root(n: int) -> float:
    """n-th root of cos(bL) cosh(bL) + 1 = 0 (clamped-free beam)."""
    return brentq(lambda b: math.cos(b) * math.cosh(b) + 1.0, (n - 0.5) * math.pi - 1.0, (n - 0.5) * math.pi + 1.0)


def test_cantilever_roots():
    assert cantilever_root(1) == pytest.approx(1.87510, abs=1e-5)
    assert cantilever_root(2) == pytest.approx(4.69409, abs=1e-5)


def test_clamped_cantilever_frequencies():
    E, rho, L, width, height = 70e9, 2700.0, 1.0, 0.02, 0.01
    beam = Body("beam", type="beam", length=L, elements=8, modes=4, material=Material(E=E, rho=rho),
                section=Section("rectangle", width=width, height=height), markers=[Marker("root", x=0.0)])
    model = Model(gravity=(0.0, 0.0, 0.0), bodies=[beam], joints=[
        Joint("clamp", "fixed", "ground", "origin", "beam", "root")])
    res = modes(model, n=4)
    A = width * height
    Iy, Iz = width * height**3 / 12, height * width**3 / 12
    expected = sorted((cantilever_root(k) ** 2 * math.sqrt(E * I / (rho * A * L**4)))
                      for k in (1, 2) for I in (Iy, Iz))
    assert res.omega == pytest.approx(expected, rel=1e-4)
    assert np.all(np.abs(res.damping_ratios) < 1e-8)
    # the coordinates: 4 modes and the 2 acceleration shapes (axial, torsion: far above them)
    assert res.coordinate_names == [f"beam.eta[{k}]" for k in range(1, 7)]


# rotating cantilever of the spin-up benchmark: L = 10 m, EI = 1.4e4 N m^2, rho A = 1.2 kg/m
L_SPIN, EI, RHOA = 10.0, 1.4e4, 1.2


def spin_beam(stiffening: bool) -> Model:
    E, rho = 1.4e11, 1200.0
    A, Iz = RHOA / rho, EI / E  # in-plane bending (v, about z) uses Iz
    beam = Body("beam", type="beam", length=L_SPIN, elements=8, modes=4, geometric_stiffening=stiffening,
                material=Material(E=E, rho=rho), section=Section("explicit", A=A, Iy=10 * Iz, Iz=Iz, J=10 * Iz),
                markers=[Marker("root", x=0.0), Marker("tip", x=L_SPIN)])
    return Model(name="spin_beam", gravity=(0.0, 0.0, 0.0), bodies=[beam], joints=[
        Joint("hub", "revolute", "ground", "origin", "beam", "root", axis=(0.0, 0.0, 1.0))])


def southwell_coefficient() -> float:
    """d(w1^2)/d(W^2) of the flapwise first mode: Rayleigh quotient of the centrifugal tension
    T(x) = rho A W^2 (L^2 - x^2)/2 with the analytic cantilever mode (per unit W^2 and L = 1)."""
    b = cantilever_root(1)
    s = (math.cosh(b) + math.cos(b)) / (math.sinh(b) + math.sin(b))
    phi = lambda x: math.cosh(b * x) - math.cos(b * x) - s * (math.sinh(b * x) - math.sin(b * x))
    dphi = lambda x: b * (math.sinh(b * x) + math.sin(b * x) - s * (math.cosh(b * x) - math.cos(b * x)))
    num = quad(lambda x: 0.5 * (1.0 - x * x) * dphi(x) ** 2, 0.0, 1.0, epsabs=1e-14, epsrel=1e-13)[0]
    den = quad(lambda x: phi(x) ** 2, 0.0, 1.0, epsabs=1e-14, epsrel=1e-13)[0]
    return num / den


def rotating_beam_w1(W: float, stiffening: bool = True, n_el: int = 40) -> float:
    """First in-plane frequency [rad/s] of the rotating cantilever written out here: planar
    Euler-Bernoulli Hermite elements, (K + W^2 (K_T - M)) v = w^2 M v with the centrifugal tension
    T(x) = rho A W^2 (L^2 - x^2)/2 in K_T = int T/W^2 N'^T N' dx and the in-plane softening -W^2 M."""
    L, l = L_SPIN, L_SPIN / n_el
    xg, wg = np.polynomial.legendre.leggauss(6)
    xg, wg = 0.5 * (xg + 1.0), 0.5 * wg * l
    nd = 2 * (n_el + 1)
    K, M, KT = np.zeros((nd, nd)), np.zeros((nd, nd)), np.zeros((nd, nd))
    for e in range(n_el):
        sl = slice(2 * e, 2 * e + 4)
        for xi, w in zip(xg, wg):
            N = np.array([1 - 3 * xi**2 + 2 * xi**3, l * (xi - 2 * xi**2 + xi**3), 3 * xi**2 - 2 * xi**3,
                          l * (xi**3 - xi**2)])
            dN = np.array([-6 * xi + 6 * xi**2, l * (1 - 4 * xi + 3 * xi**2), 6 * xi - 6 * xi**2,
                           l * (3 * xi**2 - 2 * xi)]) / l
            ddN = np.array([-6 + 12 * xi, l * (-4 + 6 * xi), 6 - 12 * xi, l * (6 * xi - 2)]) / l**2
            x = (e + xi) * l
            K[sl, sl] += w * EI * np.outer(ddN, ddN)
            M[sl, sl] += w * RHOA * np.outer(N, N)
            KT[sl, sl] += w * 0.5 * RHOA * (L * L - x * x) * np.outer(dN, dN)
    K, M, KT = K[2:, 2:], M[2:, 2:], KT[2:, 2:]  # clamp the root
    A = K + W * W * ((KT if stiffening else 0.0) - M)
    return math.sqrt(scipy.linalg.eigh(A, M, eigvals_only=True)[0])


def in_plane_first(res: ModesResult) -> float:
    """w1 [rad/s] of the mode dominated by the first (in-plane) beam mode eta[1]."""
    dominant = [res.coordinate_names[np.argmax(np.abs(res.shapes[:, i]))] for i in range(res.shapes.shape[1])]
    k = dominant.index("beam.eta[1]")
    return float(res.omega[k])


def test_rotating_cantilever_with_stiffening():
    K = southwell_coefficient()
    assert K == pytest.approx(1.1933, abs=1e-4)
    w1_ref = cantilever_root(1) ** 2 * math.sqrt(EI / (RHOA * L_SPIN**4))
    assert w1_ref == pytest.approx(3.7977, abs=1e-4)
    model = spin_beam(True)
    at_rest = modes(model, n=2, spin={"hub": 0.0})  # hub held: a clamped cantilever
    assert at_rest.coordinate_names[0] == "beam.eta[1]"
    w0 = in_plane_first(at_rest)
    assert w0 == pytest.approx(w1_ref, rel=1e-5)  # 8 elements: FE error 2e-6
    for W in (0.5, 1.0, 2.0):
        w1 = in_plane_first(modes(model, n=2, spin={"hub": W}))
        # Southwell: w1^2 = w1(0)^2 + (K - 1) W^2 to first order in W^2
        assert w1**2 == pytest.approx(w0**2 + (K - 1.0) * W**2, rel=1e-2)
        if W <= 1.0:
            assert (w1**2 - w0**2) / W**2 == pytest.approx(K - 1.0, rel=1e-2)
        # the whole curve, higher orders included, against the rotating beam written out above
        assert w1 == pytest.approx(rotating_beam_w1(W), rel=1e-4)


def test_rotating_cantilever_without_stiffening_softens_and_diverges():
    model = spin_beam(False)
    w0 = in_plane_first(modes(model, n=2, spin={"hub": 0.0}))
    for W in (0.5, 1.0, 2.0, 3.0):
        w1 = in_plane_first(modes(model, n=2, spin={"hub": W}))
        assert w1**2 == pytest.approx(w0**2 - W**2, rel=1e-3)
        assert w1 == pytest.approx(rotating_beam_w1(W, stiffening=False), rel=1e-4)
    # above W = w1(0) the in-plane mode diverges: a real positive eigenvalue sqrt(W^2 - w0^2)
    W = 4.2
    x = equilibrium(model, spin={"hub": W})
    assert np.abs(x[1:5]).max() < 1e-12  # the straight beam is still an equilibrium...
    lam = linearize(model, x=x, spin={"hub": W}).eigs()
    real_pos = lam[(np.abs(lam.imag) < 1e-9) & (lam.real > 0)].real
    assert real_pos.size == 1  # ...but an unstable one
    assert real_pos[0] == pytest.approx(math.sqrt(W**2 - w0**2), rel=1e-3)
    res = modes(model, n=1, spin={"hub": W})
    assert res.frequencies_hz[0] < 0  # divergent modes sort first with a negative frequency
    assert res.omega[0] == pytest.approx(-real_pos[0], rel=1e-9)


def test_cantilever_sag_under_gravity():
    """equilibrium() on modal coordinates: tip deflection q L^4 / (8 EI) and the foreshortening
    of the tip -1/2 int_0^L w'^2 dx = -(4/7) delta^2 / L of the uniformly loaded cantilever."""
    E, rho, L, width, height = 70e9, 2700.0, 1.0, 0.02, 0.01
    beam = Body("beam", type="beam", length=L, elements=8, modes=8, material=Material(E=E, rho=rho),
                section=Section("rectangle", width=width, height=height), markers=[Marker("root", x=0.0)])
    model = Model(gravity=(0.0, 0.0, -G), bodies=[beam], joints=[
        Joint("clamp", "fixed", "ground", "origin", "beam", "root")])
    x = equilibrium(model)
    lin = linearize(model, x=x, outputs=["beam.tip_deflection[1]", "beam.tip_deflection[3]"])
    delta = -rho * width * height * G * L**4 / (8 * E * width * height**3 / 12)
    assert lin.y0[1] == pytest.approx(delta, rel=1e-4)  # modal truncation (8 modes): 1.5e-5
    assert lin.y0[0] == pytest.approx(-4.0 / 7.0 * delta**2 / L, rel=1e-3)
    # about the sagged state: an undamped, stable oscillator
    assert np.abs(lin.eigs().real).max() < 1e-6
