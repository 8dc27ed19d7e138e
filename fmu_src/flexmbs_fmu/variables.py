"""One FMI scalar variable, as every flexmbs FMU (plant, motor, controller, trajectory)
declares it. Kept free of the multibody core so that the small FMUs load fast."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Optional, Union


@dataclass(frozen=True)
class Variable:
    """One FMI scalar variable.

    type: Real or String; causality: input, parameter, calculatedParameter or output;
    variability: continuous, fixed or tunable; slot: index of its value (inputs: in the input vector, outputs: in the signal vector
    y of flexmbs.signals, parameters: in Interface.parameters); depends: names of the inputs an
    output depends on within one instant (direct feedthrough); choices: the values a String
    parameter accepts."""

    name: str
    type: str
    causality: str
    variability: str
    description: str
    slot: int
    unit: str = ""
    start: Union[float, str, None] = None
    min: Optional[float] = None
    max: Optional[float] = None
    depends: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()


def digest(variables: "list[Variable] | tuple[Variable, ...]") -> str:
    """A digest of names, types, causalities, variabilities and units in order: same interface,
    same digest."""
    h = hashlib.sha256()
    for v in variables:
        h.update(f"{v.name}|{v.type}|{v.causality}|{v.variability}|{v.unit}\n".encode())
    return h.hexdigest()


def out_of_range(value: float, lo: Optional[float], hi: Optional[float]) -> Optional[str]:
    """Why `value` is not one a parameter with bounds [lo, hi] (None: unbounded) takes, or
    None when it is."""
    bounds = f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
    if not math.isfinite(value):
        return f"is not finite; it takes a value in {bounds}"
    if lo is not None and value < lo:
        return f"is below its minimum {lo}; it takes a value in {bounds}"
    if hi is not None and value > hi:
        return f"is above its maximum {hi}; it takes a value in {bounds}"
    return None
