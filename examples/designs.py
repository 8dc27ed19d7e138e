"""The demos' data: Huang's two-link arm under two geared DC motors and PID controllers (the
servo demo and the design example), and He's crank-rocker started by his DC motor. The machinery
(assembly, reference, first design, objective, tuning) is generic, in flexmbs.fmi.servo."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from flexmbs.model.catalog import models_dir
from flexmbs.fmi.cosim import Assembly, Element
from flexmbs.fmi.servo import Axis, ServoDesign

# integral gains of the demo's first design [V/(rad s)]: first_design places kp and kd only
FIRST_KI = {"shoulder": 10.0, "elbow": 100.0}


def huang_servo(models_dir: str | Path = models_dir(), rigid: bool = False) -> ServoDesign:
    """The demo: Huang's two-link arm (link 2 flexible, or rigid for the design model) moving
    shoulder 0 -> 1.2 rad and elbow 0 -> 0.6 rad in 1 s, each joint by a geared DC motor under a
    PID controller sampled at 2 ms, communication step 1 ms with the Gauss-Seidel sequence
    (reference, controller, motor, arm: Jacobi coupling needs 0.5 ms, because its two steps of
    delay from joint rate to torque make the elbow's stiff derivative loop oscillate). Gains:
    kp and kd as tuned on the co-simulated flexible arm by examples/servo_design.py (rounded),
    ki = FIRST_KI (integral action holds the elbow against gravity)."""
    models_dir = Path(models_dir)
    motor = {"R": 4.0, "L": 2e-3, "k_t": 0.05, "J_rotor": 5e-6, "b_motor": 2e-6, "ratio": 60.0,
             "efficiency": 0.85}
    ctrl = {"sample_time": 2e-3, "u_min": -24.0, "u_max": 24.0}
    design = ServoDesign(
        model=models_dir / ("huang_two_link_rigid.yaml" if rigid else "huang_two_link.yaml"),
        axes=[Axis("shoulder", dict(motor), {**ctrl, "kp": 200.0, "kd": 0.68, "ki": FIRST_KI["shoulder"]}, (0.0, 1.2),
                   "shoulder_inertia", 0.04862),
              Axis("elbow", dict(motor), {**ctrl, "kp": 39.0, "kd": 11.4, "ki": FIRST_KI["elbow"]}, (0.0, 0.6),
                   "elbow_inertia", 0.0)],
        plant={"solver.rtol": 1e-6}, vibration=[] if rigid else ["link2.tip_deflection[2]", "link2.tip_deflection[3]"],
        t_start=0.2, duration=1.0, stop_time=2.5, step_size=1e-3)
    return design


# He (He 1993 Sec. 9.4) motor of the crank-rocker: torque constant Kp, armature ra and La, viscous
# D on the crank shaft (direct drive: ratio 1, no gear loss), rotor inertia Jmotor.
HE_MOTOR = {"R": 0.4, "L": 0.05, "k_t": 0.678, "b_motor": 0.226, "J_rotor": 0.565, "ratio": 1.0, "efficiency": 1.0}


def crank_rocker_motor(fmu_dir: str | Path, voltage: float = 60.0, stop_time: float = 3.0,
                       step_size: float = 1e-3) -> Assembly:
    """He's crank-rocker (models/he_crank_rocker.yaml, plant `mech`) driven by his DC motor
    (`motor`) with a voltage step [V] at t = 0; the motor's rotor inertia is added to the crank."""
    fmu_dir = Path(fmu_dir)
    motor = {**HE_MOTOR, "voltage": voltage}
    mech = {"crank_inertia": HE_MOTOR["ratio"] ** 2 * HE_MOTOR["J_rotor"]}
    record = ["mech.crank.q", "mech.crank.qd", "mech.rocker.q", "motor.current", "motor.tau_load",
              *(f"mech.{s}.r[{k}]" for s in ("pin", "mid", "end", "rocker_tip") for k in (1, 2))]
    return Assembly("crank_rocker_motor",
                    [Element("mech", fmu_dir / "he_crank_rocker.fmu", mech), Element("motor", fmu_dir / "dc_motor.fmu", motor)],
                    [("motor.tau_load", "mech.crank.tau"), ("mech.crank.qd", "motor.w_load")],
                    record, stop_time, step_size)


def midspan_deflection(run: dict[str, np.ndarray]) -> np.ndarray:
    """Transverse deflection [m] of the coupler's midpoint from the chord between its ends (the
    crank pin and the far end), positive to the left of the chord, from the sensor positions."""
    p = np.stack([run["mech.pin.r[1]"], run["mech.pin.r[2]"]], axis=1)
    e = np.stack([run["mech.end.r[1]"], run["mech.end.r[2]"]], axis=1)
    m = np.stack([run["mech.mid.r[1]"], run["mech.mid.r[2]"]], axis=1)
    chord, arm = e - p, m - p
    return (chord[:, 0] * arm[:, 1] - chord[:, 1] * arm[:, 0]) / np.linalg.norm(chord, axis=1)
