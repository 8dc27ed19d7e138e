"""Small signal-flow FMUs that sit next to the plant: the running block (`Component`) without
any FMI machinery, and `ComponentSlave`, which serves any Component through pythonfmu.

A Component declares its variables (inputs, parameters, calculated parameters, outputs) once, in
value-reference order; values live in one dict by name, the dynamic state in `self.x` (a dict of
floats), so saving, restoring and serialising are the same for every kind. Subclasses implement
`start()` (state from the parameters at the end of initialisation), `advance(t, h)` (each input
`value(name, s)` at s [s] into the step: held, or a ramp with the rate the master gave through
fmi2SetRealInputDerivatives, for that step only) and `output(name)`; and for the FMI derivatives
`feedthrough(output, input)` (d output / d input at an instant, nonzero only for the inputs the
output declares in `depends`) and `rate(output)` (d output / dt at the current time).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from pythonfmu.enums import Fmi2Status

from .base import GuardedSlave, StepRefused, check_effort, check_fields, check_step, check_time, finite_list
from .variables import Variable, digest, out_of_range


class Component:
    """One running block. t [s]: its time; values: every input and parameter by name; x: the
    state (floats by name)."""

    NAME: ClassVar[str] = ""            # modelIdentifier and FMU file name
    DESCRIPTION: ClassVar[str] = ""
    ABOUT: ClassVar[str] = ""           # HTML paragraph for the FMU's documentation
    VARIABLES: ClassVar[tuple[Variable, ...]] = ()

    def __init__(self) -> None:
        self.var = {v.name: v for v in self.VARIABLES}
        self.values: dict[str, float | str] = {v.name: v.start for v in self.VARIABLES
                                               if v.causality in ("input", "parameter")}
        # the arrays the FMU's C front end reads and writes (ComponentSlave.fmi_fast_path):
        # u, the Real inputs in declaration order (mirrored into `values` before use), y, every
        # output, and flags = [y valid (0 or 2), inputs refused as NaN]; changed only in place
        self.input_names = [v.name for v in self.VARIABLES if v.causality == "input"]
        self.output_names = [v.name for v in self.VARIABLES if v.causality == "output"]
        self.u = np.array([float(self.values[n]) for n in self.input_names])
        self.y = np.zeros(len(self.output_names))
        self.flags = np.zeros(2, dtype=np.int64)
        self.x: dict[str, float] = {}
        self.t = 0.0
        self.initialized = False
        self.input_error: dict[str, str] = {}
        self.failure = ""     # why initialisation failed: no step until reset
        # d input / dt [unit/s] by name, for the next step only (fmi2SetRealInputDerivatives)
        self.rates: dict[str, float] = {}

    # ------------------------------------------------------------------ to implement

    def start(self) -> None:
        """Set the state x from the parameters (end of initialisation)."""
        raise NotImplementedError

    def advance(self, t: float, h: float) -> None:
        """Advance the state from t to t + h [s] with the inputs held."""
        raise NotImplementedError

    def output(self, name: str) -> float:
        """The value of an output or calculated parameter at the current time and state."""
        raise NotImplementedError

    def feedthrough(self, output: str, input_: str) -> float:
        """d output / d input at the current instant (direct feedthrough). None here."""
        return 0.0

    def rate(self, output: str) -> float:
        """d output / dt [unit/s] at the current time, state, inputs and input rates. Held
        outputs (0) here."""
        return 0.0

    def value(self, name: str, s: float = 0.0) -> float:
        """Input `name` at s [s] into the next step: the value set plus s times its rate."""
        return float(self.values[name]) + s * self.rates.get(name, 0.0)

    def check(self) -> None:
        """Raise ValueError if the parameters do not fit together (checked at initialisation)."""

    def effort(self, h: float) -> tuple[float, str]:
        """About how many internal steps (iterations) a step of h [s] takes, and why (checked
        against base.STEP_BUDGET before the step). None here."""
        return 0.0, ""

    # ------------------------------------------------------------------ generic behaviour

    def pull_inputs(self) -> None:
        """Copy the inputs the front end wrote into u over to `values`."""
        for k, name in enumerate(self.input_names):
            self.values[name] = float(self.u[k])

    def refresh(self) -> None:
        """Compute every output into y."""
        if self.flags[0] == 2:
            return
        self.pull_inputs()
        for k, name in enumerate(self.output_names):
            self.y[k] = self.output(name)
        self.flags[0] = 2

    def set(self, name: str, value: float | str) -> None:
        """Set an input or parameter; raises ValueError (value not taken, the block as it was)
        with the reason."""
        self.pull_inputs()
        v = self.var[name]
        if v.causality in ("output", "calculatedParameter"):
            raise ValueError(f"{name} is computed by the FMU and cannot be set; the value was ignored")
        if v.causality == "parameter" and v.variability == "fixed" and self.initialized:
            raise ValueError(f"parameter {name} is fixed once initialisation has ended; the value {value!r} "
                             "was ignored")
        if v.type == "String":
            if value not in v.choices:
                raise ValueError(f"{name} = {value!r} unknown; choose one of {', '.join(v.choices)}; "
                                 f"kept {self.values[name]!r}")
            self.values[name] = value
            self.flags[0] = 0
            return
        value = float(value)
        if v.causality == "input":
            if not math.isfinite(value):
                self.input_error[name] = f"input {name} was set to {value} at t = {self.t:.9g} s"
                self.flags[1] = len(self.input_error)
                raise ValueError(f"{self.input_error[name]}; it keeps {self.values[name]!r} and the next step "
                                 "will be refused until a finite value is set")
            self.input_error.pop(name, None)
            self.flags[1] = len(self.input_error)
            self.u[self.input_names.index(name)] = value
            self.flags[0] = 0
        elif (why := out_of_range(value, v.min, v.max)) is not None:
            raise ValueError(f"parameter {name} = {value!r} [{v.unit}] {why}; kept {self.values[name]!r}")
        old, self.values[name] = self.values[name], value
        if self.initialized and v.causality == "parameter":
            try:   # a tunable parameter must still fit with the others
                self.check()
            except ValueError as err:
                self.values[name] = old
                raise ValueError(f"{err}; kept {name} = {old!r}") from None
        self.flags[0] = 0

    def initialize(self, start_time: float) -> None:
        try:
            self.check()
        except ValueError as err:
            self.failure = f"the parameters do not fit together: {err}"
            raise
        self.t = float(start_time)
        self.pull_inputs()
        self.start()
        self.initialized = True
        self.flags[0] = 0

    def step(self, t: float, h: float) -> None:
        """Advance from t to t + h [s]. Raises StepRefused (state kept at t) with the reason."""
        check_step(self, t, h)
        if not self.initialized:
            raise StepRefused("doStep before the end of initialisation")
        check_effort(*self.effort(h), h)
        self.pull_inputs()
        self.advance(self.t, h)
        self.t = t + h
        self.rates = {}
        self.flags[0] = 0

    def save(self) -> dict:
        self.pull_inputs()
        return {"values": dict(self.values), "x": dict(self.x), "t": self.t, "initialized": self.initialized,
                "input_error": dict(self.input_error), "failure": self.failure}

    def check_state(self, data: dict) -> None:
        """Raise ValueError unless `data` is a state from `save` of this kind of block: every
        field present and of its type, valid values, a finite block state, the time within
        base.TIME_LIMIT. Changes nothing."""
        check_fields(data, {"values": dict, "x": dict, "t": float, "initialized": bool, "input_error": dict,
                            "failure": str}, "the state")
        check_time(data["t"], "the state's time")
        if set(data["values"]) != set(self.values):
            raise ValueError(f"the state does not belong to a {self.NAME} FMU; nothing was applied")
        for name, value in data["values"].items():
            v = self.var[name]
            if v.type == "String" and value not in v.choices or v.type != "String" and not (
                    isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)):
                raise ValueError(f"the state's {name} = {value!r} is not a valid value; nothing was applied")
        finite_list(list(data["x"].values()), len(data["x"]), "the state's block state")

    def restore(self, data: dict) -> None:
        """Apply a state from `save`; every field is checked first (check_state), so a refused
        state raises ValueError and leaves the block as it was."""
        self.check_state(data)
        self.values = dict(data["values"])
        self.u[:] = [float(self.values[n]) for n in self.input_names]
        self.x = dict(data["x"])
        self.t = float(data["t"])
        self.initialized = bool(data["initialized"])
        self.input_error = dict(data["input_error"])
        self.rates = {}
        self.flags[:] = 0, len(self.input_error)
        self.failure = data["failure"]

    def get(self, name: str) -> float | str:
        self.pull_inputs()
        v = self.var[name]
        if v.causality in ("output", "calculatedParameter"):
            return self.output(name)
        return self.values[name]


def real(name: str, causality: str, unit: str, description: str, start: float | None = None,
         lo: float | None = None, hi: float | None = None, variability: str | None = None,
         depends: tuple[str, ...] = ()) -> Variable:
    """A Real variable of a component (the slot is unused: values are kept by name)."""
    if variability is None:
        variability = {"input": "continuous", "output": "continuous"}.get(causality, "fixed")
    return Variable(name, "Real", causality, variability, description, 0, unit, start, lo, hi, depends)


class ComponentSlave(GuardedSlave):
    """pythonfmu slave of a Component; a generated module subclasses it and sets `component`
    (the Component class) and `interface_digest`."""

    component: ClassVar[type[Component]] = Component
    interface_digest = ""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.block = self.runner = self.component()
        self.fmi_variables = self.component.VARIABLES
        if self.interface_digest and component_digest(self.component) != self.interface_digest:
            raise RuntimeError(f"the {self.component.NAME} block in this process has another interface than "
                               "the one this FMU was built with; rebuild the FMU")
        self.STATE_FORMAT = f"flexmbs.{self.component.NAME}/{component_digest(self.component)[:16]}"
        for v in self.component.VARIABLES:
            settable = v.causality in ("input", "parameter")
            self.add_variable(v, self._value_getter(v.name), self._value_setter(v.name) if settable else None)

    def fmi_fast_path(self) -> tuple:
        block = self.block
        kind = np.zeros(len(self.component.VARIABLES), dtype=np.int32)
        slot = np.zeros(len(self.component.VARIABLES), dtype=np.int32)
        for vr, v in enumerate(self.component.VARIABLES):
            if v.causality == "input" and v.type == "Real":
                kind[vr], slot[vr] = 1, block.input_names.index(v.name)
            elif v.causality == "output":
                kind[vr], slot[vr] = 3, block.output_names.index(v.name)
        return block.u, block.y, kind, slot, block.flags

    def fmi_refresh(self, level: int) -> bool:
        return bool(self._guard("computing the outputs", lambda: self.block.refresh() or True, False))

    def directional(self, unknowns: list[Variable], knowns: list[Variable], seed: list[float]) -> list[float]:
        self.block.pull_inputs()
        return [sum(self.block.feedthrough(z.name, u.name) * dv for u, dv in zip(knowns, seed)) for z in unknowns]

    def input_rates(self, inputs: list[Variable], rates: list[float]) -> None:
        self.block.rates.update({v.name: float(r) for v, r in zip(inputs, rates)})

    def output_rates(self, outputs: list[Variable]) -> list[float]:
        self.block.pull_inputs()
        return [self.block.rate(v.name) for v in outputs]

    def _value_getter(self, name: str):
        return lambda: self.block.get(name)

    def _value_setter(self, name: str):
        return lambda value: self.block.set(name, value)

    def setup_experiment(self, start_time: float, stop_time: float | None, tolerance: float | None) -> None:
        self.start_time = start_time

    def initialize(self) -> None:
        self.block.initialize(self.start_time)
        self.report(f"initialised at t = {self.start_time} s", Fmi2Status.ok)


def component_digest(component: type[Component]) -> str:
    return digest(component.VARIABLES)
