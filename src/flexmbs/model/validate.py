"""Checks of a Model, built in Python or loaded from YAML.

Every problem is reported, each naming the entry and field, what is wrong and what was
expected (with the valid choices where there is a finite set), and raised together as one
ModelError. Locations follow the YAML layout (see errors.py).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import re
from typing import Any, Iterable, Optional, Sequence, get_args, get_type_hints

import numpy as np

from .elements import (ATOL_MAX, GROUND, RTOL_RANGE, SUPERELEMENT_FILES, Body, Damping, Drive, Export, Joint, Load, Loops,
                       Marker, Material, Model, Parameter, Profile, Section, Sensor, Solver, Spring, inertia_matrix)
from .errors import Loc, Report, show, unknown
from .paths import PathError, get_value, unit_of
from .tables import CUT_TYPES, JOINTS, PROFILES, SECTIONS, section_properties

UNIT_TOL = 1e-6      # |axis| within this of 1; |axis . axis2|; |R^T R - I|
INERTIA_TOL = 1e-9   # relative, for symmetry and the triangle inequality

# Fields that apply to each variant (all others must keep their defaults).
_BODY_FIELDS = {
    "rigid": ("mass", "com", "inertia"),
    "beam": ("length", "elements", "modes", "material", "section", "tip_mass", "tip_inertia",
             "rotary_inertia", "geometric_stiffening", "segments", "static_modes", "interface_modes", "damping"),
    "superelement": (*SUPERELEMENT_FILES, "dofs_per_node", "reference_nodes", "modes", "interface_modes", "damping"),
}
_MARKER_FIELDS = {"rigid": ("position", "rotation"), "beam": ("x", "node", "rotation"),
                  "superelement": ("node", "rotation")}
_DRIVE_FIELDS = {"passive": (), "torque": ("torque",), "motion": ("profile",),
                 "servo": ("profile", "kp", "kd", "motor_inertia")}
_LOAD_FIELDS = {"point_force": ("body", "marker", "force", "torque", "frame", "input"),
                "spring_damper": ("marker_a", "marker_b", "stiffness", "damping", "rest_length"),
                "elastic_rod": ("marker_a", "marker_b", "length", "material", "section", "damping")}
_SENSOR_FIELDS = {"marker": ("body", "marker"), "strain_gauge": ("body", "x", "y", "z", "direction"),
                  "section_force": ("body", "x")}
_INERTIA_FORMS = "[Ixx, Iyy, Izz], [Ixx, Iyy, Izz, Ixy, Ixz, Iyz] or a 3x3 matrix"
# Per beam segment: 500 elements are 3006 DOFs (dense matrices of 72 MB, an eigenproblem of about a
# minute); the FE mesh only has to resolve the kept modes.
MAX_SEGMENT_ELEMENTS = 500
MAX_SEGMENTS = 200
# Smallest derived beam constant accepted: below it products such as (E I)^2 or the mass matrix
# entries underflow in double precision.
_TINY = 1e-150
_NUMBER_KINDS = {"finite": ("a finite number", lambda v: True),
                 "positive": ("a positive finite number", lambda v: v > 0),
                 "non-negative": ("a non-negative finite number", lambda v: v >= 0)}


def validate(model: Model) -> None:
    """Raise ModelError listing every problem of `model`; return None if it is valid."""
    report = Report(model.source)
    check_model(model, report)
    report.raise_if_any(names={**vars(model), "ground": {"markers": model.ground_markers}})


def check_model(model: Model, report: Report) -> None:
    """Add every problem of `model` to `report` (the loader shares its report)."""
    _Checker(model, report).run()


def _choices(cls: type, name: str) -> tuple[str, ...]:
    """The values of a Literal-typed dataclass field."""
    return get_args(get_type_hints(cls)[name])


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _accepts(value: Any, kind: str) -> bool:
    """`value` is a finite real number of the `kind` in _NUMBER_KINDS."""
    return _is_real(value) and math.isfinite(value) and _NUMBER_KINDS[kind][1](value)


def _is_default(obj: Any, f: dataclasses.Field) -> bool:
    default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    try:  # compares lists, tuples and arrays by value
        return bool(np.array_equal(getattr(obj, f.name), default))
    except (TypeError, ValueError):
        return False


def _names(entries: Any, cls: type) -> Optional[list[str]]:
    """Names of a list of `cls` entries; None if the list or an entry is invalid (then
    references to them are not checked: the invalid entry is reported instead)."""
    if not isinstance(entries, (list, tuple)) or not all(
            isinstance(e, cls) and isinstance(e.name, str) for e in entries):
        return None
    return [e.name for e in entries]


def _num(value: float) -> str:
    return f"{value:.6g}"


_FMI_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*$")


class _Checker:
    """One pass over a model; each method checks one kind of entry at location `loc`."""

    def __init__(self, model: Model, report: Report) -> None:
        self.model = model
        self.add = report.add
        self.report = report
        # Marker names per body name (first body wins for duplicated names), the ground first;
        # references are only reported unknown when all names are known.
        self.markers: dict[str, Optional[list[str]]] = {GROUND: _names(model.ground_markers, Marker)}
        self.all_bodies_known = _names(model.bodies, Body) is not None
        for body in model.bodies if self.all_bodies_known else ():
            self.markers.setdefault(body.name, _names(body.markers, Marker))

    # ------------------------------------------------------------------ generic helpers

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
        if _accepts(value, kind):
            return True
        self.add(loc, f"expected {_NUMBER_KINDS[kind][0]}, got {show(value)}")
        return False

    def numbers(self, loc: Loc, obj: Any, names: Iterable[str], kind: str = "finite") -> None:
        for name in names:
            self.number(loc + (name,), getattr(obj, name), kind)

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
                          f"with norm {_num(norm)}")
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

    # ------------------------------------------------------------------ the model

    def run(self) -> None:
        m = self.model
        self.vector(("gravity",), m.gravity)
        self.markers_of(("ground", "markers"), m.ground_markers, None)
        bodies = self.entries(("bodies",), m.bodies, Body)
        self.names(("bodies",), bodies, "body")
        for i, body in bodies:
            self.body(("bodies", i), body)
        joints = self.entries(("joints",), m.joints, Joint)
        self.names(("joints",), joints, "joint")
        for i, joint in joints:
            self.joint(("joints", i), joint)
        loads = self.entries(("loads",), m.loads, Load)
        self.names(("loads",), loads, "load", required=False)
        for i, load in loads:
            self.load(("loads", i), load)
        sensors = self.entries(("sensors",), m.sensors, Sensor)
        self.names(("sensors",), sensors, "sensor")
        for i, sensor in sensors:
            self.sensor(("sensors", i), sensor)
        if self.instance(("solver",), m.solver, Solver, "solver settings"):
            self.solver(("solver",), m.solver)
        self.tree(bodies, joints)
        if self.instance(("loops",), m.loops, Loops, "loops (cuts, independent)"):
            self.loops(("loops",), m.loops, joints)
        # parameter paths are resolved against the rest of the model, so only once it is sound
        if self.instance(("fmu",), m.fmu, Export, "FMU export settings"):
            self.export(("fmu",), m.fmu)

    # ------------------------------------------------------------------ bodies and markers

    def body(self, loc: Loc, b: Body) -> None:
        if b.name == GROUND:
            self.add(loc + ("name",), f"the name {GROUND!r} is reserved for the fixed ground; "
                                      "choose another name")
        if not self.choice(loc + ("type",), b.type, _BODY_FIELDS):
            return
        self.unused(loc, b, _BODY_FIELDS[b.type], f"a {b.type} body")
        if b.type == "rigid":
            if b.mass is None:
                self.add(loc + ("mass",), "missing: a rigid body needs a mass [kg]")
            else:
                self.number(loc + ("mass",), b.mass, "positive")
            self.vector(loc + ("com",), b.com)
            self.inertia(loc + ("inertia",), b.inertia)
        elif b.type == "beam":
            self.beam(loc, b)
        else:
            self.superelement(loc, b)
        if b.type != "rigid" and self.instance(loc + ("damping",), b.damping, Damping, "damping"):
            self.damping(loc + ("damping",), b.damping, b.modes)
        self.markers_of(loc + ("markers",), b.markers, b)

    def inertia(self, loc: Loc, spec: Any) -> None:
        """A symmetric positive definite tensor whose principal moments obey the triangle
        inequality (I1 + I2 >= I3)."""
        if spec is None:
            self.add(loc, f"missing: give {_INERTIA_FORMS} [kg m^2]")
            return
        try:
            tensor = inertia_matrix(spec)
        except (TypeError, ValueError):
            tensor = None
        if tensor is None or not np.all(np.isfinite(tensor)):
            self.add(loc, f"expected finite {_INERTIA_FORMS}, got {show(spec)}")
            return
        scale = float(np.max(np.abs(tensor))) or 1.0
        if np.max(np.abs(tensor - tensor.T)) > INERTIA_TOL * scale:
            self.add(loc, "the 3x3 inertia matrix is not symmetric")
            return
        moments = np.linalg.eigvalsh(tensor)
        shown = ", ".join(_num(v) for v in moments)
        if moments[0] <= 0:
            self.add(loc, f"not positive definite: principal moments {shown}; all must be > 0")
        elif moments[0] + moments[1] < moments[2] - INERTIA_TOL * scale:
            self.add(loc, f"principal moments {shown} violate the triangle inequality "
                          f"I1 + I2 >= I3 ({_num(moments[0] + moments[1])} < {_num(moments[2])})")

    def beam(self, loc: Loc, b: Body) -> None:
        self.number(loc + ("length",), b.length, "positive")
        if self.integer(loc + ("elements",), b.elements, 1):
            self.integer(loc + ("modes",), b.modes, 1, 6 * b.elements,
                         f" (6 DOFs per element x {b.elements} elements)")
            if self.integer(loc + ("segments",), b.segments, 1) and b.elements % b.segments:
                self.add(loc + ("segments",), f"elements ({b.elements}) must be divisible by "
                                              f"segments ({b.segments})")
        if self.instance(loc + ("material",), b.material, Material,
                         "a beam needs a material {E, rho, G or nu}"):
            self.material(loc + ("material",), b.material)
        if self.instance(loc + ("section",), b.section, Section, "a beam needs a cross-section"):
            self.section(loc + ("section",), b.section)
        self.number(loc + ("tip_mass",), b.tip_mass, "non-negative")
        if b.tip_inertia is not None:
            self.inertia(loc + ("tip_inertia",), b.tip_inertia)
        self.beam_size(loc, b)

    def beam_size(self, loc: Loc, b: Body) -> None:
        """What the computation must hold: the section constants, the mass and the stiffnesses
        are finite and non-zero in double precision, and the finite-element eigenproblem of one
        segment fits the memory budget (dense matrices of 6 (elements + 1) DOFs)."""
        if self.report.has_issues_at(loc):
            return  # a field is already reported: the derived values mean nothing
        per = b.elements // b.segments
        dofs = 6 * (per + 1)
        if per > MAX_SEGMENT_ELEMENTS:
            need = 4 * 8.0 * dofs ** 2
            self.add(loc + ("elements",), f"{per} elements per segment give {dofs} DOFs: the dense "
                                          f"finite-element matrices and their eigenproblem need about "
                                          f"{need / 2**30:.3g} GiB and long minutes to hours; at most "
                                          f"{MAX_SEGMENT_ELEMENTS} (10 to 50 resolve the kept modes well)")
            return
        if b.segments > MAX_SEGMENTS:
            self.add(loc + ("segments",), f"expected at most {MAX_SEGMENTS} segments (each a body with its "
                                          f"own eigenproblem), got {b.segments}")
            return
        try:
            with np.errstate(over="raise", under="ignore", invalid="raise"):
                props = section_properties(b.section)
                mat = b.material
                derived = {"area A": props.A, "second moment Iy": props.Iy, "second moment Iz": props.Iz,
                           "torsion constant J": props.J, "mass rho A L": mat.rho * props.A * b.length,
                           "bending stiffness E Iy": mat.E * props.Iy, "bending stiffness E Iz": mat.E * props.Iz,
                           "axial stiffness E A": mat.E * props.A, "torsion stiffness G J": mat.shear_modulus * props.J,
                           "rotary inertia rho (Iy + Iz) L": mat.rho * props.Ip * b.length}
        except (OverflowError, FloatingPointError, ValueError, ZeroDivisionError) as err:
            self.add(loc + ("section",), f"the section's properties cannot be computed in double precision "
                                         f"({err}); check the dimensions and units")
            return
        bad = {name: v for name, v in derived.items() if not (math.isfinite(v) and v >= _TINY)}
        if bad:
            shown = ", ".join(f"{name} = {v:.3g}" for name, v in bad.items())
            self.add(loc, f"the beam's {shown} {'is' if len(bad) == 1 else 'are'} beyond what double "
                          f"precision holds (finite, above {_TINY:g}); check the dimensions and units")

    def material(self, loc: Loc, mat: Material) -> None:
        self.numbers(loc, mat, ("E", "rho"), "positive")
        if mat.G is not None and mat.nu is not None:
            self.add(loc + ("nu",), "give either G or nu, not both")
        elif mat.G is not None:
            self.number(loc + ("G",), mat.G, "positive")
        elif mat.nu is not None and not (_is_real(mat.nu) and -1.0 < mat.nu < 0.5):
            self.add(loc + ("nu",), f"expected Poisson's ratio in (-1, 0.5), got {show(mat.nu)}")

    def section(self, loc: Loc, s: Section) -> None:
        if not self.choice(loc + ("shape",), s.shape, SECTIONS):
            return
        dims = SECTIONS[s.shape].fields
        self.unused(loc, s, dims, f"a {s.shape} section")
        ok = all([self.number(loc + (name,), getattr(s, name), "positive") for name in dims])
        if ok and s.shape in ("tube", "box_tube"):
            outer = s.outer_diameter if s.shape == "tube" else min(s.width, s.height)
            side = "outer_diameter" if s.shape == "tube" else "min(width, height)"
            if s.thickness >= outer / 2:
                self.add(loc + ("thickness",), f"thickness {_num(s.thickness)} is too large: must "
                                               f"be less than {side}/2 = {_num(outer / 2)}")

    def superelement(self, loc: Loc, b: Body) -> None:
        given = [name for name in SUPERELEMENT_FILES if getattr(b, name) is not None]
        if given not in (["file"], list(SUPERELEMENT_FILES[1:])):
            self.add(loc + ("file",), f"give either file (.npz with M, K, nodes) or all of "
                                      f"{', '.join(SUPERELEMENT_FILES[1:])}; got "
                                      f"{', '.join(given) or 'none'}")
        for name in given:
            path = getattr(b, name)
            if not isinstance(path, (str, os.PathLike)):
                self.add(loc + (name,), f"expected a file path, got {show(path)}")
            elif not os.path.exists(path):
                self.add(loc + (name,), f"file not found: tried {os.path.abspath(path)}")
            elif not os.path.isfile(path):
                self.add(loc + (name,), f"not a regular file (a device, FIFO or folder): {os.path.abspath(path)}")
        self.integer(loc + ("modes",), b.modes, 1)
        self.integer(loc + ("dofs_per_node",), b.dofs_per_node, 1)
        if isinstance(b.reference_nodes, (list, tuple)):
            for i, node in enumerate(b.reference_nodes):
                self.integer(loc + ("reference_nodes", i), node, 0)
        else:
            self.add(loc + ("reference_nodes",), f"expected a list of node indices, got "
                                                 f"{show(b.reference_nodes)}")

    def damping(self, loc: Loc, d: Damping, modes: Any) -> None:
        self.number(loc + ("stiffness_proportional",), d.stiffness_proportional, "non-negative")
        ratios = self.vector(loc + ("modal",), d.modal, None)
        if ratios is not None and len(ratios) not in (0, 1, modes):
            self.add(loc + ("modal",), f"expected 1 damping ratio or one per mode ({modes}), "
                                       f"got {len(ratios)}")
        elif ratios is not None and not np.all((ratios >= 0) & (ratios < 10)):
            self.add(loc + ("modal",), f"expected damping ratios in [0, 10), got {show(d.modal)}")

    def markers_of(self, loc: Loc, markers: Any, body: Optional[Body]) -> None:
        """Markers of a body (None: the ground). The ground and rigid bodies place them by
        position, beams by x or node, superelements by node."""
        kind = "rigid" if body is None else body.type
        entries = self.entries(loc, markers, Marker)
        self.names(loc, entries, "marker")
        for i, marker in entries:
            at = loc + (i,)
            self.unused(at, marker, _MARKER_FIELDS[kind],
                        "a ground marker" if body is None else f"a marker on a {kind} body")
            if kind == "rigid":
                self.vector(at + ("position",), marker.position)
            elif kind == "superelement" and marker.node is None:
                self.add(at + ("node",), "missing: a superelement marker needs node (FE node index)")
            elif kind == "superelement":
                self.integer(at + ("node",), marker.node, 0)
            else:
                self.beam_station(at, marker, body)
            if marker.rotation is not None:
                self.rotation(at + ("rotation",), marker.rotation)

    def beam_station(self, loc: Loc, marker: Marker, beam: Body) -> None:
        """A beam marker sits at x in [0, length] or at a node in [0, elements]."""
        if marker.x is None and marker.node is None:
            self.add(loc + ("x",), "missing: a beam marker needs x (station [m]) or node")
        elif marker.x is not None and marker.node is not None:
            self.add(loc + ("node",), "give either x or node, not both")
        elif marker.node is not None:
            known = isinstance(beam.elements, int) and beam.elements >= 1
            self.integer(loc + ("node",), marker.node, 0, beam.elements if known else None,
                         f" (the nodes of {beam.elements} elements)" if known else "")
        elif (self.number(loc + ("x",), marker.x) and _accepts(beam.length, "positive")
              and not 0.0 <= marker.x <= beam.length):
            self.add(loc + ("x",), f"x = {_num(marker.x)} is outside the beam: expected "
                                   f"0 <= x <= length = {_num(beam.length)}")

    def rotation(self, loc: Loc, spec: Any) -> None:
        """A proper orthonormal 3x3 matrix, or {axis: non-zero vector, angle: degrees}."""
        if isinstance(spec, dict):
            if set(spec) != {"axis", "angle"}:
                self.add(loc, f"expected keys axis and angle, got {', '.join(map(str, spec))}")
                return
            axis = self.vector(loc + ("axis",), spec["axis"])
            if axis is not None and not np.any(axis):
                self.add(loc + ("axis",), "the rotation axis is zero; expected a non-zero vector")
            self.number(loc + ("angle",), spec["angle"])
            return
        try:
            matrix = np.asarray(spec, dtype=float)
        except (TypeError, ValueError):
            matrix = np.empty(0)
        if matrix.shape != (3, 3) or not np.all(np.isfinite(matrix)):
            self.add(loc, f"expected a finite 3x3 matrix or {{axis, angle}}, got {show(spec)}")
            return
        error = float(np.max(np.abs(matrix.T @ matrix - np.eye(3))))
        if error > UNIT_TOL:
            self.add(loc, f"not orthonormal: max |R^T R - I| = {_num(error)} (tolerance {UNIT_TOL:g})")
        elif np.linalg.det(matrix) < 0:
            self.add(loc, "determinant is -1: a reflection, expected a proper rotation (det +1)")

    # ------------------------------------------------------------------ joints

    def joint(self, loc: Loc, j: Joint) -> None:
        for side in ("parent", "child"):
            body = getattr(j, side)
            if side == "child" and body == GROUND:
                self.add(loc + (side,), "the ground cannot be a child: it is fixed "
                                        "(make it the parent)")
            elif self.body_ref(loc + (side,), body):
                self.marker_ref(loc + (side + "_marker",), body, getattr(j, side + "_marker"))
        if not self.choice(loc + ("type",), j.type, JOINTS):
            return
        kind = JOINTS[j.type]
        axes = [self.unit_axis(loc + (name,), getattr(j, name)) for name in kind.axes]
        if len(axes) == 2 and axes[0] is not None and axes[1] is not None:
            dot = float(axes[0] @ axes[1])
            if abs(dot) > UNIT_TOL:
                self.add(loc + ("axis2",), f"expected axis2 perpendicular to axis, got axis . axis2 = "
                                           f"{_num(dot)}")
        for name, forms in (("q0", kind.q0_forms), ("qd0", {kind.nv: ""})):
            values = self.vector(loc + (name,), getattr(j, name), None)
            if values is not None and len(values) not in (0, *forms):
                lengths = " or ".join(f"{n} ({what})" if what else str(n) for n, what in forms.items())
                self.add(loc + (name,), f"expected length {lengths} for a {j.type} joint, got "
                                        f"length {len(values)}: {show(getattr(j, name))}")
            elif (values is not None and name == "q0" and len(values) in (4, 7)
                  and not np.any(values[-4:])):
                self.add(loc + (name,), "the quaternion is zero; expected a non-zero [w, x, y, z]")
        if j.spring is not None and self.instance(loc + ("spring",), j.spring, Spring, "spring"):
            self.numbers(loc + ("spring",), j.spring, ("stiffness", "damping"), "non-negative")
            self.number(loc + ("spring", "preload"), j.spring.preload)
        self.number(loc + ("rotor_inertia",), j.rotor_inertia, "non-negative")
        if kind.quaternion is not None:
            # their rotations are quaternions, not coordinates a spring or rotor could act on
            if j.spring is not None:
                self.add(loc + ("spring",), f"a {j.type} joint takes no spring; use a spring_damper load "
                                            f"between markers, or revolute/universal joints")
            if isinstance(j.rotor_inertia, (int, float)) and j.rotor_inertia != 0:
                self.add(loc + ("rotor_inertia",), f"a {j.type} joint takes no rotor_inertia; put the "
                                                   f"inertia into the child body")
        if self.instance(loc + ("drive",), j.drive, Drive, "drive"):
            self.drive(loc + ("drive",), j.drive, j.type)

    def loops(self, loc: Loc, lp: Loops, joints: list[tuple[int, Joint]]) -> None:
        cuts = self.entries(loc + ("cuts",), lp.cuts, Joint)
        self.names(loc + ("cuts",), cuts, "cut joint")
        tree = {j.name: j for _, j in joints}
        for i, cut in cuts:
            at = loc + ("cuts", i)
            if cut.name in tree:
                self.add(at + ("name",), f"the name {cut.name!r} is taken by a joint of the tree")
            for side in ("parent", "child"):
                if self.body_ref(at + (side,), getattr(cut, side)):
                    self.marker_ref(at + (side + "_marker",), getattr(cut, side), getattr(cut, side + "_marker"))
            if not self.choice(at + ("type",), cut.type, CUT_TYPES):
                continue
            axes = [self.unit_axis(at + (name,), getattr(cut, name)) for name in JOINTS[cut.type].cut_axes]
            if len(axes) == 2 and all(a is not None for a in axes) and abs(float(axes[0] @ axes[1])) > UNIT_TOL:
                self.add(at + ("axis2",), f"expected axis2 (the cross arm fixed in the child marker frame) "
                                          f"perpendicular to axis, got axis . axis2 = {_num(float(axes[0] @ axes[1]))}")
            if cut.parent == cut.child:
                self.add(at + ("child",), f"a cut joint joins two different bodies; both sides are {cut.parent!r}")
            for key in ("q0", "qd0", "spring", "rotor_inertia"):
                if getattr(cut, key) not in ((), None, 0.0):
                    self.add(at + (key,), f"a cut joint has no coordinates, so no {key}; its motion follows "
                                          "from the tree joints")
            if cut.drive.type != "passive":
                self.add(at + ("drive",), "a cut joint cannot be driven; drive a joint of the tree")
        for k, name in enumerate(lp.independent or ()):
            if name not in tree:
                self.add(loc + ("independent", k), unknown(f"joint {name!r}", name, tree, "joints of the tree"))
            elif JOINTS.get(tree[name].type) is None or not JOINTS[tree[name].type].plain:
                self.add(loc + ("independent", k), f"joint {name!r} ({tree[name].type}) has no plain coordinates "
                                                   "to hold; choose a revolute, prismatic, cylindrical, universal "
                                                   "or planar joint")

    def sensor(self, loc: Loc, s: Sensor) -> None:
        if not self.choice(loc + ("type",), s.type, _SENSOR_FIELDS):
            return
        self.unused(loc, s, _SENSOR_FIELDS[s.type], f"a {s.type} sensor")
        if s.type == "marker":
            self.body_marker_ref(loc, s.body, s.marker)
            return
        if not self.body_ref(loc + ("body",), s.body):
            return
        body = next((b for b in self.model.bodies if b.name == s.body), None)
        if body is None or body.type != "beam":
            what = "the fixed ground" if body is None else f"a {body.type} body"
            self.add(loc + ("body",), f"a {s.type} sensor reads a beam's section; {s.body!r} is {what} "
                                      "(use a marker sensor there)")
            return
        if self.number(loc + ("x",), s.x) and _accepts(body.length, "positive") \
                and not -1e-12 * body.length <= s.x <= body.length * (1 + 1e-12):
            self.add(loc + ("x",), f"station x = {_num(s.x)} m must lie on the beam, in [0, length "
                                   f"{_num(body.length)} m]")
        if s.type == "strain_gauge":
            self.numbers(loc, s, ("y", "z"))
            self.unit_axis(loc + ("direction",), s.direction)

    def drive(self, loc: Loc, d: Drive, joint_type: str) -> None:
        if not self.choice(loc + ("type",), d.type, _DRIVE_FIELDS):
            return
        self.unused(loc, d, _DRIVE_FIELDS[d.type], f"a {d.type} drive")
        if d.type != "passive" and JOINTS[joint_type].nv != 1:
            self.add(loc + ("type",), f"a {d.type} drive needs a single-coordinate joint; a "
                                      f"{joint_type} joint has {JOINTS[joint_type].nv}, so only "
                                      "passive is allowed")
        if d.type == "torque":
            self.number(loc + ("torque",), d.torque)
        if d.type == "servo":
            self.numbers(loc, d, ("kp", "kd", "motor_inertia"), "non-negative")
        if d.type in ("motion", "servo") and self.instance(
                loc + ("profile",), d.profile, Profile, f"a {d.type} drive needs a profile"):
            self.profile(loc + ("profile",), d.profile)

    def profile(self, loc: Loc, p: Profile) -> None:
        if not self.choice(loc + ("type",), p.type, PROFILES):
            return
        params = PROFILES[p.type].fields
        self.unused(loc, p, params, f"a {p.type} profile")
        if p.type == "table":
            times = self.vector(loc + ("times",), p.times, None)
            values = self.vector(loc + ("values",), p.values, None)
            if times is not None and len(times) < 2:
                self.add(loc + ("times",), f"expected at least 2 points, got {len(times)}")
            elif times is not None and values is not None and len(values) != len(times):
                self.add(loc + ("values",), f"expected {len(times)} values (one per time), "
                                            f"got {len(values)}")
            steps = [] if times is None else np.flatnonzero(np.diff(times) <= 0)
            if len(steps):
                k = int(steps[0]) + 1
                self.add(loc + ("times",), f"expected strictly increasing times, but times[{k}] = "
                                           f"{_num(times[k])} <= times[{k - 1}] = {_num(times[k - 1])}")
            return
        if not all([self.number(loc + (name,), getattr(p, name)) for name in params]):
            return
        if p.type in ("ramp", "cycloidal") and p.t1 <= p.t0:
            self.add(loc + ("t1",), f"expected t1 > t0, got t1 = {_num(p.t1)} <= t0 = {_num(p.t0)}")
        elif p.type == "spin_up":
            self.number(loc + ("t_s",), p.t_s, "positive")
        elif p.type == "sine":
            self.number(loc + ("frequency",), p.frequency, "non-negative")

    # ------------------------------------------------------------------ loads, solver

    def load(self, loc: Loc, load: Load) -> None:
        if not self.choice(loc + ("type",), load.type, _LOAD_FIELDS):
            return
        self.unused(loc, load, _LOAD_FIELDS[load.type], f"a {load.type} load")
        if load.type == "point_force":
            self.body_marker_ref(loc, load.body, load.marker)
            self.vector(loc + ("force",), load.force)
            self.vector(loc + ("torque",), load.torque)
            self.choice(loc + ("frame",), load.frame, _choices(Load, "frame"))
            if load.input is True and not load.name:
                self.add(loc + ("name",), "a load with input: true needs a name (its inputs are "
                                          "<name>.force[1..3] and <name>.torque[1..3])")
            return
        for name in ("marker_a", "marker_b"):
            ref = getattr(load, name)
            body, _, marker = ref.partition(".") if isinstance(ref, str) else ("", "", "")
            if not (body and marker):
                self.add(loc + (name,), f"expected 'body.marker', got {show(ref)}")
            elif self.body_ref(loc + (name,), body):
                self.marker_ref(loc + (name,), body, marker)
        if load.type == "spring_damper":
            self.numbers(loc, load, ("stiffness", "damping", "rest_length"), "non-negative")
            return
        self.number(loc + ("length",), load.length, "positive")
        self.number(loc + ("damping",), load.damping, "non-negative")
        if self.instance(loc + ("material",), load.material, Material, "an elastic rod needs a material {E, rho}"):
            self.material(loc + ("material",), load.material)
        if self.instance(loc + ("section",), load.section, Section, "an elastic rod needs a cross-section"):
            self.section(loc + ("section",), load.section)

    def solver(self, loc: Loc, s: Solver) -> None:
        self.choice(loc + ("method",), s.method, _choices(Solver, "method"))
        self.choice(loc + ("formulation",), s.formulation, _choices(Solver, "formulation"))
        self.choice(loc + ("dynamics",), s.dynamics, _choices(Solver, "dynamics"))
        self.numbers(loc, s, ("step", "rtol", "max_step", "output_step"), "positive")
        if _accepts(s.rtol, "positive") and not RTOL_RANGE[0] <= s.rtol <= RTOL_RANGE[1]:
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
            self.add(loc + ("max",), f"max {_num(high)} is below min {_num(low)}")
        elif not low <= value <= high:
            self.add(loc, f"the model's value {_num(value)} of {p.path!r} is outside "
                          f"[{_num(low)}, {_num(high)}]")

    # ------------------------------------------------------------------ topology

    def tree(self, bodies: list[tuple[int, Body]], joints: list[tuple[int, Joint]]) -> None:
        """Each body is the child of exactly one joint and its chain of parents reaches the
        ground (no cycles)."""
        parent_joint: dict[Any, tuple[int, Joint]] = {}
        for i, j in joints:
            if not isinstance(j.child, str) or j.child not in self.markers or j.child == GROUND:
                continue
            if j.child in parent_joint:
                first = parent_joint[j.child]
                self.add(("joints", i, "child"), f"body {j.child!r} is already the child of "
                                                 f"joints[{first[0]}] {first[1].name!r}; a body has "
                                                 "exactly one parent joint")
            else:
                parent_joint[j.child] = (i, j)
        # An invalid joint entry may be the one meant to attach a body: then don't guess.
        all_joints_known = (isinstance(self.model.joints, (list, tuple))
                            and len(joints) == len(self.model.joints)
                            and all(isinstance(j.child, str) for _, j in joints))
        for i, b in bodies if all_joints_known else ():
            if isinstance(b.name, str) and b.name != GROUND and b.name not in parent_joint:
                self.add(("bodies", i), f"body {b.name!r} is not connected: no joint has it as "
                                        "child (each body needs a joint to its parent)")
        settled: set[str] = set()  # bodies whose chain was already followed
        for start in parent_joint:
            chain: list[str] = []
            body = start
            while (isinstance(body, str) and body in parent_joint
                   and body not in chain and body not in settled):
                chain.append(body)
                body = parent_joint[body][1].parent
            if body in chain:
                loop = chain[chain.index(body):] + [body]
                self.add(("joints", parent_joint[body][0], "parent"),
                         f"the joints form a cycle ({' -> '.join(loop)}, each the child "
                         "of the next) that never reaches the ground")
            settled.update(chain)
