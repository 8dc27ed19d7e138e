"""Projection of a state onto the loop constraints at run time (numba): positions by Newton's
method with least-norm steps, then velocities by the least-norm correction, both in a weighted
norm over the velocity coordinates. The implicit integrators call it after every step of a loop model
(solvers/common.onto_manifold), the Stepper at every output point; in Python (numpy's lstsq
per iteration) it took three quarters of the crank-rocker's CPU.

The weighted least-norm step, the dz of least sum_c (dz_c / w_c)^2 with G dz = r (w_c = 0:
coordinate c held), is dz = Wd X^T (X X^T)^-1 r with X = G Wd, Wd = diag(w), for rows G (the
constraints in use) of full row rank: the Gram matrix X X^T is Cholesky-factored. At a
singular pose it is not positive definite: the caller falls back to the rank-revealing least
squares of loops.py.

Projecting each step's result onto the constraint manifold is the standard projection method
(E. Hairer, C. Lubich, G. Wanner, Geometric Numerical Integration, 2nd ed., Springer 2006,
Sec. IV.4, there in the Euclidean norm). Our weights (loops.projection_weights) are the
position coordinates' scales, the norm the integrators control the positions' error in, for
the joint coordinates, and for a modal coordinate its scale over sqrt(omega_k), omega_k its
angular frequency [rad/s], for the velocity correction too (one metric for both steps). The
correction then goes into the joints wherever they can close the loop, and into the stiff
modes only for the rows the joints cannot move (a planar mechanism's out-of-plane rows).
Measured on the crank-rocker (radau, rtol 1e-4, 0.5 s, a projection after every step):
- weighted by their scales alone, the coupler's stiff interface modes took a share of each
  correction, and the kick (their stiffness times it) stalled the Newton iterations of the
  next steps: 61 rejected of 182 steps and 35 Jacobians, against 30 of 130 and 25 unprojected;
- over sqrt(omega_k): 28 of 127 and 24 Jacobians;
- over omega_k (the correction's cost its elastic energy): the same counts, but the Gram matrix
  of the out-of-plane rows, which only the modes close, became so ill-conditioned (weights down
  to 3e-7) that this projection and loops.py's SVD one differed by 1e-10, where over
  sqrt(omega_k) they agree to 2e-15 (tests/test_loops.py).
(Earlier, in unit weights, the corrections went into the modal coordinates 20 times more than
into the joint angles relative to their scales.)
"""

from numba import njit

from .constraints import active_gram, loop_rows
from .dynamics import normalize_quaternions, qdot_of
from .linalg import chol_factor_n, chol_solve_n
from .settings import JIT, kernel

PROJECTED, NOT_CONVERGED, RANK_LOST = 0, 1, 2


@kernel
def least_norm(S, W, r, weight, out):
    """out <- the weighted least-norm dz with G dz = r over the active rows (S.cr_on) of W.c_G:
    dz = Wd X^T (X X^T)^-1 r, X = G Wd, Wd = diag(weight) (r: one entry per row of G, the
    dropped rows ignored; weight, out: one per velocity coordinate, weight 0 for a held one).
    W.c_X (X), W.c_S, W.c_LS, W.c_r scratch. False when the Gram matrix is not positive
    definite."""
    nc, nv = W.c_G.shape
    G, X, y = W.c_G, W.c_X, W.c_r
    k = 0
    for i in range(nc):
        for c in range(nv):
            X[i, c] = G[i, c] * weight[c]
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
    for c in range(nv):
        out[c] *= weight[c]
    return True


@kernel
def active_error(S, W):
    """Largest |g| of the active rows [m or 1] (W.c_g from loop_rows)."""
    err = 0.0
    for r in range(W.c_g.shape[0]):
        if S.cr_on[r] != 0:
            err = max(err, abs(W.c_g[r]))
    return err


@kernel
def largest_residual(W):
    """Largest |g| of every row, the dropped ones included [m or 1] (W.c_g from loop_rows;
    0 without rows)."""
    err = 0.0
    for r in range(W.c_g.shape[0]):
        err = max(err, abs(W.c_g[r]))
    return err


@njit(**JIT)
def project_loops(S, W, q, u, weight, tol, max_iter):
    """onto_loops called from Python (loops.Loops.project, with a workspace of its own)."""
    return onto_loops(S, W, q, u, weight, tol, max_iter)


@kernel
def onto_loops(S, W, q, u, weight, tol, max_iter):
    """(q, u) onto the active loop constraints: Newton on the positions, weighted least-norm
    steps (least_norm; weight: nv, 0 for a held coordinate), until the largest active residual is at
    most tol [m or 1]; then u <- the nearest u (the same norm) with G u = 0. W: any workspace
    (its W.xq, W.xud and constraint arrays are scratch here). Returns (PROJECTED,
    NOT_CONVERGED after max_iter Newton steps, or RANK_LOST; the largest residual of every row,
    dropped ones included, at the final q). Quaternions are renormalised after each step."""
    du, qd = W.xud, W.xq
    for it in range(max_iter + 1):
        loop_rows(S, W, q, u)
        if active_error(S, W) <= tol:
            break
        if it == max_iter:
            return NOT_CONVERGED, largest_residual(W)
        if not least_norm(S, W, W.c_g, weight, du):
            return RANK_LOST, largest_residual(W)
        for c in range(du.shape[0]):
            du[c] = -du[c]
        qdot_of(S, q, du, qd)
        for k in range(q.shape[0]):
            q[k] += qd[k]
        normalize_quaternions(S, q)
    residual = largest_residual(W)
    for r in range(W.c_g.shape[0]):
        acc = 0.0
        for c in range(u.shape[0]):
            acc += W.c_G[r, c] * u[c]
        W.c_gam[r] = acc   # scratch: G u
    if not least_norm(S, W, W.c_gam, weight, du):
        return RANK_LOST, residual
    for c in range(u.shape[0]):
        u[c] -= du[c]
    return PROJECTED, residual

