"""Projection of a state onto the loop constraints at run time (numba): positions by Newton's
method with least-norm steps, then velocities by the least-norm correction, both over a mask of
free velocity coordinates. The integrators call it at every output point of a loop model; in
Python (numpy's lstsq per iteration) it took three quarters of the crank-rocker's CPU.

The least-norm step of rows G_f (active rows x free columns) of full row rank is
dz = G_f^T (G_f G_f^T)^-1 r, solved by a Cholesky factorisation of the small Gram matrix
G_f G_f^T (rows: the constraints in use, independent by construction, compile/loops.py). At a
singular pose that matrix is not positive definite: the caller falls back to the
rank-revealing least squares of loops.py.
"""

import numpy as np
from numba import njit

from .constraints import active_gram, loop_state
from .dynamics import normalize_quaternions, qdot_of
from .linalg import chol_factor_n, chol_solve_n
from .settings import JIT, kernel

PROJECTED, NOT_CONVERGED, RANK_LOST = 0, 1, 2


@kernel
def least_norm(S, W, r, free, out):
    """out <- G_f^T (G_f G_f^T)^-1 r over the active rows (S.cr_on) of W.c_G and the free
    columns (r: one entry per row of G, the dropped rows ignored; out: one per velocity
    coordinate, 0 where not free). W.c_X (G_f), W.c_S, W.c_LS, W.c_r scratch. False when the
    Gram matrix is not positive definite."""
    nc, nv = W.c_G.shape
    G, X, y = W.c_G, W.c_X, W.c_r
    k = 0
    for i in range(nc):
        for c in range(nv):
            X[i, c] = G[i, c] if free[c] else 0.0
        if S.cr_on[i] != 0:
            y[k] = r[i]
            k += 1
    na = active_gram(S, X, X, W.c_S)
    if not chol_factor_n(W.c_S, W.c_LS, na):
        return False
    chol_solve_n(W.c_LS, y, na)
    for c in range(nv):
        out[c] = 0.0
    k = 0
    for i in range(nc):
        if S.cr_on[i] == 0:
            continue
        for c in range(nv):
            out[c] += X[i, c] * y[k]
        k += 1
    return True


@kernel
def active_error(S, W):
    """Largest |g| of the active rows [m or 1] (W.c_g from loop_state)."""
    err = 0.0
    for r in range(W.c_g.shape[0]):
        if S.cr_on[r] != 0:
            err = max(err, abs(W.c_g[r]))
    return err


@njit(**JIT)
def project_loops(S, W, q, u, free, tol, max_iter):
    """(q, u) onto the active loop constraints: Newton on the positions, least-norm steps over
    the `free` velocity coordinates (bool mask, nv), until the largest active residual is at
    most tol [m or 1]; then u <- the nearest u (least norm, free coordinates) with G u = 0.
    W: a workspace of its own (loops.Loops). Returns (PROJECTED, NOT_CONVERGED after max_iter
    Newton steps, or RANK_LOST; the largest residual of every row, dropped ones included, at
    the final q). Quaternions are renormalised after each step."""
    du, qd = W.xud, W.xq
    for it in range(max_iter + 1):
        loop_state(S, W, q, u)
        if active_error(S, W) <= tol:
            break
        if it == max_iter:
            return NOT_CONVERGED, np.max(np.abs(W.c_g))
        if not least_norm(S, W, W.c_g, free, du):
            return RANK_LOST, np.max(np.abs(W.c_g))
        for c in range(du.shape[0]):
            du[c] = -du[c]
        qdot_of(S, q, du, qd)
        for k in range(q.shape[0]):
            q[k] += qd[k]
        normalize_quaternions(S, q)
    residual = np.max(np.abs(W.c_g)) if W.c_g.shape[0] else 0.0
    for r in range(W.c_g.shape[0]):
        acc = 0.0
        for c in range(u.shape[0]):
            acc += W.c_G[r, c] * u[c]
        W.c_gam[r] = acc   # scratch: G u
    if not least_norm(S, W, W.c_gam, free, du):
        return RANK_LOST, residual
    for c in range(u.shape[0]):
        u[c] -= du[c]
    return PROJECTED, residual

