"""The servo system: a plant FMU whose torque-driven joints are each driven by a DC motor FMU
under a PID controller FMU following a trajectory FMU; its wiring as an Assembly, a monolithic
reference of the same system, a first design of the gains from the linearised plant, and the
objective of the control-design loop.

Per axis (joint j): trajectory r_j -> controller c_j -> voltage -> motor m_j -> torque -> plant,
plant j.q, j.qd -> controller, plant j.qd -> motor (load speed). The motor's reflected rotor
inertia is added to the joint's inertia parameter in the plant (see motor.py).

The monolithic reference integrates the plant's equations of motion (the flexmbs kernel) and the
motors' armature equations together in one ODE (scipy DOP853, tight tolerances), with the
controllers sampled exactly at their sample instants: the system the co-simulation approximates,
without its coupling delays. As the communication step shrinks the co-simulation converges to it
(tests/test_servo_system.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from flexmbs_fmu.controller import PIDController, pid_sample
from .cosim import Assembly, Element
from flexmbs_fmu.motor import DCMotor
from flexmbs_laws.motor import armature_rate, load_torque
from flexmbs_fmu.trajectory import min_jerk

MOTOR_DEFAULTS = {v.name: v.start for v in DCMotor.VARIABLES if v.causality == "parameter"}
CONTROLLER_DEFAULTS = {v.name: v.start for v in PIDController.VARIABLES if v.causality == "parameter"}


@dataclass
class Axis:
    """One driven joint. motor / controller: FMU parameters over the blocks' defaults;
    move: (q_start, q_end) [rad]; inertia_parameter: the plant parameter that holds the joint's
    added inertia, set to inertia_base + the motor's J_reflected [kg m^2]."""

    joint: str
    motor: dict[str, float]
    controller: dict[str, float]
    move: tuple[float, float]
    inertia_parameter: str = ""
    inertia_base: float = 0.0

    def motor_parameters(self) -> dict[str, float]:
        return {**MOTOR_DEFAULTS, **self.motor}

    def controller_parameters(self) -> dict[str, float]:
        return {**CONTROLLER_DEFAULTS, **self.controller}

    def reflected_inertia(self) -> float:
        p = self.motor_parameters()
        return p["ratio"] ** 2 * p["J_rotor"]


@dataclass
class ServoDesign:
    """A plant model with its driven axes and the move they make. plant: further plant FMU
    parameters; vibration: plant outputs [m] whose rate after the move is residual vibration
    (recorded, and penalised by `objective`), e.g. a flexible link's tip deflection; t_start,
    duration [s]: the move; stop_time, step_size [s]: the run and its communication step;
    gauss_seidel: the assembly steps references, controllers, motors, then the plant, each with
    the outputs just computed (Master), instead of all from the last communication point
    (Jacobi, as fmpy's and libcosim's SSP masters do)."""

    model: Path
    axes: list[Axis]
    plant: dict[str, float | str] = field(default_factory=dict)
    vibration: list[str] = field(default_factory=list)
    t_start: float = 0.2
    duration: float = 1.0
    stop_time: float = 2.5
    step_size: float = 1e-3
    gauss_seidel: bool = True

    def plant_parameters(self) -> dict[str, float | str]:
        p = dict(self.plant)
        for a in self.axes:
            p[f"{a.joint}.q0"] = a.move[0]
            p[f"{a.joint}.qd0"] = 0.0
            if a.inertia_parameter:
                p[a.inertia_parameter] = a.inertia_base + a.reflected_inertia()
        return p

    def with_gains(self, gains: dict[str, dict[str, float]]) -> ServoDesign:
        """A copy with controller parameters replaced per joint: {joint: {kp: ..., kd: ...}}."""
        axes = [replace(a, controller={**a.controller, **gains.get(a.joint, {})}) for a in self.axes]
        return replace(self, axes=axes)



def assembly(design: ServoDesign, fmu_dir: str | Path) -> Assembly:
    """The design as FMUs and connections (plant `arm`, per joint j: r_j, c_j, m_j)."""
    from flexmbs.model import load_model

    from .build import identifier

    fmu_dir = Path(fmu_dir)
    model = load_model(design.model)
    plant = identifier(model.name)
    elements = [Element("arm", fmu_dir / f"{plant}.fmu", design.plant_parameters())]
    links, record = [], []
    for a in design.axes:
        j = a.joint
        elements += [
            Element(f"r_{j}", fmu_dir / "trajectory.fmu",
                    {"q_start": a.move[0], "q_end": a.move[1], "t_start": design.t_start,
                     "duration": design.duration}),
            Element(f"c_{j}", fmu_dir / "pid_controller.fmu", a.controller_parameters()),
            Element(f"m_{j}", fmu_dir / "dc_motor.fmu", a.motor_parameters()),
        ]
        links += [(f"r_{j}.q_ref", f"c_{j}.q_ref"), (f"r_{j}.qd_ref", f"c_{j}.qd_ref"),
                  (f"arm.{j}.q", f"c_{j}.q"), (f"arm.{j}.qd", f"c_{j}.qd"),
                  (f"c_{j}.voltage", f"m_{j}.voltage"), (f"arm.{j}.qd", f"m_{j}.w_load"),
                  (f"m_{j}.tau_load", f"arm.{j}.tau")]
        record += [f"arm.{j}.q", f"arm.{j}.qd", f"r_{j}.q_ref", f"c_{j}.voltage", f"m_{j}.current",
                   f"m_{j}.tau_load"]
    record += [f"arm.{name}" for name in design.vibration]
    sequence = None
    if design.gauss_seidel:
        sequence = [f"{kind}_{a.joint}" for kind in ("r", "c", "m") for a in design.axes] + ["arm"]
    return Assembly(f"servo_{plant}", elements, links, record, design.stop_time, design.step_size, sequence)


def reference(design: ServoDesign, t_end: float | None = None, rtol: float = 1e-10) -> dict[str, np.ndarray]:
    """The monolithic simulation of the design: plant and motor armatures in one ODE, the
    controllers sampled at their sample instants. Returns `time` (the sample instants) and, with
    the Assembly's names, arm.<j>.q, arm.<j>.qd, m_<j>.current, c_<j>.voltage."""
    from scipy.integrate import solve_ivp

    from flexmbs.model import load_model
    from flexmbs.solvers.common import OK, f_eval

    from flexmbs_fmu.plant import Plant

    t_end = design.stop_time if t_end is None else t_end
    plant = Plant(load_model(design.model))
    for name, value in design.plant_parameters().items():
        plant.set_parameter(name, value)
    plant.configure()
    system = plant.system
    S, W = system.ref, plant.stepper.W
    nx = plant.x.size
    T = {a.controller_parameters()["sample_time"] for a in design.axes}
    if len(T) != 1:
        raise ValueError(f"the monolithic reference needs one sample time for all controllers, got {sorted(T)}")
    T = T.pop()
    axes = []
    for a in design.axes:
        m, c = a.motor_parameters(), a.controller_parameters()
        axes.append((a, m, c, system.inputs.index(f"{a.joint}.tau"), system.joint_q[a.joint][0],
                     system.nq + system.joint_u[a.joint][0]))
    inputs = system.input_defaults.copy()
    xd = np.zeros(nx)
    volts = np.zeros(len(axes))

    def rhs(t: float, z: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(z[:nx])
        dz = np.empty_like(z)
        for k, (_, m, _, k_in, _, iu) in enumerate(axes):
            inputs[k_in] = load_torque(z[nx + k], x[iu], m["k_t"], m["b_motor"], m["ratio"], m["efficiency"],
                                         m["w_band"])
            dz[nx + k] = armature_rate(z[nx + k], volts[k], m["ratio"] * x[iu], m["R"], m["L"], m["k_t"])
        if f_eval(S, W, t, x, inputs, xd) != OK:
            raise RuntimeError(f"the plant's equations failed at t = {t} s")
        dz[:nx] = xd
        return dz

    n = int(round(t_end / T))
    z = np.concatenate([plant.x, [a[1]["i0"] for a in axes]])
    integral = np.zeros(len(axes))
    rows = np.zeros((n + 1, 4 * len(axes)))
    for k in range(n + 1):
        t = k * T
        for j, (a, m, c, _, iq, iu) in enumerate(axes):
            q_ref, qd_ref, _ = min_jerk(t, a.move[0], a.move[1], design.t_start, design.duration)
            volts[j], integral[j] = pid_sample(q_ref - z[iq], qd_ref - z[iu], integral[j], c["kp"], c["ki"], c["kd"],
                                               T, c["u_min"], c["u_max"], c["anti_windup"], c["t_track"])
            rows[k, 4 * j:4 * j + 4] = z[iq], z[iu], z[nx + j], volts[j]
        if k == n:
            break
        sol = solve_ivp(rhs, (t, t + T), z, method="DOP853", rtol=rtol, atol=rtol * np.maximum(np.abs(z), 1e-3))
        if not sol.success:
            raise RuntimeError(f"monolithic reference failed at t = {t} s: {sol.message}")
        z = sol.y[:, -1]
    out = {"time": T * np.arange(n + 1)}
    for j, (a, *_rest) in enumerate(axes):
        jn = a.joint
        out[f"arm.{jn}.q"], out[f"arm.{jn}.qd"] = rows[:, 4 * j], rows[:, 4 * j + 1]
        out[f"m_{jn}.current"], out[f"c_{jn}.voltage"] = rows[:, 4 * j + 2], rows[:, 4 * j + 3]
    return out


def first_design(design: ServoDesign, bandwidth: float, damping: float = 0.9) -> dict[str, dict[str, float]]:
    """PD gains per joint from the linearised plant at the start pose (give the rigid design
    model): each axis as the inertia J (the diagonal of the joint-space mass matrix of the driven
    joints, inverted from flexmbs.linearize's input matrix) driven by its
    motor, J qdd = G V - c qd with G = ratio eff k_t / R [N m/V] and
    c = ratio^2 eff (k_t^2 / R + b_motor) (back-EMF damping and friction, the current taken as
    settled: the armature time constant is far below 1/bandwidth); closed-loop poles at natural frequency `bandwidth` [rad/s] and damping
    ratio `damping`: kp = J w^2 / G, kd = max(2 zeta w J - c, 0) / G."""
    from flexmbs.linearize import linearize
    from flexmbs.model import load_model
    from flexmbs.model.paths import set_value
    from flexmbs.compile import compile_model

    from flexmbs_fmu.interface import MODEL, plant_interface

    model = load_model(design.model)
    itf = plant_interface(model, compile_model(model))
    paths = {s.name: s.path for s in itf.parameters if s.kind == MODEL}
    x_start = {}
    for name, value in design.plant_parameters().items():
        if name in paths:
            set_value(model, paths[name], value)
        elif name.endswith(".q0"):
            x_start[name[:-3]] = value
    system = compile_model(model)
    x = np.concatenate([system.q0, system.u0])
    for jn, value in x_start.items():
        x[system.joint_q[jn][0]] = value
    lin = linearize(system, x=x)
    rows = [lin.state_names.index(f"{a.joint}.qd") for a in design.axes]
    cols = [lin.input_names.index(f"{a.joint}.tau") for a in design.axes]
    # B's velocity rows are M^-1 on the torque columns: invert that block for the joint inertias
    M = np.linalg.inv(lin.B[np.ix_(rows, cols)])
    gains = {}
    for k, a in enumerate(design.axes):
        J = M[k, k]
        m = a.motor_parameters()
        G = m["ratio"] * m["efficiency"] * m["k_t"] / m["R"]
        c = m["ratio"] ** 2 * m["efficiency"] * (m["k_t"] ** 2 / m["R"] + m["b_motor"])
        gains[a.joint] = {"kp": J * bandwidth ** 2 / G, "kd": max(2.0 * damping * bandwidth * J - c, 0.0) / G}
    return gains


def objective(run: dict[str, np.ndarray], design: ServoDesign, weight: float = 1.0,
              effort_weight: float = 1e-6) -> float:
    """What the design loop minimises [rad^2 s]: the time integral of the squared tracking
    errors [rad^2 s]; plus `weight` [rad^2 s^2/m^2] times the time integral of the squared rate
    of the tip deflection after the move has ended [m^2/s] (the residual vibration: a slow change
    of the static sag barely counts, a 1 mm oscillation at the 3.7 Hz bending mode does); plus
    `effort_weight` [rad^2 s^2/V^2] times sum_k (u_{k+1} - u_k)^2 / T over the controller samples
    [V^2/s] (the voltage changes only at samples, so this does not depend on the communication
    step), which rules out designs that chatter against the voltage limits."""
    t = run["time"]
    dt = np.diff(t)
    h = np.diff(t, prepend=t[0])
    track = sum(np.sum(h * (run[f"arm.{a.joint}.q"] - run[f"r_{a.joint}.q_ref"]) ** 2) for a in design.axes)
    after = t[1:] > design.t_start + design.duration
    residual = sum(np.sum((np.diff(run[f"arm.{k}"]) ** 2 / dt)[after]) for k in design.vibration)
    effort = sum(np.sum(np.diff(run[f"c_{a.joint}.voltage"]) ** 2) / a.controller_parameters()["sample_time"]
                 for a in design.axes)
    return float(track + weight * residual + effort_weight * effort)


@dataclass
class Tuning:
    """Result of `tune`: the best gains per joint, their objective, the starting objective and
    every evaluation (gains, objective)."""

    gains: dict[str, dict[str, float]]
    value: float
    start_value: float
    history: list[tuple[dict[str, dict[str, float]], float]]


def tune(design: ServoDesign, fmu_dir: str | Path, start: dict[str, dict[str, float]],
         max_evaluations: int = 40, progress: bool = False, **weights: float) -> Tuning:
    """Minimise `objective` over the controller gains named in `start` ({joint: {gain: value}})
    by Nelder-Mead on their logarithms (gains stay positive), on the co-simulated design. One set
    of FMU instances serves every evaluation: the state after initialisation is saved once and
    restored before each run, then the (tunable) gains are set. A run an FMU refuses (the loop
    went unstable and the solver diverged) scores 1e3. `weights` go to `objective`."""
    from scipy.optimize import minimize

    from .cosim import CosimError, Master

    keys = [(j, g) for j, gains in start.items() for g in gains]
    x0 = np.log([start[j][g] for j, g in keys])
    history: list[tuple[dict[str, dict[str, float]], float]] = []

    def unpack(z: np.ndarray) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for (j, g), v in zip(keys, np.exp(z)):
            out.setdefault(j, {})[g] = float(v)
        return out

    with Master(assembly(design, fmu_dir)) as m:
        m.initialize()
        initial = m.save()

        def cost(z: np.ndarray) -> float:
            gains = unpack(z)
            m.restore(initial)
            for j, g in gains.items():
                for name, value in g.items():
                    m.set(f"c_{j}.{name}", value)
            try:
                value = objective(m.run(design.stop_time, design.step_size), design, **weights)
            except CosimError:
                value = 1e3
            history.append((gains, value))
            if progress:
                print(f"  evaluation {len(history):3d}: objective {value:.5g}")
            return value

        # the best point is taken from the history, which also holds the start
        minimize(cost, x0, method="Nelder-Mead",
                 options={"maxfev": max_evaluations, "xatol": 1e-3, "fatol": 1e-6, "initial_simplex":
                          np.vstack([x0] + [x0 + 0.3 * np.eye(len(x0))[i] for i in range(len(x0))])})
    best = min(history, key=lambda h: h[1])
    return Tuning(best[0], best[1], history[0][1], history)
