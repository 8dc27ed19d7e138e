"""Checks of bodies (rigid, beam, superelement) and their markers."""

from __future__ import annotations

import math
import os
from typing import Any, Optional

import numpy as np

from ..elements import GROUND, SUPERELEMENT_FILES, Body, Damping, Marker, Material, Section, inertia_matrix
from ..errors import Loc, show
from ..tables import section_properties
from .base import UNIT_TOL, accepts, num
from .materials import MaterialChecks

INERTIA_TOL = 1e-9   # relative, for symmetry and the triangle inequality
# Fields that apply to each variant (all others must keep their defaults).
_BODY_FIELDS = {
    "rigid": ("mass", "com", "inertia"),
    "beam": ("length", "elements", "modes", "material", "section", "tip_mass", "tip_inertia",
             "rotary_inertia", "geometric_stiffening", "segments", "static_modes", "interface_modes",
             "acceleration_modes", "damping"),
    "superelement": (*SUPERELEMENT_FILES, "dofs_per_node", "reference_nodes", "modes", "interface_modes",
                     "acceleration_modes", "damping"),
}
_MARKER_FIELDS = {"rigid": ("position", "rotation"), "beam": ("x", "node", "rotation"),
                  "superelement": ("node", "rotation")}
_INERTIA_FORMS = "[Ixx, Iyy, Izz], [Ixx, Iyy, Izz, Ixy, Ixz, Iyz] or a 3x3 matrix"
# Per beam segment: 500 elements are 3006 DOFs (dense matrices of 72 MB, an eigenproblem of about a
# minute); the FE mesh only has to resolve the kept modes.
MAX_SEGMENT_ELEMENTS = 500
MAX_SEGMENTS = 200
# Smallest derived beam constant accepted: below it products such as (E I)^2 or the mass matrix
# entries underflow in double precision.
_TINY = 1e-150
# A beam shorter than this many radii of gyration of its section is noted as implausible (most
# likely a section in mm): beam theory wants a length of 10 or more (a 20 mm bar 0.1 m long has
# about 17); a 30 mm tube given as 30 m, 1 m long, has 0.1
STUBBY = 2.0


class BodyChecks(MaterialChecks):
    """Bodies, their inertia, beams and superelements, damping, markers and rotations."""

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
        shown = ", ".join(num(v) for v in moments)
        if moments[0] <= 0:
            self.add(loc, f"not positive definite: principal moments {shown}; all must be > 0")
        elif moments[0] + moments[1] < moments[2] - INERTIA_TOL * scale:
            self.add(loc, f"principal moments {shown} violate the triangle inequality "
                          f"I1 + I2 >= I3 ({num(moments[0] + moments[1])} < {num(moments[2])})")

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
            return
        gyration = math.sqrt(max(props.Iy, props.Iz) / props.A)
        if b.length < STUBBY * gyration:
            self.report.note(loc + ("section",), f"the beam is {num(b.length)} m long, less than {STUBBY:g} radii of "
                                                 f"gyration of its section ({num(gyration)} m): beam theory does not "
                                                 "hold for a body this stubby; if the section is in mm, give it in m")

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
        elif (self.number(loc + ("x",), marker.x) and accepts(beam.length, "positive")
              and not 0.0 <= marker.x <= beam.length):
            self.add(loc + ("x",), f"x = {num(marker.x)} is outside the beam: expected "
                                   f"0 <= x <= length = {num(beam.length)}")

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
            self.add(loc, f"not orthonormal: max |R^T R - I| = {num(error)} (tolerance {UNIT_TOL:g})")
        elif np.linalg.det(matrix) < 0:
            self.add(loc, "determinant is -1: a reflection, expected a proper rotation (det +1)")
