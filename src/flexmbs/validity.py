"""Whether a run stays where its model and its integrator are valid: one floating frame per
flexible body (below), and the energy of a conservative model (warn_energy_drift).

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
from .model import Model
from .system import System

ROTATION_LIMIT = 0.1  # [rad] (or deflection / size): the single frame's range, see the module notes
# [1] drift of a conservative model's energy, as a fraction of its largest kinetic or strain
# energy, beyond which a run warns (EnergyDriftWarning): the shipped conservative models, 2 s at
# their own settings, stay below 3e-5 of it (the three-link arm; the others below 2e-8)
ENERGY_DRIFT_LIMIT = 0.01


class LargeDeflectionWarning(UserWarning):
    """A flexible body deformed beyond the range of a single floating frame in a run."""


class EnergyDriftWarning(UserWarning):
    """The energy of a conservative model drifted in a run: the integrator's error, not physics."""


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


def is_conservative(model: Model) -> bool:
    """No dissipation, no driven or forced coordinates, and every load with a potential in
    energy.total (point forces are not included there). A torque drive left at a zero default
    counts as passive (a run with the default inputs)."""
    for b in model.bodies:
        if b.type != "rigid" and (b.damping.stiffness_proportional > 0 or any(np.ravel(b.damping.modal))):
            return False
    for j in model.joints:
        idle = j.drive.type == "passive" or (j.drive.type == "torque" and j.drive.torque == 0)
        if not idle or (j.spring is not None and j.spring.damping > 0):
            return False
    return all(ld.type in ("spring_damper", "elastic_rod") and ld.damping == 0 for ld in model.loads)


def warn_energy_drift(system: System, result, how: str) -> None:
    """Warn (EnergyDriftWarning) when the energy of a conservative model run with its default
    inputs (result: a simulate Result whose inputs are all zero) drifted by more than
    ENERGY_DRIFT_LIMIT of its largest kinetic or strain energy, naming the modal coordinate
    that vibrates with the most energy when the drift is largest (an undamped stiff mode into
    which an explicit method's error accumulates, step after step) and what to change; how:
    the method and its tolerance or step, for the message."""
    model = system.model
    if not is_conservative(model) or any(np.any(result[name] != 0.0) for name in system.inputs):
        return
    e = result["energy.total"]
    scale = max(float(np.max(result["energy.kinetic"])), float(np.max(result["energy.strain"])), 1e-300)
    k = int(np.argmax(np.abs(e - e[0])))
    drift = abs(float(e[k] - e[0]))
    if drift <= ENERGY_DRIFT_LIMIT * scale:
        return
    share, where = 0.0, ""
    a, x = system.arrays, result.states[k]
    for b, name in enumerate(system.bodies):
        n = int(a.nm[b])
        for j in range(n):
            # a mode's vibration energy: 1/2 K_jj (eta_j^2 + (etad_j / omega_j)^2), K diagonal in the basis
            omega = system.flex[name].freqs[j]
            energy = 0.5 * a.Ke[b, j, j] * (x[a.eq[b] + j] ** 2 + (x[system.nq + a.ev[b] + j] / omega) ** 2)
            if energy > share:
                share, where = energy, (f"; {energy:.3g} J of it is vibration of {name}.eta[{j + 1}] "
                                        f"({omega / (2 * np.pi):.4g} Hz), a mode the method does not damp")
    warnings.warn(f"model {model.name}: the energy of this conservative model drifted by {drift:.3g} J by "
                  f"t = {result.time[k]:.4g} s, {drift / scale:.2g} of its largest kinetic or strain energy: the "
                  f"integrator's error ({how}), not physics{where}. Tighten the tolerance, or use method implicit, "
                  "which damps the modes it does not resolve", EnergyDriftWarning, stacklevel=3)
