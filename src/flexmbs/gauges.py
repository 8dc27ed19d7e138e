"""Strain gauges and section forces of beam bodies: outputs linear in the modal coordinates.

A beam's elastic displacement is u(x) = N(x) Phi eta (body frame, flex/beam.py), with Phi the
nodal mode matrix the FlexBodyData holds (whatever basis it is: cantilever, static or interface
modes). Small-strain Euler-Bernoulli beam with St Venant torsion, at station x along the axis:

    axial strain   eps_xx(y, z) = u' - y v'' - z w''        (u = u_x, v = u_y, w = u_z)
    shear strains  gam_xy = -z th_x',  gam_xz = y th_x'     (torsion; exact for circular
                                                             sections, approximate for others)

and the strain in a unit direction d = (dx, dy, dz) (body axes) with Poisson's ratio
nu = E / (2 G) - 1 for the transverse strains eps_yy = eps_zz = -nu eps_xx:

    eps_d = eps_xx (dx^2 - nu (dy^2 + dz^2)) + gam_xy dx dy + gam_xz dx dz.

Section forces: what the outboard part (beyond x) exerts on the inboard part, at the section
centroid in body axes, from the constitutive relations (sign conventions as in Timoshenko and
Gere 1997, docs/references.md):

    N = E A u',  Vy = -E Iz v''',  Vz = -E Iy w''',  T = G J th_x',  My = -E Iy w'',  Mz = E Iz v''

(equilibrium of a slice: dMz/dx = -Vy, dMy/dx = Vz). The FE fields are the cubic Hermite and
linear interpolations, so moments are linear and shear forces constant over an element; at a
node the element beyond it is used (the last element at the tip).

Every output is a row vector times the body's modal coordinates, computed once per System here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .system import System

STRAIN_SIGNALS = (("strain", "1", "surface strain"),)
SECTION_SIGNALS = (
    ("N", "N", "axial force"), ("V[1]", "N", "shear force along body y"), ("V[2]", "N", "shear force along body z"),
    ("T", "N.m", "torsion moment about body x"), ("M[1]", "N.m", "bending moment about body y"),
    ("M[2]", "N.m", "bending moment about body z"))


@dataclass(frozen=True)
class Gauge:
    """One beam sensor: its output names, units and descriptions (signals: (suffix, unit, what)),
    and y = rows @ q[e0:e0 + rows.shape[1]] (rows (k, n): per output, per modal coordinate)."""

    name: str
    body: str
    signals: tuple[tuple[str, str, str], ...]
    e0: int
    rows: np.ndarray


def gauge_signals(sensor) -> tuple[tuple[str, str, str], ...]:
    """Output (suffix, unit, description) of a strain_gauge or section_force sensor."""
    return STRAIN_SIGNALS if sensor.type == "strain_gauge" else SECTION_SIGNALS


def gauges(system: System) -> list[Gauge]:
    """The strain-gauge and section-force sensors of a System with their modal rows, in the
    model's sensor order."""
    out = []
    for s in system.model.sensors:
        if s.type == "marker":
            continue
        d = system.flex[s.body]
        beam, Phi = d.beam, np.asarray(d.nodal_modes)
        f = beam.project(np.array([float(s.x)]), Phi)
        sec = beam.section
        up, twist = f.strain[0, 0], f.strain[0, 1]
        v2, w2 = f.curvature[0, 0], f.curvature[0, 1]
        if s.type == "strain_gauge":
            dx, dy, dz = np.asarray(s.direction, float) / np.linalg.norm(s.direction)
            nu = beam.E / (2.0 * beam.G) - 1.0
            eps_xx = up - s.y * v2 - s.z * w2
            rows = (eps_xx * (dx * dx - nu * (dy * dy + dz * dz)) - s.z * twist * dx * dy
                    + s.y * twist * dx * dz)[None, :]
        else:
            v3, w3 = f.third[0, 0], f.third[0, 1]
            E = beam.E
            rows = np.array([E * sec.A * up, -E * sec.Iz * v3, -E * sec.Iy * w3, beam.G * sec.J * twist,
                             -E * sec.Iy * w2, E * sec.Iz * v2])
        e0, n = system.body_eta.get(s.body, (0, 0))
        out.append(Gauge(s.name, s.body, gauge_signals(s), e0, np.ascontiguousarray(rows[:, :n])))
    return out
