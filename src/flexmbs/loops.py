"""Closed kinematic loops at run time: the constraint rows of a compiled System evaluated at a
state, and the projection of a state onto them (positions by Newton, velocities by least
squares), for the integrators and for loop assembly. How cut joints become constraint rows and
how a model's loops are assembled: compile/loops.py.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# position tolerance [m] and alignment tolerance [1] of an assembled or projected state
TOL = 1e-11
# Newton iterations of a position projection
MAX_ITER = 30
# the largest residual of any row [m or 1], the dropped ones included, past which a projected
# loop counts as open (a dead point, or past a bifurcation a redundant row become independent)
OPEN = 1e3 * TOL


class Loops:
    """Evaluates the loop constraints of compiled arrays at a state (own workspace).

    arrays: the SystemArrays; ref: the same boxed for the kernels; active: mask of the rows in
    use (redundant rows dropped)."""

    def __init__(self, arrays: tuple, ref, active: np.ndarray) -> None:
        from .kernels.constraints import loop_state
        from .kernels.entry import qdot_of
        from .kernels.projection import PROJECTED, project_loops
        from .kernels.structs import box, make_workspace

        self.arrays = arrays
        self.S = ref
        self.work = make_workspace(arrays)     # shared with the boxed copy the kernels see
        self.Wr = box(self.work)
        self._state, self._qdot = loop_state, qdot_of
        self._project, self._projected = project_loops, PROJECTED
        self.active = np.asarray(active, dtype=bool)

    def eval(self, q: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(g, G) of the rows in use at (q, u)."""
        self._state(self.S, self.Wr, q, u)
        return self.work.c_g[self.active].copy(), self.work.c_G[self.active].copy()

    def residual(self, q: np.ndarray, u: np.ndarray) -> float:
        """Largest residual of every row, the dropped redundant ones included [m or 1]."""
        self._state(self.S, self.Wr, q, u)
        return float(np.max(np.abs(self.work.c_g), initial=0.0))

    def project(self, q: np.ndarray, u: np.ndarray, weight: np.ndarray) -> float:
        """(q, u) onto the rows in use (S.cr_on: `active` must be those), positions then
        velocities, by the corrections of least weighted norm (weight: one per velocity
        coordinate, 0 for a held one; projection_weights), in one numba call
        (kernels/projection.py); by project_positions and project_velocities where that fails
        (a singular pose, or Newton not converged). Returns the largest residual of every row,
        the dropped ones included, at the projected q [m or 1]."""
        status, residual = self._project(self.S, self.Wr, q, u, weight, TOL, MAX_ITER)
        if status == self._projected:
            return float(residual)
        project_positions(self, q, u, weight)
        residual = self.residual(q, u)
        project_velocities(self, q, u, weight)
        return residual

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


def modal_columns(arrays: tuple) -> np.ndarray:
    """Mask of the velocity coordinates that are modal rates of flexible bodies."""
    modal = np.zeros(arrays.drive.size, bool)
    for b in range(arrays.nm.size):
        modal[arrays.ev[b]:arrays.ev[b] + arrays.nm[b]] = True
    return modal


def projection_weights(arrays: tuple, free: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The weight of each velocity coordinate in the run-time projection (kernels/projection.py):
    for a joint coordinate the scale of its position coordinate (scale: system.state_scales,
    positions then rates), 1 for a quaternion's rate (a rotation [rad]); for a modal coordinate
    its scale over the square root of its angular frequency [rad/s] (at least 1), which is its
    position scale over the square root of its rate scale's ratio to it (state_scales: eta_scale
    max(1, omega_k)); 0 where not `free`."""
    weight = np.ones(arrays.drive.size)
    joint = arrays.uq >= 0
    weight[joint] = scale[arrays.uq[joint]]
    for b in range(arrays.nm.size):
        n, e0, v0 = arrays.nm[b], arrays.eq[b], arrays.nq + arrays.ev[b]
        weight[arrays.ev[b]:arrays.ev[b] + n] = scale[e0:e0 + n] / np.sqrt(scale[v0:v0 + n] / scale[e0:e0 + n])
    return np.where(free, weight, 0.0)


def project_positions(loops: Loops, q: np.ndarray, u: np.ndarray, weight: np.ndarray,
                      max_iter: int = MAX_ITER) -> float:
    """Newton with least-norm steps in the norm sum (dz_c / weight_c)^2 (a boolean mask of free
    coordinates: unit weights) until |g| <= TOL; returns |g|. Rank-revealing (lstsq)."""
    weight = np.asarray(weight, dtype=float)
    for _ in range(max_iter):
        g, G = loops.eval(q, u)
        err = float(np.max(np.abs(g), initial=0.0))
        if err <= TOL:
            return err
        du = -weight * np.linalg.lstsq(G * weight, g, rcond=None)[0]
        loops.step_q(q, du)
    g, _ = loops.eval(q, u)
    return float(np.max(np.abs(g), initial=0.0))


def project_velocities(loops: Loops, q: np.ndarray, u: np.ndarray, weight: np.ndarray) -> None:
    """u <- the nearest velocities with G u = 0 in the norm of project_positions."""
    weight = np.asarray(weight, dtype=float)
    _, G = loops.eval(q, u)
    if G.size:
        u -= weight * np.linalg.lstsq(G * weight, G @ u, rcond=None)[0]
