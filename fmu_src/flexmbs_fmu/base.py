"""A pythonfmu slave that never lets a Python exception reach the FMI layer.

pythonfmu turns any exception into fmi2Fatal and frees the Python instance, so the host loses
the FMU and, when something was logged in the same call, the message too. Here every FMI entry
point is guarded: a failure is logged (through the FMI logger, and through Python's `logging`
so that a host which left FMI logging off still sees it on stderr), and the call returns
normally; a step that cannot be taken returns False, which pythonfmu reports as fmi2Discard
with the FMU left at the start of that step.

The full state (whatever `save` returns) is kept by fmi2GetFMUstate and serialised as JSON with
a format name and version, so a state from another model or an older layout is refused with a
message instead of being misread; the C front end adds its own part (the FMI state and the last
successful time) to the serialised form, and every part is checked before a state is made.
"""

from __future__ import annotations

import copy
import json
import logging
import math
from typing import Any, Callable

from pythonfmu import Fmi2Slave
from pythonfmu.enums import Fmi2Causality, Fmi2Status, Fmi2Variability
from pythonfmu.variables import Real, String

from .variables import Variable

# See keep_alive.
_PINNED: list[dict] = []

# Largest |time| [s] an FMU takes (a start time, a communication point, a saved state's time):
# about 3.2 years. Beyond it the integrators' smallest step (1e-14 |t|, flexmbs.solvers.stepper)
# passes 1 us, too coarse for the kHz modes of flexible bodies, so such a time in a state can
# only be crafted or damaged (t = 1e308 would be applied, then every step would fail). The C
# front end is compiled with the same bound (flexmbs.fmi.frontend).
TIME_LIMIT = 1e8

# Most internal integration steps one fmi2DoStep may need before it is refused at once
# (fmi2Discard, the estimate in the message): minutes of computing at the 10-20 us one internal
# step of a small model costs here. Steps are synchronous and cannot be cancelled (no
# asynchronous stepping), so a step past it would block the master for hours or days.
STEP_BUDGET = 1e7


class StepRefused(Exception):
    """A step that cannot be taken; the message says why."""


def check_step(runner: Any, t: float, h: float) -> None:
    """The refusals every FMU shares, before a step from t [s] by h [s]: a failed configuration
    (`runner.failure`), inputs refused as NaN (`runner.input_error`), a bad step size or a step
    that does not start at the runner's time `runner.t`."""
    if runner.failure:
        raise StepRefused(runner.failure)
    if runner.input_error:
        raise StepRefused("; ".join(runner.input_error.values()))
    if not math.isfinite(h) or h < 0.0:
        raise StepRefused(f"communication step size {h!r} is not a finite non-negative number")
    if abs(t - runner.t) > 1e-9 * max(1.0, abs(runner.t)):
        raise StepRefused(f"the step starts at t = {t!r} s but the FMU is at t = {runner.t!r} s")


def check_effort(steps: float, why: str, h: float) -> None:
    """Raise StepRefused when a step of h [s] would take more than STEP_BUDGET internal steps
    (`steps`, estimated as `why` says)."""
    if steps > STEP_BUDGET:
        raise StepRefused(f"a step of {h:.6g} s needs about {steps:.3g} internal steps ({why}), beyond "
                          f"this FMU's budget of {STEP_BUDGET:.3g} per fmi2DoStep; take shorter communication steps")


def check_time(value: Any, what: str) -> None:
    """Raise ValueError unless `value` is a time [s] within +-TIME_LIMIT."""
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and abs(value) <= TIME_LIMIT):
        raise ValueError(f"{what} = {value!r} s is not a time within +-{TIME_LIMIT:g} s; nothing was applied")


def check_fields(data: Any, expected: dict[str, type | tuple[type, ...]], what: str) -> None:
    """Raise ValueError unless `data` is a dict with exactly the keys of `expected`, each value
    of its type (ints are accepted for floats; floats must be finite). Used to refuse a saved
    state completely before any part of it is applied."""
    if not isinstance(data, dict) or set(data) != set(expected):
        found = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{what}: expected the fields {sorted(expected)}, found {found}; nothing was applied")
    for key, kind in expected.items():
        value = data[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kinds) or (isinstance(value, float) and not math.isfinite(value)):
            raise ValueError(f"{what}: field {key!r} = {data[key]!r} is not a finite {'/'.join(k.__name__ for k in kinds)}; "
                             "nothing was applied")


def finite_list(values: Any, n: int, what: str) -> None:
    """Raise ValueError unless `values` is a list of n finite numbers."""
    ok = isinstance(values, list) and len(values) == n and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)
    if not ok:
        raise ValueError(f"{what}: expected {n} finite numbers; nothing was applied")


def keep_alive(module_globals: dict) -> None:
    """Hold one more reference to a slave module's namespace. pythonfmu 0.7's C layer runs the
    slave module's code at every instantiation and then releases a reference to the module
    namespace that it never took; without this the third instance in a process finds an empty
    namespace and fails ("module has no attribute ''"). Call it once from the module body,
    which runs once per instantiation."""
    _PINNED.append(module_globals)


_LEVELS = {Fmi2Status.ok: logging.DEBUG, Fmi2Status.warning: logging.WARNING,
           Fmi2Status.discard: logging.WARNING, Fmi2Status.error: logging.ERROR,
           Fmi2Status.fatal: logging.CRITICAL}


class GuardedSlave(Fmi2Slave):
    """Subclasses set `runner` (the running model: `step(t, h)` raising StepRefused, `save()`,
    `restore(dict)`), implement `initialize()`, and set STATE_FORMAT (a name unique to the kind of
    FMU and its interface)."""

    STATE_FORMAT = "flexmbs"
    STATE_VERSION = 3     # 2: the serialised form carries the front end's FMI state and time; 3: the plant's, dopri5's memory
    log_categories = {
        "logStatusWarning": "Warnings: something was ignored or corrected.",
        "logStatusDiscard": "A step was not taken; the FMU stays at the start of that step.",
        "logStatusError": "Errors: invalid inputs or parameters, a failed step, a refused state.",
        "logStatusFatal": "The FMU cannot continue (it was built for another interface).",
        "logAll": "Every message, including information on initialisation and steps.",
    }

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.pylog = logging.getLogger(f"flexmbs.fmu.{self.instance_name}")
        self.start_time = 0.0     # [s] fmi2SetupExperiment's, where initialisation puts the runner

    # ---------------------------------------------------------------- helpers for subclasses

    def report(self, message: str, status: Fmi2Status = Fmi2Status.error) -> None:
        """Log `message` with `status` to the FMI logger and to Python logging."""
        category = f"logStatus{status.name.capitalize()}"
        self.log(message, status, category if category in self.log_categories else "logAll")
        self.pylog.log(_LEVELS[status], "%s: %s", self.instance_name, message)

    def add_variable(self, v: Variable, getter: Callable[[], Any], setter: Callable[[Any], None] | None) -> None:
        """Register `v` with an explicit getter and setter (a structured name like `elbow.tau`
        would otherwise get an invented setter that writes an attribute `tau`)."""
        cls = String if v.type == "String" else Real
        self.register_variable(cls(v.name, causality=Fmi2Causality[v.causality],
                                   variability=Fmi2Variability[v.variability], description=v.description,
                                   getter=getter, setter=setter or self._read_only(v.name)),
                               nested=False)

    def _read_only(self, name: str) -> Callable[[Any], None]:
        def refuse(_value: Any) -> None:
            self.report(f"{name} is an output and cannot be set; the value was ignored")
        return refuse

    # ---------------------------------------------------------------- to implement

    runner: Any = None

    def initialize(self) -> None:
        raise NotImplementedError

    def step(self, t: float, h: float) -> bool:
        try:
            self.runner.step(t, h)
        except StepRefused as err:
            self.report(f"step from t = {t:.9g} s to {t + h:.9g} s not taken: {err}")
            return False
        return True

    def save(self) -> dict:
        return self.runner.save()

    def restore(self, data: dict) -> None:
        self.runner.restore(data)

    # ---------------------------------------------------------------- for the C front end

    def fmi_take_log(self) -> list[tuple[int, str, str]]:
        """The queued messages as (status, category, text), emptying the queue."""
        taken = [(int(m.status), m.category or "logAll", str(m.msg)) for m in self.log_queue]
        self.log_queue.clear()
        return taken

    def fmi_fast_path(self) -> tuple | None:
        """What lets the C front end set inputs and read outputs without calling Python: None
        (every call goes through Python), or the arrays (inputs, outputs, kind, slot, flags):

        - inputs, outputs: float64 arrays of the Real input values and output values;
        - kind, slot: int32 arrays per value reference: kind 1 = an input at inputs[slot],
          2 = an output at outputs[slot] made valid by fmi_refresh(1), 3 = one that needs
          fmi_refresh(2), 0 = anything else (through Python);
        - flags: int64 [level to which outputs are valid (0, 1, 2), refused inputs pending];
          the front end zeroes flags[0] when it sets an input and leaves every input to Python
          while flags[1] is not 0.

        The front end takes them through the buffer protocol, checks their types and sizes and
        every kind and slot (a map that does not fit leaves every call to Python, with a
        warning), copies kind and slot, and holds views of the other three, which must only
        ever change in place."""
        return None

    def fmi_refresh(self, level: int) -> bool:
        """Make the outputs valid up to `level` (see fmi_fast_path); False if that failed (logged)."""
        return False

    def fmi_release(self) -> None:
        """Called by the front end just before it drops the slave: break the slave's reference
        cycles (each variable's getter and setter refers back to it), so that it is freed at
        once. Left to Python's cyclic collector, which runs a full collection only once the
        objects waiting reach a quarter of all long-lived ones (with numba and scipy loaded,
        hundreds of instances), each instantiate/free cycle of a plant held 7-9 kB more until
        then. The slave is unusable afterwards."""
        vars(self).clear()

    # ---------------------------------------------------------------- derivatives (FMI 2.0)

    # the FMU's variables in value-reference order; set by subclasses
    fmi_variables: "list[Variable] | tuple[Variable, ...]" = ()

    def variables_of(self, vrs: list[int], causality: str) -> list[Variable]:
        """The variables of value references `vrs`; ValueError naming the first that is not of
        `causality` (the front end has checked that each exists and is a Real)."""
        out = [self.fmi_variables[vr] for vr in vrs]
        for vr, v in zip(vrs, out):
            if v.causality != causality:
                raise ValueError(f"{v.name} (value reference {vr}) is a{'n' if v.causality[0] in 'aeiou' else ''} "
                                 f"{v.causality}, not an {causality}; nothing was computed")
        return out

    def directional(self, unknowns: list[Variable], knowns: list[Variable], seed: list[float]) -> list[float]:
        """(d unknowns / d knowns) seed: outputs with respect to inputs at the current instant."""
        raise NotImplementedError

    def input_rates(self, inputs: list[Variable], rates: list[float]) -> None:
        """Keep the first derivatives of inputs for the next step (their values stay as set)."""
        raise NotImplementedError

    def output_rates(self, outputs: list[Variable]) -> list[float]:
        """The first time derivatives of outputs at the current time."""
        raise NotImplementedError

    def fmi_directional(self, unknowns: list[int], known: list) -> list[float] | None:
        """fmi2GetDirectionalDerivative: known = [input value references, seed]; None if refused (logged)."""
        return self._guard("the directional derivative", lambda: [float(v) for v in self.directional(
            self.variables_of(unknowns, "output"), self.variables_of(known[0], "input"), known[1])])

    def fmi_adjoint(self, unknowns: list[int], known: list) -> list[float] | None:
        """fmi3GetAdjointDerivative: known = [input value references, seed over the unknowns];
        the seed times (d unknowns / d knowns), one value per known, from one directional
        derivative per known (a column of the Jacobian each); None if refused (logged)."""
        def adjoint() -> list[float]:
            outputs, inputs = self.variables_of(unknowns, "output"), self.variables_of(known[0], "input")
            seed = known[1]
            columns = [self.directional(outputs, [u], [1.0]) for u in inputs]
            return [float(sum(s * c for s, c in zip(seed, column))) for column in columns]
        return self._guard("the adjoint derivative", adjoint)

    def fmi_input_derivatives(self, vrs: list[int], rates: list[float]) -> None:
        """fmi2SetRealInputDerivatives (first order; the front end checked the orders and values)."""
        self._guard("setting input derivatives", lambda: self.input_rates(self.variables_of(vrs, "input"), rates))

    def fmi_output_derivatives(self, vrs: list[int], _unused: list) -> list[float] | None:
        """fmi2GetRealOutputDerivatives (first order); None if refused (logged)."""
        return self._guard("the output derivatives",
                           lambda: [float(v) for v in self.output_rates(self.variables_of(vrs, "output"))])

    # ---------------------------------------------------------------- guarded FMI entry points

    def _guard(self, what: str | Callable[[], str], fn: Callable[..., Any], fallback: Any = None, *args: Any) -> Any:
        """fn(*args), or `fallback` with the exception logged as what failed (`what`: its text,
        or a function that makes it, for calls at every step that should not format one)."""
        try:
            return fn(*args)
        except Exception as err:  # noqa: BLE001 - nothing may escape into the FMI layer
            self.report(f"{what() if callable(what) else what} failed: {type(err).__name__}: {err}")
            return fallback

    def exit_initialization_mode(self) -> None:
        self._guard("initialisation", self.initialize)

    def enter_initialization_mode(self) -> None:
        self._guard("enterInitializationMode", super().enter_initialization_mode)

    def terminate(self) -> None:
        self._guard("terminate", super().terminate)

    def do_step(self, current_time: float, step_size: float) -> bool:
        return bool(self._guard(lambda: f"the step from t = {current_time:.9g} s", self.step, False,
                                current_time, step_size))

    def _getter(self, kind: str, base: Callable, vrs: list[int], default: Any) -> list:
        try:
            return base(vrs)
        except Exception as err:  # noqa: BLE001
            self.report(f"get{kind} failed: {type(err).__name__}: {err}")
            return [default] * len(vrs)

    def get_real(self, vrs: list[int]) -> list[float]:
        return self._getter("Real", super().get_real, vrs, float("nan"))

    def get_string(self, vrs: list[int]) -> list[str]:
        return self._getter("String", super().get_string, vrs, "")

    def get_integer(self, vrs: list[int]) -> list[int]:
        return self._getter("Integer", super().get_integer, vrs, 0)

    def get_boolean(self, vrs: list[int]) -> list[bool]:
        return self._getter("Boolean", super().get_boolean, vrs, False)

    def _setter(self, kind: str, base: Callable, vrs: list[int], values: list) -> None:
        # one at a time, so that a refused value does not drop the others of the same call
        for vr, value in zip(vrs, values):
            self._guard(f"set{kind}", lambda vr=vr, value=value: base([vr], [value]))

    def set_real(self, vrs: list[int], values: list[float]) -> None:
        self._setter("Real", super().set_real, vrs, values)

    def set_string(self, vrs: list[int], values: list[str]) -> None:
        self._setter("String", super().set_string, vrs, values)

    def set_integer(self, vrs: list[int], values: list[int]) -> None:
        self._setter("Integer", super().set_integer, vrs, values)

    def set_boolean(self, vrs: list[int], values: list[bool]) -> None:
        self._setter("Boolean", super().set_boolean, vrs, values)

    def _get_fmu_state(self) -> dict:
        return self._guard("getFMUstate", lambda: {
            "format": self.STATE_FORMAT, "version": self.STATE_VERSION, "start_time": self.start_time,
            "data": copy.deepcopy(self.save())}, {})

    def _check_format(self, state: Any) -> None:
        found = (state.get("format"), state.get("version")) if isinstance(state, dict) else (None, None)
        if found != (self.STATE_FORMAT, self.STATE_VERSION):
            raise ValueError(f"the state is of format {found[0]!r} version {found[1]!r}; this FMU "
                             f"reads {self.STATE_FORMAT!r} version {self.STATE_VERSION}. It was not applied")

    def _set_fmu_state(self, state: dict) -> None:
        def apply() -> None:
            self._check_format(state)
            check_time(state.get("start_time"), "the state's start time")
            # restore() validates everything before it changes anything: a refused state
            # leaves the instance as it was
            self.restore(copy.deepcopy(state["data"]))
            self.start_time = float(state["start_time"])
        self._guard("setFMUstate", apply)

    def fmi_state_to_bytes(self, state: dict, fmi_state: str, last_time: float) -> bytes:
        """The C front end's serialised form of a state: _fmu_state_to_bytes of it with the FMI
        state (its name) and the last successful time [s] the front end saved with it."""
        return self._fmu_state_to_bytes({**state, "fmi": {"state": fmi_state, "last_successful_time": last_time}})

    def fmi_state_from_bytes(self, data: bytes) -> tuple[dict, str, float] | None:
        """Inverse of fmi_state_to_bytes, checked whole before anything is made: the format and
        version, the FMI part (a state name, for the front end to check, and a time within
        TIME_LIMIT) and the slave's part (`runner.check_state`: fields, sizes, finite values,
        times). None, with the reason logged, when any of it is wrong."""
        def read() -> tuple[dict, str, float]:
            try:
                state = json.loads(bytes(data).decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as err:
                raise ValueError(f"the bytes are not a serialised state of this FMU ({err})") from None
            self._check_format(state)
            fmi = state.pop("fmi", None)
            check_fields(fmi, {"state": str, "last_successful_time": float}, "the state's FMI part")
            check_time(fmi["last_successful_time"], "the state's last successful time")
            check_fields(state, {"format": str, "version": int, "start_time": float, "data": dict}, "the state")
            check_time(state["start_time"], "the state's start time")
            self.runner.check_state(state["data"])
            return state, fmi["state"], float(fmi["last_successful_time"])
        return self._guard("deSerializeFMUstate", read)

    @staticmethod
    def _fmu_state_to_bytes(state: dict) -> bytes:
        # floats are written with repr, which reads back bit for bit
        return json.dumps(state, allow_nan=True).encode("utf-8")

    @staticmethod
    def _fmu_state_from_bytes(data: bytes) -> dict:
        try:
            return json.loads(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return {"format": "unreadable", "version": None}
