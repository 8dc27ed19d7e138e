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
    universal   e1, e2, e3 offsets; e3.e1'                   (e3 = axis, e1 = axis2)
For a universal cut E has e3 = `axis` (the cross arm fixed in the parent marker frame) and
e1 = `axis2` (the arm fixed in the child marker frame), so its one alignment row keeps the two
arms perpendicular and the child turns about both (a Hooke joint).
(model/tables.py holds these rows as each joint type's cut_rows.) The kernels
(kernels/constraints.py) evaluate g, G = dg/du and the velocity-product term.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .model import JOINTS, Issue, Joint, Model, ModelError
from .model.tables import POSITION
from .so3 import frame_with_axis

# position tolerance [m] and alignment tolerance [1] of an assembled or projected state
TOL = 1e-11


class AssemblyWarning(UserWarning):
    """Loop assembly changed initial values the model gave (velocities, or a flexible body's
    modal coordinates) beyond tolerance."""


def row_names(cut: Joint) -> list[str]:
    """Names of the constraint rows of a cut joint, e.g. `pin: offset e1`, `pin: tilt e3.e1'`."""
    return [f"{cut.name}: offset e{i + 1}" if kind == POSITION else f"{cut.name}: tilt e{i + 1}.e{j + 1}'"
            for kind, i, j in JOINTS[cut.type].cut_rows]


def cut_frame(cut: Joint) -> np.ndarray:
    """The joint frame E = [e1 e2 e3] of a cut joint: e3 along its axis; for a universal cut
    e1 along axis2 (perpendicular to axis, checked by validation)."""
    if len(JOINTS[cut.type].cut_axes) == 1:
        return frame_with_axis(cut.axis)
    e3 = np.asarray(cut.axis, float) / np.linalg.norm(cut.axis)
    e1 = np.asarray(cut.axis2, float) / np.linalg.norm(cut.axis2)
    return np.column_stack([e1, np.cross(e3, e1), e3])


def cut_rows(cuts: Sequence[Joint], markers: dict[str, int]) -> dict[str, np.ndarray]:
    """The constraint-row arrays of the kernels (cr_*), all rows in use."""
    rows = [(markers[f"{c.parent}.{c.parent_marker}"], markers[f"{c.child}.{c.child_marker}"], kind, i, j,
             cut_frame(c)) for c in cuts for kind, i, j in JOINTS[c.type].cut_rows]
    n = len(rows)
    ints = lambda k: np.array([r[k] for r in rows], np.int64)  # noqa: E731
    return {"cr_a": ints(0), "cr_b": ints(1), "cr_kind": ints(2), "cr_i": ints(3), "cr_j": ints(4),
            "cr_E": np.array([r[5] for r in rows], float).reshape(n, 3, 3), "cr_on": np.ones(n, np.int64)}


def row_coupling(arrays: tuple) -> dict[str, np.ndarray]:
    """The coupling of the kept rows through the tree (cr_act, cr_nbr_ptr, cr_nbr, cr_env; see
    SYSTEM_FIELDS), for the recursion's sparse G M^-1 G^T: a row's forces move only the
    subtrees below the tops of its two bodies, so two rows interact only when those tops meet."""
    act = np.flatnonzero(arrays.cr_on).astype(np.int64)
    tops = [{int(arrays.tree_top[b]) for b in (arrays.mk_body[arrays.cr_a[r]], arrays.mk_body[arrays.cr_b[r]])
             if b >= 0} for r in act]
    ptr, nbr = [0], []
    for i in range(act.size):
        nbr += [j for j in range(i + 1) if tops[i] & tops[j] or j == i]
        ptr.append(len(nbr))
    return {"cr_act": act, "cr_nbr_ptr": np.array(ptr, np.int64), "cr_nbr": np.array(nbr, np.int64),
            "cr_env": np.array([nbr[ptr[i]] for i in range(act.size)], np.int64)}


class Loops:
    """Evaluates the loop constraints of compiled arrays at a state (own workspace).

    arrays: the SystemArrays; ref: the same boxed for the kernels; active: mask of the rows in
    use (redundant rows dropped)."""

    def __init__(self, arrays: tuple, ref, active: np.ndarray) -> None:
        from .kernels.constraints import loop_state
        from .kernels.dynamics import qdot_of
        from .kernels.structs import box, make_workspace

        self.arrays = arrays
        self.S = ref
        self.work = make_workspace(arrays)     # shared with the boxed copy the kernels see
        self.Wr = box(self.work)
        self._state, self._qdot = loop_state, qdot_of
        self.active = np.asarray(active, dtype=bool)

    def eval(self, q: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(g, G) of the rows in use at (q, u)."""
        self._state(self.S, self.Wr, q, u)
        return self.work.c_g[self.active].copy(), self.work.c_G[self.active].copy()

    def residual(self, q: np.ndarray, u: np.ndarray) -> float:
        """Largest residual of every row, the dropped redundant ones included [m or 1]."""
        self._state(self.S, self.Wr, q, u)
        return float(np.max(np.abs(self.work.c_g), initial=0.0))

    def step_q(self, q: np.ndarray, du: np.ndarray) -> None:
        """q <- q (+) du, du a change in velocity coordinates (quaternions turned and renormalised)."""
        qd = np.zeros_like(q)
        self._qdot(self.S, q, du, qd)
        q += qd
        for k in self.arrays.quat_q:
            if k >= 0:
                q[k:k + 4] /= np.linalg.norm(q[k:k + 4])


def free_columns(arrays: tuple, joint_u: dict[str, tuple[int, int]], held: Sequence[str]) -> np.ndarray:
    """Mask of the velocity coordinates that may move: not prescribed, not in `held` joints."""
    from .kernels.drives import MOTION

    free = arrays.drive != MOTION
    for name in held:
        u0, n = joint_u[name]
        free[u0:u0 + n] = False
    return free


def project_positions(loops: Loops, q: np.ndarray, u: np.ndarray, free: np.ndarray,
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


def project_velocities(loops: Loops, q: np.ndarray, u: np.ndarray, free: np.ndarray) -> None:
    """u <- the nearest velocities (in the free coordinates) with G u = 0."""
    _, G = loops.eval(q, u)
    Gf = G[:, free]
    u[free] -= np.linalg.lstsq(Gf, G @ u, rcond=None)[0] if Gf.size else 0.0


@dataclass(frozen=True)
class Assembly:
    """Consistent initial conditions of a loop model: q0, u0 on the constraints; active: mask of
    the constraint rows kept; redundant: indices of the rows found dependent and dropped."""

    q0: np.ndarray
    u0: np.ndarray
    active: np.ndarray
    redundant: list[int]


def assemble(model: Model, arrays: tuple, ref, joint_u: dict[str, tuple[int, int]], row_names_: list[str],
             q0: np.ndarray, u0: np.ndarray, input_defaults: np.ndarray) -> Assembly:
    """Consistent initial conditions: Newton from the model's approximate q0 with the
    `independent` joints (and prescribed ones) held; dependent constraint rows dropped (rank of
    G by a pivoted QR). Raises ModelError naming the cut whose loop cannot close and by how much."""
    from scipy.linalg import qr

    from .kernels.entry import apply_prescribed

    loops = Loops(arrays, ref, np.ones(arrays.cr_a.size, bool))
    free = free_columns(arrays, joint_u, model.loops.independent)
    q, u = q0.copy(), u0.copy()
    apply_prescribed(ref, 0.0, q, u, input_defaults, np.zeros(u.size))
    # rank with all rows at the approximate pose, then again once assembled
    for _ in range(2):
        err = project_positions(loops, q, u, free)
        _, G = loops.eval(q, u)
        loops.active[np.nonzero(loops.active)[0][_dependent(G, qr)]] = False
    if err > TOL or loops.residual(q, u) > TOL:
        loops.residual(q, u)
        g_all = loops.work.c_g.copy()
        worst = int(np.argmax(np.abs(g_all)))
        row = row_names_[worst]
        k = next(i for i, c in enumerate(model.loops.cuts) if row.startswith(f"{c.name}:"))
        unit = "m" if "offset" in row else "of a unit vector"
        held = ", ".join(model.loops.independent) or "no joint"
        raise ModelError([Issue(f"loops.cuts[{k}] {model.loops.cuts[k].name!r}",
                                f"the loop cannot close: after assembly with {held} held, its constraint "
                                f"'{row}' is off by {abs(g_all[worst]):.3g} ({unit}); check the link lengths, the "
                                "cut's markers and the joints' approximate q0", file=model.source)])
    project_velocities(loops, q, u, free)
    return Assembly(q, u, loops.active.copy(), [int(k) for k in np.nonzero(~loops.active)[0]])


def _dependent(G_active: np.ndarray, qr) -> np.ndarray:
    """Indices (into the rows of G_active) outside a maximal independent set (pivoted QR of G^T)."""
    if G_active.shape[0] == 0:
        return np.zeros(0, np.int64)
    _, R, piv = qr(G_active.T, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    rank = int(np.sum(diag > 1e-9 * max(diag[0], 1e-300)))
    return piv[rank:]
