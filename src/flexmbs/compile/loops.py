"""Stage 7, the loops: each cut joint's constraint rows on the relative pose of its two
markers, consistent initial conditions with the redundant rows found and dropped (assembly),
and the forward-dynamics route (recursion or composite mass matrix).

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

from ..kernels.structs import SystemArrays, box
from ..loops import TOL, Loops, free_columns, modal_columns, project_positions, project_velocities
from ..model import JOINTS, Issue, Joint, Model, ModelError
from ..model.tables import POSITION
from ..so3 import frame_with_axis
from .joints import Joints

# Bodies from which the recursion with closed loops beats the composite route (one RHS, the
# shipped loop models and benchmarks/models.four_bar_chain: four-bar (3 bodies) 4.2 against
# 3.6 us, Bricard (5) 7.5 against 6.2 us, 2 coupled four-bars (5) 7.5 against 6.9 us, 3 (7)
# 10.8 against 11.1 us, 8 (17) 26.1 against 46.7 us)
LOOP_RECURSION_BODIES = 7


@dataclass(frozen=True)
class Closed:
    """A model's loops closed: arrays with the rows kept (cr_on) and their coupling; q0, u0 on
    the constraints; rows: the names of all constraint rows; redundant: those dropped."""

    arrays: SystemArrays
    q0: np.ndarray
    u0: np.ndarray
    rows: list[str]
    redundant: list[str]


def loop_rows(cuts: Sequence[Joint], markers: dict[str, int], mk_body: np.ndarray,
              tree_top: np.ndarray) -> dict[str, np.ndarray]:
    """The cr_* fields (SYSTEM_FIELDS) of the cut joints, every row in use, and their coupling
    through the tree (mk_body, tree_top: the markers' and the tree's fields)."""
    rows = cut_rows(cuts, markers)
    return {**rows, **row_coupling(rows["cr_on"], rows["cr_a"], rows["cr_b"], mk_body, tree_top)}


def uses_recursion(dynamics: str, arrays: SystemArrays) -> bool:
    """Whether forward dynamics runs the articulated-body recursion (closed loops through
    kernels/loop_closure.py): for 'recursive' on every model without massive elastic rods
    (which couple bodies outside the tree), for 'auto' on those trees, and on those models with
    cut joints from LOOP_RECURSION_BODIES bodies on, where it is the faster route; otherwise
    (and for 'composite') the composite mass matrix."""
    if dynamics == "composite" or np.any(arrays.sd_m > 0.0):
        return False
    return dynamics == "recursive" or arrays.cr_a.size == 0 or arrays.nb >= LOOP_RECURSION_BODIES


def close_loops(model: Model, arrays: SystemArrays, joints: Joints, input_defaults: np.ndarray) -> Closed:
    """The loops of `model` closed on its provisional `arrays` from the initial state of
    `joints` (inputs at their defaults); a tree comes back as it is."""
    rows = [name for cut in model.loops.cuts for name in row_names(cut)]
    if not model.loops.cuts:
        return Closed(arrays, joints.q0, joints.u0, rows, [])
    done = assemble(model, arrays, box(arrays), joints.joint_u, rows, joints.q0, joints.u0, input_defaults)
    active = done.active.astype(np.int64)
    arrays = arrays._replace(cr_on=active, **row_coupling(active, arrays.cr_a, arrays.cr_b, arrays.mk_body,
                                                          arrays.tree_top))
    return Closed(arrays, done.q0, done.u0, rows, [rows[k] for k in done.redundant])


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


def row_coupling(active: np.ndarray, cr_a: np.ndarray, cr_b: np.ndarray, mk_body: np.ndarray,
                 tree_top: np.ndarray) -> dict[str, np.ndarray]:
    """The coupling of the kept rows (active: cr_on) through the tree (cr_act, cr_nbr_ptr,
    cr_nbr, cr_env; see SYSTEM_FIELDS), for the recursion's sparse G M^-1 G^T: a row's forces
    move only the subtrees below the tops of its two bodies, so two rows interact only when
    those tops meet."""
    act = np.flatnonzero(active).astype(np.int64)
    tops = [{int(tree_top[b]) for b in (mk_body[cr_a[r]], mk_body[cr_b[r]]) if b >= 0} for r in act]
    ptr, nbr = [0], []
    for i in range(act.size):
        nbr += [j for j in range(i + 1) if tops[i] & tops[j] or j == i]
        ptr.append(len(nbr))
    return {"cr_act": act, "cr_nbr_ptr": np.array(ptr, np.int64), "cr_nbr": np.array(nbr, np.int64),
            "cr_env": np.array([nbr[ptr[i]] for i in range(act.size)], np.int64)}


@dataclass(frozen=True)
class Assembly:
    """Consistent initial conditions of a loop model: q0, u0 on the constraints; active: mask of
    the constraint rows kept; redundant: indices of the rows found dependent and dropped."""

    q0: np.ndarray
    u0: np.ndarray
    active: np.ndarray
    redundant: list[int]


def assemble(model: Model, arrays: SystemArrays, ref, joint_u: dict[str, tuple[int, int]], row_names_: list[str],
             q0: np.ndarray, u0: np.ndarray, input_defaults: np.ndarray) -> Assembly:
    """Consistent initial conditions: Newton from the model's approximate q0 with the
    `independent` joints (and prescribed ones) held; dependent constraint rows dropped (rank of
    G by a pivoted QR). The joint coordinates close the loops first, the flexible bodies' modal
    coordinates only where the joints cannot: a least-norm step over all of them put
    236 J into the axial mode of a four-bar's flexible coupler whose joints alone could close it.
    Raises ModelError naming the cut whose loop cannot close and by how much."""
    from scipy.linalg import qr

    from ..kernels.entry import apply_prescribed

    loops = Loops(arrays, ref, np.ones(arrays.cr_a.size, bool))
    free = free_columns(arrays, joint_u, model.loops.independent)
    joints = free & ~modal_columns(arrays)
    q, u = q0.copy(), u0.copy()
    apply_prescribed(ref, 0.0, q, u, input_defaults, np.zeros(u.size))
    # rank with all rows at the approximate pose, then again once assembled
    for _ in range(2):
        err = project_positions(loops, q, u, joints)
        if err > TOL:
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
    project_velocities(loops, q, u, joints)
    _, G = loops.eval(q, u)
    if np.max(np.abs(G @ u), initial=0.0) > TOL:
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
