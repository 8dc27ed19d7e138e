"""Simulation in natural coordinates: integrate, project, and read the joint coordinates back
out of the bodies' frames, so that the result has the same signals as the joint-coordinate
formulation (joint angles and rates, sensors, cut-joint gaps, energies) plus the natural
formulation's own energy and constraint residual."""

from __future__ import annotations

import time as _time

import numpy as np

from ..so3 import frame_with_axis, rotation_matrix
from ..system import System
from .arrays import NaturalSystem
from .kernels import accelerations, make_work, project

PROJECTION_TOL = 1e-12


def initial_state(system: System) -> tuple[np.ndarray, np.ndarray]:
    """Natural coordinates and rates of the joint-coordinate System's initial state (its loops
    assembled): origin, axes and their rates per body."""
    from ..kernels.entry import apply_prescribed, forward
    from ..kernels.structs import box, make_workspace

    work = make_workspace(system.arrays)
    q, u = system.q0.copy(), system.u0.copy()
    apply_prescribed(system.ref, 0.0, q, u, system.input_defaults, np.zeros(u.size))
    forward(system.ref, box(work), q, u)
    nb = len(system.bodies)
    x, xd = np.zeros(12 * nb), np.zeros(12 * nb)
    for i in range(nb):
        A, w = work.A[i], work.w[i]
        x[12 * i:12 * i + 12] = np.concatenate([work.r[i], A[:, 0], A[:, 1], A[:, 2]])
        xd[12 * i:12 * i + 12] = np.concatenate([work.v[i], *(np.cross(w, A[:, k]) for k in range(3))])
    return x, xd


class JointReader:
    """Joint coordinates and rates of the tree joints from natural coordinates: the relative
    rotation and offset of the child's marker frame in the parent's (revolute: the angle about
    the axis, continued across +-pi from the previous sample; prismatic: the slide)."""

    def __init__(self, ns: NaturalSystem) -> None:
        system = ns.system
        model = system.model
        self.index = {b: i for i, b in enumerate(ns.bodies)}
        self.joints = []
        for name in system.joints:
            j = model.joint(name)
            if j.type not in ("revolute", "prismatic", "fixed"):
                raise ValueError(f"natural coordinates: joint {name} is a {j.type} tree joint, whose coordinates "
                                 "cannot be read back here; make it a loop cut (loops.cuts)")
            marks = []
            for body, marker in ((j.parent, j.parent_marker), (j.child, j.child_marker)):
                owner = model.ground_markers if body == "ground" else model.body(body).markers
                mk = next(m for m in owner if m.name == marker)
                marks.append((self.index.get(body, -1), np.asarray(mk.position, float), rotation_matrix(mk.rotation)))
            e = np.asarray(j.axis, float) / np.linalg.norm(j.axis)
            self.joints.append((j.type, system.joint_q[name][0], system.joint_u[name][0], e, marks))

    def _frame(self, x, xd, body, s, R):
        """World position, rotation, velocity and angular velocity of a marker frame."""
        if body < 0:
            return s, R, np.zeros(3), np.zeros(3)
        c = x[12 * body:12 * body + 12]
        cd = xd[12 * body:12 * body + 12]
        X, Xd = c[3:].reshape(3, 3).T, cd[3:].reshape(3, 3).T
        w = 0.5 * sum(np.cross(X[:, k], Xd[:, k]) for k in range(3))
        return c[:3] + X @ s, X @ R, cd[:3] + Xd @ s, w

    def read(self, x: np.ndarray, xd: np.ndarray, q: np.ndarray, u: np.ndarray, dt: float) -> None:
        """Fill the tree joints' q, u (joint-coordinate layout); q, u hold the previous sample's
        on entry, dt [s] before: a revolute angle takes the turn nearest to the previous angle
        advanced by the mean of the two rates (a joint may turn more than pi between samples)."""
        for jt, iq, iu, e, ((ba, sa, Ra), (bb, sb, Rb)) in self.joints:
            pa, Aa, va, wa = self._frame(x, xd, ba, sa, Ra)
            pb, Ab, vb, wb = self._frame(x, xd, bb, sb, Rb)
            if jt == "revolute":
                Rrel = Aa.T @ Ab
                p1, p2, _ = frame_with_axis(e).T
                th = np.arctan2(p2 @ Rrel @ p1, p1 @ Rrel @ p1)
                rate = (Aa @ e) @ (wb - wa)
                guess = q[iq] + 0.5 * (u[iu] + rate) * dt
                q[iq] = th + 2 * np.pi * np.round((guess - th) / (2 * np.pi))
                u[iu] = rate
            elif jt == "prismatic":
                ew = Aa @ e
                q[iq] = ew @ (pb - pa)
                u[iu] = ew @ (vb - va) + np.cross(wa, ew) @ (pb - pa)


def simulate_natural(ns: NaturalSystem, t: np.ndarray, rtol: float = 1e-10, atol: float | None = None) -> dict:
    """Integrate the natural-coordinate equations of `ns` over the output times t [s] with
    DOP853 (rtol, atol), projecting onto the constraints at every output time. Returns the
    joint-coordinate states X (len(t), nq + nv), the natural energy [J], the largest constraint
    residual after projection, the rows dropped as redundant (at the end, and the most at any
    evaluation: more than at the start means a near-singular pose) and statistics."""
    from scipy.integrate import solve_ivp

    from ..kernels.entry import drive_profile

    system = ns.system
    N = ns.arrays
    W = make_work(N, len(ns.drives))
    n = ns.n
    S, inputs = system.ref, system.input_defaults

    def set_drives(time: float) -> None:
        for k, c in enumerate(ns.drives):
            W.th[k] = drive_profile(S, c, inputs, time)

    calls = [0, 0]

    def rhs(time: float, y: np.ndarray) -> np.ndarray:
        set_drives(time)
        out = np.empty(2 * n)
        out[:n] = y[n:]
        calls[1] = max(calls[1], accelerations(N, W, y[:n], y[n:], out[n:]))
        calls[0] += 1
        return out

    reader = JointReader(ns)
    x, xd = initial_state(system)
    set_drives(0.0)
    X = np.zeros((t.size, system.nq + system.nv))
    X[0] = np.concatenate([system.q0, system.u0])
    energy, residual = np.zeros(t.size), np.zeros(t.size)
    Qg = N.Qg.ravel()
    wall = _time.perf_counter()
    y = np.concatenate([x, xd])
    for k in range(t.size):
        if k > 0:
            sol = solve_ivp(rhs, (t[k - 1], t[k]), y, method="DOP853", rtol=rtol, atol=rtol if atol is None else atol)
            if not sol.success:
                from ..solvers.stepper import SolverError

                raise SolverError(1, float(sol.t[-1]), f"natural coordinates: {sol.message}")
            y = sol.y[:, -1].copy()
        set_drives(t[k])
        residual[k] = project(N, W, y[:n], y[n:], PROJECTION_TOL, 20)
        X[k] = X[k - 1] if k > 0 else X[0]
        reader.read(y[:n], y[n:], X[k, :system.nq], X[k, system.nq:], t[k] - t[k - 1] if k > 0 else 0.0)
        v = y[n:].reshape(-1, 12)
        energy[k] = 0.5 * np.einsum("bi,bij,bj->", v, ns.M, v) - Qg @ y[:n]
    return dict(X=X, energy=energy, residual=residual, redundant=int(W.drop.sum()), redundant_max=calls[1],
                rows=int(N.kind.size),
                fill=ns.fill, evaluations=calls[0], wall_time=_time.perf_counter() - wall, groups=ns.groups)
