"""Numbers in a model addressed by a dotted path, for FMU parameters and parameter sweeps.

Grammar: `<section>.<entry name>.<field>[.<field>...]`, where a section is one of bodies,
joints, loads, sensors (entries looked up by name) or a top-level field (gravity, solver); a
trailing `[i]` (1-based) picks one item of a list, e.g. `joints.elbow.spring.stiffness`,
`bodies.hub.inertia[3]`, `gravity[3]`.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Optional

from .elements import Model
from .tables import JOINTS, MOTOR

_SECTIONS = ("bodies", "joints", "loads", "sensors")
_STEP = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?$")

# Units of fields that mean one thing wherever they appear.
_FIELD_UNITS = {
    "mass": "kg", "tip_mass": "kg", "length": "m", "width": "m", "height": "m", "diameter": "m",
    "outer_diameter": "m", "thickness": "m", "rest_length": "m", "E": "Pa", "G": "Pa",
    "rho": "kg/m3", "nu": "1", "A": "m2", "Iy": "m4", "Iz": "m4", "J": "m4", "inertia": "kg.m2",
    "tip_inertia": "kg.m2", "rotor_inertia": "kg.m2", "motor_inertia": "kg.m2", "com": "m",
    "position": "m", "gravity": "m/s2", "force": "N", "torque": "N.m",
    "stiffness_proportional": "s", "modal": "1", "voltage": "V",
}
# Joint fields whose unit depends on whether the coordinate is a rotation or a translation.
_JOINT_UNITS = {
    "stiffness": ("N.m/rad", "N/m"), "damping": ("N.m.s/rad", "N.s/m"), "preload": ("rad", "m"),
    "kp": ("N.m/rad", "N/m"), "kd": ("N.m.s/rad", "N.s/m"), "q0": ("rad", "m"),
    "qd0": ("rad/s", "m/s"),
}

# Profile and solver fields.
_OTHER_UNITS = {"frequency": "Hz", "phase": "rad", "t0": "s", "t1": "s", "t_s": "s", "omega_s": "rad/s",
                "step": "s", "max_step": "s", "output_step": "s", "rtol": "1", "atol": "1"}


class PathError(ValueError):
    """A path that does not name a number of the model."""


def _steps(path: str) -> list[tuple[str, Optional[int]]]:
    steps = []
    for part in path.split("."):
        m = _STEP.match(part)
        if m is None:
            raise PathError(f"path {path!r}: {part!r} is not a name or name[i]")
        steps.append((m.group(1), None if m.group(2) is None else int(m.group(2))))
    return steps


def _resolve(model: Model, path: str) -> tuple[Any, str, Optional[int], list[str]]:
    """(object, field name, 1-based index or None, names walked) of the number at `path`."""
    steps = _steps(path)
    obj: Any = model
    walked: list[str] = []
    k = 0
    while k < len(steps):
        name, index = steps[k]
        if obj is model and name in _SECTIONS and index is None:
            entries = getattr(model, name)
            if k + 1 >= len(steps):
                raise PathError(f"path {path!r}: name an entry of {name}")
            entry = steps[k + 1][0]
            found = [e for e in entries if getattr(e, "name", None) == entry]
            if not found:
                known = ", ".join(str(getattr(e, "name", "?")) for e in entries) or "(none)"
                raise PathError(f"path {path!r}: no entry {entry!r} in {name}; known: {known}")
            obj = found[0]
            walked += [name, entry]
            k += 2
            continue
        if not dataclasses.is_dataclass(obj) or name not in {f.name for f in dataclasses.fields(obj)}:
            fields = ", ".join(f.name for f in dataclasses.fields(obj)) if dataclasses.is_dataclass(obj) else ""
            raise PathError(f"path {path!r}: {name!r} is not a field of {'.'.join(walked) or 'the model'}"
                            + (f"; fields: {fields}" if fields else ""))
        value = _value(model, obj, name)
        if k == len(steps) - 1:
            _check_number(path, value, index)
            return obj, name, index, walked + [name]
        if index is not None or value is None:
            raise PathError(f"path {path!r}: {name!r} holds no fields")
        obj = value
        walked.append(name)
        k += 1
    raise PathError(f"path {path!r} is empty")


def _value(model: Model, obj: Any, name: str) -> Any:
    """Field `name` of `obj`; the solver's rtol where the model leaves it to its method, that
    method's default (Model.solver_rtol)."""
    value = getattr(obj, name)
    return model.solver_rtol() if value is None and obj is model.solver and name == "rtol" else value


def _check_number(path: str, value: Any, index: Optional[int]) -> None:
    if index is None:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise PathError(f"path {path!r} holds {value!r}, not a number"
                            + ("; add [i] to pick an item" if isinstance(value, (list, tuple)) else ""))
        return
    if not isinstance(value, (list, tuple)):
        raise PathError(f"path {path!r}: [{index}] indexes {value!r}, which is not a list")
    flat = [v for row in value for v in (row if isinstance(row, (list, tuple)) else (row,))]
    if not 1 <= index <= len(flat):
        raise PathError(f"path {path!r}: index {index} outside 1..{len(flat)}")


def get_value(model: Model, path: str) -> float:
    """The number at `path` [its unit]."""
    obj, name, index, _ = _resolve(model, path)
    value = _value(model, obj, name)
    if index is None:
        return float(value)
    return float(_flat(value)[index - 1])


def set_value(model: Model, path: str, value: float) -> None:
    """Set the number at `path` in place (lists are rebuilt, keeping their shape)."""
    obj, name, index, _ = _resolve(model, path)
    if index is None:
        setattr(obj, name, float(value))
        return
    old = getattr(obj, name)
    flat = _flat(old)
    flat[index - 1] = float(value)
    if old and isinstance(old[0], (list, tuple)):
        n = len(old[0])
        setattr(obj, name, tuple(tuple(flat[i:i + n]) for i in range(0, len(flat), n)))
    else:
        setattr(obj, name, tuple(flat))


def _flat(value: Any) -> list[float]:
    return [float(v) for row in value for v in (row if isinstance(row, (list, tuple)) else (row,))]


def unit_of(model: Model, path: str) -> Optional[str]:
    """The unit of the number at `path` where the field alone or its joint type decides it."""
    _, name, _, walked = _resolve(model, path)
    if name in MOTOR and "motor" in walked:
        return MOTOR[name].unit
    if name in _FIELD_UNITS:
        return _FIELD_UNITS[name]
    if name in _JOINT_UNITS and walked[0] == "joints":
        joint = model.joint(walked[1])
        translational = len(JOINTS[joint.type].lengths) == JOINTS[joint.type].nv
        return _JOINT_UNITS[name][1 if translational else 0]
    if walked[0] == "loads" and name in ("stiffness", "damping"):
        return {"stiffness": "N/m", "damping": "N.s/m"}[name]
    if name in ("value", "q0", "q1", "offset", "amplitude") and walked[0] == "joints":
        kind = JOINTS[model.joint(walked[1]).type]
        return "m" if len(kind.lengths) == kind.nv else "rad"
    return _OTHER_UNITS.get(name)
