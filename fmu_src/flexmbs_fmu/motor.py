"""A separately excited (permanent-magnet) DC motor with a rigid gearbox.

Armature: L di/dt = V - R i - k_t w_m, with w_m = ratio * w_load (the gear is rigid).
Shaft: tau_m = k_t i - b_motor w_m on the motor side; the gear multiplies it by the ratio and
loses the fraction (1 - efficiency) of the power it passes on, whichever side drives:
tau_load = ratio * efficiency * tau_m while the motor drives (tau_m w_m >= 0), and
ratio * tau_m / efficiency while the load drives it back.

The rotor turns rigidly with the load, so its inertia acts on the load side as
J_reflected = ratio^2 J_rotor. A causal block (speed in, torque out) cannot apply an inertia
without the load's acceleration, which would be an algebraic loop through the mechanism, so the
inertia belongs to the mechanism: add J_reflected (a calculated parameter of this FMU) to the
driven joint's rotor_inertia in the plant, as the servo system's SSP does.

With V and w_load held over a step, or changing at the constant rates a master gives with
fmi2SetRealInputDerivatives, the armature equation is linear with a polynomial forcing, and the
current is integrated exactly: any communication step gives the exact response to those inputs.

Derivatives (FMI 2.0): tau_load, w_motor and back_emf depend on w_load at the same instant
(d tau_load / d w_load = -ratio^2 b_motor times the gear's factor); the current does not. The
outputs' time derivatives follow from the armature equation, di/dt = (V - R i - k_t w_m) / L,
and the rate of w_load.
"""

from __future__ import annotations

import math

from .component import Component, real

def current_after(i: float, h: float, voltage: float, w_motor: float, R: float, L: float, k_t: float) -> float:
    """Armature current [A] after h [s] from i [A] with voltage [V] and motor speed [rad/s] held."""
    i_ss = (voltage - k_t * w_motor) / R
    return i_ss + (i - i_ss) * math.exp(-R / L * h)


def current_after_ramp(i: float, h: float, voltage: float, voltage_rate: float, w_motor: float, w_motor_rate: float,
                      R: float, L: float, k_t: float) -> float:
    """Armature current [A] after h [s] from i [A] with voltage [V] and motor speed [rad/s]
    changing at constant rates [V/s], [rad/s2]: the exact solution of
    L di/dt = V + V' s - R i - k_t (w + w' s), i(h) = i e^(-a h) + c0 (1 - e^(-a h)) / a
    + c1 (a h - (1 - e^(-a h))) / a^2 with a = R / L, c0 = (V - k_t w) / L, c1 = (V' - k_t w') / L."""
    a = R / L
    decay = -math.expm1(-a * h)      # 1 - e^(-a h) without cancellation
    c0, c1 = (voltage - k_t * w_motor) / L, (voltage_rate - k_t * w_motor_rate) / L
    return i * (1.0 - decay) + c0 * decay / a + c1 * (a * h - decay) / a ** 2


def gear_factor(tau_m: float, w_m: float, efficiency: float) -> float:
    """The gear's loss factor: efficiency while the motor drives (tau_m w_m >= 0), else 1 / efficiency."""
    return efficiency if tau_m * w_m >= 0.0 else 1.0 / efficiency


def load_torque(i: float, w_load: float, k_t: float, b_motor: float, ratio: float, efficiency: float) -> float:
    """Torque on the load [N m] from current i [A] at load speed w_load [rad/s]."""
    w_m = ratio * w_load
    tau_m = k_t * i - b_motor * w_m
    return ratio * tau_m * gear_factor(tau_m, w_m, efficiency)


class DCMotor(Component):
    NAME = "dc_motor"
    DESCRIPTION = "DC motor with rigid gearbox: armature voltage and load speed in, load torque out"
    ABOUT = __doc__.strip().replace("\n\n", "</p><p>")
    VARIABLES = (
        real("voltage", "input", "V", "armature voltage", 0.0),
        real("w_load", "input", "rad/s", "speed of the driven load (gearbox output shaft)", 0.0),
        real("R", "parameter", "ohm", "armature resistance", 2.0, 1e-9),
        real("L", "parameter", "H", "armature inductance", 1e-3, 1e-12),
        real("k_t", "parameter", "N.m/A", "torque constant = back-EMF constant [V s/rad]", 0.05, 1e-12),
        real("J_rotor", "parameter", "kg.m2", "rotor inertia (motor side); see J_reflected", 1e-5, 0.0),
        real("b_motor", "parameter", "N.m.s/rad", "viscous friction on the motor shaft", 1e-5, 0.0),
        real("ratio", "parameter", "1", "gear ratio: motor speed / load speed", 50.0, 1e-9),
        real("efficiency", "parameter", "1", "gearbox efficiency (fraction of power passed on)", 0.9, 1e-3, 1.0),
        real("i0", "parameter", "A", "armature current at the start", 0.0),
        real("J_reflected", "calculatedParameter", "kg.m2",
             "ratio^2 J_rotor: the rotor inertia seen at the load; add it to the driven joint's inertia"),
        real("tau_load", "output", "N.m", "torque the gearbox applies to the load", depends=("w_load",)),
        real("current", "output", "A", "armature current"),
        real("w_motor", "output", "rad/s", "motor speed = ratio * w_load", depends=("w_load",)),
        real("back_emf", "output", "V", "back-EMF k_t w_motor", depends=("w_load",)),
    )

    def start(self) -> None:
        self.x = {"i": float(self.values["i0"])}

    def advance(self, t: float, h: float) -> None:
        p, r = self.values, self.rates
        if r:
            self.x["i"] = current_after_ramp(self.x["i"], h, p["voltage"], r.get("voltage", 0.0), p["ratio"] * p["w_load"],
                                             p["ratio"] * r.get("w_load", 0.0), p["R"], p["L"], p["k_t"])
            return
        self.x["i"] = current_after(self.x["i"], h, p["voltage"], p["ratio"] * p["w_load"], p["R"], p["L"], p["k_t"])

    def _factor(self) -> float:
        p = self.values
        w_m = p["ratio"] * p["w_load"]
        return gear_factor(p["k_t"] * self.x.get("i", p["i0"]) - p["b_motor"] * w_m, w_m, p["efficiency"])

    def feedthrough(self, output: str, input_: str) -> float:
        p = self.values
        if input_ != "w_load":
            return 0.0
        return {"tau_load": -p["ratio"] ** 2 * p["b_motor"] * self._factor(), "w_motor": p["ratio"],
                "back_emf": p["k_t"] * p["ratio"]}.get(output, 0.0)

    def rate(self, output: str) -> float:
        p = self.values
        i = self.x.get("i", p["i0"])
        w_rate = self.rates.get("w_load", 0.0)
        di = (p["voltage"] - p["R"] * i - p["k_t"] * p["ratio"] * p["w_load"]) / p["L"]
        if output == "tau_load":
            return p["ratio"] * self._factor() * (p["k_t"] * di - p["b_motor"] * p["ratio"] * w_rate)
        return {"current": di, "w_motor": p["ratio"] * w_rate, "back_emf": p["k_t"] * p["ratio"] * w_rate}[output]

    def output(self, name: str) -> float:
        p = self.values
        i = self.x.get("i", p["i0"])
        w_m = p["ratio"] * p["w_load"]
        if name == "tau_load":
            return load_torque(i, p["w_load"], p["k_t"], p["b_motor"], p["ratio"], p["efficiency"])
        if name == "current":
            return i
        if name == "w_motor":
            return w_m
        if name == "back_emf":
            return p["k_t"] * w_m
        return p["ratio"] ** 2 * p["J_rotor"]
