"""One FMI scalar variable, as every flexmbs FMU (plant, motor, controller, trajectory)
declares it. Kept free of the multibody core so that the small FMUs load fast."""

from __future__ import annotations

import hashlib
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
