"""Drives, joint springs, rotor inertia, point loads and spring-dampers against independent
references: the profiles' closed forms and their derivatives written out here, single-DOF
oscillator solutions, static equilibria solved by hand, momentum and energy balances."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy.integrate import simpson
from scipy.interpolate import CubicSpline
from scipy.optimize import curve_fit

import flexmbs
from flexmbs.model import Body, Drive, Joint, Load, Marker, Model, Profile, Sensor, Spring

G = 9.81


def rot(axis, angle: float) -> np.ndarray:
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    K = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * K @ K


# --- a disk / link on a revolute joint about z -----------------------------------------------------

M_DISK, D_DISK = 3.0, 0.1
I_DISK = (0.02, 0.03, 0.04, 0.001, 0.002, -0.003)  # Izz about the COM: 0.04
IP_DISK = I_DISK[2] + M_DISK * D_DISK**2           # about the joint axis


def disk_model(drive: Drive, gravity=(0.0, -G, 0.0), q0=0.0, qd0=0.0, spring=None, rotor_inertia=0.0,
               m=M_DISK, d=D_DISK, I=I_DISK, loads=(), markers=()) -> Model:
    """Body hinged about the world z axis at the origin, COM at (d, 0, 0) in the body frame (angle q
    of the COM from the world x axis)."""
    return Model(
        gravity=gravity,
        bodies=[Body("disk", mass=m, com=(d, 0.0, 0.0), inertia=I, markers=[Marker("hub"), *markers])],
        joints=[Joint("j", "revolute", "ground", "origin", "disk", "hub", axis=(0, 0, 1), q0=[q0], qd0=[qd0],
                      drive=drive, spring=spring, rotor_inertia=rotor_inertia)],
        loads=list(loads))


# --- motion drives ---------------------------------------------------------------------------------


def _sine(t):
    off, amp, f, ph = 0.2, 0.7, 1.3, 0.4
    w = 2 * np.pi * f
    return off + amp * np.sin(w * t + ph), amp * w * np.cos(w * t + ph), -amp * w * w * np.sin(w * t + ph)


def _quintic(t):
    q0, q1, t0, t1 = 0.3, -1.2, 0.4, 1.6
    T = t1 - t0
    s = np.clip((t - t0) / T, 0.0, 1.0)
    dq = q1 - q0
    return (q0 + dq * (10 * s**3 - 15 * s**4 + 6 * s**5), dq * (30 * s**2 - 60 * s**3 + 30 * s**4) / T,
            dq * (60 * s - 180 * s**2 + 120 * s**3) / T**2)


def _cycloidal(t):
    q0, q1, t0, t1 = -0.5, 1.0, 0.2, 1.4
    T = t1 - t0
    s = np.clip((t - t0) / T, 0.0, 1.0)
    dq = q1 - q0
    inside = (t > t0) & (t < t1)
    return (q0 + dq * (s - np.sin(2 * np.pi * s) / (2 * np.pi)),
            np.where(inside, dq * (1 - np.cos(2 * np.pi * s)) / T, 0.0),
            np.where(inside, dq * 2 * np.pi * np.sin(2 * np.pi * s) / T**2, 0.0))


def _spin_up(t):
    Ws, Ts = 6.0, 1.2
    a = 2 * np.pi * t / Ts
    before = t < Ts
    q = np.where(before, (Ws / Ts) * (t**2 / 2 + (Ts / (2 * np.pi)) ** 2 * (np.cos(a) - 1)), Ws * t - Ws * Ts / 2)
    qd = np.where(before, (Ws / Ts) * (t - Ts / (2 * np.pi) * np.sin(a)), Ws)
    qdd = np.where(before, (Ws / Ts) * (1 - np.cos(a)), 0.0)
    return q, qd, qdd


TABLE_T = [0.0, 0.5, 1.1, 1.6, 2.0]
TABLE_V = [0.0, 0.8, -0.3, 0.5, 0.2]


def _table(t):
    cs = CubicSpline(TABLE_T, TABLE_V, bc_type="clamped")
    tc = np.clip(t, TABLE_T[0], TABLE_T[-1])
    inside = (t > TABLE_T[0]) & (t < TABLE_T[-1])
    return cs(tc), np.where(inside, cs(tc, 1), 0.0), np.where(inside, cs(tc, 2), 0.0)


PROFILES = {
    "sine": (Profile("sine", offset=0.2, amplitude=0.7, frequency=1.3, phase=0.4), _sine),
    "ramp": (Profile("ramp", q0=0.3, q1=-1.2, t0=0.4, t1=1.6), _quintic),
    "cycloidal": (Profile("cycloidal", q0=-0.5, q1=1.0, t0=0.2, t1=1.4), _cycloidal),
    "spin_up": (Profile("spin_up", omega_s=6.0, t_s=1.2), _spin_up),
    "table": (Profile("table", times=TABLE_T, values=TABLE_V), _table),
}


@pytest.mark.parametrize("kind", list(PROFILES))
def test_motion_drive_follows_profile_and_torque(kind):
    """A disk (COM offset d, gravity in its plane) driven by a motion profile: q, qd, qdd equal the
    analytic profile (1e-12) and the drive torque equals I_p qdd + m g d cos q (1e-9); the kinetic
    energy is 1/2 I_p qd^2."""
    profile, ref = PROFILES[kind]
    model = disk_model(Drive(type="motion", profile=profile), q0=5.0, qd0=-3.0)  # overridden by the profile
    res = flexmbs.simulate(model, 2.5, method="rk4", step=1e-3, output_step=0.05)
    t = res.time
    q, qd, qdd = ref(t)
    assert np.max(np.abs(res["j.q"] - q)) < 1e-12
    assert np.max(np.abs(res["j.qd"] - qd)) < 1e-12
    assert np.max(np.abs(res["j.qdd"] - qdd)) < 1e-12
    tau = IP_DISK * qdd + M_DISK * G * D_DISK * np.cos(q)
    assert np.max(np.abs(res["j.tau"] - tau)) < 1e-9
    assert np.max(np.abs(res["energy.kinetic"] - 0.5 * IP_DISK * qd**2)) < 1e-12
    if kind == "table":
        # passes through the given values at the knots (all on the output grid), zero end slopes,
        # held constant after the last knot
        for tk, vk in zip(TABLE_T, TABLE_V):
            k = int(np.argmin(np.abs(t - tk)))
            assert abs(t[k] - tk) < 1e-12
            assert res["j.q"][k] == pytest.approx(vk, abs=1e-12)
        assert res["j.qd"][0] == 0.0
        assert np.all(res["j.q"][t >= 2.0] == pytest.approx(0.2, abs=1e-12))
        assert np.all(res["j.qd"][t >= 2.0] == 0.0)


def test_table_profile_is_c2_spline():
    """The table profile is a C2 cubic spline: across every interior knot q, qd and qdd are
    continuous (evaluated 1e-6 s either side), and qd, qdd are the derivatives of q (compared with
    central differences of the sampled q on a fine grid)."""
    model = disk_model(Drive(type="motion", profile=PROFILES["table"][0]), gravity=(0.0, 0.0, 0.0))
    h = 1e-6
    for tk in TABLE_T[1:-1]:
        res = flexmbs.simulate(model, tk + h, method="rk4", step=0.01, output_step=tk - h)
        assert res.time[-2] == pytest.approx(tk - h, abs=1e-15)
        q, qd, qdd = (res[n][-2:] for n in ("j.q", "j.qd", "j.qdd"))
        # trapezoidal increments over [tk - h, tk + h] are exact to O(h^3) only if the lower
        # derivatives are continuous at the knot
        assert abs(q[1] - q[0] - h * (qd[0] + qd[1])) < 1e-13
        assert abs(qd[1] - qd[0] - h * (qdd[0] + qdd[1])) < 5e-10  # h^2 * jump of qdd' ~ 1e-10
        assert abs(qdd[1] - qdd[0]) < 1e-4
    dt = 1e-3
    res = flexmbs.simulate(model, 2.0, method="rk4", step=0.01, output_step=dt)
    t, q, qd, qdd = res.time, res["j.q"], res["j.qd"], res["j.qdd"]
    # stencils [t - dt, t + dt] inside one spline segment: q is cubic there, so the central
    # difference of q is qd + dt^2 q'''/6 and that of qd (quadratic) is exactly qdd
    inner = np.ones(t.size - 2, bool)
    for tk in TABLE_T:
        inner &= ~((t[:-2] < tk - 1e-12) & (t[2:] > tk + 1e-12))
    assert inner.sum() > 1900
    assert np.max(np.abs((q[2:] - q[:-2]) / (2 * dt) - qd[1:-1])[inner]) < 1e-4
    assert np.max(np.abs((qd[2:] - qd[:-2]) / (2 * dt) - qdd[1:-1])[inner]) < 1e-9


def test_drives_with_rotor_inertia_and_on_prismatic_joints():
    """The drive also accelerates the rotor inertia: motion-driven disk with rotor_inertia J_r:
    tau = (I_p + J_r) qdd + m g d cos q. On a vertical prismatic joint the drive output is a force:
    motion drive F = (m + J_r) qdd + m g; force input F: qdd = (F - m g) / (m + J_r) (RK4, exact)."""
    Jr = 0.02
    profile, ref = PROFILES["sine"]
    res = flexmbs.simulate(disk_model(Drive(type="motion", profile=profile), rotor_inertia=Jr), 1.0,
                           method="rk4", step=1e-3, output_step=0.1)
    q, qd, qdd = ref(res.time)
    assert np.max(np.abs(res["j.tau"] - ((IP_DISK + Jr) * qdd + M_DISK * G * D_DISK * np.cos(q)))) < 1e-9

    def lift(drive):
        return Model(gravity=(0.0, 0.0, -G),
                     bodies=[Body("car", mass=2.0, com=(0.1, 0.0, 0.0), inertia=(0.01, 0.02, 0.02), markers=[Marker("c")])],
                     joints=[Joint("lift", "prismatic", "ground", "origin", "car", "c", axis=(0, 0, 1), drive=drive,
                                   rotor_inertia=0.5, q0=[0.2], qd0=[0.1])])
    res = flexmbs.simulate(lift(Drive(type="motion", profile=profile)), 1.0, method="rk4", step=1e-3, output_step=0.1)
    q, qd, qdd = ref(res.time)
    assert np.max(np.abs(res["lift.q"] - q)) < 1e-12
    assert np.max(np.abs(res["lift.tau"] - (2.5 * qdd + 2.0 * G))) < 1e-9
    assert res.units["lift.tau"] == "N" and res.units["lift.q"] == "m"
    F = 30.0
    res = flexmbs.simulate(lift(Drive(type="torque")), 1.0, method="rk4", step=1e-2, output_step=0.1,
                           inputs={"lift.tau": F})
    a = (F - 2.0 * G) / 2.5
    t = res.time
    assert np.max(np.abs(res["lift.q"] - (0.2 + 0.1 * t + 0.5 * a * t * t))) < 1e-12
    assert np.max(np.abs(res["lift.qdd"] - a)) < 1e-12


def test_motion_drive_torque_energy_balance_in_a_chain():
    """A passive pendulum carrying a motion-driven joint (sine, out-of-plane axis, rotor inertia)
    carrying a second motion-driven joint (ramp): the work of the drive torques equals the change
    of total energy, integral (tau1 qd1 + tau2 qd2) dt = E(t) - E(0) (Simpson's rule on a fine
    output grid), so each drive torque includes the reactions of the bodies it carries."""
    arm = Body("arm", mass=1.5, com=(0.25, 0.0, 0.0), inertia=(0.001, 0.03, 0.03),
               markers=[Marker("root"), Marker("tip", position=(0.5, 0.0, 0.0))])
    bob = Body("bob", mass=0.8, com=(0.3, 0.05, 0.02), inertia=(0.0005, 0.01, 0.01),
               markers=[Marker("root"), Marker("tip", position=(0.4, 0.0, 0.0))])
    bob2 = Body("bob2", mass=0.5, com=(0.2, 0.0, 0.0), inertia=(0.0005, 0.01, 0.01), markers=[Marker("root")])
    model = Model(
        gravity=(0.0, -G, 0.0), bodies=[arm, bob, bob2],
        joints=[Joint("p", "revolute", "ground", "origin", "arm", "root", axis=(0, 0, 1), q0=[-1.0]),
                Joint("d1", "revolute", "arm", "tip", "bob", "root", axis=(0, 1, 0), rotor_inertia=0.01,
                      drive=Drive(type="motion", profile=Profile("sine", amplitude=0.8, frequency=0.7))),
                Joint("d2", "revolute", "bob", "tip", "bob2", "root", axis=(0, 0, 1),
                      drive=Drive(type="motion", profile=Profile("ramp", q0=0.0, q1=1.0, t0=0.2, t1=1.5)))])
    res = flexmbs.simulate(model, 2.0, method="dopri5", rtol=1e-10, output_step=0.002)
    power = res["d1.tau"] * res["d1.qd"] + res["d2.tau"] * res["d2.qd"]
    work = simpson(power, x=res.time)
    dE = res["energy.total"][-1] - res["energy.total"][0]
    assert abs(work) > 0.5
    assert dE == pytest.approx(work, rel=1e-8)
    # the energy changes only through the drives: between samples dE/dt = power
    dEdt = np.gradient(res["energy.total"], res.time, edge_order=2)
    assert np.max(np.abs(dEdt - power)[5:-5]) < 1e-3 * np.max(np.abs(power))  # O(dt^2) differencing


# --- torque input ----------------------------------------------------------------------------------


def test_torque_input_static_equilibrium():
    """Pendulum (hanging at q = -pi/2, gravity -y) with a constant input torque tau: the equilibrium
    satisfies tau = m g d cos q, q = -acos(tau / (m g d)). Checked with flexmbs.equilibrium and by
    simulating with a joint damper until settled."""
    m, d, Ic = 2.0, 0.4, 0.05
    tau = 3.0
    q_eq = -math.acos(tau / (m * G * d))
    Ip = Ic + m * d * d
    k_eff = m * G * d * math.sin(-q_eq)
    c = 2.0 * 1.0 * math.sqrt(k_eff * Ip)  # about critically damped
    model = disk_model(Drive(type="torque"), q0=-math.pi / 2, m=m, d=d, I=(Ic / 3, Ic, Ic),
                       spring=Spring(stiffness=0.0, damping=c))
    x = flexmbs.equilibrium(model, inputs={"j.tau": tau})
    assert x[0] == pytest.approx(q_eq, abs=1e-9)
    res = flexmbs.simulate(model, 8.0, method="dopri5", rtol=1e-10, output_step=0.5, inputs={"j.tau": tau})
    assert np.all(res["j.tau"] == tau)
    assert res["j.q"][-1] == pytest.approx(q_eq, abs=1e-7)
    assert abs(res["j.qd"][-1]) < 1e-6
    assert abs(res["j.q"][0] - q_eq) > 0.3  # it did move


def test_torque_input_zero_order_hold():
    """A rotor with no gravity torque and a time-varying input tau(t) sampled at the output times
    and held (zero-order hold): q is piecewise quadratic, qdd = tau(t_k)/I_p on [t_k, t_k+1)."""
    model = disk_model(Drive(type="torque", torque=0.7), gravity=(0.0, 0.0, -G), qd0=0.5)
    dt = 0.1

    def tau_of(t):
        return {"j.tau": 2.0 * math.sin(3.0 * t) + 1.0}

    res = flexmbs.simulate(model, 1.0, method="rk4", step=0.01, output_step=dt, inputs=tau_of)
    t = res.time
    q, qd = 0.0, 0.5
    for k in range(len(t) - 1):
        a = tau_of(t[k])["j.tau"] / IP_DISK
        assert res["j.tau"][k] == pytest.approx(tau_of(t[k])["j.tau"], abs=1e-15)
        assert res["j.qdd"][k] == pytest.approx(a, abs=1e-12)
        assert res["j.q"][k] == pytest.approx(q, abs=1e-12)
        assert res["j.qd"][k] == pytest.approx(qd, abs=1e-12)
        q, qd = q + qd * dt + 0.5 * a * dt * dt, qd + a * dt
    assert res["j.q"][-1] == pytest.approx(q, abs=1e-12)
    # without inputs the drive's default torque applies
    res0 = flexmbs.simulate(model, 0.5, method="rk4", step=0.01, output_step=0.5)
    assert res0["j.qd"][-1] == pytest.approx(0.5 + 0.7 / IP_DISK * 0.5, abs=1e-12)


# --- joint springs and rotor inertia -----------------------------------------------------------------


def damped_response(t, x0, omega, zeta):
    """Free response of x'' + 2 zeta omega x' + omega^2 x = 0 from x(0) = x0, x'(0) = 0."""
    if zeta == 0.0:
        return x0 * np.cos(omega * t)
    wd = omega * math.sqrt(1 - zeta**2)
    return x0 * np.exp(-zeta * omega * t) * (np.cos(wd * t) + zeta / math.sqrt(1 - zeta**2) * np.sin(wd * t))


def rotor(k, c, qp, q0, rotor_inertia=0.0) -> Model:
    """Horizontal-plane rotor: axis z along gravity (no gravity torque), COM off the axis."""
    return disk_model(Drive(), gravity=(0.0, 0.0, -G), q0=q0, spring=Spring(stiffness=k, damping=c, preload=qp),
                      rotor_inertia=rotor_inertia)


def test_joint_spring_preload_oscillation():
    """Spring k with preload q_p, released from q0: q = q_p + (q0 - q_p) cos(sqrt(k/I) t) (1e-8);
    the spring energy 1/2 k (q - q_p)^2 is in energy.potential and the total is conserved."""
    k, qp, q0 = 2.5, 0.4, 1.1
    res = flexmbs.simulate(rotor(k, 0.0, qp, q0), 3.0, method="dopri5", rtol=1e-10, output_step=0.05)
    t = res.time
    w = math.sqrt(k / IP_DISK)
    assert np.max(np.abs(res["j.q"] - (qp + (q0 - qp) * np.cos(w * t)))) < 1e-8
    assert np.max(np.abs(res["j.qd"] + (q0 - qp) * w * np.sin(w * t))) < 1e-8 * w
    spring = 0.5 * k * (res["j.q"] - qp) ** 2
    # the COM stays at z = 0, so the gravity potential is 0 and energy.potential is the spring's
    assert np.max(np.abs(res["energy.potential"] - spring)) < 1e-12
    E0 = 0.5 * k * (q0 - qp) ** 2
    assert np.max(np.abs(res["energy.total"] - E0)) < 5e-9 * E0


def test_joint_spring_damping_decay_rate():
    """With a damper c: the response is the analytic damped cosine with zeta = c / (2 sqrt(k I))
    (1e-8), and an independent least-squares fit of exp(-sigma t)(A cos wd t + B sin wd t) to the
    simulated q gives sigma / omega = zeta."""
    k, c, qp, q0 = 2.5, 0.06, -0.3, 0.5
    res = flexmbs.simulate(rotor(k, c, qp, q0), 3.0, method="dopri5", rtol=1e-10, output_step=0.02)
    t = res.time
    w = math.sqrt(k / IP_DISK)
    zeta = c / (2.0 * math.sqrt(k * IP_DISK))
    assert np.max(np.abs(res["j.q"] - qp - damped_response(t, q0 - qp, w, zeta))) < 1e-8

    def model(t, sigma, wd, A, B):
        return np.exp(-sigma * t) * (A * np.cos(wd * t) + B * np.sin(wd * t))

    (sigma, wd, A, B), _ = curve_fit(model, t, res["j.q"] - qp, p0=[0.1, w, q0 - qp, 0.0])
    assert sigma / w == pytest.approx(zeta, rel=1e-6)
    assert wd == pytest.approx(w * math.sqrt(1 - zeta**2), rel=1e-7)
    # and the energy decays monotonically
    assert np.max(np.diff(res["energy.total"])) < 0.0


def test_rotor_inertia_adds_to_joint_inertia():
    """rotor_inertia J_r adds to the joint's inertia: period 2 pi sqrt((I + J_r) / k), measured from
    the zero crossings of q - q_p (interpolated), and the analytic cosine to 1e-8; the kinetic
    energy includes 1/2 J_r qd^2."""
    k, qp, q0, Jr = 2.5, 0.4, 1.1, 0.05
    res = flexmbs.simulate(rotor(k, 0.0, qp, q0, rotor_inertia=Jr), 3.0, method="dopri5", rtol=1e-10,
                           output_step=0.01)
    t = res.time
    w = math.sqrt(k / (IP_DISK + Jr))
    x = res["j.q"] - qp
    assert np.max(np.abs(x - (q0 - qp) * np.cos(w * t))) < 1e-8
    i = np.flatnonzero(np.sign(x[:-1]) != np.sign(x[1:]))
    crossings = t[i] - x[i] * (t[i + 1] - t[i]) / (x[i + 1] - x[i])
    assert len(crossings) >= 3
    period = 2.0 * np.mean(np.diff(crossings))
    assert period == pytest.approx(2 * math.pi * math.sqrt((IP_DISK + Jr) / k), rel=1e-4)
    assert np.max(np.abs(res["energy.kinetic"] - 0.5 * (IP_DISK + Jr) * res["j.qd"] ** 2)) < 1e-12
    assert np.max(np.abs(res["energy.total"] - 0.5 * k * (q0 - qp) ** 2)) < 3e-9


def test_rotor_inertia_on_prismatic_is_a_mass():
    """On a prismatic joint rotor_inertia is a mass [kg]: a slider of mass m on a spring k oscillates
    at sqrt(k / (m + J_r))."""
    m, Jr, k = 2.0, 0.5, 40.0
    model = Model(gravity=(0.0, 0.0, -G),
                  bodies=[Body("cart", mass=m, inertia=(0.01, 0.01, 0.01), markers=[Marker("c")])],
                  joints=[Joint("s", "prismatic", "ground", "origin", "cart", "c", axis=(1, 0, 0), q0=[0.1],
                                spring=Spring(stiffness=k), rotor_inertia=Jr)])
    res = flexmbs.simulate(model, 2.0, method="dopri5", rtol=1e-10, output_step=0.05)
    assert np.max(np.abs(res["s.q"] - 0.1 * np.cos(math.sqrt(k / (m + Jr)) * res.time))) < 1e-9


# --- servo -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [0.0, 1.5])
def test_servo_step_and_ramp_response(rate):
    """PD servo with motor inertia Jm, no gravity torque, from rest at q = 0. rate = 0: constant
    reference q_ref: (I + Jm) qdd + kd qd + kp q = kp q_ref, the analytic second-order step response.
    rate != 0: reference q_ref + rate t (qd_ref = rate): the error e = q_ref(t) - q obeys the
    homogeneous equation with e(0) = q_ref, e'(0) = rate. The output tau = kp e + kd e' and it
    accelerates I + Jm: (I + Jm) qdd = tau."""
    kp, kd, Jm, q_ref = 8.0, 0.9, 0.03, 0.6
    J = IP_DISK + Jm
    model = disk_model(Drive(type="servo", profile=Profile("constant", value=q_ref, rate=rate), kp=kp, kd=kd,
                             motor_inertia=Jm), gravity=(0.0, 0.0, -G))
    res = flexmbs.simulate(model, 3.0, method="dopri5", rtol=1e-10, output_step=0.02)
    t = res.time
    w = math.sqrt(kp / J)
    zeta = kd / (2 * math.sqrt(kp * J))
    wd = w * math.sqrt(1 - zeta**2)
    s = zeta * w
    # e(t) = exp(-s t) (e0 cos wd t + (e0' + s e0)/wd sin wd t)
    e = np.exp(-s * t) * (q_ref * np.cos(wd * t) + (rate + s * q_ref) / wd * np.sin(wd * t))
    ed = np.exp(-s * t) * (rate * np.cos(wd * t) - (s * rate + w * w * q_ref) / wd * np.sin(wd * t))
    assert np.max(np.abs(res["j.q"] - (q_ref + rate * t - e))) < 1e-9
    assert np.max(np.abs(res["j.qd"] - (rate - ed))) < 1e-8
    tau = kp * e + kd * ed
    assert np.max(np.abs(res["j.tau"] - tau)) < 1e-8
    assert np.max(np.abs(J * res["j.qdd"] - res["j.tau"])) < 1e-9


# --- point forces -----------------------------------------------------------------------------------


def hanging(F_world=(0.0, 0.0, 0.0), F_body=None, m=1.2, d=0.8, L=0.8, Ic=1e-6, damping=0.0) -> Model:
    """Pendulum about z hanging at q = -pi/2 (gravity -y), COM at d along body x, a tip marker at L
    carrying the point force (world frame, or body = tip marker frame)."""
    loads = [Load("point_force", "push", body="disk", marker="tip", force=F_world, frame="world")]
    if F_body is not None:
        loads = [Load("point_force", "push", body="disk", marker="tip", force=F_body, frame="body")]
    return disk_model(Drive(), q0=-math.pi / 2, m=m, d=d, I=(Ic, Ic, Ic), loads=loads,
                      markers=[Marker("tip", position=(L, 0.0, 0.0))], spring=Spring(damping=damping))


def test_point_force_world_frame_equilibrium():
    """A constant horizontal world force F on the tip of a hanging pendulum. Point-mass-like body
    (tip at the COM, negligible Ic): the pendulum settles at phi = atan(F / (m g)) from the vertical;
    general body: tan phi = F L / (m g d). flexmbs.equilibrium and a damped simulation agree."""
    m, F = 1.2, 4.0
    x = flexmbs.equilibrium(hanging(F_world=(F, 0.0, 0.0), m=m))
    assert x[0] == pytest.approx(-math.pi / 2 + math.atan(F / (m * G)), abs=1e-9)
    d, L = 0.3, 0.9
    model = hanging(F_world=(F, 0.0, 0.0), m=m, d=d, L=L, Ic=0.02, damping=1.2)
    phi = math.atan(F * L / (m * G * d))
    x = flexmbs.equilibrium(model)
    assert x[0] == pytest.approx(-math.pi / 2 + phi, abs=1e-9)
    res = flexmbs.simulate(model, 6.0, method="dopri5", rtol=1e-10, output_step=0.5)
    assert res["j.q"][-1] == pytest.approx(-math.pi / 2 + phi, abs=1e-6)


def test_point_force_body_frame_is_a_follower_force():
    """A force fixed in the (rotated) tip marker frame follows the body. With marker rotation Rz(0.5)
    and marker-frame components F (Rz(-0.5) e_y), the force is F e_y in the body frame: perpendicular
    to the arm, a constant moment F L, equilibrium cos q = F L / (m g d) on the hanging side (the same
    force in the world frame would be vertical and leave q = -pi/2). Dynamics: on a horizontal rotor
    the follower moment is constant, so q = q0 + qd0 t + (F L / I_p) t^2 / 2 exactly (RK4), while
    the world-frame force gives a different motion."""
    m, d, L, F = 1.2, 0.3, 0.9, 2.0
    R_BM = rot((0, 0, 1), 0.5)
    f_marker = tuple(R_BM.T @ np.array([0.0, F, 0.0]))
    model = hanging(m=m, d=d, L=L, Ic=0.02, damping=0.6)
    model.bodies[0].markers[1].rotation = R_BM.tolist()
    model.loads[0].force = f_marker
    model.loads[0].frame = "body"
    x = flexmbs.equilibrium(model)
    assert x[0] == pytest.approx(-math.acos(F * L / (m * G * d)), abs=1e-9)
    model.loads[0].force = (0.0, F, 0.0)
    model.loads[0].frame = "world"
    x = flexmbs.equilibrium(model, x_guess=[-1.4, 0.0])
    assert x[0] == pytest.approx(-math.pi / 2, abs=1e-9)
    # dynamics on a horizontal rotor (gravity along the axis)
    tip = Marker("tip", position=(L, 0.0, 0.0), rotation=R_BM.tolist())
    load = Load("point_force", body="disk", marker="tip", force=f_marker, frame="body")
    rot_model = disk_model(Drive(), gravity=(0.0, 0.0, -G), q0=0.2, qd0=0.5, loads=[load], markers=[tip])
    res = flexmbs.simulate(rot_model, 2.0, method="rk4", step=0.01, output_step=0.1)
    t = res.time
    a = F * L / IP_DISK
    assert np.max(np.abs(res["j.q"] - (0.2 + 0.5 * t + 0.5 * a * t * t))) < 1e-9
    assert res["j.q"][-1] - 0.2 > 2 * math.pi  # several turns
    rot_model.loads[0].frame = "world"
    res_w = flexmbs.simulate(rot_model, 2.0, method="rk4", step=0.01, output_step=0.1)
    assert np.max(np.abs(res_w["j.q"] - res["j.q"])) > 0.1


def test_point_torque_world_and_body():
    """A point torque T about the axis on a horizontal rotor: q = q0 + T t^2 / (2 I_p), whether given
    in the world frame or in a marker frame rotated about the axis; a torque perpendicular to the
    axis does nothing to q."""
    T = 0.3
    for frame, R_BM, torque in (("world", np.eye(3), (0.0, 0.0, T)),
                                ("body", rot((1, 1, 0), math.pi / 2), tuple(rot((1, 1, 0), math.pi / 2).T @ [0, 0, T]))):
        mk = Marker("hub2", position=(0.05, 0.02, 0.0), rotation=R_BM.tolist())
        load = Load("point_force", body="disk", marker="hub2", torque=torque, frame=frame)
        model = disk_model(Drive(), gravity=(0.0, 0.0, -G), q0=0.1, loads=[load], markers=[mk])
        res = flexmbs.simulate(model, 1.0, method="rk4", step=0.01, output_step=0.1)
        assert np.max(np.abs(res["j.q"] - (0.1 + 0.5 * T / IP_DISK * res.time**2))) < 1e-10
    load = Load("point_force", body="disk", marker="hub", torque=(T, -T, 0.0))
    res = flexmbs.simulate(disk_model(Drive(), gravity=(0.0, 0.0, -G), q0=0.1, loads=[load]), 1.0,
                           method="rk4", step=0.01, output_step=0.5)
    assert np.max(np.abs(res["j.q"] - 0.1)) < 1e-14


# --- spring-dampers --------------------------------------------------------------------------------


def slider(k, c, l0, q0, m=2.0) -> Model:
    """A mass on a prismatic joint along world x; a spring-damper from a ground anchor at
    (-1, 0, 0) to the body marker at the joint, so the spring length is 1 + q."""
    return Model(
        gravity=(0.0, 0.0, -G),
        ground_markers=[Marker("origin"), Marker("anchor", position=(-1.0, 0.0, 0.0))],
        bodies=[Body("cart", mass=m, com=(0.1, 0.05, 0.0), inertia=(0.01, 0.02, 0.02), markers=[Marker("c")])],
        joints=[Joint("s", "prismatic", "ground", "origin", "cart", "c", axis=(1, 0, 0), q0=[q0])],
        loads=[Load("spring_damper", "sd", marker_a="ground.anchor", marker_b="cart.c", stiffness=k, damping=c,
                    rest_length=l0)])


def test_spring_damper_on_slider():
    """Undamped: the mass oscillates about the rest length (q = l0 - 1) at sqrt(k/m), analytic cosine;
    the spring energy 1/2 k (l - l0)^2 is in energy.potential and the total is conserved.
    Damped: the analytic damped response with zeta = c / (2 sqrt(k m))."""
    m, k, l0, q0 = 2.0, 50.0, 1.2, 0.5
    res = flexmbs.simulate(slider(k, 0.0, l0, q0, m), 2.0, method="dopri5", rtol=1e-11, output_step=0.02)
    t = res.time
    w = math.sqrt(k / m)
    assert np.max(np.abs(res["s.q"] - ((l0 - 1.0) + (q0 - l0 + 1.0) * np.cos(w * t)))) < 1e-8
    spring = 0.5 * k * (1.0 + res["s.q"] - l0) ** 2
    # the COM stays at z = 0, so the gravity potential is 0 and energy.potential is the spring's
    assert np.max(np.abs(res["energy.potential"] - spring)) < 1e-12
    E0 = 0.5 * k * (q0 + 1.0 - l0) ** 2
    assert np.max(np.abs(res["energy.total"] - E0)) < 1e-9 * E0
    c = 1.5
    res = flexmbs.simulate(slider(k, c, l0, q0, m), 2.0, method="dopri5", rtol=1e-10, output_step=0.02)
    zeta = c / (2 * math.sqrt(k * m))
    assert np.max(np.abs(res["s.q"] - (l0 - 1.0) - damped_response(res.time, q0 + 1.0 - l0, w, zeta))) < 1e-8


def test_spring_damper_between_two_bodies_conserves_momentum():
    """Two carts on parallel x rails joined by a damped spring-damper (markers offset sideways, so
    the spring is inclined): action equals reaction, so m1 v1 + m2 v2 is constant even with damping.
    With c = 0 the total energy is conserved and energy.potential equals 1/2 k (l - l0)^2 with the
    hook distance l computed here; with c > 0 the energy decreases monotonically."""
    def model(c):
        carts = [Body(n, mass=mm, inertia=(0.01, 0.01, 0.01), markers=[Marker("c"), Marker("hook", position=(0.0, y, 0.0))])
                 for n, mm, y in (("a", 1.0, 0.1), ("b", 3.0, -0.2))]
        return Model(
            gravity=(0.0, 0.0, -G), ground_markers=[Marker("r1"), Marker("r2", position=(0.0, 0.5, 0.0))],
            bodies=carts,
            joints=[Joint("ja", "prismatic", "ground", "r1", "a", "c", axis=(1, 0, 0), q0=[0.0], qd0=[1.0]),
                    Joint("jb", "prismatic", "ground", "r2", "b", "c", axis=(1, 0, 0), q0=[0.9], qd0=[-0.2])],
            loads=[Load("spring_damper", marker_a="a.hook", marker_b="b.hook", stiffness=30.0, damping=c,
                        rest_length=0.5)])
    for c in (0.0, 0.8):
        res = flexmbs.simulate(model(c), 2.0, method="dopri5", rtol=1e-11, output_step=0.05)
        p = 1.0 * res["ja.qd"] + 3.0 * res["jb.qd"]
        assert np.max(np.abs(p - p[0])) < 1e-9
        assert np.ptp(res["ja.qd"]) > 0.5
        e = res["energy.total"]
        if c == 0.0:
            assert np.max(np.abs(e - e[0])) < 1e-9 * e[0]
            # spring energy from the geometry: length between the hooks
            dx = res["jb.q"] - res["ja.q"]
            ln = np.hypot(dx, (0.5 - 0.2) - 0.1)
            assert np.max(np.abs(res["energy.potential"] - 0.5 * 30.0 * (ln - 0.5) ** 2)) < 1e-12
        else:
            assert np.max(np.diff(e)) < 0.0 and e[-1] < 0.5 * e[0]


def test_spring_damper_planar_orbit_conserves_angular_momentum():
    """A body on a planar joint (no gravity) tethered to a ground anchor by an undamped spring
    attached off its COM: the spring force passes through the anchor, so the z angular momentum
    about the anchor, m (r - a) x v + (R Ic R^T w)_z, is conserved (1e-8), and so is the energy."""
    m = 1.5
    com = np.array([0.1, -0.05, 0.0])
    Ic = np.diag([0.02, 0.03, 0.04])
    anchor = np.array([0.3, -0.2, 0.0])
    model = Model(
        gravity=(0.0, 0.0, 0.0),
        ground_markers=[Marker("origin"), Marker("anchor", position=tuple(anchor))],
        bodies=[Body("puck", mass=m, com=tuple(com), inertia=(0.02, 0.03, 0.04),
                     markers=[Marker("m"), Marker("hook", position=(-0.15, 0.1, 0.0)),
                              Marker("com", position=tuple(com))])],
        joints=[Joint("pl", "planar", "ground", "origin", "puck", "m", axis=(0, 0, 1), axis2=(1, 0, 0),
                      q0=[1.0, 0.2, 0.3], qd0=[0.3, 1.2, -0.8])],
        loads=[Load("spring_damper", marker_a="ground.anchor", marker_b="puck.hook", stiffness=20.0,
                    rest_length=0.4)],
        sensors=[Sensor("s", "puck", "com")])
    res = flexmbs.simulate(model, 3.0, method="dopri5", rtol=1e-10, output_step=0.05)
    r = np.column_stack([res[f"s.r[{i}]"] for i in (1, 2, 3)])
    v = np.column_stack([res[f"s.v[{i}]"] for i in (1, 2, 3)])
    wz = res["s.w[3]"]
    Lz = m * np.cross(r - anchor, v)[:, 2] + Ic[2, 2] * wz
    assert np.max(np.abs(Lz - Lz[0])) < 1e-8 * abs(Lz[0])
    e = res["energy.total"]
    assert np.max(np.abs(e - e[0])) < 1e-8 * e[0]
    assert np.ptp(wz) > 0.3  # the off-COM attachment makes the spin vary


def test_zero_length_spring_damper_is_an_isotropic_bushing():
    """rest_length 0: force k d + c d' in every direction. A puck on a planar joint tied at its
    COM to a ground anchor moves as two independent damped oscillators x'' = -(k/m) x - (c/m) x',
    also in the tangential direction that a damper along the line would leave undamped."""
    from scipy.linalg import expm

    m, k, c = 1.5, 40.0, 0.9
    model = Model(
        gravity=(0.0, 0.0, 0.0),
        ground_markers=[Marker("origin")],
        bodies=[Body("puck", mass=m, inertia=(0.02, 0.03, 0.04), markers=[Marker("m")])],
        joints=[Joint("pl", "planar", "ground", "origin", "puck", "m", axis=(0, 0, 1), axis2=(1, 0, 0),
                      q0=[0.3, 0.0, 0.0], qd0=[0.0, 1.1, 0.0])],
        loads=[Load("spring_damper", marker_a="ground.origin", marker_b="puck.m", stiffness=k, damping=c)])
    res = flexmbs.simulate(model, 3.0, method="dopri5", rtol=1e-11, output_step=0.05)
    A = np.array([[0.0, 1.0], [-k / m, -c / m]])
    xs = np.array([(expm(A * t) @ [0.3, 0.0])[0] for t in res.time])
    ys = np.array([(expm(A * t) @ [0.0, 1.1])[0] for t in res.time])
    assert np.max(np.abs(res["pl.q[1]"] - xs)) < 1e-8
    assert np.max(np.abs(res["pl.q[2]"] - ys)) < 1e-8
    assert np.max(np.abs(res["pl.q[3]"])) < 1e-12
    # undamped, its energy is 1/2 k |d|^2 + 1/2 m |v|^2
    undamped = flexmbs.simulate(dataclasses.replace(model, loads=[dataclasses.replace(model.loads[0], damping=0.0)]),
                                1.0, method="dopri5", rtol=1e-11, output_step=0.05)
    e0 = 0.5 * k * 0.3 ** 2 + 0.5 * m * 1.1 ** 2
    assert np.max(np.abs(undamped["energy.total"] - e0)) < 1e-9 * e0
