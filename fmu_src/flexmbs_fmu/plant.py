"""The multibody plant as an FMI 2.0 co-simulation slave.

`Plant` is the running model without any FMI machinery (parameters, inputs, the state x = [q; u]
at time t, the integrator and its memory, outputs evaluated on demand), so it can be tested
directly; `PlantSlave` maps it onto pythonfmu variables. A generated module per model
subclasses PlantSlave and names the model file in the FMU's resources.

FMI 2.0 derivatives:
- directional derivatives (outputs with respect to inputs): at a fixed state the equations of
  motion M(q) udot = Q(q, u, t) + B(q) f are linear in the force and torque inputs f (M, Q and
  the load maps B do not depend on them), so every output (accelerations, drive torques, cut
  forces) is affine in f, and its derivative along a seed dv is y(f + c dv) - y(f) divided by
  c, exact for any c (c is chosen large, so rounding stays at machine precision relative to the
  derivative): one more forward-dynamics solve, no finite-difference truncation. The motion
  inputs q_ref and qd_ref enter nonlinearly (through the kinematics and the velocity terms);
  their part is a central difference (relative step 1e-6);
- input interpolation: with input rates from fmi2SetRealInputDerivatives the next step is
  taken in INTERPOLATION_PIECES equal pieces, each with the inputs at its midpoint, so each
  piece receives the exact integral of the ramp (the inputs keep the values set);
- output derivatives (first order): joint positions, velocities and modal coordinates are
  components of the state x, and their rates are exact components of dx/dt = f(t, x, inputs)
  (a joint angle's rate is its velocity output, a velocity's rate its acceleration output);
  every other output's rate is a central difference along the motion, y(t +- d, x +- d dx/dt,
  inputs +- d rates) with d = 1e-6 s.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Optional

import numpy as np

import flexmbs
from flexmbs.compile import compile_model
from flexmbs.model import IMPLICIT_METHODS, METHODS, Model, ModelError, load_model
from flexmbs.model.paths import set_value
from flexmbs.signals import Evaluator, output_width, state_slots
from flexmbs.simulate import settings_of, step_rate
from flexmbs.solvers.common import OK, f_eval
from flexmbs.solvers.stepper import SolverError, Stepper
from flexmbs.system import System
from flexmbs.validity import ROTATION_LIMIT, deflection_message, largest_deflections
from flexmbs.warmup import prepare

from pythonfmu.enums import Fmi2Status

from .base import GuardedSlave, StepRefused, check_effort, check_fields, check_step, check_time, finite_list
from .interface import MODEL, SOLVER, START, Interface, plant_interface
from .variables import Variable, out_of_range

# Compiled systems of this process by (model digest, model parameter values): a reset or a
# second instance with the same parameters does not compile again.
_SYSTEMS: dict[tuple, System] = {}

# pieces of a step with input rates (see the module's docstring)
INTERPOLATION_PIECES = 4
# inputs on which the outputs depend nonlinearly (the others enter the equations linearly)
NONLINEAR_INPUTS = (".q_ref", ".qd_ref")
# time step [s] of the central difference along the motion for output rates that are not
# components of dx/dt
RATE_DELTA = 1e-6
WATCH_EVERY = 0.05   # [s] of simulated time between checks of the flexible bodies' deformation


class Rollback:
    """What a step changes besides the state x: the integrator's memory (step size, step counts,
    RK4's stability check, the stage row that a saved state holds as the implicit method's
    Jacobian state (dopri5's last stage otherwise); for the implicit method and radau its
    Jacobian, LU factors, pivots and their validity, for radau also its complex factors, the
    last step's stages and its controller; for dopri5 its step controller, and from dense output
    its own time and state, first stage, dense output, the last call's end and, with loops,
    whether its own state awaits its projection). `keep()` before
    a step, `undo()` after a refused one, so that a refused step leaves the plant bit for bit as
    it was."""

    def __init__(self, stepper: Stepper) -> None:
        self.stepper = st = stepper
        method = st.settings.method
        implicit = method in IMPLICIT_METHODS
        if method == "dopri5":   # all of it in one array (Stepper.memory)
            self.arrays = [st.memory]
        else:
            self.arrays = [st.K[6:]] + ([st.Jac, st.LU, st.piv, st.memo, st.hf] if implicit else []) \
                + ([st.LU2, st.piv2, st.R[6:9], st.rctl] if method == "radau" else [])
        self.copies = [a.copy() for a in self.arrays]
        self.scalars: tuple = ()

    def keep(self) -> None:
        # slice assignment, not np.copyto: 0.12 against 0.32 us an array, at every step
        st = self.stepper
        self.scalars = (st.h, st.nsteps, st.nrejected, st.stability_bound, st.t_i, st.t_last, st.u_last.copy(),
                        st.own_stale)
        for a, c in zip(self.arrays, self.copies):
            c[...] = a

    def undo(self) -> None:
        st = self.stepper
        st.h, st.nsteps, st.nrejected, st.stability_bound, st.t_i, st.t_last, st.u_last, st.own_stale = self.scalars
        for a, c in zip(self.arrays, self.copies):
            a[...] = c


class Plant:
    """One running instance of a model.

    params: parameter values by name (see interface.plant_interface); inputs: input vector in
    system.inputs order; t [s] and x = [q; u] the state. Parameters take effect at `configure`
    (FMI: when initialisation ends); inputs at the next step."""

    def __init__(self, model: Model) -> None:
        self.base = model
        self.key = repr(model)
        self.system = self._compile(())
        self.interface: Interface = plant_interface(model, self.system)
        self.specs = self.interface.parameters
        pvars = self.interface.by_causality("parameter")
        self.params: dict[str, object] = {v.name: v.start for v in pvars}
        self.ranges = {v.name: (v.min, v.max) for v in pvars}
        # inputs, y and flags are the arrays the FMU's C front end reads and writes directly
        # (PlantSlave.fmi_fast_path): they are allocated here once and only ever changed in place
        self.inputs = self.system.input_defaults.copy()
        # d inputs / dt for the next step only (fmi2SetRealInputDerivatives); ramped: any is
        # nonzero (rates.any() takes 1 us, at every step)
        self.rates = np.zeros_like(self.inputs)
        self.ramped = False
        self.nonlinear = np.array([n.endswith(NONLINEAR_INPUTS) for n in self.system.inputs], dtype=bool)
        self.y = np.zeros(output_width(self.system))
        # flags[0]: y is valid for (t, x, inputs) up to level 0 (nothing), 1 (positions and
        # velocities, y[:nx]) or 2 (everything); flags[1]: number of inputs refused as NaN
        self.flags = np.zeros(2, dtype=np.int64)
        self._input_error: dict[str, str] = {}
        self.failure: Optional[str] = None     # a configuration error: no step until reset
        self.t = 0.0
        self.stale = True     # parameters changed since configure(), which runs on first need
        self.initialized = False
        self.deflected: set[str] = set()    # bodies whose deformation has had its notice
        self.notices: list[str] = []        # warnings for the FMI log (PlantSlave.step takes them)

    # ------------------------------------------------------------------ configuration

    def _model_values(self, params: dict) -> tuple:
        return tuple((s.path, float(params[s.name])) for s in self.specs if s.kind == MODEL)

    def _compile(self, values: tuple) -> System:
        key = (self.key, values)
        if key not in _SYSTEMS:
            model = copy.deepcopy(self.base)
            for path, value in values:
                set_value(model, path, value)
            _SYSTEMS[key] = compile_model(model)
        return _SYSTEMS[key]

    def check_parameter(self, name: str, value) -> None:
        """Raise ValueError (TypeError for a value that is no number) unless `value` is one that
        parameter `name` takes."""
        if name == "solver.method":
            if value not in METHODS:
                raise ValueError(f"solver.method {value!r} unknown; choose one of {', '.join(METHODS)}; "
                                 f"kept {self.params[name]!r}")
        else:
            lo, hi = self.ranges[name]
            v = float(value)
            why = out_of_range(v, lo, hi)
            if why:
                raise ValueError(f"parameter {name} = {value!r} {why}; kept {self.params[name]!r}")
            if name.startswith("solver.") and v <= 0:
                raise ValueError(f"{name} must be positive, got {value!r}; kept {self.params[name]!r}")

    def set_parameter(self, name: str, value) -> None:
        """Check and keep a parameter value; it takes effect at `configure`."""
        if self.initialized:
            raise ValueError(f"parameter {name} is fixed once initialisation has ended; "
                             f"the value {value!r} was ignored")
        self.check_parameter(name, value)
        self.params[name] = value
        self.stale = True
        self.fresh = False      # outputs computed before (in initialisation mode) are out of date

    def configure(self) -> None:
        """Compile for the current parameters (once per distinct set) and put the state at its
        initial values. Raises ModelError when the parameters make the model invalid."""
        if not self.stale:
            return
        self.stale = False
        self.system = self._compile(self._model_values(self.params))
        solver = {s.path: self.params[s.name] for s in self.specs if s.kind == SOLVER}
        if self.base.solver.rtol is None and solver["rtol"] == self.base.solver_rtol():
            solver["rtol"] = None   # at its start value: left to the method that runs, as simulate leaves it
        self.settings = settings_of(self.system.model, **solver)
        # effort's estimate, computed here once, not at every step (5 us for dopri5)
        self.rate = step_rate(self.system, self.settings)
        self.stepper = Stepper(self.system, self.settings)
        self.evaluator = Evaluator(self.system, self.stepper.W)
        self.x = self.system.x0
        for s in self.specs:
            if s.kind == START:
                self.x[s.index] = float(self.params[s.name])
        self.x_start = self.x.copy()    # the state at the start of the current step
        self.rollback = Rollback(self.stepper)
        self.udot = np.zeros(self.system.nv)
        self.fresh = False
        self._watch_from(0.0)

    def initialize(self, start_time: float) -> None:
        """End of FMI initialisation: apply the parameters, start at `start_time` [s], and compile
        or load the kernels the steps will call (warmup.prepare), so that the first step of a
        master's loop runs as fast as the others."""
        try:
            self.configure()
        except ModelError as err:
            self.failure = f"the parameters make the model invalid:\n{err}"
            raise
        prepare(self.system, self.settings, self.x, self.inputs, float(start_time))
        self.t = float(start_time)
        self.fresh = False
        self.initialized = True

    # ------------------------------------------------------------------ inputs, outputs

    @property
    def fresh(self) -> bool:
        """y holds every output for (t, x, inputs)."""
        return bool(self.flags[0] == 2)

    @fresh.setter
    def fresh(self, value: bool) -> None:
        self.flags[0] = 2 if value else 0

    @property
    def input_error(self) -> dict[str, str]:
        """Why each refused input (by name) was refused; the next step is refused while any is."""
        return self._input_error

    @input_error.setter
    def input_error(self, value: dict[str, str]) -> None:
        self._input_error = value
        self.flags[1] = len(value)

    def set_input(self, k: int, value: float) -> None:
        name = self.system.inputs[k]
        if not math.isfinite(value):
            self.input_error[name] = f"input {name} was set to {value} at t = {self.t:.9g} s"
            self.flags[1] = len(self.input_error)
            raise ValueError(f"{self.input_error[name]}; it keeps {float(self.inputs[k])!r} and the next step "
                             "will be refused until a finite value is set")
        self.input_error.pop(name, None)
        self.flags[1] = len(self.input_error)
        self.inputs[k] = value
        self.fresh = False

    def refresh(self, level: int = 2) -> None:
        """Make y valid for (t, x, inputs) up to `level`: 1 computes only what follows from the
        state without the dynamics (positions, velocities with the motion-driven ones at their
        profile values, tip deflections, strain gauges, section forces, motor currents:
        signals.state_slots), 2 every output."""
        if self.stale:
            self.configure()
        if self.flags[0] >= level:
            return
        if level == 1:
            self.evaluator.evaluate_state(self.t, self.x, self.inputs, self.y, self.udot)
            self.flags[0] = 1
            return
        self.evaluator.evaluate(np.array([self.t]), self.x[None, :], self.inputs[None, :], self.y[None, :])
        self.flags[0] = 2

    def output(self, slot: int) -> float:
        self.refresh()
        return float(self.y[slot])

    # ------------------------------------------------------------------ time stepping

    def effort(self, h: float) -> tuple[float, str]:
        """About how many internal steps a step of h [s] takes, and why: simulate's estimate
        (step_rate: RK4's steps, dopri5's stability bound on a flexible model), and for the
        adaptive methods at least h / max_step."""
        s = self.settings
        steps, why = (h * self.rate[0], self.rate[1]) if self.rate else (0.0, "")
        if s.method != "rk4" and h / s.max_step > steps:
            steps, why = h / s.max_step, f"solver.max_step {s.max_step:.3g} s"
        return steps, why

    def step(self, t: float, h: float) -> None:
        """Advance from t to t + h [s] with the inputs held. Raises StepRefused with the reason
        for a NaN input, a time mismatch, a step beyond the budget (base.STEP_BUDGET) or a
        diverging solver, leaving the plant bit for bit as it was (state, integrator memory,
        outputs)."""
        check_step(self, t, h)
        if h == 0.0:
            return
        if self.stale:
            self.configure()
        check_effort(*self.effort(h), h)
        self.x_start[:] = self.x
        self.rollback.keep()
        try:
            self._advance(t, h)
        except SolverError as err:
            self.x[:] = self.x_start
            self.rollback.undo()
            raise StepRefused(f"{err}; the state is kept at t = {t:.9g} s") from None
        self.t = t + h
        if self.ramped:
            self.rates[:] = 0.0
            self.ramped = False
        self.fresh = False
        if self.t >= self.watch_at:
            self._watch_deflections()

    def _watch_from(self, t: float) -> None:
        """The next check of the flexible bodies' deformation at the first step ending at or after
        t [s] (watch_at; never without a flexible body)."""
        self.watch_at = t if self.system.body_eta else math.inf

    def _watch_deflections(self) -> None:
        """Every WATCH_EVERY of simulated time, as simulate checks its samples (validity.py): a
        notice, once per body and instance, for a flexible body deformed beyond one floating
        frame's range (31 us a check on Huang's arm: 0.6 us a 1 ms step)."""
        self.watch_at = self.t + WATCH_EVERY
        for f in largest_deflections(self.system, np.array([self.t]), self.x[None, :]):
            if f.value > ROTATION_LIMIT and f.body not in self.deflected:
                self.deflected.add(f.body)
                self.notices.append(deflection_message(self.system, f, first=True))

    def _advance(self, t: float, h: float) -> None:
        """Integrate x from t to t + h [s]: the inputs held, or with rates in pieces, each with
        the inputs at its midpoint."""
        if not self.ramped:
            self.stepper.advance(t, self.x, t + h, self.inputs)
            return
        held = np.empty_like(self.inputs)
        n = INTERPOLATION_PIECES
        for k in range(n):
            np.copyto(held, self.inputs + (k + 0.5) * h / n * self.rates)
            self.stepper.advance(t + k * h / n, self.x, t + (k + 1) * h / n if k < n - 1 else t + h, held)

    # ------------------------------------------------------------------ derivatives

    def _outputs(self, times: np.ndarray, X: np.ndarray, U: np.ndarray) -> np.ndarray:
        """Every output at each row (time [s], state, inputs)."""
        Y = np.zeros((times.size, self.y.size))
        self.evaluator.evaluate(times, np.ascontiguousarray(X), np.ascontiguousarray(U), Y)
        return Y

    def directional(self, out_slots: list[int], in_slots: list[int], seed: list[float]) -> np.ndarray:
        """(d y[out_slots] / d inputs[in_slots]) seed at the current time, state and inputs
        (see the module's docstring: exact for the force and torque inputs)."""
        if self.stale:
            self.configure()
        dv = np.zeros_like(self.inputs)
        for k, v in zip(in_slots, seed):
            dv[k] += v
        linear, nonlinear = np.where(self.nonlinear, 0.0, dv), np.where(self.nonlinear, dv, 0.0)
        rows = [self.inputs]
        c = 1e6 * (1.0 + np.max(np.abs(self.inputs))) / max(np.max(np.abs(linear)), 1e-300)
        d = 1e-6 * (1.0 + np.max(np.abs(self.inputs))) / max(np.max(np.abs(nonlinear)), 1e-300)
        rows += [self.inputs + c * linear, self.inputs + d * nonlinear, self.inputs - d * nonlinear]
        Y = self._outputs(np.full(4, self.t), np.tile(self.x, (4, 1)), np.array(rows))
        dy = (Y[1] - Y[0]) / c if linear.any() else np.zeros(self.y.size)
        if nonlinear.any():
            dy += (Y[2] - Y[3]) / (2.0 * d)
        return dy[out_slots]

    def set_rates(self, in_slots: list[int], rates: list[float]) -> None:
        """Input rates [unit/s] for the next step."""
        try:
            for k, r in zip(in_slots, rates):
                self.rates[k] = r
        finally:   # also when a write fails part-way: the rates written take effect
            self.ramped = bool(self.rates.any())

    def output_rates(self, out_slots: list[int]) -> np.ndarray:
        """d y[out_slots] / dt at the current time, state, inputs and input rates (see the
        module's docstring: exact for the state's components)."""
        if self.stale:
            self.configure()
        xdot = np.zeros_like(self.x)
        if f_eval(self.system.ref, self.stepper.W, self.t, self.x, self.inputs, xdot) != OK:
            raise ValueError(f"the equations of motion are singular at t = {self.t:.9g} s; no output rates")
        nx = self.x.size
        slots = np.asarray(out_slots, dtype=np.int64)
        rates = np.where(slots < nx, xdot[np.minimum(slots, nx - 1)], 0.0)
        if np.any(slots >= nx):
            d = RATE_DELTA
            Y = self._outputs(np.array([self.t + d, self.t - d]), np.array([self.x + d * xdot, self.x - d * xdot]),
                              np.array([self.inputs + d * self.rates, self.inputs - d * self.rates]))
            rates = np.where(slots < nx, rates, (Y[0, slots] - Y[1, slots]) / (2.0 * d))
        return rates

    # ------------------------------------------------------------------ state

    def save(self) -> dict:
        """Everything that determines the future: parameters, inputs, time, state, integrator
        memory, pending errors."""
        self.configure()
        st = self.stepper
        return dict(params=dict(self.params), inputs=self.inputs.tolist(), t=self.t, x=self.x.tolist(),
                    h=st.h, nsteps=st.nsteps, nrejected=st.nrejected, implicit=st.implicit_memory(),
                    dopri5=st.dopri5_memory(),
                    initialized=self.initialized,
                    input_error=dict(self.input_error), failure=self.failure)

    def check_state(self, data: dict) -> None:
        """Raise ValueError unless `data` is a state from `save` that this plant can take: every
        field present and of its type, the sizes of this model, finite values, the time within
        base.TIME_LIMIT, each parameter value one set_parameter takes. Changes nothing (beyond
        applying parameters set earlier, as any first use does)."""
        self.configure()
        check_fields(data, {"params": dict, "inputs": list, "t": float, "x": list, "h": float, "nsteps": int,
                            "nrejected": int, "implicit": dict, "dopri5": dict, "initialized": bool,
                            "input_error": dict,
                            "failure": (str, type(None))}, "the state")
        check_time(data["t"], "the state's time")
        self.stepper.check_implicit_memory(data["implicit"], data["params"].get("solver.method"))
        self.stepper.check_dopri5_memory(data["dopri5"])
        if set(data["params"]) != set(self.params):
            raise ValueError("the state belongs to a model with other parameters; nothing was applied")
        finite_list(data["inputs"], self.inputs.size, "the state's inputs")
        finite_list(data["x"], self.x.size, "the state's coordinates and velocities")
        if data["h"] <= 0 or data["nsteps"] < 0 or data["nrejected"] < 0:
            raise ValueError("the state's step size or step counts are not positive; nothing was applied")
        for name, value in data["params"].items():
            try:
                if name != "solver.method" and (isinstance(value, bool) or not isinstance(value, (int, float))):
                    raise ValueError(f"parameter {name} = {value!r} is not a number")
                self.check_parameter(name, value)
            except (ValueError, TypeError) as err:
                raise ValueError(f"the state's parameters are refused: {err}; nothing was applied") from None

    def restore(self, data: dict) -> None:
        """Apply a state from `save`. Every field is checked (check_state) and a new parameter
        set compiled before anything changes: a refused state raises ValueError and leaves the
        plant as it was."""
        self.check_state(data)
        if data["params"] != self.params:
            try:
                self._compile(self._model_values(data["params"]))
            except ModelError as err:
                raise ValueError(f"the state's parameters are refused: {err}; nothing was applied") from None
            self.params, self.stale = dict(data["params"]), True
            self.configure()
        self.inputs[:] = data["inputs"]
        self.t = float(data["t"])
        self.x[:] = data["x"]
        self.stepper.h = float(data["h"])
        self.stepper.nsteps, self.stepper.nrejected = int(data["nsteps"]), int(data["nrejected"])
        self.stepper.restore_implicit_memory(data["implicit"])
        self.stepper.restore_dopri5_memory(data["dopri5"])
        self.initialized = bool(data["initialized"])
        self.input_error = dict(data["input_error"])
        self.failure = data["failure"]
        self.rates[:] = 0.0
        self.ramped = False
        self.fresh = False
        self._watch_from(self.t)   # back in time too: the next step checks


class PlantSlave(GuardedSlave):
    """pythonfmu slave of a plant; subclasses set `model_file` (relative to the resources
    folder) and `interface_digest` (what the build saw)."""

    model_file = "model/model.yaml"
    interface_digest = ""
    STATE_FORMAT = "flexmbs.plant"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        path = Path(self.resources or ".") / self.model_file
        self.plant = self.runner = Plant(load_model(path))
        itf = self.plant.interface
        if self.interface_digest and itf.digest() != self.interface_digest:
            raise RuntimeError(f"flexmbs {flexmbs.__version__} in this process gives model {path.name} another "
                               "interface than the one this FMU was built with; rebuild the FMU with it")
        self.STATE_FORMAT = f"flexmbs.plant/{itf.digest()[:16]}"
        self.fmi_variables = itf.variables
        for v in itf.variables:
            if v.causality == "input":
                self.add_variable(v, self._input_getter(v.slot), self._input_setter(v.slot))
            elif v.causality == "parameter":
                self.add_variable(v, self._param_getter(v.name), self._param_setter(v.name))
            else:
                self.add_variable(v, self._output_getter(v.slot), None)

    def step(self, t: float, h: float) -> bool:
        """GuardedSlave.step, then the plant's notices of the step as FMI warnings."""
        taken = super().step(t, h)
        if self.plant.notices:
            for text in self.plant.notices:
                self.report(text, Fmi2Status.warning)
            self.plant.notices.clear()
        return taken

    def fmi_fast_path(self) -> tuple:
        plant = self.plant
        cheap = set(state_slots(plant.system).tolist())
        variables = plant.interface.variables
        kind = np.zeros(len(variables), dtype=np.int32)
        slot = np.zeros(len(variables), dtype=np.int32)
        for vr, v in enumerate(variables):
            if v.causality == "input":
                kind[vr], slot[vr] = 1, v.slot
            elif v.causality == "output":
                kind[vr], slot[vr] = (2 if v.slot in cheap else 3), v.slot
        return plant.inputs, plant.y, kind, slot, plant.flags

    def fmi_refresh(self, level: int) -> bool:
        return bool(self._guard("computing the outputs", lambda: self.plant.refresh(level) or True, False))

    def directional(self, unknowns: list[Variable], knowns: list[Variable], seed: list[float]) -> list[float]:
        return self.plant.directional([v.slot for v in unknowns], [v.slot for v in knowns], seed).tolist()

    def input_rates(self, inputs: list[Variable], rates: list[float]) -> None:
        self.plant.set_rates([v.slot for v in inputs], rates)

    def output_rates(self, outputs: list[Variable]) -> list[float]:
        return self.plant.output_rates([v.slot for v in outputs]).tolist()

    def _input_getter(self, k: int):
        return lambda: self.plant.inputs[k]

    def _input_setter(self, k: int):
        return lambda value: self.plant.set_input(k, value)

    def _param_getter(self, name: str):
        return lambda: self.plant.params[name]

    def _param_setter(self, name: str):
        return lambda value: self.plant.set_parameter(name, value)

    def _output_getter(self, slot: int):
        return lambda: self.plant.output(slot)

    def setup_experiment(self, start_time: float, stop_time: Optional[float], tolerance: Optional[float]) -> None:
        self.start_time = start_time
        if tolerance is not None and tolerance > 0:
            self._guard("setupExperiment", lambda: self.plant.set_parameter("solver.rtol", tolerance))

    def initialize(self) -> None:
        self.plant.initialize(self.start_time)
        self.report(f"initialised at t = {self.start_time} s: {len(self.plant.system.inputs)} inputs, "
                    f"solver {self.plant.settings.method}", Fmi2Status.ok)
