"""Natural modes of a linearization: frequencies, damping ratios, shapes and the dominant
motion of each (a joint coordinate, or a flexible body's deformation family)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .. import arguments as args
from ..model.elements import Model
from ..system import System
from .coordinates import Coordinates
from .evaluation import input_vector, kernel_args, reference_state, system_of
from .linear_system import LinearSystem, linearize
from .statics import equilibrium


@dataclass
class ModesResult:
    """Natural modes of a linearization, sorted by ascending frequency.

    frequencies_hz: undamped natural frequencies |lambda|/(2 pi) [Hz]; rigid-body (zero) modes are
    reported with 0 and count as modes; a divergent (statically unstable) mode with real
    eigenvalues +-sigma is reported with a NEGATIVE frequency -sigma/(2 pi), so it sorts first.
    omega: the same in rad/s. damping_ratios: -Re(lambda)/|lambda| (0 for zero modes).
    eigenvalues: one eigenvalue per mode (the one with Im > 0, or the larger real one).
    shapes: (n_coordinates, n_modes) position part of the eigenvectors, scaled to a largest entry
    of +1 (real when the imaginary parts vanish, e.g. without damping and gyroscopic coupling,
    complex otherwise). coordinate_names: the free position coordinates (rows of shapes; with
    loops the independent ones). labels: the dominant motion of each mode, a joint coordinate
    (e.g. `crank.q`) or '<body>: in-plane bending' (out-of-plane bending, torsion, axial; bending
    x-y / x-z when no revolute joint sets the plane; elastic for superelements), see table().
    """

    frequencies_hz: np.ndarray
    damping_ratios: np.ndarray
    shapes: np.ndarray
    coordinate_names: list[str]
    omega: np.ndarray
    eigenvalues: np.ndarray
    linear: LinearSystem | None = None
    labels: list[str] = field(default_factory=list)

    def table(self) -> str:
        lines = [f"{'mode':>4}  {'f [Hz]':>12}  {'omega [rad/s]':>14}  {'zeta':>9}  dominant motion"]
        for k, (f, w, z) in enumerate(zip(self.frequencies_hz, self.omega, self.damping_ratios)):
            dom = self.labels[k] if k < len(self.labels) else ""
            lines.append(f"{k + 1:>4}  {f:>12.6g}  {w:>14.6g}  {z:>9.4g}  {dom}")
        return "\n".join(lines)


def _family_labels(system: System, body: str) -> dict[str, str]:
    """Labels of a beam's deformation families (Beam.stiffness_families): axial, torsion, and
    in-plane / out-of-plane bending relative to the plane normal to the revolute (or first
    universal) axis of the joint that carries the body (that axis in the body frame through its
    marker's rotation); 'bending x-y' / 'bending x-z' (body axes) when no such joint sets a plane."""
    labels = {"axial": "axial", "torsion": "torsion", "bending_xy": "bending x-y", "bending_xz": "bending x-z"}
    joint = next((j for j in system.model.joints if j.child == body), None)
    if joint is None or joint.type not in ("revolute", "universal"):
        return labels
    R0 = system.arrays.mk_R0[system.markers[f"{body}.{joint.child_marker}"]]
    n = R0 @ np.asarray(joint.axis, dtype=float)   # the axis in the body frame
    if abs(abs(n[1]) - abs(n[2])) < 1e-6:
        return labels
    xy_in = abs(n[2]) > abs(n[1])                  # v-bending turns about z: in the plane normal to z
    labels["bending_xy"] = "in-plane bending" if xy_in else "out-of-plane bending"
    labels["bending_xz"] = "out-of-plane bending" if xy_in else "in-plane bending"
    return labels


def _mode_labels(system: System, coords: Coordinates, full: np.ndarray, omega: np.ndarray,
                 x_ref: np.ndarray, t: float, inputs: np.ndarray) -> list[str]:
    """Dominant motion of each mode from its shape in every free coordinate (full, rows
    coords.position_names). An elastic mode (a flexible body stores at least half of the mode's
    peak kinetic energy omega^2 v^T M v / 2 as strain energy eta^T Ke eta / 2, M the mass
    matrix at x_ref) is labelled by that body and, for beams, the deformation family (axial,
    torsion, in-/out-of-plane bending) holding most of its strain energy; any other mode by the
    joint coordinate with the largest motion in units of its state scale."""
    from ..kernels.entry import assemble

    S_arg, W_arg, W = kernel_args(system)
    q, u = np.array(x_ref[:coords.nq], float), np.array(x_ref[coords.nq:], float)
    assemble(S_arg, W_arg, float(t), q, u, inputs)
    M = np.array(W.M)
    scale = coords._scales[:coords.nfull]
    joints = [i for i, n in enumerate(coords.position_names) if ".eta[" not in n]
    families: dict[str, tuple] = {}
    labels = []
    for k in range(full.shape[1]):
        col = full[:, k]
        v = np.zeros(coords.nv, dtype=col.dtype)
        v[coords.vel_c] = col
        kinetic = omega[k] ** 2 * float(np.real(np.conj(v) @ M @ v))
        strain = {}
        for b, (e0, n) in system.body_eta.items():
            i0 = coords.position_names.index(f"{b}.eta[1]")
            e = col[i0:i0 + n]
            strain[b] = float(np.real(np.conj(e) @ system.flex[b].Ke @ e))
        body = max(strain, key=strain.get) if strain else None
        if body is None or not omega[k] > 0 or strain[body] < 0.5 * kinetic:
            i = joints[int(np.argmax(np.abs(col[joints]) / scale[joints]))] if joints else 0
            labels.append(coords.position_names[i])
            continue
        d = system.flex[body]
        if d.beam is None:
            labels.append(f"{body}: elastic")
            continue
        if body not in families:
            families[body] = (d.beam.stiffness_families(), _family_labels(system, body))
        Kf, names = families[body]
        i0 = coords.position_names.index(f"{body}.eta[1]")
        disp = d.nodal_modes @ col[i0:i0 + d.n]
        energy = {f: float(np.real(np.conj(disp) @ K @ disp)) for f, K in Kf.items()}
        top = max(energy, key=energy.get)
        labels.append(f"{body}: {names[top]}")
    return labels


def _normalize(v: np.ndarray) -> np.ndarray:
    if not v.size or not np.any(v):
        return v
    v = v / v[int(np.argmax(np.abs(v)))]
    if np.abs(v.imag).max() <= 1e-8:
        v = v.real.astype(complex)
    return v


def _refined(A: np.ndarray, lam: np.ndarray, vecs: np.ndarray, zero_tol: float) -> np.ndarray:
    """The eigenvectors of the non-zero eigenvalues by two steps of inverse iteration from
    LAPACK's (shift lambda (1 + 1e-10)). LAPACK's vector of a well-separated eigenvalue can be
    wrong when A has an exactly defective block elsewhere: a free crank's Jordan pair of zero
    eigenvalues made every coupler mode of He's crank-rocker come out as crank motion. Any
    start with a component along the eigenvector converges in one step (its growth 1e10 over
    every other eigenvalue's); one in an eigenspace of a repeated eigenvalue stays in it."""
    from scipy.linalg import lu_factor, lu_solve

    out = vecs.copy()
    eye = np.eye(A.shape[0])
    for i, value in enumerate(lam):
        if abs(value) <= zero_tol:
            continue
        factors = lu_factor(A - value * (1.0 + 1e-10) * eye, check_finite=False)   # once per mode
        v = vecs[:, i]
        for _ in range(2):
            v = lu_solve(factors, v, check_finite=False)
            v = v / np.linalg.norm(v)
        out[:, i] = v
    return out


def _modal_pairs(lam: np.ndarray, vecs: np.ndarray, npos: int, zero_tol: float):
    """Group the 2 npos eigenvalues of A into npos modes: (omega signed, zeta, lambda, shape)."""
    out = []
    used = np.zeros(lam.size, bool)
    # complex conjugate pairs: one mode each
    for i in np.flatnonzero(lam.imag > 0):
        if abs(lam[i]) <= zero_tol:
            continue
        j = np.flatnonzero(~used & (np.abs(lam - lam[i].conj()) <= 1e-9 * abs(lam[i])) & (lam.imag < 0))
        used[i] = True
        if j.size:
            used[j[0]] = True
        w = abs(lam[i])
        out.append((w, -lam[i].real / w + 0.0, lam[i], _normalize(vecs[:npos, i])))
    rest = [i for i in np.flatnonzero(~used)]
    # zero modes (rigid-body directions, whether real or a tiny complex pair)
    zeros = [i for i in rest if abs(lam[i]) <= zero_tol]
    rest = sorted((i for i in rest if abs(lam[i]) > zero_tol), key=lambda i: lam[i].real)
    for k in range(0, len(zeros) - 1, 2):
        i = zeros[k]
        out.append((0.0, 0.0, complex(0.0), _normalize(vecs[:npos, i])))
    leftover = zeros[len(zeros) - len(zeros) % 2:]
    rest = sorted(rest + leftover, key=lambda i: lam[i].real)
    # real pairs: +-sigma (divergence) first, then adjacent ones (overdamped)
    while rest:
        i = rest.pop()  # largest real part
        lr = lam[i].real
        if not rest:
            out.append((0.0 if abs(lr) <= zero_tol else np.nan, np.nan, lam[i], _normalize(vecs[:npos, i])))
            break
        partner = min(rest, key=lambda j: abs(lam[j].real + lr))
        if abs(lam[partner].real + lr) > 1e-6 * max(abs(lr), zero_tol):
            partner = rest[-1]
        rest.remove(partner)
        l1, l2 = lr, lam[partner].real
        w2 = l1 * l2
        if w2 >= 0:
            w = np.sqrt(w2)
            zeta = -(l1 + l2) / (2 * w) if w > 0 else np.nan
        else:
            w = -np.sqrt(-w2)
            zeta = -(l1 + l2) / (2 * abs(w))
        out.append((w, zeta, complex(l1), _normalize(vecs[:npos, i])))
    return out


def modes(model: Model | System, *, n: int | None = None, spin: Mapping[str, float] | None = None,
          about: str = "equilibrium", x: np.ndarray | None = None, inputs=None,
          zero_tol: float | None = None) -> ModesResult:
    """Natural frequencies, damping ratios and mode shapes of the linearization about the static
    equilibrium (about="equilibrium", default; x is then the Newton guess) or the initial state
    (about="initial"; or x when given), with spin = {joint: rate} turning those joints at a constant
    rate (see equilibrium). n: number of modes returned, lowest first (None, the default: all);
    rigid-body modes count, and n is at most the number of free coordinates (one mode each; a
    closed loop has fewer modes than that). zero_tol [rad/s]:
    eigenvalues below it are zero modes (default 1e-5 max(1, max |lambda|)). model as for
    linearize.
    """
    if about not in ("equilibrium", "initial"):
        raise ValueError(f"modes: about = {about!r}: expected 'equilibrium' or 'initial'")
    if n is not None:
        args.integer("modes", "n", n, 1)
    args.optional_number("modes", "zero_tol", zero_tol, "non-negative", "rad/s")
    system = system_of(model, spin, "modes")
    if n is not None:
        free = Coordinates(system).npos
        args.integer("modes", "n", n, 1, free, f" (the model has {free} free coordinates, at most one mode "
                                               "each; n=None gives all)")
    if about == "equilibrium":
        x_ref = equilibrium(system, x_guess=x, inputs=inputs)
    else:
        x_ref = reference_state(system, x, "modes")
    lin = linearize(system, x=x_ref, inputs=inputs, outputs=[])
    npos = lin.A.shape[0] // 2
    names = lin.state_names[:npos]
    if npos == 0:
        e = np.zeros(0)
        return ModesResult(e, e, np.zeros((0, 0)), names, e, e.astype(complex), lin)
    coords = Coordinates(system)
    coords.reduce(lin.x0)
    lam, vecs = np.linalg.eig(lin.A)
    if zero_tol is None:
        zero_tol = 1e-5 * max(1.0, float(np.abs(lam).max()))
    vecs = _refined(lin.A, lam, vecs, zero_tol)
    items = _modal_pairs(lam, vecs, npos, zero_tol)
    items.sort(key=lambda it: (it[0] if np.isfinite(it[0]) else -np.inf))
    if n is not None:
        items = items[:n]
    omega = np.array([it[0] for it in items], dtype=float)
    shapes = np.column_stack([it[3] for it in items]) if items else np.zeros((npos, 0), complex)
    if shapes.size and np.abs(shapes.imag).max() == 0.0:
        shapes = shapes.real
    return ModesResult(frequencies_hz=omega / (2 * np.pi), damping_ratios=np.array([it[1] for it in items]),
                       shapes=shapes, coordinate_names=names, omega=omega,
                       eigenvalues=np.array([it[2] for it in items], dtype=complex), linear=lin,
                       labels=_mode_labels(system, coords, coords.full_shapes(shapes, lin.x0), omega, lin.x0,
                                           lin.t, input_vector(system, inputs, "modes")))
