"""A discrete PID position controller with output limits and anti-windup.

At the sample instants t_k = t_start + k * sample_time it reads the inputs and computes
    e_k = q_ref - q,   ed_k = qd_ref - qd   (the measured rate: no differentiation of noise),
    v_k = kp e_k + kd ed_k + I_k,           u_k = min(max(v_k, u_min), u_max),
and updates the integral by forward Euler, I_{k+1} = I_k + ki T e_k, with anti-windup:
`clamping` keeps I when u_k is saturated and e_k pushes further into the limit;
`back_calculation` adds (T / t_track)(u_k - v_k); `none` integrates regardless.
The output u_k is held until the next sample (zero-order hold).

In co-simulation the block samples at the start of a communication step, with the inputs the
master set at that point, so u_k appears at the next communication point: the output never
depends on the inputs of the same instant (no direct feedthrough, no algebraic loop), at the
price of a delay of one communication step, which vanishes as the step shrinks. Use a
communication step that divides the sample time; with a longer step every sample inside it
sees the same held inputs, or, when the master gave input rates (fmi2SetRealInputDerivatives),
the inputs extrapolated to each sample instant. The outputs are held: their time derivatives are 0.
"""

from __future__ import annotations

from .component import Component, real
from .variables import Variable

ANTI_WINDUP = ("clamping", "back_calculation", "none")


def pid_sample(e: float, ed: float, integral: float, kp: float, ki: float, kd: float, T: float, u_min: float,
               u_max: float, anti_windup: str, t_track: float) -> tuple[float, float]:
    """One sample of the PID law: (output u_k [V], next integral I_{k+1} [V]) from the position
    error e [rad], rate error ed [rad/s] and the integral I_k [V]."""
    v = kp * e + kd * ed + integral
    u = min(max(v, u_min), u_max)
    step = ki * T * e
    if anti_windup == "back_calculation":
        return u, integral + step + T / t_track * (u - v)
    if anti_windup == "clamping" and ((v > u_max and step > 0.0) or (v < u_min and step < 0.0)):
        return u, integral
    return u, integral + step


class PIDController(Component):
    NAME = "pid_controller"
    DESCRIPTION = "Discrete PID position controller with output limits and anti-windup: reference and measured " \
                  "position and velocity in, voltage out"
    ABOUT = __doc__.strip().replace("\n\n", "</p><p>")
    VARIABLES = (
        real("q_ref", "input", "rad", "reference position", 0.0),
        real("qd_ref", "input", "rad/s", "reference velocity", 0.0),
        real("q", "input", "rad", "measured position", 0.0),
        real("qd", "input", "rad/s", "measured velocity", 0.0),
        real("kp", "parameter", "V/rad", "proportional gain", 10.0, variability="tunable"),
        real("ki", "parameter", "V/(rad.s)", "integral gain", 0.0, variability="tunable"),
        real("kd", "parameter", "V.s/rad", "derivative gain (on the velocity error)", 1.0, variability="tunable"),
        real("u_min", "parameter", "V", "lower output limit", -24.0, variability="tunable"),
        real("u_max", "parameter", "V", "upper output limit", 24.0, variability="tunable"),
        real("t_track", "parameter", "s", "tracking time constant of back-calculation anti-windup", 0.05, 1e-9,
             variability="tunable"),
        real("sample_time", "parameter", "s", "sample time T", 1e-3, 1e-9),
        Variable("anti_windup", "String", "parameter", "fixed",
                 f"anti-windup scheme, one of {', '.join(ANTI_WINDUP)}", 0, start="clamping", choices=ANTI_WINDUP),
        real("voltage", "output", "V", "controller output u_k, held between samples"),
        real("error", "output", "rad", "position error e_k at the last sample"),
        real("integral", "output", "V", "integral term I of the next sample"),
    )

    def check(self) -> None:
        if self.values["u_min"] > self.values["u_max"]:
            raise ValueError(f"u_min = {self.values['u_min']} V is above u_max = {self.values['u_max']} V")

    def start(self) -> None:
        self.x = {"voltage": 0.0, "error": 0.0, "integral": 0.0, "t0": self.t, "k": 0.0}

    def effort(self, h: float) -> tuple[float, str]:
        """One iteration per sample instant in the step."""
        T = self.values["sample_time"]
        return h / T, f"sample_time {T:.3g} s"

    def advance(self, t: float, h: float) -> None:
        p, x = self.values, self.x
        T = p["sample_time"]
        # sample instants in [t, t + h), with a tolerance for accumulated rounding of t
        while x["t0"] + x["k"] * T < t + h - 1e-9 * T:
            s = x["t0"] + x["k"] * T - t     # into the step [s]
            e = self.value("q_ref", s) - self.value("q", s)
            ed = self.value("qd_ref", s) - self.value("qd", s)
            x["voltage"], x["integral"] = pid_sample(e, ed, x["integral"], p["kp"], p["ki"], p["kd"], T,
                                                     p["u_min"], p["u_max"], p["anti_windup"], p["t_track"])
            x["error"] = e
            x["k"] += 1.0

    def output(self, name: str) -> float:
        return self.x.get(name, 0.0)
