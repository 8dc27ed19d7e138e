"""The signal-flow block FMUs (DC motor, PID controller, trajectory) against closed-form
references: the motor's exact armature response, steady states and gear losses; the controller
against its difference equation written out here; the trajectory against its polynomial."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fmpy import read_model_description

from flexmbs_laws.motor import load_torque
from fmu_tools import Slave

MOTOR = {"R": 2.0, "L": 0.01, "k_t": 0.1, "J_rotor": 1e-4, "b_motor": 1e-3, "ratio": 10.0, "efficiency": 0.8}


@pytest.fixture
def slave(fmu_path):
    made = []

    def make(name: str, params: dict | None = None) -> Slave:
        s = Slave(fmu_path(name), instance=f"{name}{len(made)}")
        made.append(s)
        s.start(params or {})
        return s
    yield make
    for s in made:
        s.close()


def test_motor_stalled_current_follows_the_electrical_time_constant(slave) -> None:
    """w_load = 0: L di/dt = V - R i, i = V/R (1 - exp(-t R/L)), tau = ratio k_t i, for
    irregular communication steps (the armature is integrated exactly; no power passes the gear
    at standstill, so it loses none)."""
    m = slave("dc_motor", MOTOR)
    m.set({"voltage": 12.0, "w_load": 0.0})
    t = 0.0
    for h in [1e-4, 3e-3, 7e-4, 1e-2, 2e-3, 0.05]:
        m.fmu.doStep(t, h)
        t += h
        i_exact = 12.0 / 2.0 * (1.0 - math.exp(-t * 2.0 / 0.01))
        i, tau, w = m.get(["current", "tau_load", "w_motor"])
        assert i == pytest.approx(i_exact, rel=1e-12)
        assert tau == pytest.approx(10.0 * 0.1 * i_exact, rel=1e-12)
        assert w == 0.0
    assert m.get(["J_reflected"])[0] == pytest.approx(10.0 ** 2 * 1e-4)


def test_motor_steady_state_and_power_balance(slave) -> None:
    """At constant load speed: i = (V - k_t ratio w) / R, and the power balance
    V i = R i^2 + e i (electrical) with the gear passing eff of the shaft power on."""
    m = slave("dc_motor", MOTOR)
    m.set({"voltage": 12.0, "w_load": 3.0})
    m.fmu.doStep(0.0, 1.0)                       # 100 electrical time constants
    i, tau, w_m, emf = m.get(["current", "tau_load", "w_motor", "back_emf"])
    assert w_m == 30.0 and emf == pytest.approx(3.0)
    assert i == pytest.approx((12.0 - 0.1 * 30.0) / 2.0, rel=1e-12)
    assert 12.0 * i == pytest.approx(2.0 * i ** 2 + emf * i, rel=1e-12)
    shaft = (0.1 * i - 1e-3 * 30.0) * 30.0      # motor shaft power [W]
    assert tau * 3.0 == pytest.approx(0.8 * shaft, rel=1e-12)


def test_motor_backdriven_gear_loses_power_too(slave) -> None:
    """V = 0 and the load turning the motor: the motor brakes; the load must supply the shaft
    power plus the gear loss, tau_load w_load = shaft / eff (power flows the other way)."""
    m = slave("dc_motor", MOTOR)
    m.set({"voltage": 0.0, "w_load": 5.0})
    m.fmu.doStep(0.0, 1.0)
    i, tau = m.get(["current", "tau_load"])
    assert i == pytest.approx(-0.1 * 50.0 / 2.0, rel=1e-12)
    shaft = (0.1 * i - 1e-3 * 50.0) * 50.0
    assert shaft < 0.0
    assert tau * 5.0 == pytest.approx(shaft / 0.8, rel=1e-12)
    assert abs(tau * 5.0) > abs(shaft)


def test_gear_passes_torque_continuously_and_never_makes_power() -> None:
    """The gear's torque on a grid of currents and speeds through standstill, inside and
    outside the loss band |w_m| < w_band: the power it loses, tau_m w_m - tau_load w_load, is
    never negative and at most the larger loss fraction of the power it passes; beyond the band
    the factor is the efficiency exactly (1 / efficiency driven back); and the torque is
    continuous through standstill (Lipschitz, slope bounded by the band's), where a gear whose
    loss switched sides at once jumps by (1 / eff - eff) ratio tau_m, and so is its slope (a
    corner at standstill would show as a jump of the difference quotients)."""
    eff, ratio, k_t, b, band = 0.8, 10.0, 0.1, 1e-3, 2.0
    lose = max(1.0 - eff, 1.0 / eff - 1.0)
    for i in np.linspace(-3.0, 3.0, 25):
        for w in np.concatenate([np.linspace(-0.5, 0.5, 201), [-30.0, -1.0, 1.0, 30.0]]):
            w_m = ratio * w
            tau_m = k_t * i - b * w_m
            tau = load_torque(i, w, k_t, b, ratio, eff, band)
            loss = tau_m * w_m - tau * w
            assert -1e-15 <= loss <= lose * abs(tau_m * w_m) * (1.0 + 1e-12) + 1e-15, (i, w, loss)
            if abs(w_m) >= band:
                assert tau == pytest.approx(ratio * tau_m * (eff if tau_m * w_m > 0 else 1.0 / eff), rel=1e-14)
        ws = np.linspace(-0.3, 0.3, 6001)        # 1e-4 rad/s apart through the band (+-0.2 rad/s)
        taus = np.array([load_torque(i, w, k_t, b, ratio, eff, band) for w in ws])
        # |d tau / d w| <= ratio^2 (|tau_m| |d factor / d w_m| + b factor), factor <= 1 / eff and its
        # slope <= |ln eff| / eff times the cubic's 1.5 / band, |tau_m| <= |k_t i| + b band inside it
        bound = ratio ** 2 / eff * ((abs(k_t * i) + b * band) * 1.5 * abs(math.log(eff)) / band + b)
        slopes = np.diff(taus) / np.diff(ws)
        assert np.max(np.abs(slopes)) <= bound, i
        # no corner: neighbouring difference quotients differ by the curvature over one 1e-4 rad/s
        # step (about 0.0015 of the bound here), where the former law's one-sided slopes
        # (1 - eff and 1 / eff - 1) differ by about 0.17 of it at standstill
        assert np.max(np.abs(np.diff(slopes))) <= 0.02 * bound, i
        assert load_torque(i, 0.0, k_t, b, ratio, eff, band) == pytest.approx(ratio * k_t * i, rel=1e-15)
    assert load_torque(1.0, 1e-9, k_t, b, ratio, eff, 0.0) - load_torque(1.0, -1e-9, k_t, b, ratio, eff, 0.0) == \
        pytest.approx(ratio * k_t * (eff - 1.0 / eff), rel=1e-6)    # w_band = 0: the switch at once


def test_block_descriptions_declare_units_and_feedthrough(fmu_path) -> None:
    motor = read_model_description(fmu_path("dc_motor"))
    deps = {u.variable.name: {d.name for d in u.dependencies} for u in motor.outputs}
    assert deps == {"tau_load": {"w_load"}, "current": set(), "w_motor": {"w_load"}, "back_emf": {"w_load"}}
    units = {v.name: v.unit for v in motor.modelVariables}
    assert units["voltage"] == "V" and units["R"] == "ohm" and units["k_t"] == "N.m/A" and units["L"] == "H"
    calc = [v for v in motor.modelVariables if v.causality == "calculatedParameter"]
    assert [v.name for v in calc] == ["J_reflected"] and calc[0].initial == "calculated"
    ctrl = read_model_description(fmu_path("pid_controller"))
    assert {u.variable.name: [d.name for d in u.dependencies] for u in ctrl.outputs} == \
        {"voltage": [], "error": [], "integral": []}
    tunable = {v.name for v in ctrl.modelVariables if v.variability == "tunable"}
    assert {"kp", "ki", "kd", "u_min", "u_max"} <= tunable
    traj = read_model_description(fmu_path("trajectory"))
    assert all(not u.dependencies for u in traj.outputs)


def _pid_reference(inputs: np.ndarray, kp: float, ki: float, kd: float, T: float, lo: float, hi: float,
                   scheme: str, t_track: float) -> tuple[np.ndarray, np.ndarray]:
    """The PID difference equation written out: per sample (e, ed) -> u_k and I_{k+1}."""
    integral, us, integrals = 0.0, [], []
    for q_ref, qd_ref, q, qd in inputs:
        e, ed = q_ref - q, qd_ref - qd
        v = kp * e + kd * ed + integral
        u = hi if v > hi else lo if v < lo else v
        if scheme == "none":
            integral = integral + ki * T * e
        elif scheme == "clamping":
            if not ((v > hi and ki * e > 0) or (v < lo and ki * e < 0)):
                integral = integral + ki * T * e
        else:
            integral = integral + ki * T * e + T / t_track * (u - v)
        us.append(u)
        integrals.append(integral)
    return np.array(us), np.array(integrals)


@pytest.mark.parametrize("scheme", ["clamping", "back_calculation", "none"])
def test_controller_follows_its_difference_equation(slave, scheme) -> None:
    """Random inputs large enough to saturate; communication step = sample time: the output
    after the step from t_k is u_k, the integral I_{k+1}."""
    T = 2e-3
    params = {"kp": 30.0, "ki": 400.0, "kd": 2.0, "u_min": -5.0, "u_max": 8.0, "t_track": 0.01, "sample_time": T,
              "anti_windup": scheme}
    c = slave("pid_controller", params)
    rng = np.random.default_rng(7)
    inputs = rng.normal(0.0, [0.3, 2.0, 0.3, 2.0], size=(200, 4))
    u_ref, i_ref = _pid_reference(inputs, 30.0, 400.0, 2.0, T, -5.0, 8.0, scheme, 0.01)
    got = []
    for k, row in enumerate(inputs):
        c.set(dict(zip(["q_ref", "qd_ref", "q", "qd"], row)))
        c.fmu.doStep(k * T, T)
        got.append(c.get(["voltage", "integral"]))
    got = np.array(got)
    assert np.any(np.abs(u_ref) == 8.0) and np.any(u_ref == -5.0)    # the limits were reached
    assert np.max(np.abs(got[:, 0] - u_ref)) <= 1e-12
    assert np.max(np.abs(got[:, 1] - i_ref)) <= 1e-9


def test_controller_samples_at_its_own_rate_inside_shorter_steps(slave) -> None:
    """Communication step T/4: the output changes only after the steps that hold a sample
    instant, and it is the value computed from the inputs at that instant."""
    T = 4e-3
    c = slave("pid_controller", {"kp": 1.0, "ki": 0.0, "kd": 0.0, "sample_time": T})
    h, outs = T / 4, []
    for k in range(12):
        c.set({"q_ref": float(k), "q": 0.0})
        c.fmu.doStep(k * h, h)
        outs.append(c.get(["voltage"])[0])
    # samples at k = 0, 4, 8 (q_ref = k), each visible from the end of that step on
    assert outs == [0.0] * 4 + [4.0] * 4 + [8.0] * 4


def test_controller_gains_are_tunable_between_steps(slave) -> None:
    c = slave("pid_controller", {"kp": 1.0, "kd": 0.0, "sample_time": 1e-3})
    c.set({"q_ref": 1.0, "kp": 3.0})
    c.fmu.doStep(0.0, 1e-3)
    assert c.get(["voltage"])[0] == 3.0


def test_block_errors_are_refusals_with_messages(slave, caplog) -> None:
    """A NaN input refuses the next step (fmi2Discard, state kept), a parameter out of range
    or a fixed parameter set after initialisation is ignored with a message, and limits that
    contradict each other stop the block at initialisation with the reason."""
    from fmpy.fmi2 import fmi2Discard

    m = slave("dc_motor", MOTOR)
    m.set({"voltage": 10.0})
    m.fmu.doStep(0.0, 1e-3)
    i1 = m.get(["current"])[0]
    saved = m.fmu.getFMUstate()
    m.set({"voltage": float("nan")})
    with pytest.raises(Exception) as refused:
        m.fmu.doStep(1e-3, 1e-3)
    assert refused.value.status == fmi2Discard
    assert m.get(["current"])[0] == i1
    assert "voltage was set to nan" in caplog.text
    m.fmu.setFMUstate(saved)              # stepFailed after the discard: back through the saved state
    m.set({"voltage": 10.0, "R": 1.0})
    assert "parameter R is fixed once initialisation has ended" in caplog.text
    m.fmu.doStep(1e-3, 1e-3)
    assert m.get(["current"])[0] == pytest.approx(5.0 - (5.0 - i1) * math.exp(-200 * 1e-3), rel=1e-12)

    fresh = slave("dc_motor", {"R": 0.0, "efficiency": 1.5})          # out of range before initialisation
    assert "parameter R = 0.0 [ohm] is below its minimum 1e-09; it takes a value in [1e-09, inf]" in caplog.text
    assert "parameter efficiency = 1.5 [1] is above its maximum 1.0; it takes a value in [0.001, 1.0]" in caplog.text
    slave("dc_motor", {"R": math.inf})
    assert "parameter R = inf [ohm] is not finite; it takes a value in [1e-09, inf]" in caplog.text
    assert list(fresh.get(["J_reflected"])) == [50.0 ** 2 * 1e-5]            # the defaults were kept

    c = slave("pid_controller", {"u_min": 5.0, "u_max": -5.0})
    assert "u_min = 5.0 V is above u_max = -5.0 V" in caplog.text
    with pytest.raises(Exception) as refused:
        c.fmu.doStep(0.0, 1e-3)
    assert refused.value.status == fmi2Discard

    # tunable parameters after initialisation: still range- and consistency-checked
    c = slave("pid_controller", {"kp": 2.0, "kd": 0.0, "u_min": -5.0, "u_max": 5.0})
    c.set({"kp": float("nan"), "u_min": 6.0})
    assert "parameter kp = nan" in caplog.text and "u_min = 6.0 V is above u_max = 5.0 V" in caplog.text
    c.set({"q_ref": 1.0})
    c.fmu.doStep(0.0, 1e-3)
    assert c.get(["voltage"])[0] == 2.0                          # kp 2 and the limits -5, 5 kept


def test_trajectory_is_the_minimum_jerk_polynomial(slave) -> None:
    r = slave("trajectory", {"q_start": 0.5, "q_end": -1.5, "t_start": 0.1, "duration": 0.8})
    t, h, rows = 0.0, 0.01, []
    for k in range(120):
        rows.append(r.get(["q_ref", "qd_ref", "qdd_ref"]))
        r.fmu.doStep(t, h)
        t += h
    rows = np.array(rows)
    times = h * np.arange(120)
    tau = np.clip((times - 0.1) / 0.8, 0.0, 1.0)
    q = 0.5 - 2.0 * (10 * tau ** 3 - 15 * tau ** 4 + 6 * tau ** 5)
    assert np.max(np.abs(rows[:, 0] - q)) <= 1e-12
    # the derivatives of the expanded polynomial, d/dt = (1 / 0.8) d/dtau
    inside = (times > 0.1) & (times < 0.9)
    qd = inside * -2.0 * (30 * tau ** 2 - 60 * tau ** 3 + 30 * tau ** 4) / 0.8
    qdd = inside * -2.0 * (60 * tau - 180 * tau ** 2 + 120 * tau ** 3) / 0.64
    assert np.max(np.abs(rows[:, 1] - qd)) <= 1e-12
    assert np.max(np.abs(rows[:, 2] - qdd)) <= 1e-11
    # and the rate is the slope of the position: central differences err by <= h^2/6 max|d3q/dt3|
    bound = h ** 2 / 6 * 60 * 2.0 / 0.8 ** 3
    assert np.max(np.abs(np.gradient(rows[:, 0], h)[1:-1] - rows[1:-1, 1])) <= bound
    assert rows[0, 1] == rows[-1, 1] == 0.0 and rows[0, 2] == rows[-1, 2] == 0.0
    assert rows[-1, 0] == pytest.approx(-1.5, abs=1e-15)


def test_a_controller_step_beyond_the_budget_is_refused_at_once(slave, caplog) -> None:
    """A step of 1e6 s would run the controller's sample loop 1e9 times (hours): fmi2Discard
    before any sample, with the estimate in the message; the block stays at t = 0."""
    from fmpy.fmi2 import fmi2Discard, fmi2LastSuccessfulTime

    c = slave("pid_controller", {"kp": 2.0, "kd": 0.0, "sample_time": 1e-3})
    c.set({"q_ref": 1.0})
    with pytest.raises(Exception) as refused:
        c.fmu.doStep(0.0, 1e6)
    assert refused.value.status == fmi2Discard
    assert "a step of 1e+06 s needs about 1e+09 internal steps (sample_time 0.001 s)" in caplog.text
    assert c.fmu.getRealStatus(fmi2LastSuccessfulTime) == 0.0
    assert c.get(["voltage"])[0] == 0.0              # no sample was taken
