"""The geared DC motor's law, in one place: the DC motor block (motor.py) and the motor drive of
the plant (flexmbs.kernels.motor, which compiles these functions with numba) both use it.

A separately excited (permanent-magnet) DC motor with a rigid gearbox (the armature circuit and
torque law of He 1993, Sec. 9.4, his DC motor driving the crank-rocker; the gear's losses are
ours):
- armature: L di/dt = V - R i - k_t w_m, with w_m = ratio * w_load (the gear is rigid; the
  back-EMF constant [V s/rad] equals the torque constant [N m/A] in SI units);
- shaft: tau_m = k_t i - b_motor w_m on the motor side; the gear multiplies it by the ratio and
  loses the fraction (1 - efficiency) of the power it passes on, whichever side drives:
  tau_load = ratio * efficiency * tau_m while the motor drives (tau_m w_m > 0), and
  ratio * tau_m / efficiency while the load drives it back, once the motor turns faster than
  w_band. Below w_band the loss fades to none at standstill (gear_factor), so the torque and
  its slope are continuous where the motor's speed changes sign. A gear whose loss switched
  sides at once would flip the torque by (1/efficiency - efficiency) ratio tau_m as a joint holding a load
  turns back, and a co-simulation, which holds the torque over a step, then chatters about
  zero speed: the elbow of the servo demo did (27 sign changes of its rate in 35 ms,
  docs/servo.md). The gear never makes power: tau_m w_m - tau_load w_load >= 0 always (less
  power out while the motor drives, more in while the load drives it back);
- the rotor turns rigidly with the load: its inertia acts on the load side as ratio^2 J_rotor.

Pure Python (math only), so that an FMU of the block imports nothing of the core.
"""

from __future__ import annotations

import math

# The motor's parameters: (name, unit, description, default, smallest, largest or None).
PARAMETERS: tuple[tuple[str, str, str, float, float | None, float | None], ...] = (
    ("R", "ohm", "armature resistance", 2.0, 1e-9, None),
    ("L", "H", "armature inductance", 1e-3, 1e-12, None),
    ("k_t", "N.m/A", "torque constant = back-EMF constant [V s/rad]", 0.05, 1e-12, None),
    ("J_rotor", "kg.m2", "rotor inertia (motor side)", 1e-5, 0.0, None),
    ("b_motor", "N.m.s/rad", "viscous friction on the motor shaft", 1e-5, 0.0, None),
    ("ratio", "1", "gear ratio: motor speed / load speed", 50.0, 1e-9, None),
    ("efficiency", "1", "gearbox efficiency (fraction of power passed on)", 0.9, 1e-3, 1.0),
    ("w_band", "rad/s", "motor speed below which the gear's loss fades to none at standstill", 3.0, 0.0, None),
    ("i0", "A", "armature current at the start", 0.0, None, None),
)

# Where the plant's `motor` drive (flexmbs.model.elements.Motor) defaults otherwise: the block's
# w_band is what a co-simulation at 1 ms needs not to chatter about standstill (docs/servo.md);
# inside the plant the integrator resolves a narrow band, and a held load creeps a hundred times
# slower (within the band the gear has no static friction; tests/test_motor_drive.py).
PLANT_DEFAULTS: dict[str, float] = {"w_band": 0.03}


def armature_rate(i: float, voltage: float, w_motor: float, R: float, L: float, k_t: float) -> float:
    """di/dt [A/s] of the armature current i [A] at voltage [V] and motor speed w_motor [rad/s]."""
    return (voltage - R * i - k_t * w_motor) / L


def current_after(i: float, h: float, voltage: float, w_motor: float, R: float, L: float, k_t: float) -> float:
    """Armature current [A] after h [s] from i [A] with voltage [V] and motor speed [rad/s] held:
    the exact solution of armature_rate with constant coefficients."""
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


def loss_side(tau_m: float, w_m: float, w_band: float) -> float:
    """How far the gear's loss has built up, signed by the side that drives: 1 while the motor
    drives (tau_m w_m > 0) and -1 while the load drives it back, at |w_m| >= w_band [rad/s];
    below it the cubic x (3 - x^2) / 2 of x = w_m / w_band (times the sign of tau_m), which
    meets +-1 with zero slope and is 0 at standstill. w_band = 0: the sign of tau_m w_m."""
    side = 1.0 if tau_m > 0.0 else -1.0 if tau_m < 0.0 else 0.0
    if abs(w_m) >= w_band:
        return side * (1.0 if w_m > 0.0 else -1.0 if w_m < 0.0 else 0.0)
    x = w_m / w_band
    return side * 0.5 * x * (3.0 - x * x)


def loss_side_slope(tau_m: float, w_m: float, w_band: float) -> float:
    """d loss_side / d w_m [s/rad] at fixed tau_m (0 outside the band)."""
    if abs(w_m) >= w_band or tau_m == 0.0:
        return 0.0
    x = w_m / w_band
    return (1.0 if tau_m > 0.0 else -1.0) * 1.5 * (1.0 - x * x) / w_band


def gear_factor(tau_m: float, w_m: float, efficiency: float, w_band: float) -> float:
    """The gear's loss factor tau_load / (ratio tau_m) = efficiency^s, s = loss_side: efficiency
    while the motor drives and 1 / efficiency while the load drives it back (s = +-1), 1 at
    standstill; below 1 exactly when the motor drives (s > 0), so never a gain of power, and
    smooth in w_m through standstill (no corner where s changes sign)."""
    return efficiency ** loss_side(tau_m, w_m, w_band)


def gear_factor_slope(tau_m: float, w_m: float, efficiency: float, w_band: float) -> float:
    """d gear_factor / d w_m [s/rad] at fixed tau_m (the block's feedthrough and output rates)."""
    return math.log(efficiency) * gear_factor(tau_m, w_m, efficiency, w_band) * loss_side_slope(tau_m, w_m, w_band)


def load_torque(i: float, w_load: float, k_t: float, b_motor: float, ratio: float, efficiency: float,
                w_band: float) -> float:
    """Torque on the load [N m] from current i [A] at load speed w_load [rad/s]."""
    w_m = ratio * w_load
    tau_m = k_t * i - b_motor * w_m
    return ratio * tau_m * gear_factor(tau_m, w_m, efficiency, w_band)


def reflected_inertia(J_rotor: float, ratio: float) -> float:
    """The rotor's inertia seen at the load [kg m^2]: ratio^2 J_rotor."""
    return ratio * ratio * J_rotor
