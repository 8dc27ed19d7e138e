"""Checks of the settings: the solver and the FMU export with its parameters."""

from __future__ import annotations

import math
import re

from ..elements import ATOL_MAX, METHODS, RTOL_RANGE, Export, Parameter, Solver
from ..errors import Loc, show
from ..paths import PathError, get_value, unit_of
from .base import Checks, choices, num

_FMI_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*$")


class SettingsChecks(Checks):
    """The solver and the FMU export settings."""

    def solver(self, loc: Loc, s: Solver) -> None:
        if s.method is not None:
            self.choice(loc + ("method",), s.method, METHODS)
        self.choice(loc + ("formulation",), s.formulation, choices(Solver, "formulation"))
        self.choice(loc + ("dynamics",), s.dynamics, choices(Solver, "dynamics"))
        self.numbers(loc, s, ("step", "max_step", "output_step"), "positive")
        if s.rtol is not None and self.number(loc + ("rtol",), s.rtol, "positive") \
                and not RTOL_RANGE[0] <= s.rtol <= RTOL_RANGE[1]:
            self.add(loc + ("rtol",), f"expected a tolerance from {RTOL_RANGE[0]:g} (what double precision "
                                      f"can meet) to {RTOL_RANGE[1]:g} (100 %), got {show(s.rtol)}")
        if s.atol is not None and self.number(loc + ("atol",), s.atol, "positive") and s.atol > ATOL_MAX:
            self.add(loc + ("atol",), f"expected at most {ATOL_MAX:g} (in the units of each state: rad, m, "
                                      f"rad/s, m/s), got {show(s.atol)}")

    def export(self, loc: Loc, e: Export) -> None:
        model_sound = not self.report.has_issues
        self.number(loc + ("stop_time",), e.stop_time, "positive")
        if e.step_size is not None:
            self.number(loc + ("step_size",), e.step_size, "positive")
        params = self.entries(loc + ("parameters",), e.parameters, Parameter)
        self.names(loc + ("parameters",), params, "parameter")
        for i, p in params:
            self.parameter(loc + ("parameters", i), p, model_sound)

    def parameter(self, loc: Loc, p: Parameter, model_sound: bool) -> None:
        if isinstance(p.name, str) and not _FMI_NAME.match(p.name):
            self.add(loc + ("name",), f"{p.name!r} is not a valid variable name (letters, digits, "
                                      "_ and dots, starting with a letter)")
        if not isinstance(p.path, str) or not model_sound:
            return
        try:
            value = get_value(self.model, p.path)
            unit = unit_of(self.model, p.path)
        except PathError as err:
            self.add(loc + ("path",), str(err))
            return
        if p.unit is None and unit is None:
            self.add(loc + ("unit",), f"give the unit of {p.path!r}: it cannot be told from the field")
        low = -math.inf if p.min is None else p.min
        high = math.inf if p.max is None else p.max
        if low > high:
            self.add(loc + ("max",), f"max {num(high)} is below min {num(low)}")
        elif not low <= value <= high:
            self.add(loc, f"the model's value {num(value)} of {p.path!r} is outside "
                          f"[{num(low)}, {num(high)}]")
