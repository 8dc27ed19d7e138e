"""Whether a run stays where one floating frame per flexible body is valid.

A flexible body moves with one body frame and deforms in it by u = Phi eta, with the axial
foreshortening of beams to second order in the slopes (flex/invariants.py). The neglected
terms are of relative order theta^2 in the section rotations theta, so beyond about 0.1 rad
(1 %) the deformed shape and the loads it carries drift from the geometrically exact solution;
splitting the beam into `segments` (each with its own frame, joined rigidly) keeps every frame's
rotations small.

Measure per body, over the samples of a run: the largest elastic rotation of a node's section
relative to the body frame (|theta| of the nodal rotation DOFs, beams and 6-DOF superelements)
[rad], and, for bodies whose nodes carry translations only, the largest nodal displacement
divided by the body's size [1] as the rotation it stands for.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .flex.invariants import body_size
from .system import System

ROTATION_LIMIT = 0.1  # [rad] (or deflection / size): the single frame's range, see the module notes


class LargeDeflectionWarning(UserWarning):
    """A flexible body deformed beyond the range of a single floating frame in a run."""


@dataclass(frozen=True)
class Deflection:
    """The largest deformation of one flexible body in a run: `value` [rad, or deflection per
    size], `measure` (what it is), at time `t` [s] and body-frame station `where` [m]."""

    body: str
    value: float
    measure: str
    t: float
    where: np.ndarray


def largest_deflections(system: System, t: np.ndarray, X: np.ndarray) -> list[Deflection]:
    """The largest deformation of each flexible body over the samples (t [s], X: states [q; u])."""
    out = []
    for name, (e0, n) in system.body_eta.items():
        d = system.flex[name]
        dpn = d.dofs_per_node
        blocks = np.asarray(d.nodal_modes).reshape(-1, dpn, n)
        eta = X[:, e0:e0 + n]
        if dpn == 6:
            field = np.einsum("sn,jkn->sjk", eta, blocks[:, 3:, :])      # section rotations [rad]
            measure, scale = "section rotation [rad]", 1.0
        else:
            field = np.einsum("sn,jkn->sjk", eta, blocks[:, :3, :])      # nodal displacements [m]
            measure, scale = "nodal displacement / body size", 1.0 / body_size(d)
        size = np.linalg.norm(field, axis=2) * scale                     # (samples, nodes)
        k, j = np.unravel_index(int(np.argmax(size)), size.shape) if size.size else (0, 0)
        value = float(size[k, j]) if size.size else 0.0
        out.append(Deflection(name, value, measure, float(t[k]), np.asarray(d.node_positions)[j]))
    return out


def warn_large_deflections(system: System, t: np.ndarray, X: np.ndarray) -> list[Deflection]:
    """Warn (LargeDeflectionWarning) for each body whose deformation exceeds ROTATION_LIMIT;
    returns the bodies' largest deformations."""
    found = largest_deflections(system, t, X)
    for f in found:
        if f.value > ROTATION_LIMIT:
            model = system.model
            beam = next((b for b in model.bodies if b.name == f.body), None)
            k = int(np.ceil(f.value / ROTATION_LIMIT))
            hint = (f"split it with `segments: {k}` or more (each segment its own frame)"
                    if beam is not None and beam.type == "beam" else "model it as several bodies")
            warnings.warn(f"model {model.name}: body {f.body!r} deforms beyond one floating frame's range: "
                          f"largest {f.measure} {f.value:.3g} at t = {f.t:.4g} s (node at "
                          f"{np.round(f.where, 6).tolist()} m in the body frame), above {ROTATION_LIMIT} "
                          f"where the second-order deformation model's neglected terms reach ~1 %; {hint}",
                          LargeDeflectionWarning, stacklevel=3)
    return found
