"""Whether a run stays where its model and its integrator are valid: one floating frame per
flexible body (below), and the energy of a conservative model (check_energy).

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
from typing import TYPE_CHECKING

import numpy as np

from .flex.invariants import body_size
from .model import IMPLICIT_METHODS, Model
from .system import System

if TYPE_CHECKING:   # simulate imports this module
    from .simulate import Result
    from .solvers.stepper import Settings

ROTATION_LIMIT = 0.1  # [rad] (or deflection / size): the single frame's range, see the module notes
# [1] drift of a conservative model's energy, as a fraction of the energy its motion exchanges
# (exchanged_energy), beyond which a run warns (EnergyDriftWarning)
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
            warnings.warn(deflection_message(system, f), LargeDeflectionWarning, stacklevel=3)
    return found


def deflection_message(system: System, f: Deflection, first: bool = False) -> str:
    """What a deformation f beyond ROTATION_LIMIT means, and how to model the body instead: f
    the run's largest, or with `first` the first seen past the limit (a running FMU's, which
    may bend further: then the segments it names are a least number)."""
    model = system.model
    beam = next((b for b in model.bodies if b.name == f.body), None)
    k = int(np.ceil(f.value / ROTATION_LIMIT))
    hint = (f"split it with `segments: {k}` or more (each segment its own frame)"
            if beam is not None and beam.type == "beam" else "model it as several bodies")
    return (f"model {model.name}: body {f.body!r} deforms beyond one floating frame's range: "
            f"{'first past it' if first else 'largest'} {f.measure} {f.value:.3g} at t = {f.t:.4g} s (node at "
            f"{np.round(f.where, 6).tolist()} m in the body frame), above {ROTATION_LIMIT} "
            f"where the second-order deformation model's neglected terms reach ~1 %; {hint}")


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


def check_energy(system: System, result: Result, inputs: np.ndarray, settings: Settings) -> None:
    """For a conservative model run with zero inputs (inputs: the samples' inputs, one column
    per input): record the largest drift of energy.total from its start in result.stats
    (`energy_drift` [J], signed, and `energy_exchanged` [J]: exchanged_energy), and warn
    (EnergyDriftWarning) when it exceeds ENERGY_DRIFT_LIMIT of the energy the motion exchanges,
    naming what to change for the method and, for an explicit method, the modal coordinate its
    steps do not resolve that vibrates with the most energy when the drift is largest: an
    undamped stiff mode into which the error accumulates, step after step."""
    if not is_conservative(system.model) or np.any(inputs != 0.0):
        return
    e = result["energy.total"]
    scale = exchanged_energy(result)
    k = int(np.argmax(np.abs(e - e[0])))
    drift = float(e[k] - e[0])
    result.stats.update(energy_drift=drift, energy_exchanged=scale)
    if abs(drift) <= scale * ENERGY_DRIFT_LIMIT:
        return
    explicit = settings.method not in IMPLICIT_METHODS
    mode = _unresolved_mode(system, result, k, settings) if explicit else ""
    fix = "reduce solver.step" if settings.method == "rk4" else "tighten rtol"
    if mode:
        fix += (", or use method radau (the default for a flexible model), which damps the stiff modes it does "
                "not resolve")
    warnings.warn(f"model {system.model.name}: the energy of this conservative model {'rose' if drift > 0 else 'fell'} "
                  f"by {abs(drift):.3g} J by t = {result.time[k]:.4g} s, {abs(drift) / scale:.2g} times the energy its "
                  f"motion exchanges: the integrator's error ({settings.describe()}), not physics{mode}. To keep it, "
                  f"{fix}", EnergyDriftWarning, stacklevel=3)


def exchanged_energy(result: Result) -> float:
    """The energy a conservative run's motion exchanges [J], which its error can not inflate: its
    initial kinetic and strain energy plus its initial potential energy above the lowest the run
    reaches (a diverging run raises its energies, not that lowest potential); at least 1e-12 of
    the energies' magnitude (round-off of energy.total)."""
    potential, kinetic, strain = result["energy.potential"], result["energy.kinetic"], result["energy.strain"]
    floor = 1e-12 * max(float(np.max(np.abs(result["energy.total"]))), float(np.max(np.abs(potential))), 1e-300)
    return max(float(kinetic[0] + strain[0] + potential[0] - np.min(potential)), floor / ENERGY_DRIFT_LIMIT)


def _unresolved_mode(system: System, result: Result, k: int, settings: Settings) -> str:
    """For the message: the modal coordinate with the most vibration energy at sample k among
    those the run's mean step h does not resolve (omega h > 0.5), as '; rod.eta[5] (881 Hz)
    vibrates with 1.05 J'; '' when there is none. A mode's energy is that of a free modal
    oscillator, 1/2 omega^2 (eta^2 + (etad / omega)^2) (mass-normalised, K diagonal in the
    basis): a fair measure for a fast mode, not for a slow one that moves with the joints."""
    h = settings.step if settings.method == "rk4" else result.time[-1] / max(result.stats.get("steps", 0), 1)
    a, x = system.arrays, result.states[k]
    best, text = 0.0, ""
    for b, name in enumerate(system.bodies):
        for j in range(int(a.nm[b])):
            omega = system.flex[name].freqs[j]
            if omega * h <= 0.5:
                continue
            energy = 0.5 * a.Ke[b, j, j] * (x[a.eq[b] + j] ** 2 + (x[system.nq + a.ev[b] + j] / omega) ** 2)
            if energy > best:
                best, text = energy, f"; {name}.eta[{j + 1}] ({omega / (2 * np.pi):.4g} Hz) vibrates with {energy:.3g} J"
    return text
