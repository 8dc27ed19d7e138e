"""The geared DC motor inside the plant (drive type `motor`): its current integrated with the
mechanism, against the closed-form response of a motor on a free inertia, the power balance of
the armature circuit, the model checks, and the co-simulation of the torque-driven plant with
the DC motor blocks (the same law, flexmbs_laws/motor.py) at a small communication step."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import simpson

import flexmbs
from flexmbs_laws.motor import PLANT_DEFAULTS
from flexmbs.model import MOTOR, Motor, ModelError

R, L, K, N, J_DISC, J_ROTOR = 2.0, 1e-3, 0.05, 10.0, 0.02, 1e-5


def wheel(tmp_path: Path, motor: str, voltage: float = 12.0, extra: str = "") -> Path:
    """A disc on an axle (no gravity) turned by a motor with the mapping `motor`."""
    path = tmp_path / "wheel.yaml"
    path.write_text(f"""name: wheel
gravity: [0, 0, 0]
bodies:
  - {{name: disc, type: rigid, mass: 1.0, com: [0, 0, 0], inertia: [0.01, {J_DISC}, 0.01],
     markers: [{{name: c, position: [0, 0, 0]}}]}}
joints:
  - {{name: axle, type: revolute, parent: ground, parent_marker: origin, child: disc, child_marker: c,
     axis: [0, 1, 0], {extra}drive: {{type: motor, voltage: {voltage}, motor: {motor}}}}}
solver: {{method: dopri5, rtol: 1.0e-10, output_step: 0.01}}
""")
    return path


def lossless(L_: float = L) -> str:
    return f"{{R: {R}, L: {L_}, k_t: {K}, J_rotor: {J_ROTOR}, b_motor: 0.0, ratio: {N}, efficiency: 1.0}}"


def step_response(t: np.ndarray, V: float, L_: float) -> tuple[np.ndarray, np.ndarray]:
    """Speed [rad/s] and current [A] of an inertia J (disc + ratio^2 J_rotor) from rest, i(0) = 0,
    after a voltage step V: J w' = k n i, L i' = V - R i - k n w, whose characteristic
    polynomial L J s^2 + R J s + (k n)^2 has the roots s1, s2 (real here):
    w = w_ss (1 + (s2 e^{s1 t} - s1 e^{s2 t}) / (s1 - s2)), i = J w' / (k n)."""
    J, kn = J_DISC + N ** 2 * J_ROTOR, K * N
    s1, s2 = np.roots([L_ * J, R * J, kn ** 2])
    assert np.isreal(s1) and np.isreal(s2)
    s1, s2 = float(np.real(s1)), float(np.real(s2))
    w_ss = V / kn
    w = w_ss * (1.0 + (s2 * np.exp(s1 * t) - s1 * np.exp(s2 * t)) / (s1 - s2))
    wd = w_ss * s1 * s2 * (np.exp(s1 * t) - np.exp(s2 * t)) / (s1 - s2)
    return w, J * wd / kn


@pytest.mark.parametrize("method", ["dopri5", "rk4", "implicit", "radau"])
def test_a_motor_on_a_free_inertia_follows_the_closed_form_step_response(tmp_path: Path, method: str) -> None:
    """Speed and current of every integrator against the closed form (armature time constant
    L/R = 0.5 ms, mechanical 168 ms): within 1e-6 of the final speed and current scale."""
    step = {"rk4": 1e-4, "dopri5": 1e-3, "implicit": 1e-3, "radau": 1e-3}[method]
    res = flexmbs.simulate(flexmbs.load_model(wheel(tmp_path, lossless())), 0.5, method=method, step=step,
                           rtol=1e-9)
    w, i = step_response(res.time, 12.0, L)
    assert res["axle.qd"][-1] == pytest.approx(12.0 / (K * N) * (1 - np.exp(-0.5 / 0.168)), rel=2e-3)
    np.testing.assert_allclose(res["axle.qd"], w, atol=1e-6 * 24.0)
    np.testing.assert_allclose(res["axle.current"], i, atol=1e-6 * 6.0)
    # the joint's torque is n k i (lossless gear, no shaft friction)
    np.testing.assert_allclose(res["axle.tau"], N * K * res["axle.current"], rtol=1e-12, atol=1e-12)


def test_a_stiff_armature_is_integrated_by_the_implicit_method_in_few_steps(tmp_path: Path) -> None:
    """L = 1e-7 H: the armature time constant L/R = 50 ns is 3.4e6 times below the mechanical
    one. The implicit method (its Jacobian by differences over [q; u; i], the current's row
    -R/L included) follows the closed form with steps far above L/R."""
    res = flexmbs.simulate(flexmbs.load_model(wheel(tmp_path, lossless(1e-7))), 0.5, method="implicit",
                           step=1e-4, rtol=1e-8)
    w, i = step_response(res.time, 12.0, 1e-7)
    np.testing.assert_allclose(res["axle.qd"], w, atol=1e-6 * 24.0)
    np.testing.assert_allclose(res["axle.current"][1:], i[1:], atol=1e-6 * 6.0)
    assert res.stats["steps"] < 2000   # dopri5 would need 0.5 s / (3.3 L/R) = 3e6 steps to stay stable
    assert res.stats["jacobians"] >= 1


def test_friction_and_gear_losses_set_the_no_load_speed(tmp_path: Path) -> None:
    """With shaft friction b and a lossy gear, the free inertia settles where the motor's torque
    k i = b w_m carries the friction alone and V = R i + k w_m: w = k V / (n (R b + k^2)),
    whatever the efficiency (no power passes the gear at rest torque). Started at that current
    and speed, the state stays there."""
    b = 2e-4
    w_ss = K * 12.0 / (N * (R * b + K ** 2))
    i_ss = b * N * w_ss / K
    motor = f"{{R: {R}, L: {L}, k_t: {K}, J_rotor: {J_ROTOR}, b_motor: {b}, ratio: {N}, efficiency: 0.7, i0: {i_ss}}}"
    res = flexmbs.simulate(flexmbs.load_model(wheel(tmp_path, motor, extra=f"qd0: [{w_ss}], ")), 1.0)
    np.testing.assert_allclose(res["axle.qd"], w_ss, rtol=1e-9)
    np.testing.assert_allclose(res["axle.current"], i_ss, rtol=1e-9)
    run_up = flexmbs.simulate(flexmbs.load_model(wheel(tmp_path, motor.replace(f"i0: {i_ss}", "i0: 0.0"))), 3.0)
    assert run_up["axle.qd"][-1] == pytest.approx(w_ss, rel=1e-6)


def test_energy_with_no_voltage_falls_by_exactly_the_resistive_loss(tmp_path: Path) -> None:
    """u = 0, no gravity, no damping, lossless gear: d/dt (E_mech + L i^2 / 2) = -R i^2, so the
    mechanical plus magnetic energy at t equals its start less the integral of R i^2, to the
    integration and quadrature error (1e-8 of the initial energy)."""
    path = wheel(tmp_path, lossless().replace("efficiency: 1.0", "efficiency: 1.0, i0: 3.0"), voltage=0.0,
                 extra="qd0: [20.0], ")
    res = flexmbs.simulate(flexmbs.load_model(path), 0.4, output_step=2e-5)
    i = res["axle.current"]
    stored = res["energy.total"] + 0.5 * L * i ** 2
    loss = np.array([simpson(R * i[:k + 1] ** 2, x=res.time[:k + 1]) if k else 0.0 for k in range(0, i.size, 500)])
    e0 = stored[0]
    assert e0 == pytest.approx(0.5 * (J_DISC + N ** 2 * J_ROTOR) * 20.0 ** 2 + 0.5 * L * 9.0, rel=1e-12)
    np.testing.assert_allclose(stored[::500], e0 - loss, atol=1e-8 * e0)
    assert stored[-1] < 0.01 * e0     # nearly all of it went into the resistance


def test_the_model_parameters_are_the_blocks(tmp_path: Path) -> None:
    """One table for both: the Motor fields and defaults are the DC motor block's parameters,
    but for the law's PLANT_DEFAULTS: w_band, narrower in the plant (the held-load test below
    says why)."""
    from flexmbs_fmu.motor import DCMotor

    block = {v.name: v for v in DCMotor.VARIABLES if v.causality == "parameter"}
    assert list(MOTOR) == [f.name for f in Motor.__dataclass_fields__.values()] == list(block)
    for name, par in MOTOR.items():
        assert par.default == block[name].start and par.unit == block[name].unit
        assert getattr(Motor(), name) == PLANT_DEFAULTS.get(name, par.default)
    assert PLANT_DEFAULTS == {"w_band": 0.03} and MOTOR["w_band"].default == 3.0


HELD = """name: held
gravity: [0, 0, -9.81]
bodies:
  - {{name: link, type: rigid, mass: 1.0, com: [0.25, 0, 0], inertia: [0.001, 0.02, 0.02],
     markers: [{{name: root, position: [0, 0, 0]}}]}}
joints:
  - {{name: shaft, type: revolute, parent: ground, parent_marker: origin, child: link, child_marker: root,
     axis: [0, 1, 0], q0: 0.0, drive: {{type: motor, voltage: -4.0,
     motor: {{R: 2.0, L: 0.001, k_t: 0.05, J_rotor: 1.0e-5, b_motor: 0.0, ratio: 20.0, efficiency: 0.8{band}}}}}}}
"""


def test_a_lossy_gear_nearly_holds_its_load(tmp_path: Path) -> None:
    """A link (1 kg, centre of mass 0.25 m out) released horizontal on a motor at a held
    voltage: gravity's torque 2.45 N m exceeds the stalled motor's ratio k_t V / R = 2.0 N m,
    but not what a gear of efficiency 0.8 passes back-driven, 2.0 / 0.8 = 2.5 N m, so a real
    gear holds the link where it is. With the plant's default band (0.03 rad/s of the motor)
    it sinks less than 0.02 rad in 8 s (measured 0.009 rad); with the block's 3 rad/s, which
    has no static friction over a hundred times that speed, 0.5 rad (measured 0.51, towards
    the lossless balance 2.45 cos q = 2.0, q = 0.62 rad). The loss switching sides at once
    (w_band 0) holds it too, in 1.7 million trial steps of dopri5 for the 8 s (665,000 accepted: a
    sliding mode)."""
    path = tmp_path / "held.yaml"
    sunk = {}
    for band in ("", ", w_band: 3.0"):
        path.write_text(HELD.format(band=band))
        res = flexmbs.simulate(flexmbs.load_model(path), 8.0)
        assert res.stats["steps"] < 20_000
        sunk[band] = float(res["shaft.q"][-1])
    assert 0.0 < sunk[""] < 0.02
    assert 0.3 < sunk[", w_band: 3.0"] < math.acos(2.0 / (9.81 * 0.25))


@pytest.mark.parametrize("motor, words", [
    (lossless().replace("R: 2.0", "R: -2.0"), r"wheel.yaml:\d+: joints\[0\] 'axle'.drive.motor.R: armature resistance "
                                              r"\[ohm\]: expected a finite number >= 1e-09, got -2.0"),
    (lossless().replace("L: 0.001", "L: 0.0"), r"drive.motor.L: armature inductance \[H\]: expected a finite number "
                                               r">= 1e-12, got 0.0"),
    (lossless().replace("efficiency: 1.0", "efficiency: 1.5"), r"drive.motor.efficiency: gearbox efficiency .* \[1\]: "
                                                               r"expected a finite number from 0.001 to 1, got 1.5"),
    (lossless().replace("k_t: 0.05", "k_t: .nan"), r"drive.motor.k_t: torque constant .* \[N.m/A\]"),
    ("{R: 1.0, volts: 3}", r"drive.motor: unknown key 'volts'"),
])
def test_bad_motor_data_is_named_with_file_line_and_unit(tmp_path: Path, motor: str, words: str) -> None:
    with pytest.raises(ModelError, match=words):
        flexmbs.load_model(wheel(tmp_path, motor))


def test_a_motor_needs_a_rotation_and_its_data(tmp_path: Path) -> None:
    path = wheel(tmp_path, lossless())
    path.write_text(path.read_text().replace("type: revolute", "type: prismatic").replace(
        ", motor: " + lossless(), ""))
    with pytest.raises(ModelError) as err:
        flexmbs.load_model(path)
    text = str(err.value)
    assert "drive.type: a motor drive turns a rotation" in text and "prismatic" in text
    assert "drive.motor: missing: a motor drive needs a motor mapping (R [ohm], L [H]" in text


def test_linearize_refuses_motor_currents_by_name() -> None:
    with pytest.raises(ValueError, match=r"shoulder, elbow, wrist have motor drives"):
        flexmbs.linearize("three_link_arm_motors")


VOLTS = {"shoulder": -4.0, "elbow": -2.5, "wrist": -0.5}


def test_the_plant_with_motors_agrees_with_the_cosimulated_motor_blocks(fmu_dir) -> None:
    """The 3-link arm with its motors inside (models/three_link_arm_motors.yaml), run
    monolithically, against the torque-driven arm (three_link_arm.yaml, the rotors' reflected
    inertia as its rotor_inertia parameters) co-simulated with three DC motor FMUs at a 0.05 ms
    communication step, each at a held voltage, for 0.3 s (the wrist sinks 0.16 rad, the
    currents reach 1 to 3.7 A): the joint angles within 5e-5 rad and the currents within 1e-2 A
    (measured 3.3e-5 rad, 7.5e-3 A: the explicit coupling's first-order error; at 0.1 ms both
    gaps double, 6.7e-5 rad and 1.5e-2 A)."""
    from flexmbs.fmi.cosim import Assembly, Element, Master

    model = flexmbs.load_model("three_link_arm_motors")
    mono = flexmbs.simulate(model, 0.3, inputs={f"{j}.voltage": v for j, v in VOLTS.items()}, rtol=1e-10,
                            output_step=0.01)
    motors = {j.name: j.drive.motor for j in model.joints}
    elements = [Element("arm", fmu_dir / "three_link_arm.fmu",
                        {f"{j}_inertia": m.ratio ** 2 * m.J_rotor for j, m in motors.items()})]
    connections = []
    for j, m in motors.items():
        elements.append(Element(f"m_{j}", fmu_dir / "dc_motor.fmu",
                                {**{name: getattr(m, name) for name in MOTOR}, "voltage": VOLTS[j]}))
        connections += [(f"m_{j}.tau_load", f"arm.{j}.tau"), (f"arm.{j}.qd", f"m_{j}.w_load")]
    record = [f"arm.{j}.q" for j in motors] + [f"m_{j}.current" for j in motors]
    gaps = []
    for h in (1e-4, 5e-5):
        with Master(Assembly("arm_motors", elements, connections, record, 0.3, h)) as master:
            master.initialize()
            run = master.run(0.3, h)
        every = int(round(0.01 / h))
        gaps.append((max(np.max(np.abs(run[f"arm.{j}.q"][::every] - mono[f"{j}.q"])) for j in motors),
                     max(np.max(np.abs(run[f"m_{j}.current"][::every] - mono[f"{j}.current"])) for j in motors)))
    (dq2, di2), (dq, di) = gaps
    print(f"motors inside the plant against the motor blocks: {gaps} (rad, A) at 0.1 and 0.05 ms")
    assert np.max(np.abs(mono["wrist.q"])) > 0.05      # the arm moves (it sinks under its load)
    assert dq < 5e-5 and di < 1e-2
    assert 1.7 < dq2 / dq < 2.3 and 1.7 < di2 / di < 2.3   # first order in the communication step


def test_the_plant_fmu_takes_voltages_and_gives_currents(fmu_path) -> None:
    """The motors' joints take their voltage [V] as the input in place of a torque; their
    currents [A] are outputs, their starting currents parameters; the wrist's gear ratio is a
    parameter with the unit of the motor table."""
    from fmpy import read_model_description

    md = read_model_description(fmu_path("three_link_arm_motors"))
    v = {x.name: x for x in md.modelVariables}
    for j in ("shoulder", "elbow", "wrist"):
        assert (v[f"{j}.voltage"].causality, v[f"{j}.voltage"].unit) == ("input", "V")
        assert (v[f"{j}.current"].causality, v[f"{j}.current"].unit) == ("output", "A")
        assert (v[f"{j}.i0"].causality, v[f"{j}.i0"].unit) == ("parameter", "A")
        assert f"{j}.tau" not in [x.name for x in md.modelVariables if x.causality == "input"]
    assert v["wrist_ratio"].unit == "1" and float(v["wrist_ratio"].start) == 50.0
