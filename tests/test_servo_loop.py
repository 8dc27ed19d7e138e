"""Motor, controller and a rigid single inertia (models/flywheel.yaml) co-simulated by the
explicit master, against closed-form references: the motor's speed response (the linear
armature + inertia ODE solved by a matrix exponential), the sampled closed loop with the
controller's one-step delay (exact recurrence), and the convergence of the co-simulation to the
ideally sampled loop as the communication step shrinks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import expm

from flexmbs.fmi.cosim import Assembly, CosimError, Element, Master

J_DISC = 0.01                   # flywheel inertia [kg m^2] (models/flywheel.yaml)
MOTOR = {"R": 2.0, "L": 0.01, "k_t": 0.1, "J_rotor": 1e-4, "b_motor": 0.0, "ratio": 10.0, "efficiency": 1.0}
J_TOTAL = J_DISC + 10.0 ** 2 * 1e-4


def motor_matrices() -> tuple[np.ndarray, np.ndarray]:
    """x = [theta, omega, i]: theta' = omega, J omega' = N k_t i, L i' = V - R i - k_t N omega."""
    N, k, R, L = 10.0, 0.1, 2.0, 0.01
    A = np.array([[0, 1, 0], [0, 0, N * k / J_TOTAL], [0, -k * N / L, -R / L]])
    B = np.array([0.0, 0.0, 1.0 / L])
    return A, B


def zoh(A: np.ndarray, B: np.ndarray, T: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact discretisation for an input held over T: (Phi, Gamma)."""
    n = A.shape[0]
    E = expm(np.block([[A, B[:, None]], [np.zeros((1, n + 1))]]) * T)
    return E[:n, :n], E[:n, n]


def motor_on_flywheel(fmu_dir, extra_elements=(), links=()) -> Assembly:
    return Assembly(
        "motor_flywheel",
        [Element("fly", fmu_dir / "flywheel.fmu", {"rotor_inertia": 10.0 ** 2 * 1e-4}),
         Element("m", fmu_dir / "dc_motor.fmu", MOTOR), *extra_elements],
        [("m.tau_load", "fly.shaft.tau"), ("fly.shaft.qd", "m.w_load"), *links],
        ["fly.shaft.q", "fly.shaft.qd", "m.current"])


def test_motor_spins_up_a_flywheel_with_its_time_constants(fmu_dir) -> None:
    """12 V step: the speed tends to V / (k_t N) = 12 rad/s with the mechanical time constant
    J R / (k_t N)^2 = 40 ms; the co-simulated response converges to the exact one, first order in
    the communication step."""
    A, B = motor_matrices()
    lam = np.sort(np.linalg.eigvals(A).real)
    assert lam[-1] == 0.0                                              # the angle
    # the two time constants are close to the classic separated estimates L/R and JR/(kN)^2
    assert -1.0 / lam[0] == pytest.approx(0.01 / 2.0, rel=0.3)
    assert -1.0 / lam[1] == pytest.approx(J_TOTAL * 2.0 / 1.0, rel=0.3)
    errors = []
    with Master(motor_on_flywheel(fmu_dir)) as m:
        m.set("m.voltage", 12.0)
        m.initialize()
        start = m.save()
        for h in (1e-3, 5e-4, 2.5e-4):
            m.restore(start)
            run = m.run(0.3, h)
            exact = np.array([expm(np.block([[A, B[:, None] * 12.0], [np.zeros((1, 4))]]) * t)[:3, 3]
                              for t in run["time"]])
            errors.append(np.max(np.abs(run["fly.shaft.qd"] - exact[:, 1])))
            assert run["fly.shaft.qd"][-1] == pytest.approx(12.0, rel=1e-3)       # 7.5 time constants
        m.restore(start)
        m.run(2.0, 1e-3)
        assert m.get("fly.shaft.qd") == pytest.approx(12.0, rel=1e-9)          # the exact steady state
        assert m.get("m.current") == pytest.approx(0.0, abs=1e-9)
    order = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert errors[-1] < 0.02 * 12.0
    assert np.all((order > 0.8) & (order < 1.3)), (errors, order)


def pd_flywheel(fmu_dir, T: float, params: dict) -> Assembly:
    """The controller's voltage drives the flywheel torque directly (1 N m per V)."""
    return Assembly(
        "pd_flywheel",
        [Element("fly", fmu_dir / "flywheel.fmu"),
         Element("c", fmu_dir / "pid_controller.fmu", {"sample_time": T, **params})],
        [("c.voltage", "fly.shaft.tau"), ("fly.shaft.q", "c.q"), ("fly.shaft.qd", "c.qd")],
        ["fly.shaft.q", "fly.shaft.qd", "c.voltage"])


def test_sampled_pd_loop_is_the_exact_recurrence(fmu_dir) -> None:
    """Communication step = sample time T: the controller sees (theta_k, omega_k) and its output
    u_k acts over the next interval (one-sample delay), the inertia integrates exactly:
    theta_{k+1} = theta_k + T omega_k + T^2/(2J) u_{k-1}, omega_{k+1} = omega_k + T/J u_{k-1}."""
    T, kp, kd, ref = 0.01, 2.0, 0.3, 1.0
    with Master(pd_flywheel(fmu_dir, T, {"kp": kp, "kd": kd, "ki": 0.0, "q_ref": ref})) as m:
        m.initialize()
        run = m.run(1.5, T)
    theta, omega, u_prev = 0.0, 0.0, 0.0
    expect = [theta]
    for _ in range(150):
        u = kp * (ref - theta) + kd * (0.0 - omega)
        theta, omega = theta + T * omega + T ** 2 / (2 * J_DISC) * u_prev, omega + T / J_DISC * u_prev
        u_prev = u
        expect.append(theta)
    assert np.max(np.abs(run["fly.shaft.q"] - np.array(expect))) <= 1e-8
    # the recurrence is a stable loop (spectral radius < 1), so the angle settles at the reference
    Phi = np.array([[1, T, T ** 2 / (2 * J_DISC)], [0, 1, T / J_DISC], [-kp, -kd, 0]])
    assert np.max(np.abs(np.linalg.eigvals(Phi))) < 1.0
    assert run["fly.shaft.q"][-1] == pytest.approx(ref, abs=2e-3)


def test_servo_loop_converges_to_the_ideally_sampled_loop(fmu_dir) -> None:
    """Controller + motor + flywheel at sample time T = 4 ms: as the communication step h = T/m
    shrinks, the co-simulation (one-step controller delay, held torque and speed) tends to the
    ideally sampled loop x_{k+1} = Phi x_k + Gamma u_k, u_k = kp e_k + kd ed_k, first order in h."""
    T, kp, kd, ref = 4e-3, 20.0, 0.1, 0.5
    A, B = motor_matrices()
    Phi, Gam = zoh(A, B, T)
    x, expect = np.zeros(3), [0.0]
    for _ in range(150):
        x = Phi @ x + Gam * (kp * (ref - x[0]) - kd * x[1])
        expect.append(x[0])
    expect = np.array(expect)
    ctrl = Element("c", fmu_dir / "pid_controller.fmu", {"sample_time": T, "kp": kp, "kd": kd, "ki": 0.0,
                                                         "q_ref": ref, "u_min": -100.0, "u_max": 100.0})
    links = [("c.voltage", "m.voltage"), ("fly.shaft.q", "c.q"), ("fly.shaft.qd", "c.qd")]
    errors = []
    with Master(motor_on_flywheel(fmu_dir, [ctrl], links)) as m:
        m.initialize()
        start = m.save()
        for sub in (1, 2, 4, 8, 16):
            m.restore(start)
            run = m.run(0.6, T / sub)
            errors.append(np.max(np.abs(run["fly.shaft.q"][::sub] - expect)))
    order = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert expect[-1] == pytest.approx(ref, abs=1e-3)
    assert np.all(np.diff(errors) < 0)
    assert np.all((order[1:] > 0.8) & (order[1:] < 1.3)), (errors, order)
    assert errors[-1] < 0.02 * ref


def test_master_reset_reuses_the_instances(fmu_dir) -> None:
    """fmi2Reset of every FMU and a new initialisation give the run of fresh instances, bit for bit."""
    with Master(motor_on_flywheel(fmu_dir)) as m:
        m.set("m.voltage", 12.0)
        m.initialize()
        first = m.run(0.05, 1e-3)
        m.reset()
        m.set("m.voltage", 12.0)
        m.initialize()
        again = m.run(0.05, 1e-3)
    for name in first:
        assert np.array_equal(first[name], again[name]), name


def test_master_refuses_wrong_causality(fmu_dir) -> None:
    bad = motor_on_flywheel(fmu_dir)
    bad.connections = [("m.tau_load", "fly.shaft.tau"), ("fly.shaft.qd", "m.R")]
    with pytest.raises(CosimError, match=r"fly\.shaft\.qd -> m\.R: m\.R is a parameter, not an input"):
        Master(bad)


def test_master_refuses_an_algebraic_loop(fmu_dir) -> None:
    """The flywheel's acceleration depends on its torque input in the same instant and the
    motor's torque on its speed input: wiring qdd back as the motor's speed closes a loop."""
    bad = motor_on_flywheel(fmu_dir)
    bad.connections = [("m.tau_load", "fly.shaft.tau"), ("fly.shaft.qdd", "m.w_load")]
    with pytest.raises(CosimError, match=r"algebraic loop .*fly\.shaft\.qdd"):
        Master(bad)
