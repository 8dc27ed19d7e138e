"""Joint types against independent references: closed-form motions, conservation laws
(energy, linear and angular momentum computed here from sensor outputs) and equations of motion
written out by hand (Newton-Euler about the pivot) and integrated here with scipy.

Conventions exercised on purpose: joint axes in the parent marker frame (rotated parent
markers), the second universal axis in the frame after the first rotation, spherical/free
angular velocities in the CHILD marker frame (rotated child markers), free translational
velocity in the parent marker frame.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import simpson, solve_ivp

import flexmbs
from flexmbs.model import Body, Drive, Joint, Marker, Model, Profile, Sensor, Spring

G = 9.81


# --- helpers --------------------------------------------------------------------------------------


def rot(axis, angle: float) -> np.ndarray:
    """Rotation matrix by `angle` [rad] about `axis` (Rodrigues, written here)."""
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    K = skew(a)
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * K @ K


def skew(a) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def inertia(spec) -> np.ndarray:
    """[Ixx, Iyy, Izz, Ixy, Ixz, Iyz] -> 3x3 (tensor components)."""
    ixx, iyy, izz, ixy, ixz, iyz = spec
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def sensor(res, name: str):
    """World position r (n,3), velocity v (n,3), angular velocity w (n,3), rotation R (n,3,3)."""
    r = np.column_stack([res[f"{name}.r[{i}]"] for i in (1, 2, 3)])
    v = np.column_stack([res[f"{name}.v[{i}]"] for i in (1, 2, 3)])
    w = np.column_stack([res[f"{name}.w[{i}]"] for i in (1, 2, 3)])
    R = np.stack([np.column_stack([res[f"{name}.R[{i},{j}]"] for j in (1, 2, 3)]) for i in (1, 2, 3)], axis=1)
    return r, v, w, R


def rel_drift(values: np.ndarray, scale: float) -> float:
    return float(np.max(np.abs(values - values[0])) / scale)


def total_energy_check(res, scale: float) -> float:
    """Relative drift of energy.total; also checks total = kinetic + potential + strain."""
    e = res["energy.total"]
    parts = res["energy.kinetic"] + res["energy.potential"] + res["energy.strain"]
    assert np.max(np.abs(e - parts)) <= 1e-12 * scale
    return rel_drift(e, scale)


# --- prismatic ------------------------------------------------------------------------------------


@pytest.mark.parametrize("tilt", [0.0, 0.6])
def test_prismatic_free_fall(tilt):
    """A body on a prismatic rail under gravity: q = q0 + v0 t + (g . a_world) t^2 / 2.

    tilt = 0: vertical rail, g . a = -g. tilt != 0: the parent marker is rotated about x by
    `tilt` and the axis (0, 0, 1) is given in that marker frame, so g . a = -g cos(tilt)
    (checks that the axis is taken in the parent marker frame). RK4 integrates a quadratic
    exactly."""
    R_GP = rot((1, 0, 0), tilt)
    z0, v0, m = 0.3, 2.0, 1.7
    com = (0.1, -0.05, 0.2)
    model = Model(
        gravity=(0.0, 0.0, -G),
        ground_markers=[Marker("rail", position=(0.5, 0.0, 1.0), rotation=R_GP.tolist())],
        bodies=[Body("slider", mass=m, com=com, inertia=(0.02, 0.025, 0.03, 0.001, -0.002, 0.003),
                     markers=[Marker("c", position=(0.05, 0.0, 0.0)), Marker("com", position=com)])],
        joints=[Joint("rail", "prismatic", "ground", "rail", "slider", "c", axis=(0, 0, 1), q0=[z0], qd0=[v0])],
        sensors=[Sensor("s", "slider", "com")])
    res = flexmbs.simulate(model, 2.0, method="rk4", step=1e-2, output_step=0.1)
    t = res.time
    acc = -G * math.cos(tilt)
    assert np.max(np.abs(res["rail.q"] - (z0 + v0 * t + 0.5 * acc * t**2))) < 1e-9
    assert np.max(np.abs(res["rail.qd"] - (v0 + acc * t))) < 1e-9
    assert np.max(np.abs(res["rail.qdd"] - acc)) < 1e-9
    # the COM moves along the world rail direction
    a_w = R_GP @ np.array([0.0, 0.0, 1.0])
    r, v, w, R = sensor(res, "s")
    r_ref = np.array([0.5, 0.0, 1.0]) + np.outer(res["rail.q"], a_w) + R_GP @ (np.array(com) - [0.05, 0.0, 0.0])
    assert np.max(np.abs(r - r_ref)) < 1e-12
    assert np.max(np.abs(v - np.outer(res["rail.qd"], a_w))) < 1e-12
    assert np.max(np.abs(w)) == 0.0
    assert total_energy_check(res, m * G) < 1e-12


# --- cylindrical ----------------------------------------------------------------------------------


@pytest.mark.parametrize("g_axis", [0.0, G])
def test_cylindrical_rates_constant_with_offset_com(g_axis):
    """Slide and rotation about the same axis (vertical in the world through a rotated parent
    marker), off-axis COM and a full inertia tensor. The rotation rate stays constant, the
    slide rate is constant without gravity and falls as v0 - g t with gravity along the axis;
    the kinetic energy is 1/2 m vs^2 + 1/2 (Izz + m rho^2) w^2 (rho: COM distance from the axis)
    and the total energy is constant (the joint reaction does no work)."""
    m = 3.0
    com = np.array([0.4, -0.3, 0.25])  # rho = 0.5
    I = (0.05, 0.07, 0.09, 0.004, -0.006, 0.008)
    # parent marker maps its z axis onto the world z axis through a rotation about z (axis stays vertical)
    R_GP = rot((0, 0, 1), 0.7)
    s0, vs, th0, om = 0.1, 0.8, 0.3, 5.0
    model = Model(
        gravity=(0.0, 0.0, -g_axis),
        ground_markers=[Marker("base", position=(0.2, 0.1, 0.0), rotation=R_GP.tolist())],
        bodies=[Body("rotor", mass=m, com=tuple(com), inertia=I, markers=[Marker("hub"), Marker("com", position=tuple(com))])],
        joints=[Joint("cyl", "cylindrical", "ground", "base", "rotor", "hub", axis=(0, 0, 1),
                      q0=[s0, th0], qd0=[vs, om])],
        sensors=[Sensor("s", "rotor", "com")])
    res = flexmbs.simulate(model, 3.0, method="dopri5", rtol=1e-10, output_step=0.1)
    t = res.time
    assert np.max(np.abs(res["cyl.q[1]"] - (s0 + vs * t - 0.5 * g_axis * t**2))) < 1e-9
    assert np.max(np.abs(res["cyl.qd[1]"] - (vs - g_axis * t))) < 1e-9
    assert np.max(np.abs(res["cyl.q[2]"] - (th0 + om * t))) < 1e-9
    assert np.max(np.abs(res["cyl.qd[2]"] - om)) < 1e-9
    assert np.max(np.abs(res["cyl.qdd[2]"])) < 1e-9
    # kinematics of the COM: circle of radius rho about the world axis, at height s
    r, v, w, R = sensor(res, "s")
    th = th0 + om * t
    for k in (0, len(t) // 2, -1):
        r_ref = np.array([0.2, 0.1, 0.0]) + R_GP @ (np.array([0, 0, res["cyl.q[1]"][k]]) + rot((0, 0, 1), th[k]) @ com)
        assert r[k] == pytest.approx(r_ref, abs=1e-9)
    assert np.max(np.abs(w - [0.0, 0.0, om])) < 1e-9
    rho2 = com[0] ** 2 + com[1] ** 2
    T_ref = 0.5 * m * res["cyl.qd[1]"] ** 2 + 0.5 * (I[2] + m * rho2) * om**2
    assert np.max(np.abs(res["energy.kinetic"] - T_ref)) < 1e-8 * T_ref.max()
    assert total_energy_check(res, T_ref[0]) < 1e-9


# --- universal ------------------------------------------------------------------------------------

# hanging body: pivot marker at the body origin, COM at (0, 0, -d), gravity -z
U_M, U_D = 2.0, 0.5
U_I = (0.06, 0.09, 0.05, 0.0, 0.0, 0.0)


def universal_model(q0=(0.0, 0.0), qd0=(0.0, 0.0), I=U_I, com=(0.0, 0.0, -U_D),
                    R_GP=np.eye(3), R_BC=np.eye(3), s_c=(0.0, 0.0, 0.0), axes=((1, 0, 0), (0, 1, 0))) -> Model:
    return Model(
        gravity=(0.0, 0.0, -G),
        ground_markers=[Marker("pivot", position=(0.0, 0.0, 1.0), rotation=np.asarray(R_GP).tolist())],
        bodies=[Body("bob", mass=U_M, com=tuple(com), inertia=I,
                     markers=[Marker("hinge", position=tuple(s_c), rotation=np.asarray(R_BC).tolist()),
                              Marker("com", position=tuple(com))])],
        joints=[Joint("u", "universal", "ground", "pivot", "bob", "hinge", axis=tuple(axes[0]), axis2=tuple(axes[1]),
                      q0=list(q0), qd0=list(qd0))],
        sensors=[Sensor("s", "bob", "com")])


def rigid_body_reference(m, Ic, rho, g, A0, w0, t, constraint=None):
    """Independent reference for one rigid body hinged at a fixed pivot: Newton-Euler about the
    pivot in world axes, I_p wdot + w x I_p w = rho_w x m g + reaction torque.

    rho: pivot -> COM in body axes. State: rotation A (body->world, 9) and world angular
    velocity w (3). constraint=None: spherical pivot (no reaction torque). Otherwise a function
    A -> (E, Edot_term(A, w)) giving the free directions E (3 x k, world) with w = E u and the
    velocity-product part of wdot; then wdot = E udot + c and E^T (I_p wdot + w x I_p w - tau) = 0.
    Returns A(t) (n,3,3) and w(t) (n,3)."""
    Ip_body = Ic + m * (rho @ rho * np.eye(3) - np.outer(rho, rho))

    def f(_, y):
        A = y[:9].reshape(3, 3)
        w = y[9:]
        Ip = A @ Ip_body @ A.T
        tau = np.cross(A @ rho, m * np.asarray(g))
        rhs = tau - np.cross(w, Ip @ w)
        if constraint is None:
            wd = np.linalg.solve(Ip, rhs)
        else:
            E, c = constraint(A, w)
            ud = np.linalg.solve(E.T @ Ip @ E, E.T @ (rhs - Ip @ c))
            wd = E @ ud + c
        Ad = skew(w) @ A
        return np.concatenate([Ad.ravel(), wd])

    sol = solve_ivp(f, (t[0], t[-1]), np.concatenate([A0.ravel(), w0]), t_eval=t, method="DOP853",
                    rtol=1e-12, atol=1e-13)
    return sol.y[:9].T.reshape(-1, 3, 3), sol.y[9:].T


@pytest.mark.parametrize("axes", [((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
                                  ((0.0, 0.0, 1.0), (math.cos(0.3), math.sin(0.3), 0.0))])
def test_universal_energy_kinematics_and_reference_trajectory(axes):
    """Large-amplitude 2-DOF swing of a body with a full inertia tensor on a universal joint
    (axes a1 = x then a2 = y, and a second pair) with rotated parent and child markers and an
    offset hinge point.

    - energy conserved to 1e-8 (dopri5, rtol 1e-10, 3 s);
    - the body rotation is R_GP R(a1, q1) R(a2, q2) R_BC^T (second axis in the frame after the
      first rotation) and the angular velocity is R_GP (a1 q1d + R(a1, q1) a2 q2d);
    - the motion matches an independent Newton-Euler integration about the pivot with the
      reaction torque orthogonal to both joint axes."""
    I = (0.06, 0.09, 0.05, 0.01, -0.007, 0.005)
    R_GP = rot((0.3, -0.2, 1.0), 0.8)
    R_BC = rot((1.0, 0.4, 0.2), -0.5)
    s_c = np.array([0.02, -0.03, 0.05])
    com = np.array([0.03, 0.04, -U_D])
    q0, qd0 = (0.9, -0.6), (1.5, -2.0)
    model = universal_model(q0, qd0, I=I, com=com, R_GP=R_GP, R_BC=R_BC, s_c=s_c, axes=axes)
    res = flexmbs.simulate(model, 3.0, method="dopri5", rtol=1e-10, output_step=0.05)
    scale = U_M * G * U_D
    drift = total_energy_check(res, scale)
    assert drift < 1e-8

    q1, q2 = res["u.q[1]"], res["u.q[2]"]
    u1, u2 = res["u.qd[1]"], res["u.qd[2]"]
    r, v, w, R = sensor(res, "s")
    ex, ey = np.array(axes[0]), np.array(axes[1])
    for k in range(len(res.time)):
        A = R_GP @ rot(ex, q1[k]) @ rot(ey, q2[k]) @ R_BC.T
        assert np.max(np.abs(R[k] - A)) < 1e-12
        r_ref = np.array([0, 0, 1.0]) + A @ (com - s_c)
        assert np.max(np.abs(r[k] - r_ref)) < 1e-12
        w_ref = R_GP @ (ex * u1[k] + rot(ex, q1[k]) @ ey * u2[k])
        assert np.max(np.abs(w[k] - w_ref)) < 1e-12

    def universal(A, w_):
        a1 = R_GP @ ex
        # body rotation A = R_GP R1 R2 R_BC^T  ->  R1 a2 = R_GP^T A R_BC R2^T a2 = R_GP^T A R_BC a2
        b = R_GP @ (R_GP.T @ A @ R_BC @ ey)
        E = np.column_stack([a1, b])
        ud = np.linalg.lstsq(E, w_, rcond=None)[0]
        return E, ud[0] * ud[1] * np.cross(a1, b)

    A0 = R[0]
    A_ref, w_ref = rigid_body_reference(U_M, inertia(I), com - s_c, (0, 0, -G), A0, w[0], res.time, universal)
    assert np.max(np.abs(R - A_ref)) < 1e-7
    assert np.max(np.abs(w - w_ref)) < 1e-6


def test_universal_small_oscillation_frequencies():
    """About the hanging equilibrium the two axes decouple: omega_x = sqrt(m g d / (Ixx + m d^2)),
    omega_y = sqrt(m g d / (Iyy + m d^2)). Checked with flexmbs.modes and by simulating a small
    (1e-3 rad) oscillation against the analytic cosines."""
    Ix = U_I[0] + U_M * U_D**2
    Iy = U_I[1] + U_M * U_D**2
    wx = math.sqrt(U_M * G * U_D / Ix)
    wy = math.sqrt(U_M * G * U_D / Iy)
    res_m = flexmbs.modes(universal_model(q0=(0.05, -0.03)))
    assert sorted(res_m.omega) == pytest.approx(sorted([wx, wy]), rel=1e-6)
    eps = 1e-3
    res = flexmbs.simulate(universal_model(q0=(eps, -eps)), 3.0, method="dopri5", rtol=1e-10, output_step=0.05)
    t = res.time
    # amplitude-dependent corrections are O(eps^2) relative
    assert np.max(np.abs(res["u.q[1]"] - eps * np.cos(wx * t))) < 1e-5 * eps
    assert np.max(np.abs(res["u.q[2]"] + eps * np.cos(wy * t))) < 1e-5 * eps


# --- planar ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("normal, first", [((0.0, 0.0, 1.0), (1.0, 0.0, 0.0)),
                                           ((1.0, 0.0, 0.0), (0.0, 0.6, 0.8))])
def test_planar_free_motion(normal, first):
    """Planar joint (plane normal n = `axis`, first in-plane axis e1 = `axis2`, second
    e2 = n x e1) in a rotated parent marker, no gravity, COM off the joint marker. The COM moves in
    a straight line at constant velocity and the rotation rate about n is constant, so the joint
    coordinates (the child marker in the parent marker frame) are
    p(t) = c0 + vc t - R(n, theta(t)) rho, q1 = p . e1, q2 = p . e2, theta = theta0 + w t."""
    m = 1.3
    n, e1 = np.array(normal), np.array(first)
    e2 = np.cross(n, e1)
    R_GP = rot((1.0, 1.0, 0.0), 0.4)
    com = np.array([0.3, -0.1, 0.07])
    x0, y0, th0 = 0.2, -0.4, 0.5
    vx0, vy0, om = 0.7, -0.3, 2.5
    model = Model(
        gravity=(0.0, 0.0, 0.0),
        ground_markers=[Marker("table", position=(1.0, 2.0, 3.0), rotation=R_GP.tolist())],
        bodies=[Body("puck", mass=m, com=tuple(com), inertia=(0.02, 0.03, 0.04, 0.002, 0.003, -0.001),
                     markers=[Marker("m"), Marker("com", position=tuple(com))])],
        joints=[Joint("pl", "planar", "ground", "table", "puck", "m", axis=tuple(n), axis2=tuple(e1),
                      q0=[x0, y0, th0], qd0=[vx0, vy0, om])],
        sensors=[Sensor("s", "puck", "com")])
    res = flexmbs.simulate(model, 3.0, method="dopri5", rtol=1e-11, output_step=0.1)
    t = res.time
    rho = com.copy()
    c0 = x0 * e1 + y0 * e2 + rot(n, th0) @ rho
    vc = vx0 * e1 + vy0 * e2 + np.cross(om * n, rot(n, th0) @ rho)
    th = th0 + om * t
    p = np.array([c0 + vc * tk - rot(n, thk) @ rho for tk, thk in zip(t, th)])
    assert np.max(np.abs(res["pl.q[3]"] - th)) < 1e-9
    assert np.max(np.abs(res["pl.qd[3]"] - om)) < 1e-9
    assert np.max(np.abs(res["pl.q[1]"] - p @ e1)) < 1e-9
    assert np.max(np.abs(res["pl.q[2]"] - p @ e2)) < 1e-9
    r, v, w, R = sensor(res, "s")
    r_ref = np.array([1.0, 2.0, 3.0]) + (c0 + np.outer(t, vc)) @ R_GP.T
    assert np.max(np.abs(r - r_ref)) < 1e-9
    assert np.max(np.abs(v - R_GP @ vc)) < 1e-9
    assert np.max(np.abs(w - om * R_GP @ n)) < 1e-9
    assert total_energy_check(res, 1.0) < 1e-10


# --- spherical ------------------------------------------------------------------------------------


def test_spherical_heavy_top_conservation_and_reference():
    """Heavy asymmetric body (full inertia tensor) on a spherical joint with rotated parent and
    child markers, COM off the pivot, initial spin. Energy and the vertical angular momentum about
    the pivot, L = m r x v + R Ic R^T w from a COM sensor, are conserved (rel. drift < 1e-7);
    the motion matches Euler's equations about the pivot integrated here; the joint
    quaternion is R_GP^T A R_BC."""
    m = 2.5
    I = (0.09, 0.06, 0.12, 0.01, -0.02, 0.015)
    Ic = inertia(I)
    com = np.array([0.05, -0.02, 0.35])
    s_c = np.array([0.01, 0.02, -0.03])
    R_GP = rot((0.2, 1.0, 0.3), 0.6)
    R_BC = rot((1.0, -0.5, 0.4), 1.1)
    pivot = np.array([0.3, -0.2, 1.0])
    rv0 = np.array([0.4, -0.7, 0.2])
    w_child = np.array([1.0, -2.0, 8.0])
    model = Model(
        gravity=(0.0, 0.0, -G),
        ground_markers=[Marker("pivot", position=tuple(pivot), rotation=R_GP.tolist())],
        bodies=[Body("top", mass=m, com=tuple(com), inertia=I,
                     markers=[Marker("ball", position=tuple(s_c), rotation=R_BC.tolist()),
                              Marker("com", position=tuple(com))])],
        joints=[Joint("sph", "spherical", "ground", "pivot", "top", "ball", q0=list(rv0), qd0=list(w_child))],
        sensors=[Sensor("s", "top", "com")])
    res = flexmbs.simulate(model, 3.0, method="dopri5", rtol=1e-10, output_step=0.05)
    r, v, w, R = sensor(res, "s")
    rr = r - pivot
    L = m * np.cross(rr, v) + np.einsum("nij,jk,nlk,nl->ni", R, Ic, R, w)
    # initial state from the conventions: A0 = R_GP exp(rv0) R_BC^T, w0 = R_GP exp(rv0) w_child
    A0 = R_GP @ rot(rv0, np.linalg.norm(rv0)) @ R_BC.T
    w0 = R_GP @ rot(rv0, np.linalg.norm(rv0)) @ w_child
    assert np.max(np.abs(R[0] - A0)) < 1e-14
    assert np.max(np.abs(w[0] - w0)) < 1e-13
    Lscale = float(np.linalg.norm(L[0]))
    assert rel_drift(L[:, 2], Lscale) < 1e-7
    Escale = res["energy.kinetic"][0] + m * G * np.linalg.norm(com - s_c)
    assert total_energy_check(res, Escale) < 1e-7
    # quaternion output: unit, and the rotation of the child marker in the parent marker frame
    quat = np.column_stack([res[f"sph.quat[{i}]"] for i in (1, 2, 3, 4)])
    assert np.max(np.abs(np.linalg.norm(quat, axis=1) - 1.0)) < 1e-12
    for k in (0, len(res.time) // 3, -1):
        qw, qx, qy, qz = quat[k]
        Rq = np.array([[1 - 2 * (qy**2 + qz**2), 2 * (qx * qy - qw * qz), 2 * (qx * qz + qw * qy)],
                       [2 * (qx * qy + qw * qz), 1 - 2 * (qx**2 + qz**2), 2 * (qy * qz - qw * qx)],
                       [2 * (qx * qz - qw * qy), 2 * (qy * qz + qw * qx), 1 - 2 * (qx**2 + qy**2)]])
        assert np.max(np.abs(Rq - R_GP.T @ R[k] @ R_BC)) < 1e-12
        # joint angular velocity output is the relative rate in the child marker frame
        w_out = np.array([res[f"sph.w[{i}]"][k] for i in (1, 2, 3)])
        assert np.max(np.abs(R[k] @ R_BC @ w_out - w[k])) < 1e-12
    A_ref, w_ref = rigid_body_reference(m, Ic, com - s_c, (0, 0, -G), A0, w0, res.time)
    assert np.max(np.abs(R - A_ref)) < 1e-6
    assert np.max(np.abs(w - w_ref)) < 2e-6


def test_spherical_conical_pendulum_steady_precession():
    """Axisymmetric body (A about the transverse axes, C about the symmetry axis through pivot and
    COM at distance d) turning rigidly about the vertical at rate Omega with its axis tilted by
    theta from the downward vertical: steady when Omega^2 = m g d / ((A + m d^2 - C) cos theta).
    The child marker is rotated, so the initial rate must be given in the child marker frame.
    The tilt stays theta and the azimuth of the COM advances as Omega t."""
    m, d, A, C = 1.5, 0.5, 0.03, 0.05
    theta = 0.6
    Om = math.sqrt(m * G * d / ((A + m * d * d - C) * math.cos(theta)))
    R_BC = rot((0.3, 0.2, 1.0), 0.9)
    # body symmetry axis z, COM at (0, 0, -d); tilt the body by theta about the world y axis
    # body rotation A = R_GP R_J R_BC^T with R_GP = I: R_J = rot_y(theta) R_BC gives A = rot_y(theta)
    R_J = rot((0, 1, 0), theta) @ R_BC
    ang = math.acos(np.clip((np.trace(R_J) - 1) / 2, -1, 1))
    axis = np.array([R_J[2, 1] - R_J[1, 2], R_J[0, 2] - R_J[2, 0], R_J[1, 0] - R_J[0, 1]]) / (2 * math.sin(ang))
    rv0 = axis * ang
    assert np.max(np.abs(rot(axis, ang) - R_J)) < 1e-12
    w_child = (rot((0, 1, 0), theta) @ R_BC).T @ np.array([0.0, 0.0, Om])
    model = Model(
        gravity=(0.0, 0.0, -G),
        bodies=[Body("bob", mass=m, com=(0.0, 0.0, -d), inertia=(A, A, C),
                     markers=[Marker("ball", rotation=R_BC.tolist()), Marker("com", position=(0.0, 0.0, -d))])],
        joints=[Joint("sph", "spherical", "ground", "origin", "bob", "ball", q0=list(rv0), qd0=list(w_child))],
        sensors=[Sensor("s", "bob", "com")])
    res = flexmbs.simulate(model, 3.0, method="dopri5", rtol=1e-10, output_step=0.05)
    r, v, w, R = sensor(res, "s")
    tilt = np.arccos(-r[:, 2] / d)
    assert np.max(np.abs(tilt - theta)) < 1e-8
    azimuth = np.unwrap(np.arctan2(r[:, 1], r[:, 0]))
    assert np.max(np.abs(azimuth - (azimuth[0] + Om * res.time))) < 1e-8
    assert np.max(np.abs(w - [0.0, 0.0, Om])) < 1e-8
    # a 2 % faster spin is not steady: the tilt changes (the condition is not trivially satisfied)
    model.joints[0].qd0 = list(1.02 * w_child)
    res2 = flexmbs.simulate(model, 1.0, method="dopri5", rtol=1e-10, output_step=0.05)
    tilt2 = np.arccos(-res2["s.r[3]"] / d)
    assert np.max(np.abs(tilt2 - theta)) > 1e-3


# --- free -----------------------------------------------------------------------------------------


def test_free_body_tumbling_conservation():
    """Torque-free asymmetric body spinning near its intermediate principal axis (Dzhanibekov
    flip) while translating, child marker off the COM and rotated, parent marker rotated. Linear
    momentum, angular momentum about the world origin (m r x v + R Ic R^T w), and energy are
    constant to 1e-8; the COM moves in a straight line at constant speed; the quaternion is unit."""
    m = 1.8
    I = (0.25, 0.18, 0.10, 0.02, -0.01, 0.015)
    Ic = inertia(I)
    com = np.array([0.1, -0.2, 0.05])
    s_c = np.array([-0.1, 0.05, 0.2])
    R_BC = rot((0.5, 1.0, -0.3), 0.7)
    R_GP = rot((1.0, 0.0, 1.0), -0.4)
    p0 = np.array([0.5, -0.3, 0.2])
    rv0 = np.array([0.2, 0.1, -0.3])
    # spin about the intermediate principal axis (body frame) + a small perturbation
    evals, evecs = np.linalg.eigh(Ic)
    w_body = 6.0 * evecs[:, 1] + 0.01 * evecs[:, 0] + 0.01 * evecs[:, 2]
    w_child = R_BC.T @ w_body
    v_parent = np.array([0.4, -0.2, 0.3])
    model = Model(
        gravity=(0.0, 0.0, 0.0),
        ground_markers=[Marker("o", position=(1.0, 0.0, -1.0), rotation=R_GP.tolist())],
        bodies=[Body("box", mass=m, com=tuple(com), inertia=I,
                     markers=[Marker("c", position=tuple(s_c), rotation=R_BC.tolist()),
                              Marker("com", position=tuple(com))])],
        joints=[Joint("fj", "free", "ground", "o", "box", "c", q0=list(p0) + list(rv0),
                      qd0=list(v_parent) + list(w_child))],
        sensors=[Sensor("s", "box", "com")])
    res = flexmbs.simulate(model, 3.0, method="dopri5", rtol=1e-10, output_step=0.05)
    r, v, w, R = sensor(res, "s")
    # the initial state from the conventions
    A0 = R_GP @ rot(rv0, np.linalg.norm(rv0)) @ R_BC.T
    assert np.max(np.abs(R[0] - A0)) < 1e-14
    assert np.max(np.abs(w[0] - A0 @ w_body)) < 1e-12
    v0 = R_GP @ v_parent + np.cross(A0 @ w_body, A0 @ (com - s_c))
    assert np.max(np.abs(v[0] - v0)) < 1e-12
    # the flip happens: the component along the intermediate axis changes sign
    w_b = np.einsum("nji,nj->ni", R, w)
    along = w_b @ evecs[:, 1]
    assert along.min() < -3.0 and along.max() > 5.9
    # momenta and energy
    assert np.max(np.abs(v - v0)) < 1e-8 * np.linalg.norm(v0)
    r_ref = r[0] + np.outer(res.time, v0)
    assert np.max(np.abs(r - r_ref)) < 1e-8
    L = m * np.cross(r, v) + np.einsum("nij,jk,nlk,nl->ni", R, Ic, R, w)
    assert np.max(np.abs(L - L[0])) < 1e-8 * np.linalg.norm(L[0])
    assert total_energy_check(res, res["energy.kinetic"][0]) < 1e-8
    quat = np.column_stack([res[f"fj.quat[{i}]"] for i in (1, 2, 3, 4)])
    assert np.max(np.abs(np.linalg.norm(quat, axis=1) - 1.0)) < 1e-12
    # translational outputs: the child marker in the parent marker frame and its rate there
    p = np.column_stack([res[f"fj.r[{i}]"] for i in (1, 2, 3)])
    pv = np.column_stack([res[f"fj.v[{i}]"] for i in (1, 2, 3)])
    marker_w = r - np.einsum("nij,j->ni", R, com - s_c)
    assert np.max(np.abs((p @ R_GP.T + [1.0, 0.0, -1.0]) - marker_w)) < 1e-12
    marker_v = v - np.cross(w, np.einsum("nij,j->ni", R, com - s_c))
    assert np.max(np.abs(pv @ R_GP.T - marker_v)) < 1e-12


def test_free_body_on_spinning_platform():
    """A free joint whose parent is a platform spinning at constant rate Om (motion drive), no
    gravity, isotropic inertia. The body is torque-free, so in the world its COM moves in a straight
    line and its angular velocity is constant. The joint's translational state is the child marker
    position in the rotating parent marker frame and its rate as seen in that frame:
    p(t) = R_P(t)^T (r(t) - r_P(t)), v_P(0) = R_P^T (v_world - Om x (r - r_P)); the angular velocity
    is relative, in the child marker frame."""
    Om = 2.0
    m, Ii = 0.7, 0.01
    R_PM = rot((1.0, 0.0, 0.0), 0.4)  # parent marker on the platform, tilted
    r_PM = np.array([0.3, 0.1, 0.05])
    R_BC = rot((0.0, 1.0, 1.0), 0.3)
    p0 = np.array([0.2, -0.1, 0.3])
    v_rel = np.array([0.5, 0.2, -0.1])
    w_rel_child = np.array([0.3, -0.6, 1.1])
    platform = Body("table", mass=5.0, inertia=(0.1, 0.1, 0.2),
                    markers=[Marker("axle"), Marker("dock", position=tuple(r_PM), rotation=R_PM.tolist())])
    body = Body("ball", mass=m, inertia=(Ii, Ii, Ii), markers=[Marker("c", rotation=R_BC.tolist())])
    model = Model(
        gravity=(0.0, 0.0, 0.0), bodies=[platform, body],
        joints=[Joint("spin", "revolute", "ground", "origin", "table", "axle", axis=(0, 0, 1),
                      drive=Drive(type="motion", profile=Profile("constant", value=0.0, rate=Om))),
                Joint("fj", "free", "table", "dock", "ball", "c", q0=list(p0) + [0.0, 0.0, 0.0], qd0=list(v_rel) + list(w_rel_child))],
        sensors=[Sensor("s", "ball", "c"), Sensor("dock", "table", "dock")])
    res = flexmbs.simulate(model, 2.0, method="dopri5", rtol=1e-11, output_step=0.05)
    t = res.time
    r, v, w, R = sensor(res, "s")
    rP, vP, wP, RP = sensor(res, "dock")
    ez = np.array([0.0, 0.0, 1.0])
    # initial world state from the conventions
    r0 = R_PM @ p0 + r_PM
    v0 = R_PM @ v_rel + np.cross(Om * ez, r0)
    w0 = Om * ez + R_PM @ w_rel_child  # child marker frame: R_platform R_PM R_J, R_J = I at t = 0
    assert r[0] == pytest.approx(r0, abs=1e-14)
    assert v[0] == pytest.approx(v0, abs=1e-13)
    assert w[0] == pytest.approx(w0, abs=1e-13)
    # torque-free straight-line motion and constant spin in the world
    assert np.max(np.abs(r - (r0 + np.outer(t, v0)))) < 1e-9
    assert np.max(np.abs(w - w0)) < 1e-9
    # joint outputs relative to the rotating parent marker
    p = np.column_stack([res[f"fj.r[{i}]"] for i in (1, 2, 3)])
    pv = np.column_stack([res[f"fj.v[{i}]"] for i in (1, 2, 3)])
    p_ref = np.einsum("nji,nj->ni", RP, r - rP)
    assert np.max(np.abs(p - p_ref)) < 1e-9
    pv_ref = np.einsum("nji,nj->ni", RP, v - vP - np.cross(wP, r - rP))
    assert np.max(np.abs(pv - pv_ref)) < 1e-9
    w_out = np.column_stack([res[f"fj.w[{i}]"] for i in (1, 2, 3)])
    w_out_ref = np.einsum("nji,nj->ni", R, w - wP)  # sensor s is the child marker frame
    assert np.max(np.abs(w_out - w_out_ref)) < 1e-9
    assert np.max(np.abs(res["spin.q"] - Om * t)) < 1e-12


def test_free_body_parabola_under_gravity():
    """A spinning free body thrown under gravity: the COM follows r0 + v0 t + g t^2 / 2 and
    the angular momentum about the COM stays constant (gravity exerts no moment about it)."""
    m = 0.9
    I = (0.02, 0.05, 0.04, 0.003, 0.0, -0.002)
    Ic = inertia(I)
    com = np.array([0.05, 0.1, -0.02])
    R_GP = rot((0.0, 1.0, 1.0), 0.5)
    v_parent = np.array([1.0, 2.0, 4.0])
    w_child = np.array([3.0, -1.0, 2.0])
    model = Model(
        gravity=(0.0, 0.0, -G),
        ground_markers=[Marker("launch", position=(0.0, 0.0, 1.0), rotation=R_GP.tolist())],
        bodies=[Body("ball", mass=m, com=tuple(com), inertia=I, markers=[Marker("c"), Marker("com", position=tuple(com))])],
        joints=[Joint("fj", "free", "ground", "launch", "ball", "c", q0=[0.1, 0.0, 0.0, 0.0, 0.0, 0.0],
                      qd0=list(v_parent) + list(w_child))],
        sensors=[Sensor("s", "ball", "com")])
    res = flexmbs.simulate(model, 1.5, method="dopri5", rtol=1e-11, output_step=0.05)
    t = res.time
    r, v, w, R = sensor(res, "s")
    r0 = np.array([0.0, 0.0, 1.0]) + R_GP @ (np.array([0.1, 0, 0]) + com)
    w0 = R_GP @ w_child
    v0 = R_GP @ v_parent + np.cross(w0, R_GP @ com)
    gv = np.array([0.0, 0.0, -G])
    assert np.max(np.abs(r - (r0 + np.outer(t, v0) + 0.5 * np.outer(t**2, gv)))) < 1e-9
    assert np.max(np.abs(v - (v0 + np.outer(t, gv)))) < 1e-9
    Lc = np.einsum("nij,jk,nlk,nl->ni", R, Ic, R, w)
    assert np.max(np.abs(Lc - Lc[0])) < 1e-9 * np.linalg.norm(Lc[0])
    assert total_energy_check(res, res["energy.kinetic"][0]) < 1e-9


# --- chains ---------------------------------------------------------------------------------------


CHAIN_BODIES = {"link1": (1.2, 0.8), "link2": (0.9, 0.6)}


def chain_model(damping: float) -> Model:
    """ground -revolute(y)-> link1 -universal(x, y)-> link2 -cylindrical(along link2)-> sleeve,
    joint springs with preloads on every coordinate, gravity -z, a sensor at each COM."""
    def link(name, m, L):
        com = (0.0, 0.0, -L / 2)
        return Body(name, mass=m, com=com, inertia=(m * L * L / 12, m * L * L / 12, 0.02 * m, 0.001, 0.0, 0.0),
                    markers=[Marker("top"), Marker("bottom", position=(0.0, 0.0, -L)), Marker("com", position=com)])

    sleeve = Body("sleeve", mass=0.7, com=(0.05, 0.0, -0.05), inertia=(0.004, 0.005, 0.003),
                  markers=[Marker("bore", rotation=rot((1, 0, 0), 0.2).tolist()), Marker("com", position=(0.05, 0.0, -0.05))])
    return Model(
        gravity=(0.0, 0.0, -G),
        bodies=[link("link1", *CHAIN_BODIES["link1"]), link("link2", *CHAIN_BODIES["link2"]), sleeve],
        joints=[
            Joint("j1", "revolute", "ground", "origin", "link1", "top", axis=(0, 1, 0), q0=[0.8], qd0=[0.5],
                  spring=Spring(stiffness=4.0, damping=damping, preload=0.2)),
            Joint("j2", "universal", "link1", "bottom", "link2", "top", axis=(1, 0, 0), axis2=(0, 1, 0),
                  q0=[0.5, -0.7], qd0=[1.0, -0.5], spring=Spring(stiffness=2.0, damping=damping, preload=-0.1)),
            Joint("j3", "cylindrical", "link2", "bottom", "sleeve", "bore", axis=(0, 0, 1), q0=[0.1, 0.3],
                  qd0=[0.2, 3.0], spring=Spring(stiffness=30.0, damping=damping, preload=0.05)),
        ],
        sensors=[Sensor(b, b, "com") for b in ("link1", "link2", "sleeve")])


def chain_energies(res):
    """Kinetic, gravity and spring energies computed here from the COM sensors and joint outputs."""
    bodies = {"link1": (1.2, inertia((1.2 * 0.64 / 12, 1.2 * 0.64 / 12, 1.2 * 0.02, 0.001, 0.0, 0.0))),
              "link2": (0.9, inertia((0.9 * 0.36 / 12, 0.9 * 0.36 / 12, 0.9 * 0.02, 0.001, 0.0, 0.0))),
              "sleeve": (0.7, np.diag([0.004, 0.005, 0.003]))}
    T = 0.0
    V = 0.0
    for name, (m, Ic) in bodies.items():
        r, v, w, R = sensor(res, name)
        T = T + 0.5 * m * np.sum(v * v, axis=1) + 0.5 * np.einsum("ni,nij,jk,nlk,nl->n", w, R, Ic, R, w)
        V = V + m * G * r[:, 2]
    spring = (0.5 * 4.0 * (res["j1.q"] - 0.2) ** 2
              + 0.5 * 2.0 * ((res["j2.q[1]"] + 0.1) ** 2 + (res["j2.q[2]"] + 0.1) ** 2)
              + 0.5 * 30.0 * ((res["j3.q[1]"] - 0.05) ** 2 + (res["j3.q[2]"] - 0.05) ** 2))
    return T, V, spring


def test_chain_energy_conserved_with_springs():
    """3-link chain mixing revolute, universal and cylindrical joints under gravity with undamped
    joint springs (preloaded): the total energy (kinetic + gravity + spring) is conserved; the
    kinetic and potential energies equal those computed here from the COM sensors (sum of
    1/2 m v^2 + 1/2 w.R Ic R^T w, m g z) and the spring energy sum 1/2 k (q - preload)^2."""
    res = flexmbs.simulate(chain_model(0.0), 3.0, method="dopri5", rtol=1e-11, output_step=0.05)
    T, V, spring = chain_energies(res)
    scale = float(np.max(T))
    assert np.max(np.abs(res["energy.kinetic"] - T)) < 1e-12 * scale
    assert np.max(np.abs(res["energy.potential"] - (V + spring))) < 1e-12 * scale
    assert total_energy_check(res, scale) < 1e-8
    # the motion is far from trivial
    assert np.ptp(res["j1.q"]) > 0.3 and np.ptp(res["j3.q[2]"]) > 0.3 and np.ptp(spring) > 0.1 * scale


def test_chain_energy_decreases_with_joint_damping():
    """The same chain with joint dampers c on every coordinate: the total energy never increases
    (by more than 1e-9 between samples) and the loss equals the dissipated work
    c sum_i integral qd_i^2 dt (Simpson's rule on the sampled rates)."""
    c = 0.05
    res = flexmbs.simulate(chain_model(c), 2.0, method="dopri5", rtol=1e-10, output_step=0.004)
    e = res["energy.total"]
    assert np.max(np.diff(e)) < 1e-9
    rates = [res["j1.qd"]] + [res[f"{j}.qd[{i}]"] for j in ("j2", "j3") for i in (1, 2)]
    power = c * sum(r**2 for r in rates)
    dissipated = simpson(power, x=res.time)
    assert dissipated > 1.0  # J, against a total energy swing of ~20 J
    assert e[0] - e[-1] == pytest.approx(dissipated, rel=2e-5)
