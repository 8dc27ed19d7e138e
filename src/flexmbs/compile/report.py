"""Stage 8, the report: what loop assembly changed from the initial state the model gave, per
joint and flexible body, and a warning where it changed what the model stated."""

from __future__ import annotations

import warnings

import numpy as np

from ..kernels.drives import MOTION
from ..loops import TOL
from ..model import Model
from ..system import coordinate_scales
from .bodies import Bodies
from .joints import Joints
from .loops import Closed
from .tree import Tree

# relative size of a correction worth reporting (joint values in rad, m, rad/s, m/s; modal ones
# in units of their state scales)
CORRECTION_TOL = 1e-6


class AssemblyWarning(UserWarning):
    """Loop assembly changed initial values the model gave (velocities, or a flexible body's
    modal coordinates) beyond tolerance."""


def corrections(model: Model, tree: Tree, bodies: Bodies, joints: Joints,
                closed: Closed) -> tuple[dict[str, tuple[float, float]], dict[str, float]]:
    """{joint or body name: (largest position change, largest velocity change)} that assembly
    (`closed`) made to the model's initial values (`joints`), {flexible body name: elastic energy
    [J]} where it deformed one beyond tolerance, and a warning (per joint or body,
    with the size) where it changed what the model stated: the qd0 given to a joint that is not
    motion-driven (its velocity is then not the one asked for) or a flexible body's modal
    coordinates (the change is elastic energy put into the initial state, estimated here for
    mass-normalised modes: strain 1/2 d_eta^T K d_eta, kinetic 1/2 |d_etadot|^2)."""
    out: dict[str, tuple[float, float]] = {}
    deformed: dict[str, float] = {}
    if not model.loops.cuts:
        return out, deformed
    S = closed.arrays
    dq, du = closed.q0 - joints.q0, closed.u0 - joints.u0
    names = [b.name for b in tree.bodies]
    scales = coordinate_scales(S, names, bodies.flex)
    for j in tree.joints:
        (q0, nq), (u0, nv) = joints.joint_q[j.name], joints.joint_u[j.name]
        pos = float(np.max(np.abs(dq[q0:q0 + nq]), initial=0.0))
        vel = float(np.max(np.abs(du[u0:u0 + nv]), initial=0.0))
        if max(pos, vel) > TOL:
            out[j.name] = (pos, vel)
        given = np.ravel(np.asarray(model.joint(j.name).qd0, dtype=float))
        prescribed = bool(np.any(S.drive[u0:u0 + nv] == MOTION))  # its profile sets the rate, loops or not
        if given.size and not prescribed and vel > CORRECTION_TOL * max(1.0, float(np.max(np.abs(given)))):
            warnings.warn(f"model {model.name}: loop assembly changed the initial velocity of joint {j.name!r} by "
                          f"{vel:.3g} (rad/s or m/s): its qd0 is not consistent with the loops; the velocities "
                          "follow from the qd0 of the joints in loops.independent (list it there to hold it)",
                          AssemblyWarning, stacklevel=3)
    for name, (e0, n) in joints.body_eta.items():
        v0 = S.ev[names.index(name)]
        d_eta, d_rate = dq[e0:e0 + n], du[v0:v0 + n]
        pos, vel = float(np.max(np.abs(d_eta), initial=0.0)), float(np.max(np.abs(d_rate), initial=0.0))
        if max(pos, vel) > TOL:
            out[name] = (pos, vel)
        moved = np.max(np.abs(d_eta) / scales[e0:e0 + n], initial=0.0)
        moved = max(moved, np.max(np.abs(d_rate) / scales[S.nq + v0:S.nq + v0 + n], initial=0.0))
        if moved > CORRECTION_TOL:
            energy = 0.5 * float(d_eta @ bodies.flex[name].Ke @ d_eta) + 0.5 * float(d_rate @ d_rate)
            deformed[name] = energy
            warnings.warn(f"model {model.name}: loop assembly deformed flexible body {name!r}: its modal "
                          f"coordinates moved by up to {pos:.3g}, their rates by up to {vel:.3g}, about "
                          f"{energy:.3g} J of elastic energy in the initial state; give q0/qd0 consistent "
                          "with the loops or hold the joints that set them in loops.independent",
                          AssemblyWarning, stacklevel=3)
    return out, deformed
