"""The generic checks every element's checks build on: lists of entries, names, choices,
numbers, vectors, unit axes and references to bodies and markers. Each check reports what is
wrong at its location (the YAML layout, errors.py) and says whether the value passed."""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, Iterable, Optional, Sequence, get_args, get_type_hints

import numpy as np

from ..elements import GROUND, Body, Marker, Model
from ..errors import Loc, Report, show, unknown

UNIT_TOL = 1e-6      # |axis| within this of 1; |axis . axis2|; |R^T R - I|
_NUMBER_KINDS = {"finite": ("a finite number", lambda v: True),
                 "positive": ("a positive finite number", lambda v: v > 0),
                 "non-negative": ("a non-negative finite number", lambda v: v >= 0)}


def choices(cls: type, name: str) -> tuple[str, ...]:
    """The values of a Literal-typed dataclass field."""
    return get_args(get_type_hints(cls)[name])


def is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def accepts(value: Any, kind: str) -> bool:
    """`value` is a finite real number of the `kind` in _NUMBER_KINDS."""
    return is_real(value) and math.isfinite(value) and _NUMBER_KINDS[kind][1](value)


def _is_default(obj: Any, f: dataclasses.Field) -> bool:
    default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    try:  # compares lists, tuples and arrays by value
        return bool(np.array_equal(getattr(obj, f.name), default))
    except (TypeError, ValueError):
        return False


def names_of(entries: Any, cls: type) -> Optional[list[str]]:
    """Names of a list of `cls` entries; None if the list or an entry is invalid (then
    references to them are not checked: the invalid entry is reported instead)."""
    if not isinstance(entries, (list, tuple)) or not all(
            isinstance(e, cls) and isinstance(e.name, str) for e in entries):
        return None
    return [e.name for e in entries]


def num(value: float) -> str:
    return f"{value:.6g}"


class Checks:
    """One pass over a model (`model`, reporting to `report`): the generic checks. The element
    checks (bodies.py, joints.py, loads.py, settings.py) add a method per kind of entry, each
    checking one entry at location `loc`; validate.py puts them together."""

    def __init__(self, model: Model, report: Report) -> None:
        self.model = model
        self.add = report.add
        self.report = report
        # Marker names per body name (first body wins for duplicated names), the ground first;
        # references are only reported unknown when all names are known.
        self.markers: dict[str, Optional[list[str]]] = {GROUND: names_of(model.ground_markers, Marker)}
        self.all_bodies_known = names_of(model.bodies, Body) is not None
        for body in model.bodies if self.all_bodies_known else ():
            self.markers.setdefault(body.name, names_of(body.markers, Marker))

    def entries(self, loc: Loc, items: Any, cls: type) -> list[tuple[int, Any]]:
        """(index, item) of a list field whose items are `cls`, reporting other items."""
        if not isinstance(items, (list, tuple)):
            self.add(loc, f"expected a list of {cls.__name__}, got {show(items)}")
            return []
        for i, item in enumerate(items):
            if not isinstance(item, cls):
                self.add(loc + (i,), f"expected a {cls.__name__}, got {show(item)}")
        return [(i, item) for i, item in enumerate(items) if isinstance(item, cls)]

    def instance(self, loc: Loc, value: Any, cls: type, need: str) -> bool:
        """True if `value` is a `cls`; else report it missing (None) or of the wrong type."""
        if isinstance(value, cls):
            return True
        self.add(loc, f"missing: {need}" if value is None
                 else f"expected a {cls.__name__}, got {show(value)}")
        return False

    def names(self, loc: Loc, entries: list[tuple[int, Any]], kind: str,
              required: bool = True) -> None:
        """Names are non-empty texts (or empty if not `required`) and unique."""
        first: dict[str, int] = {}
        for i, entry in entries:
            name = entry.name
            if not isinstance(name, str) or (required and not name):
                self.add(loc + (i, "name"), f"expected a non-empty name, got {show(name)}")
            elif name and name in first:
                self.add(loc + (i, "name"), f"duplicate {kind} name {name!r}; "
                                            f"the first is {loc[-1]}[{first[name]}]")
            elif name:
                first[name] = i

    def choice(self, loc: Loc, value: Any, choices: Iterable[str]) -> bool:
        if isinstance(value, str) and value in choices:
            return True
        self.add(loc, unknown(repr(value), value, choices, "valid choices"))
        return False

    def unused(self, loc: Loc, obj: Any, used: Iterable[str], what: str) -> None:
        """Fields of `obj` that `what` does not use must keep their defaults."""
        used = tuple(used)
        for f in dataclasses.fields(obj):
            if f.name not in (*used, "name", "type", "shape", "markers") and not _is_default(obj, f):
                self.add(loc + (f.name,), f"not used by {what} (which takes "
                                          f"{', '.join(used) or 'no parameters'})")

    def number(self, loc: Loc, value: Any, kind: str = "finite") -> bool:
        if accepts(value, kind):
            return True
        self.add(loc, f"expected {_NUMBER_KINDS[kind][0]}, got {show(value)}")
        return False

    def numbers(self, loc: Loc, obj: Any, names: Iterable[str], kind: str = "finite") -> bool:
        """number() of each field `names` of `obj` (every one reported); True if all pass."""
        return all([self.number(loc + (name,), getattr(obj, name), kind) for name in names])

    def integer(self, loc: Loc, value: Any, low: int, high: Optional[int] = None,
                why: str = "") -> bool:
        if (isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low
                and (high is None or value <= high)):
            return True
        expected = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"
        self.add(loc, f"expected {expected}{why}, got {show(value)}")
        return False

    def vector(self, loc: Loc, value: Any,
               sizes: Optional[Sequence[int]] = (3,)) -> Optional[np.ndarray]:
        """`value` as a finite 1-D array with one of the allowed sizes (None: any), else None
        (reported)."""
        try:
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            array = np.empty((0, 0))
        if array.ndim != 1 or (sizes is not None and array.size not in sizes):
            length = "" if sizes is None else f" of length {' or '.join(map(str, sizes))}"
            self.add(loc, f"expected a list of numbers{length}, got {show(value)}")
            return None
        if not np.all(np.isfinite(array)):
            self.add(loc, f"expected finite numbers, got {show(value)}")
            return None
        return array

    def unit_axis(self, loc: Loc, value: Any) -> Optional[np.ndarray]:
        axis = self.vector(loc, value)
        if axis is None:
            return None
        with np.errstate(over="ignore"):  # a huge component: norm inf, reported below
            norm = float(np.linalg.norm(axis))
        if abs(norm - 1.0) > UNIT_TOL:
            self.add(loc, f"expected a unit vector (norm 1 within {UNIT_TOL:g}), got {show(value)} "
                          f"with norm {num(norm)}")
            return None
        return axis

    def body_ref(self, loc: Loc, name: Any) -> bool:
        """`name` is the ground or a body."""
        if isinstance(name, str) and name in self.markers:
            return True
        if self.all_bodies_known:
            self.add(loc, unknown(f"body {name!r}", name, self.markers, "known bodies"))
        return False

    def marker_ref(self, loc: Loc, body: Any, name: Any) -> None:
        """`name` is a marker of the existing body `body`."""
        known = self.markers[body]
        if known is not None and name not in known:
            self.add(loc, unknown(f"marker {name!r} on body {body!r}", name, known, "known markers"))

    def body_marker_ref(self, loc: Loc, body: Any, marker: Any) -> None:
        """Reference to a marker given as separate body and marker fields of entry `loc`."""
        if self.body_ref(loc + ("body",), body):
            self.marker_ref(loc + ("marker",), body, marker)
