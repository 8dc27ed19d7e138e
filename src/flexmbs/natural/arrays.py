"""Compiled form of a rigid mechanism in natural coordinates (Kraus et al. 2001): per body its 12
coordinates, constant mass matrix and gravity force; every constraint a row of one of two kinds;
the joints grouped into blocks in a topology order for the block factorisation.

Body b has q_b = [r0, u, v, w]: origin and axes in the world frame [m, 1]. A body point at
body coordinates s sits at r0 + s1 u + s2 v + s3 w, linear in q, so M_b is constant:
M_b = integral C(s)^T C(s) dm = [[m I, m c_j I], [m c_i I, J_ij I]], J = integral s s^T dm.

Rows (phi = 0):
- LIN: phi = n . (w_a - w_b) + c0, w = [point] r0 + X s (X = [u v w]); a ground side is a
  constant world vector. Marker origins coinciding, a point on a line.
- BIL: phi = (X_a d_a(t)) . (X_b d_b) + c0, d_a(t) = cos(theta) d0 + sin(theta) d1 with theta a
  motion drive's angle (0 without); a ground side is a constant world vector. Rigidity
  (u.u = 1, u.v = 0, ...), axes perpendicular, a driven angle.
Each joint is written with full row rank: revolute 3 + 2 (+ 1 driven angle), prismatic (to the
ground) 2 + 2 + 1, spherical 3, fixed 3 + 2 + 1. Redundancy appears only where loops close, and
the factorisation finds it (kernels.factor).
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from ..model import Model, inertia_matrix
from ..so3 import frame_with_axis, rotation_matrix
from ..system import System

LIN, BIL = 0, 1
MAXROWS = 6

NaturalArrays = namedtuple("NaturalArrays", [
    "nb", "Minv", "Qg",
    # rows: kind, sides (body or -1 = ground), point flags, vectors, direction, drive, constant
    "kind", "ra", "rb", "pa", "pb", "sa", "sa1", "sb", "n", "drv", "c0",
    # joint groups in elimination order: rows [g0, g1); lower block pattern in CSR by block row
    "g0", "g1", "bp", "bcol",
    # per body, the (row block k, column block l, block id) pairs it couples (k >= l)
    "cp", "ck", "cl", "cblk",
])


@dataclass
class NaturalSystem:
    """arrays: the numba-facing NaturalArrays; M: per-body mass matrices (nb, 12, 12) [kg, kg m,
    kg m^2]; bodies: names in coordinate order (body i owns q[12 i:12 i + 12]); groups: the joint
    names of the row blocks in elimination order; drives: velocity-coordinate indices in the
    joint-coordinate System of the motion drives (row drv k reads drive k)."""

    system: System
    arrays: NaturalArrays
    M: np.ndarray
    bodies: list[str]
    groups: list[str]
    drives: list[int]
    fill: int

    @property
    def n(self) -> int:
        return 12 * len(self.bodies)


class _Builder:
    def __init__(self, model: Model, bodies: list[str]) -> None:
        self.model = model
        self.index = {b: i for i, b in enumerate(bodies)}
        self.rows: list[tuple] = []
        self.drives: list[int] = []

    def marker(self, body: str, name: str) -> tuple[np.ndarray, np.ndarray]:
        owner = self.model.ground_markers if body == "ground" else self.model.body(body).markers
        mk = next(m for m in owner if m.name == name)
        return np.asarray(mk.position, float), rotation_matrix(mk.rotation)

    def lin(self, a: str, pa: int, sa, b: str, pb: int, sb, n) -> None:
        self.rows.append((LIN, self.index.get(a, -1), self.index.get(b, -1), pa, pb, np.asarray(sa, float),
                          np.zeros(3), np.asarray(sb, float), np.asarray(n, float), -1, 0.0))

    def bil(self, a: str, d0, b: str, db, c0: float = 0.0, d1=None, drv: int = -1) -> None:
        self.rows.append((BIL, self.index.get(a, -1), self.index.get(b, -1), 0, 0, np.asarray(d0, float),
                          np.zeros(3) if d1 is None else np.asarray(d1, float), np.asarray(db, float), np.zeros(3),
                          drv, float(c0)))

    def rigidity(self, body: str) -> None:
        e = np.eye(3)
        for i, j in ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)):
            self.bil(body, e[i], body, e[j], c0=-1.0 if i == j else 0.0)

    def joint(self, j, drive_coordinate: int) -> None:
        """Rows of joint j; drive_coordinate: its velocity coordinate when motion-driven, else -1."""
        sa, Ra = self.marker(j.parent, j.parent_marker)
        sb, Rb = self.marker(j.child, j.child_marker)
        e = np.asarray(j.axis, float) / np.linalg.norm(j.axis)
        p1, p2, _ = frame_with_axis(e).T
        # body-side vectors are in body coordinates, ground-side ones in the world (Ra, Rb map marker -> body)
        if j.type in ("revolute", "spherical", "fixed"):
            for n in np.eye(3):
                self.lin(j.parent, 1, sa, j.child, 1, sb, n)
        if j.type in ("revolute", "fixed", "prismatic"):
            for p in (p1, p2):
                self.bil(j.parent, Ra @ e, j.child, Rb @ p)
        if j.type in ("fixed", "prismatic") or drive_coordinate >= 0:
            # the child's p1 is perpendicular to the parent's p2 rotated by theta about e
            drv = -1
            if drive_coordinate >= 0:
                drv = len(self.drives)
                self.drives.append(drive_coordinate)
            self.bil(j.parent, Ra @ p2, j.child, Rb @ p1, d1=-(Ra @ p1), drv=drv)
        if j.type == "prismatic":
            if j.parent != "ground":
                raise ValueError(f"natural coordinates: joint {j.name}: prismatic joints are supported to the "
                                 "ground only")
            for p in (p1, p2):
                self.lin(j.child, 1, sb, "ground", 0, sa, Ra @ p)


def _mass(model: Model, name: str) -> tuple[np.ndarray, np.ndarray]:
    body = model.body(name)
    m, c = float(body.mass), np.asarray(body.com, float)
    Ic = inertia_matrix(body.inertia)
    J = m * np.outer(c, c) + 0.5 * np.trace(Ic) * np.eye(3) - Ic
    if np.min(np.linalg.eigvalsh(J)) <= 1e-12 * np.max(np.linalg.eigvalsh(J)):
        raise ValueError(f"natural coordinates: body {name} is flat (inertia {list(body.inertia)}: a principal "
                         "moment equals the sum of the other two), so its mass matrix in natural coordinates is "
                         "singular; give it some thickness")
    Mb = np.zeros((12, 12))
    Mb[:3, :3] = m * np.eye(3)
    for i in range(3):
        Mb[:3, 3 + 3 * i:6 + 3 * i] = Mb[3 + 3 * i:6 + 3 * i, :3] = m * c[i] * np.eye(3)
        for k in range(3):
            Mb[3 + 3 * i:6 + 3 * i, 3 + 3 * k:6 + 3 * k] = J[i, k] * np.eye(3)
    g = np.asarray(model.gravity, float)
    return Mb, np.concatenate([m * g, m * c[0] * g, m * c[1] * g, m * c[2] * g])


def _check_scope(system: System) -> None:
    model = system.model
    for name in system.bodies:
        if model.body(name).type != "rigid":
            raise ValueError(f"natural coordinates: body {name} is {model.body(name).type}; only rigid bodies")
    for j in list(model.joints) + list(model.loops.cuts):
        if j.type not in ("revolute", "prismatic", "spherical", "fixed"):
            raise ValueError(f"natural coordinates: joint {j.name} is {j.type}; supported: revolute, prismatic, "
                             "spherical, fixed")
        unsupported = [what for what, present in (
            ("a spring", j.spring is not None), ("rotor inertia", bool(j.rotor_inertia)),
            (f"a {j.drive.type} drive", j.drive.type not in ("passive", "motion")),
            ("a motion drive on a non-revolute joint", j.drive.type == "motion" and j.type != "revolute"))
            if present]
        if unsupported:
            raise ValueError(f"natural coordinates: joint {j.name} has {', '.join(unsupported)}, which this "
                             "formulation does not model")
    if model.loads:
        raise ValueError(f"natural coordinates: loads ({', '.join(ld.name or ld.type for ld in model.loads)}) are "
                         "not modelled in this formulation")


def _adjacency(joint_bodies: list[tuple[int, int]]) -> list[set[int]]:
    """The joint graph: joints k and l adjacent when they share a moving body (the ground
    couples nothing: it has no unknowns)."""
    adj: list[set[int]] = [set() for _ in joint_bodies]
    by_body: dict[int, list[int]] = {}
    for k, (a, b) in enumerate(joint_bodies):
        for body in (a, b):
            if body >= 0:
                by_body.setdefault(body, []).append(k)
    for ks in by_body.values():
        for k in ks:
            adj[k].update(x for x in ks if x != k)
    return adj


def _order(joint_bodies: list[tuple[int, int]], tree_rank: list[int]) -> list[int]:
    """Elimination order of the joint blocks: greedy minimum degree on the joint graph (leaves
    first on chains and trees; a loop's cut joint once its loop has been walked), ties broken by
    tree_rank."""
    adj = _adjacency(joint_bodies)
    left, order = set(range(len(joint_bodies))), []
    while left:
        k = min(left, key=lambda x: (len(adj[x]), tree_rank[x]))
        order.append(k)
        left.remove(k)
        nbrs = adj[k]
        for x in nbrs:
            adj[x].discard(k)
            adj[x].update(y for y in nbrs if y != x)
    return order


def _pattern(joint_bodies: list[tuple[int, int]]) -> tuple[list[list[int]], int]:
    """Lower block pattern of the factor (joints already in elimination order): row k holds the
    columns l <= k it couples to after fill; and the number of fill blocks."""
    n = len(joint_bodies)
    adj = _adjacency(joint_bodies)
    structural = sum(len(a) for a in adj) // 2
    for k in range(n):
        later = [x for x in adj[k] if x > k]
        for x in later:
            adj[x].update(y for y in later if y != x)
    rows = [sorted(x for x in adj[k] if x < k) + [k] for k in range(n)]
    return rows, sum(len(r) - 1 for r in rows) - structural


def compile_natural(system: System) -> NaturalSystem:
    """Natural-coordinate arrays of a compiled (rigid) System."""
    _check_scope(system)
    model = system.model
    bodies = list(system.bodies)
    build = _Builder(model, bodies)
    for name in bodies:
        build.rigidity(name)
    nrig = len(build.rows)
    joints = list(model.joints) + list(model.loops.cuts)
    blocks: list[tuple[int, int]] = []
    ranges: list[tuple[int, int]] = []
    for j in joints:
        start = len(build.rows)
        build.joint(j, system.joint_u[j.name][0] if j.drive.type == "motion" else -1)
        ranges.append((start, len(build.rows)))
        blocks.append((build.index.get(j.parent, -1), build.index.get(j.child, -1)))
    # tree joints from the leaves (bodies come parent-first), cut joints after
    rank = [-build.index[j.child] if k < len(model.joints) else len(joints) + k for k, j in enumerate(joints)]
    order = _order(blocks, rank)
    rows = build.rows[:nrig] + [r for k in order for r in build.rows[ranges[k][0]:ranges[k][1]]]
    g0, g1, pos = [], [], nrig
    for k in order:
        g0.append(pos)
        pos += ranges[k][1] - ranges[k][0]
        g1.append(pos)
    gb = [blocks[k] for k in order]
    pattern, fill = _pattern(gb)
    bp, bcol = [0], []
    for r in pattern:
        bcol.extend(r)
        bp.append(len(bcol))
    block_id = {(k, l): bp[k] + i for k, r in enumerate(pattern) for i, l in enumerate(r)}
    nb = len(bodies)
    cp, ck, cl, cblk = [0], [], [], []
    for i in range(nb):
        touching = [k for k, (a, b) in enumerate(gb) if i in (a, b)]
        for k in touching:
            for l in touching:
                if l <= k:
                    ck.append(k)
                    cl.append(l)
                    cblk.append(block_id[(k, l)])
        cp.append(len(ck))
    M, Qg = zip(*(_mass(model, b) for b in bodies)) if bodies else ((), ())
    M = np.array(M).reshape(nb, 12, 12)
    field = lambda i: [r[i] for r in rows]   # noqa: E731
    arrays = NaturalArrays(
        nb=nb, Minv=np.array([np.linalg.inv(Mb) for Mb in M]).reshape(nb, 12, 12),
        Qg=np.array(Qg, float).reshape(nb, 12),
        kind=np.array(field(0), np.int64), ra=np.array(field(1), np.int64), rb=np.array(field(2), np.int64),
        pa=np.array(field(3), float), pb=np.array(field(4), float), sa=np.array(field(5)).reshape(-1, 3),
        sa1=np.array(field(6)).reshape(-1, 3), sb=np.array(field(7)).reshape(-1, 3),
        n=np.array(field(8)).reshape(-1, 3), drv=np.array(field(9), np.int64), c0=np.array(field(10), float),
        g0=np.array(g0, np.int64), g1=np.array(g1, np.int64), bp=np.array(bp, np.int64),
        bcol=np.array(bcol, np.int64), cp=np.array(cp, np.int64), ck=np.array(ck, np.int64),
        cl=np.array(cl, np.int64), cblk=np.array(cblk, np.int64))
    return NaturalSystem(system, arrays, M, bodies, [joints[k].name for k in order], build.drives, fill)
