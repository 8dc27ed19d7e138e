"""Metrics of one servo run (the recorded signals of `flexmbs.fmi.servo.assembly`): pure array
functions, one row of numbers per run.

Per driven joint j (the move q_start -> q_end starting at the design's t_start):
- `overshoot.<j>` [%]: the largest excursion past q_end, in the direction of the move, in percent
  of the move (0 if it never passes q_end);
- `settling_time.<j>` [s]: from the start of the move to the last time |q - q_end| exceeds the
  band (a fraction `band` of the move); inf if it is still outside the band at the end of the run;
- `rms_error.<j>` [rad]: root mean square of the tracking error q - q_ref over the run.
For the whole system:
- `peak_tip_deflection` [m]: the largest norm of the recorded vibration outputs (the design's
  `vibration`, e.g. link 2's tip deflection in y and z), NaN if there are none;
- `energy` [J]: electrical energy delivered to the motors, sum_j of the time integral of
  voltage times armature current (trapezoidal rule on the communication points);
- `objective` [rad^2 s]: `flexmbs.fmi.servo.objective` (what the design loop minimises).
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import trapezoid

from ..servo import ServoDesign, objective


def metric_names(design: ServoDesign) -> list[str]:
    """The metric columns of a run of `design`, in table order."""
    per_joint = [f"{m}.{a.joint}" for m in ("overshoot", "settling_time", "rms_error") for a in design.axes]
    return per_joint + ["peak_tip_deflection", "energy", "objective"]


def overshoot(t: np.ndarray, q: np.ndarray, q_start: float, q_end: float, t_start: float) -> float:
    """Largest excursion of q past q_end after t_start [s], in percent of the move |q_end - q_start|."""
    move = q_end - q_start
    if move == 0.0:
        return float("nan")
    past = np.sign(move) * (q[t >= t_start] - q_end)
    return float(100.0 * max(0.0, float(np.max(past, initial=0.0))) / abs(move))


def settling_time(t: np.ndarray, q: np.ndarray, q_start: float, q_end: float, t_start: float,
                  band: float = 0.02) -> float:
    """Time [s] from t_start until q stays within band * |q_end - q_start| of q_end; inf if it
    is outside at the last sample."""
    after = t >= t_start
    tt, outside = t[after], np.abs(q[after] - q_end) > band * abs(q_end - q_start)
    if outside[-1]:
        return float("inf")
    if not outside.any():
        return 0.0
    return float(tt[np.flatnonzero(outside)[-1] + 1] - t_start)


def servo_metrics(run: dict[str, np.ndarray], design: ServoDesign, band: float = 0.02) -> dict[str, float]:
    """Every metric of `metric_names(design)` for a run (from `Master.run` on the design's assembly)."""
    t = run["time"]
    out: dict[str, float] = {}
    for a in design.axes:
        q = run[f"arm.{a.joint}.q"]
        out[f"overshoot.{a.joint}"] = overshoot(t, q, a.move[0], a.move[1], design.t_start)
        out[f"settling_time.{a.joint}"] = settling_time(t, q, a.move[0], a.move[1], design.t_start, band)
        out[f"rms_error.{a.joint}"] = float(np.sqrt(np.mean((q - run[f"r_{a.joint}.q_ref"]) ** 2)))
    if design.vibration:
        deflection = np.sqrt(sum(run[f"arm.{k}"] ** 2 for k in design.vibration))
        out["peak_tip_deflection"] = float(np.max(deflection))
    else:
        out["peak_tip_deflection"] = float("nan")
    power = sum(run[f"c_{a.joint}.voltage"] * run[f"m_{a.joint}.current"] for a in design.axes)
    out["energy"] = float(trapezoid(power, t))
    out["objective"] = objective(run, design)
    return {name: out[name] for name in metric_names(design)}
