"""Closed kinematic loops: the constraint rows of cut joints, assembly of consistent initial
conditions, detection of redundant constraints, and projection of a state onto the
constraint manifold.

A cut joint between marker a (parent side) and marker b (child side) with joint frame E
(e3 = its axis) constrains, per type, the offset r_b - r_a along e_i^A (position rows) and the
alignment e_i^A . e_j^B (rotation rows):
    revolute    e1, e2, e3 offsets; e3.e1', e3.e2'
    prismatic   e1, e2 offsets;     e3.e1', e3.e2', e1.e2'   (slides along e3)
    cylindrical e1, e2 offsets;     e3.e1', e3.e2'
    spherical   e1, e2, e3 offsets
    planar      e3 offset;          e3.e1', e3.e2'           (e3 the plane normal)
    fixed       e1, e2, e3 offsets; e3.e1', e3.e2', e1.e2'
The kernels (kernels/constraints.py) evaluate g, G = dg/du and the velocity-product term.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .model import Issue, Joint, ModelError

if TYPE_CHECKING:
    from .system import System

POSITION, ALIGN = 0, 1
ROWS = {
    "revolute": ((POSITION, 0, 0), (POSITION, 1, 0), (POSITION, 2, 0), (ALIGN, 2, 0), (ALIGN, 2, 1)),
    "prismatic": ((POSITION, 0, 0), (POSITION, 1, 0), (ALIGN, 2, 0), (ALIGN, 2, 1), (ALIGN, 0, 1)),
    "cylindrical": ((POSITION, 0, 0), (POSITION, 1, 0), (ALIGN, 2, 0), (ALIGN, 2, 1)),
    "spherical": ((POSITION, 0, 0), (POSITION, 1, 0), (POSITION, 2, 0)),
    "planar": ((POSITION, 2, 0), (ALIGN, 2, 0), (ALIGN, 2, 1)),
    "fixed": ((POSITION, 0, 0), (POSITION, 1, 0), (POSITION, 2, 0), (ALIGN, 2, 0), (ALIGN, 2, 1), (ALIGN, 0, 1)),
}
# position tolerance [m] and alignment tolerance [1] of an assembled or projected state
TOL = 1e-11


def joint_frame(axis: Sequence[float]) -> np.ndarray:
    """E = [e1 e2 e3] with e3 along `axis` and e1, e2 completing a right-handed frame."""
    e3 = np.asarray(axis, float) / np.linalg.norm(axis)
    helper = np.eye(3)[int(np.argmin(np.abs(e3)))]
    e1 = np.cross(helper, e3)
    e1 /= np.linalg.norm(e1)
    return np.column_stack([e1, np.cross(e3, e1), e3])


def row_names(cut: Joint) -> list[str]:
    """Names of the constraint rows of a cut joint, e.g. `pin: offset e1`, `pin: tilt e3.e1'`."""
    return [f"{cut.name}: offset e{i + 1}" if kind == POSITION else f"{cut.name}: tilt e{i + 1}.e{j + 1}'"
            for kind, i, j in ROWS[cut.type]]


def cut_rows(cuts: Sequence[Joint], markers: dict[str, int]) -> dict[str, np.ndarray]:
    """The constraint-row arrays of the kernels (cr_*), all rows in use."""
    rows = [(markers[f"{c.parent}.{c.parent_marker}"], markers[f"{c.child}.{c.child_marker}"], kind, i, j,
             joint_frame(c.axis)) for c in cuts for kind, i, j in ROWS[c.type]]
    n = len(rows)
    ints = lambda k: np.array([r[k] for r in rows], np.int64)  # noqa: E731
    return {"cr_a": ints(0), "cr_b": ints(1), "cr_kind": ints(2), "cr_i": ints(3), "cr_j": ints(4),
            "cr_E": np.array([r[5] for r in rows], float).reshape(n, 3, 3), "cr_on": np.ones(n, np.int64)}


class _Loops:
    """Evaluates the loop constraints of a System at a state (one workspace)."""

    def __init__(self, system: System) -> None:
        from .kernels.constraints import loop_state
        from .kernels.dynamics import qdot_of
        from .kernels.structs import box, make_workspace

        self.system = system
        self.S = system.ref
        self.work = make_workspace(system.arrays)     # shared with the boxed copy the kernels see
        self.Wr = box(self.work)
        self._state, self._qdot = loop_state, qdot_of
        self.on = system.arrays.cr_on

    def eval(self, q: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(g, G) of the rows in use at (q, u)."""
        self._state(self.S, self.Wr, q, u)
        active = self.on.astype(bool)
        return self.work.c_g[active].copy(), self.work.c_G[active].copy()

    def residual(self, q: np.ndarray, u: np.ndarray) -> float:
        """Largest residual of every row, the dropped redundant ones included [m or 1]."""
        self._state(self.S, self.Wr, q, u)
        return float(np.max(np.abs(self.work.c_g), initial=0.0))

    def step_q(self, q: np.ndarray, du: np.ndarray) -> None:
        """q <- q (+) du, du a change in velocity coordinates (quaternions turned and renormalised)."""
        qd = np.zeros_like(q)
        self._qdot(self.S, q, du, qd)
        q += qd
        for k in self.system.arrays.quat_q:
            if k >= 0:
                q[k:k + 4] /= np.linalg.norm(q[k:k + 4])


def _free_columns(system: System, held: Sequence[str]) -> np.ndarray:
    """Mask of the velocity coordinates that may move: not prescribed, not in `held` joints."""
    from .kernels.dynamics import MOTION

    free = system.arrays.drive != MOTION
    for name in held:
        u0, n = system.joint_u[name]
        free[u0:u0 + n] = False
    return free


def project_positions(loops: _Loops, q: np.ndarray, u: np.ndarray, free: np.ndarray,
                      max_iter: int = 30) -> float:
    """Newton with least-norm steps on the free coordinates until |g| <= TOL; returns |g|."""
    for _ in range(max_iter):
        g, G = loops.eval(q, u)
        err = float(np.max(np.abs(g), initial=0.0))
        if err <= TOL:
            return err
        Gf = G[:, free]
        dz = -np.linalg.lstsq(Gf, g, rcond=None)[0]
        du = np.zeros(u.size)
        du[free] = dz
        loops.step_q(q, du)
    g, _ = loops.eval(q, u)
    return float(np.max(np.abs(g), initial=0.0))


def project_velocities(loops: _Loops, q: np.ndarray, u: np.ndarray, free: np.ndarray) -> None:
    """u <- the nearest velocities (in the free coordinates) with G u = 0."""
    _, G = loops.eval(q, u)
    Gf = G[:, free]
    u[free] -= np.linalg.lstsq(Gf, G @ u, rcond=None)[0] if Gf.size else 0.0


def assemble(system: System) -> None:
    """Make system.q0, u0 satisfy the loop constraints: Newton from the model's approximate q0
    with the `independent` joints (and prescribed ones) held; drop dependent constraint rows
    (rank of G by a pivoted QR), recorded in system.loop_redundant. Raises ModelError naming the
    cut whose loop cannot close and by how much."""
    from scipy.linalg import qr

    from .kernels.dynamics import apply_prescribed

    loops = _Loops(system)
    model = system.model
    free = _free_columns(system, model.loops.independent)
    q, u = system.q0.copy(), system.u0.copy()
    apply_prescribed(system.ref, 0.0, q, u, system.input_defaults, np.zeros(u.size))
    # rank with all rows at the approximate pose, then again once assembled
    for _ in range(2):
        err = project_positions(loops, q, u, free)
        _, G = loops.eval(q, u)
        _drop_dependent(system, G, qr)
    if err > TOL or loops.residual(q, u) > TOL:
        loops.residual(q, u)
        g_all = loops.work.c_g.copy()
        worst = int(np.argmax(np.abs(g_all)))
        row = system.loop_rows[worst]
        k = next(i for i, c in enumerate(model.loops.cuts) if row.startswith(f"{c.name}:"))
        unit = "m" if "offset" in row else "of a unit vector"
        held = ", ".join(model.loops.independent) or "no joint"
        raise ModelError([Issue(f"loops.cuts[{k}] {model.loops.cuts[k].name!r}",
                                f"the loop cannot close: after assembly with {held} held, its constraint "
                                f"'{row}' is off by {abs(g_all[worst]):.3g} ({unit}); check the link lengths, the "
                                "cut's markers and the joints' approximate q0", file=model.source)])
    project_velocities(loops, q, u, free)
    _report_corrections(system, q, u)
    system.q0[:] = q
    system.u0[:] = u


class AssemblyWarning(UserWarning):
    """Loop assembly changed initial values the model gave (velocities, or a flexible body's
    modal coordinates) beyond tolerance."""


# relative size of a correction worth reporting (joint values in rad, m, rad/s, m/s; modal ones
# in units of their state scales)
CORRECTION_TOL = 1e-6


def _report_corrections(system: System, q: np.ndarray, u: np.ndarray) -> None:
    """Record in system.loop_corrections {joint or body name: (largest position change, largest
    velocity change)} what assembly changed from the model's initial values, and warn (per joint
    or body, with the size) where it changed what the model stated: the qd0 given to a joint
    that is not motion-driven (its velocity is then not the one asked for) or a flexible body's modal coordinates (the
    change is elastic energy put into the initial state, estimated here for mass-normalised
    modes: strain 1/2 d_eta^T K d_eta, kinetic 1/2 |d_etadot|^2)."""
    import warnings

    from .kernels.dynamics import MOTION
    from .solvers.stepper import state_scales

    model, S = system.model, system.arrays
    dq, du = q - system.q0, u - system.u0
    scales = state_scales(system)
    for jn in system.joints:
        (q0, nq), (u0, nv) = system.joint_q[jn], system.joint_u[jn]
        pos = float(np.max(np.abs(dq[q0:q0 + nq]), initial=0.0))
        vel = float(np.max(np.abs(du[u0:u0 + nv]), initial=0.0))
        if max(pos, vel) > TOL:
            system.loop_corrections[jn] = (pos, vel)
        given = np.ravel(np.asarray(model.joint(jn).qd0, dtype=float))
        prescribed = bool(np.any(S.drive[u0:u0 + nv] == MOTION))  # its profile sets the rate, loops or not
        if given.size and not prescribed and vel > CORRECTION_TOL * max(1.0, float(np.max(np.abs(given)))):
            warnings.warn(f"model {model.name}: loop assembly changed the initial velocity of joint {jn!r} by "
                          f"{vel:.3g} (rad/s or m/s): its qd0 is not consistent with the loops; the velocities "
                          "follow from the qd0 of the joints in loops.independent (list it there to hold it)",
                          AssemblyWarning, stacklevel=4)
    for name, (e0, n) in system.body_eta.items():
        v0 = S.ev[system.bodies.index(name)]
        d_eta, d_rate = dq[e0:e0 + n], du[v0:v0 + n]
        pos, vel = float(np.max(np.abs(d_eta), initial=0.0)), float(np.max(np.abs(d_rate), initial=0.0))
        if max(pos, vel) > TOL:
            system.loop_corrections[name] = (pos, vel)
        moved = np.max(np.abs(d_eta) / scales[e0:e0 + n], initial=0.0)
        moved = max(moved, np.max(np.abs(d_rate) / scales[S.nq + v0:S.nq + v0 + n], initial=0.0))
        if moved > CORRECTION_TOL:
            energy = 0.5 * float(d_eta @ system.flex[name].Ke @ d_eta) + 0.5 * float(d_rate @ d_rate)
            warnings.warn(f"model {model.name}: loop assembly deformed flexible body {name!r}: its modal "
                          f"coordinates moved by up to {pos:.3g}, their rates by up to {vel:.3g}, about "
                          f"{energy:.3g} J of elastic energy in the initial state; give q0/qd0 consistent "
                          "with the loops or hold the joints that set them in loops.independent",
                          AssemblyWarning, stacklevel=4)


def _drop_dependent(system: System, G_active: np.ndarray, qr) -> None:
    """Keep a maximal independent set of the rows in use (pivoted QR of G^T)."""
    on = system.arrays.cr_on
    rows = np.nonzero(on)[0]
    if rows.size == 0:
        return
    _, R, piv = qr(G_active.T, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    rank = int(np.sum(diag > 1e-9 * max(diag[0], 1e-300)))
    dropped = rows[piv[rank:]]
    on[dropped] = 0
    system.loop_redundant.extend(system.loop_rows[k] for k in dropped)
