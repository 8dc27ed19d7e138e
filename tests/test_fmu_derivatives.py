"""The FMI 2.0 derivatives of the plant and the blocks, through fmpy: directional derivatives
(outputs with respect to inputs) against central differences of the outputs, output derivatives
against the outputs' own finite differences over shrinking steps (first order), and input
interpolation against an independent solution of the ramped inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fmpy import read_model_description
from scipy.integrate import solve_ivp

from fmu_tools import Slave

JOINTS = ("shoulder", "elbow", "wrist")
TAUS = [f"{j}.tau" for j in JOINTS]


@pytest.fixture
def arm(fmu_path):
    """The three-link arm (wrist on the flexible forearm's tip) after one 1 ms step with torques."""
    s = Slave(fmu_path("three_link_arm"), "arm")
    s.start()
    s.set(dict(zip(TAUS, (1.0, -2.0, 0.5))))
    s.fmu.doStep(0.0, 1e-3)
    yield s
    s.close()


def directional(s: Slave, outputs: list[str], inputs: list[str], seed: np.ndarray) -> np.ndarray:
    return np.array(s.fmu.getDirectionalDerivative([s.vr[n] for n in outputs], [s.vr[n] for n in inputs], list(seed)))


def central(s: Slave, outputs: list[str], inputs: list[str], seed: np.ndarray, e: float) -> np.ndarray:
    """(y(u + e seed) - y(u - e seed)) / 2e, the inputs put back afterwards."""
    u0 = s.get(inputs)
    s.set(dict(zip(inputs, u0 + e * seed)))
    plus = s.get(outputs)
    s.set(dict(zip(inputs, u0 - e * seed)))
    minus = s.get(outputs)
    s.set(dict(zip(inputs, u0)))
    return (plus - minus) / (2 * e)


def test_the_descriptions_declare_the_derivatives(fmu_path) -> None:
    for name in ("three_link_arm", "dc_motor", "pid_controller", "trajectory"):
        cs = read_model_description(fmu_path(name)).coSimulation
        assert cs.providesDirectionalDerivative and cs.canInterpolateInputs, name
        assert cs.maxOutputDerivativeOrder == 1, name


def test_plant_directional_derivatives_equal_finite_differences(arm) -> None:
    """Accelerations and sensor outputs along a torque seed: the closed form (outputs affine in
    the torques) against central differences, 1e-6 relative; positions and velocities have no
    feedthrough (exactly 0)."""
    out = [f"{j}.qdd" for j in JOINTS] + [f"{j}.q" for j in JOINTS] + [f"{j}.qd" for j in JOINTS]
    seed = np.array([0.3, -1.0, 2.0])
    d = directional(arm, out, TAUS, seed)
    fd = central(arm, out, TAUS, seed, 1e-3)
    assert np.all(d[3:] == 0.0) and np.all(fd[3:] == 0.0)
    assert np.max(np.abs(d[:3] - fd[:3])) <= 1e-6 * np.max(np.abs(fd[:3])), (d, fd)
    # the wrist on the interface: a torque there accelerates the wrist by ~1e4 rad/s2 per N m,
    # the stiffness of this coupling (M^-1 of the light tip modes)
    assert abs(directional(arm, ["wrist.qdd"], ["wrist.tau"], np.ones(1))[0]) > 1e3
    # linear in the seed
    assert np.allclose(directional(arm, out, TAUS, 2 * seed), 2 * d, rtol=1e-12, atol=0)


def output_rate_errors(s: Slave, names: list[str], steps: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The output derivatives at the current point and |(y(t + h) - y(t)) / h - rate| for each h
    (from the same saved state, inputs held)."""
    rates = np.array(s.fmu.getRealOutputDerivatives([s.vr[n] for n in names], [1] * len(names)))
    y0, t = s.get(names), 1e-3
    state = s.fmu.getFMUstate()
    errors = []
    for h in steps:
        s.fmu.setFMUstate(state)
        s.fmu.doStep(t, h)
        errors.append(np.abs((s.get(names) - y0) / h - rates))
    s.fmu.setFMUstate(state)
    s.fmu.freeFMUstate(state)
    return rates, np.array(errors)


def test_plant_output_derivatives_are_the_rates_of_the_outputs(arm) -> None:
    """A joint angle's rate is its velocity output, a velocity's rate its acceleration output
    (both exact components of dx/dt); the outputs' forward differences over h, h/2, h/4 approach
    the rates at first order (the error halves with the step). (A velocity's difference quotient
    is not yet asymptotic at these steps: the forearm's 6.4 kHz interface modes ring in the
    accelerations.)"""
    names = ["wrist.q", "elbow.qd", "forearm.eta[1]", "tcp.r[1]", "tcp.r[3]"]
    rates, errors = output_rate_errors(arm, names, (1e-5, 5e-6, 2.5e-6))
    exact = arm.get(["wrist.qd", "elbow.qdd"])
    assert rates[0] == exact[0] and rates[1] == pytest.approx(exact[1], rel=1e-12)
    order = np.log2(errors[:-1, [0, 2, 3, 4]] / errors[1:, [0, 2, 3, 4]])
    assert np.all((order > 0.8) & (order < 1.2)), (errors, order)
    with pytest.raises(Exception):
        arm.fmu.getRealOutputDerivatives([arm.vr["wrist.q"]], [2])          # first order only


def test_plant_input_interpolation_integrates_the_ramp(fmu_path) -> None:
    """One 4 ms step with torque rates against 64 steps each holding the ramp's midpoint value
    (which converge to the ramp): far closer than the same step with the torques held."""
    def run(rates: bool, pieces: int) -> np.ndarray:
        s = Slave(fmu_path("double_pendulum"), "p")
        s.start()
        u0, u1, h = np.array([0.5, -0.2]), np.array([40.0, 25.0]), 4e-3
        names = ["shoulder.tau", "elbow.tau"]
        for k in range(pieces):
            s.set(dict(zip(names, u0 + u1 * (k + 0.5) * h / pieces if pieces > 1 else u0)))
            if rates:
                s.fmu.setRealInputDerivatives([s.vr[n] for n in names], [1, 1], list(u1))
            s.fmu.doStep(k * h / pieces, h / pieces)
        y = s.get(["shoulder.qd", "elbow.qd", "shoulder.q"])
        s.close()
        return y
    ramp, fine, held = run(True, 1), run(False, 64), run(False, 1)
    assert np.max(np.abs(ramp - fine)) < 1e-3 * np.max(np.abs(held - fine)), (ramp, fine, held)


@pytest.fixture
def motor(fmu_path):
    s = Slave(fmu_path("dc_motor"), "m")
    s.start({"i0": 0.3})
    s.set({"voltage": 12.0, "w_load": 1.5})
    yield s
    s.close()


def test_motor_directional_derivatives_equal_finite_differences(motor) -> None:
    out, inputs = ["tau_load", "current", "w_motor", "back_emf"], ["voltage", "w_load"]
    for seed in (np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([-2.0, 0.7])):
        d, fd = directional(motor, out, inputs, seed), central(motor, out, inputs, seed, 1e-4)
        assert np.allclose(d, fd, rtol=1e-6, atol=1e-9 * np.max(np.abs(fd))), (seed, d, fd)
    assert directional(motor, ["w_motor"], ["w_load"], np.ones(1))[0] == 50.0     # the gear ratio


@pytest.mark.parametrize("w_load", [0.04, -0.04])
def test_motor_derivatives_where_the_gear_loss_fades(fmu_path, w_load) -> None:
    """At a motor speed of +-2 rad/s, inside the default 3 rad/s band where the gear's loss
    fades to none at standstill (the motor driving, then driven back): d tau_load / d w_load
    includes the gear factor's slope, and equals central differences; tau_load's time rate
    under a ramped speed equals forward differences of the output at first order."""
    s = Slave(fmu_path("dc_motor"), "m")
    s.start({"i0": 0.3})
    s.set({"voltage": 12.0, "w_load": w_load})
    d, fd = directional(s, ["tau_load"], ["w_load"], np.ones(1)), central(s, ["tau_load"], ["w_load"], np.ones(1), 1e-7)
    assert d[0] == pytest.approx(fd[0], rel=1e-6)
    assert abs(d[0]) > 10 * 50.0 ** 2 * 1e-5       # the factor's slope, beyond the shaft friction's
    s.fmu.doStep(0.0, 1e-4)
    s.fmu.setRealInputDerivatives([s.vr["w_load"]], [1], [30.0])
    rate = s.fmu.getRealOutputDerivatives([s.vr["tau_load"]], [1])[0]
    state, y0, errors = s.fmu.getFMUstate(), s.get(["tau_load"])[0], []
    for h in (1e-6, 5e-7, 2.5e-7):
        s.fmu.setFMUstate(state)
        s.set({"w_load": w_load + 30.0 * h})
        s.fmu.doStep(1e-4, h)
        errors.append(abs((s.get(["tau_load"])[0] - y0) / h - rate))
    s.close()
    order = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all((order > 0.8) & (order < 1.2)), (errors, order, rate)


def test_motor_output_derivatives_and_ramped_inputs(motor) -> None:
    """di/dt and the other rates against forward differences (first order, with input rates
    given); a step with ramped voltage and speed equals the armature equation integrated by
    scipy (rtol 1e-11)."""
    motor.fmu.doStep(0.0, 1e-3)
    motor.fmu.setRealInputDerivatives([motor.vr["w_load"]], [1], [30.0])
    names = ["current", "tau_load", "w_motor", "back_emf"]
    rates = np.array(motor.fmu.getRealOutputDerivatives([motor.vr[n] for n in names], [1] * 4))
    state = motor.fmu.getFMUstate()
    y0, errors = motor.get(names), []
    for h in (1e-6, 5e-7, 2.5e-7):
        motor.fmu.setFMUstate(state)
        motor.set({"w_load": 1.5 + 30.0 * h})          # the ramped speed at the end of the step
        motor.fmu.doStep(1e-3, h)
        errors.append(np.abs((motor.get(names) - y0) / h - rates))
    errors = np.array(errors)
    assert np.all(errors[:, 2:] < 1e-6 * np.abs(rates[2:]))           # linear in w_load: exact
    order = np.log2(errors[:-1, :2] / errors[1:, :2])
    assert np.all((order > 0.8) & (order < 1.2)), (errors, order)

    motor.fmu.setFMUstate(state)
    i0 = motor.get(["current"])[0]
    motor.fmu.setRealInputDerivatives([motor.vr["voltage"], motor.vr["w_load"]], [1, 1], [-2000.0, 30.0])
    motor.fmu.doStep(1e-3, 2e-3)
    R, L, k_t, ratio = 2.0, 1e-3, 0.05, 50.0
    sol = solve_ivp(lambda s, i: [(12.0 - 2000.0 * s - R * i[0] - k_t * ratio * (1.5 + 30.0 * s)) / L],
                    (0.0, 2e-3), [i0], method="DOP853", rtol=1e-12, atol=1e-14)
    assert motor.get(["current"])[0] == pytest.approx(sol.y[0, -1], rel=1e-11)


def test_controller_samples_the_extrapolated_inputs(fmu_path) -> None:
    """With a sample time of 1 ms inside a 4 ms step the controller samples q at each instant
    from its rate; its held outputs have rate 0."""
    s = Slave(fmu_path("pid_controller"), "c")
    s.start({"kp": 10.0, "kd": 0.0, "sample_time": 1e-3})
    s.set({"q_ref": 1.0, "q": 0.0})
    s.fmu.setRealInputDerivatives([s.vr["q"]], [1], [100.0])
    s.fmu.doStep(0.0, 4e-3)
    # the last sample at 3 ms saw q = 0.3 rad
    assert s.get(["voltage", "error"]) == pytest.approx([7.0, 0.7], rel=1e-12)
    assert s.fmu.getRealOutputDerivatives([s.vr["voltage"]], [1]) == [0.0]
    assert directional(s, ["voltage"], ["q"], np.ones(1))[0] == 0.0     # no feedthrough
    s.close()


def test_trajectory_rates_are_its_next_derivatives(fmu_path) -> None:
    s = Slave(fmu_path("trajectory"), "r")
    s.start({"q_start": 0.0, "q_end": 1.0, "t_start": 0.0, "duration": 0.5})
    s.fmu.doStep(0.0, 0.1)
    names = ["q_ref", "qd_ref", "qdd_ref"]
    rates = np.array(s.fmu.getRealOutputDerivatives([s.vr[n] for n in names], [1] * 3))
    y0 = s.get(names)
    s.fmu.doStep(0.1, 1e-6)
    assert rates[:2] == pytest.approx(y0[1:], rel=1e-14)
    assert rates[2] == pytest.approx((s.get(["qdd_ref"])[0] - y0[2]) / 1e-6, rel=1e-4)
    assert math.isfinite(rates[2]) and rates[2] != 0.0
    s.close()
