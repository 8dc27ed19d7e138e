"""Checks of the arguments of the Python API (simulate, linearize, equilibrium, modes), done up
front so that a bad value fails at once with an error naming the function and the argument,
instead of a hang, a frozen result or a misleading solver message later.

Every check raises ValueError "<function>: <argument> = <value>: expected ...".
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from .model.elements import ATOL_MAX, RTOL_RANGE
from .model.errors import show

# Largest output a run may allocate [bytes]: the sampled states and signals are held in memory.
OUTPUT_BUDGET = 2 * 1024**3
# Most integration steps a run may need before it is refused as impractical (hours of computing).
STEP_BUDGET = 1e8


def _fail(where: str, name: str, value: Any, expected: str) -> ValueError:
    return ValueError(f"{where}: {name} = {show(value)}: expected {expected}")


def number(where: str, name: str, value: Any, kind: str = "finite", unit: str = "") -> float:
    """`value` as a float if it is a real number (not a bool) that is finite and, per `kind`,
    "positive" (> 0) or "non-negative" (>= 0)."""
    unit = f" [{unit}]" if unit else ""
    expected = {"finite": "a finite number", "positive": "a positive finite number",
                "non-negative": "a non-negative finite number"}[kind] + unit
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise _fail(where, name, value, expected)
    value = float(value)
    if not math.isfinite(value) or (kind == "positive" and value <= 0) or (kind == "non-negative" and value < 0):
        raise _fail(where, name, value, expected)
    return value


def within(where: str, name: str, value: Any, low: float, high: float, unit: str = "",
           low_open: bool = False) -> float:
    """`value` as a float if it is a real number (not a bool) in [low, high] ((low, high] with
    `low_open`)."""
    expected = f"a number in {'(' if low_open else '['}{low:g}, {high:g}]" + (f" [{unit}]" if unit else "")
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise _fail(where, name, value, expected)
    v = float(value)
    if not (v > low if low_open else v >= low) or not v <= high:
        raise _fail(where, name, value, expected)
    return v


def tolerances(where: str, rtol: Any, atol: Any) -> None:
    """rtol within RTOL_RANGE and atol (None, or positive up to ATOL_MAX), each optional."""
    if rtol is not None:
        within(where, "rtol", rtol, *RTOL_RANGE)
    if atol is not None:
        within(where, "atol", atol, 0.0, ATOL_MAX, low_open=True)


def optional_number(where: str, name: str, value: Any, kind: str, unit: str = "") -> Optional[float]:
    """None, or `value` checked by `number`."""
    return None if value is None else number(where, name, value, kind, unit)


def integer(where: str, name: str, value: Any, low: int, high: Optional[int] = None, why: str = "") -> int:
    """`value` if it is an integer (not a bool) >= low and, when given, <= high (`why` says
    where that bound comes from)."""
    expected = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}{why}"
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low or \
            (high is not None and value > high):
        raise _fail(where, name, value, expected)
    return int(value)


def vector(where: str, name: str, value: Any, size: int, what: str) -> np.ndarray:
    """`value` as a float array of `size` finite entries (`what` says what they are)."""
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise _fail(where, name, value, f"{size} numbers ({what})") from None
    if array.ndim != 1 or array.size != size:
        raise ValueError(f"{where}: {name} has shape {array.shape}: expected {size} numbers ({what})")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(f"{where}: {name}[{bad[0]}] = {array[bad[0]]}: expected finite numbers ({what})")
    return array


def input_values(where: str, values: Any, known: list[str], t: Optional[float] = None) -> Mapping[str, float]:
    """A {input name: finite number} mapping, names among `known` (the model's inputs); `t` [s]
    is the time the values were asked for, when they come from a function of time."""
    at = "" if t is None else f" (at t = {t:.6g} s)"
    if not isinstance(values, Mapping):
        raise ValueError(f"{where}: inputs{at} = {show(values)}: expected a mapping {{input name: value}}")
    checked = {}
    for key, val in values.items():
        if key not in known:
            raise KeyError(f"{where}: unknown input {key!r}; the model's inputs are: {', '.join(known) or '(none)'}")
        checked[key] = number(where, f"inputs[{key!r}]{at}", val)
    return checked


def output_size(where: str, samples: float, width: int, budget: float = OUTPUT_BUDGET) -> None:
    """Refuse a result of `samples` rows of `width` values when it would exceed `budget` bytes
    (states and signals: 16 bytes per value, as they are held twice while the result is built)."""
    need = samples * width * 16.0
    if need > budget:
        raise ValueError(f"{where}: the result would hold {samples:.3g} samples of {width} values, about "
                         f"{_bytes(need)}, beyond the budget of {_bytes(budget)}; use a larger output_step "
                         "or a shorter t_end")


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"
