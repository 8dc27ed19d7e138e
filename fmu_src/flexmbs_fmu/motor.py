"""A separately excited (permanent-magnet) DC motor with a rigid gearbox: the block form of the
motor law of flexmbs_laws/motor.py (armature circuit, back-EMF, gear losses; see there).

The rotor turns rigidly with the load, so its inertia acts on the load side as
J_reflected = ratio^2 J_rotor. A causal block (speed in, torque out) cannot apply an inertia
without the load's acceleration, which would be an algebraic loop through the mechanism, so the
inertia belongs to the mechanism: add J_reflected (a calculated parameter of this FMU) to the
driven joint's rotor_inertia in the plant, as the servo system's SSP does. (A joint driven by a
`motor` drive of the plant carries the same motor inside the mechanism instead, inertia
included.)

With V and w_load held over a step, or changing at the constant rates a master gives with
fmi2SetRealInputDerivatives, the armature equation is linear with a polynomial forcing, and the
current is integrated exactly: any communication step gives the exact response to those inputs.

Derivatives (FMI 2.0): tau_load, w_motor and back_emf depend on w_load at the same instant
(d tau_load / d w_load = ratio^2 (tau_m dfactor/dw_m - b_motor factor), the gear's factor
changing with the motor's speed below w_band); the current does not. The
outputs' time derivatives follow from the armature equation, di/dt = (V - R i - k_t w_m) / L,
and the rate of w_load.
"""

from __future__ import annotations

from .component import Component, real
from flexmbs_laws.motor import (PARAMETERS, current_after, current_after_ramp, gear_factor, gear_factor_slope,
                                load_torque, reflected_inertia)


class DCMotor(Component):
    NAME = "dc_motor"
    DESCRIPTION = "DC motor with rigid gearbox: armature voltage and load speed in, load torque out"
    ABOUT = __doc__.strip().replace("\n\n", "</p><p>")
    VARIABLES = (
        real("voltage", "input", "V", "armature voltage", 0.0),
        real("w_load", "input", "rad/s", "speed of the driven load (gearbox output shaft)", 0.0),
        *(real(name, "parameter", unit, what + ("; see J_reflected" if name == "J_rotor" else ""), default, low, high)
          for name, unit, what, default, low, high in PARAMETERS),
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

    def _gear(self) -> tuple[float, float, float]:
        """(tau_m [N m], the gear's factor, its slope d factor / d w_m [s/rad]) now."""
        p = self.values
        w_m = p["ratio"] * p["w_load"]
        tau_m = p["k_t"] * self.x.get("i", p["i0"]) - p["b_motor"] * w_m
        return (tau_m, gear_factor(tau_m, w_m, p["efficiency"], p["w_band"]),
                gear_factor_slope(tau_m, w_m, p["efficiency"], p["w_band"]))

    def feedthrough(self, output: str, input_: str) -> float:
        p = self.values
        if input_ != "w_load":
            return 0.0
        if output == "tau_load":
            tau_m, factor, slope = self._gear()
            return p["ratio"] ** 2 * (tau_m * slope - p["b_motor"] * factor)
        return {"w_motor": p["ratio"], "back_emf": p["k_t"] * p["ratio"]}.get(output, 0.0)

    def rate(self, output: str) -> float:
        p = self.values
        i = self.x.get("i", p["i0"])
        w_rate = self.rates.get("w_load", 0.0)
        di = (p["voltage"] - p["R"] * i - p["k_t"] * p["ratio"] * p["w_load"]) / p["L"]
        if output == "tau_load":
            tau_m, factor, slope = self._gear()
            return p["ratio"] * (factor * (p["k_t"] * di - p["b_motor"] * p["ratio"] * w_rate)
                                 + tau_m * slope * p["ratio"] * w_rate)
        return {"current": di, "w_motor": p["ratio"] * w_rate, "back_emf": p["k_t"] * p["ratio"] * w_rate}[output]

    def output(self, name: str) -> float:
        p = self.values
        i = self.x.get("i", p["i0"])
        w_m = p["ratio"] * p["w_load"]
        if name == "tau_load":
            return load_torque(i, p["w_load"], p["k_t"], p["b_motor"], p["ratio"], p["efficiency"], p["w_band"])
        if name == "current":
            return i
        if name == "w_motor":
            return w_m
        if name == "back_emf":
            return p["k_t"] * w_m
        return reflected_inertia(p["J_rotor"], p["ratio"])
