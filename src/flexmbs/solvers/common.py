"""Shared pieces of the integrators: status codes, error norm, post-step projection."""

import numpy as np
from numba import njit
from numba.extending import overload

from ..kernels.dynamics import normalize_quaternions, rhs
from ..kernels.projection import PROJECTED, onto_loops
from ..kernels.settings import JIT, KERNEL, kernel
from ..loops import MAX_ITER as LOOP_ITER
from ..loops import OPEN as LOOP_OPEN_RESIDUAL
from ..loops import TOL as LOOP_TOL

OK, SINGULAR, STEP_TOO_SMALL, NOT_FINITE, NEWTON_FAILED, DIVERGED, LOOP_OPEN = 0, 1, 2, 3, 4, 5, 6
MESSAGES = {
    OK: "ok",
    SINGULAR: "the mass matrix became singular or indefinite, or (with closed loops) the constraints lost rank "
              "at a singular pose",
    STEP_TOO_SMALL: "the step size fell below the minimum: the solution is diverging or the model is too stiff for the method",
    NOT_FINITE: "the state became NaN or infinite: the solution diverged",
    NEWTON_FAILED: "Newton iterations did not converge even at the minimum step size",
    DIVERGED: "an elastic deflection exceeded the size of its body: the solution diverged",
    LOOP_OPEN: "the loop constraints could not be restored after the step: the mechanism reached a singular "
               "pose (a dead point of the cut rows kept, or a bifurcation of a redundant loop)",
}
RK4, DOPRI5, IMPLICIT, RADAU = 0, 1, 2, 3


@kernel
def error_norm(err, x0, x1, atol, rtol):
    """RMS of err_i / (atol_i + rtol max(|x0_i|, |x1_i|)) (Hairer's norm)."""
    s = 0.0
    for i in range(err.size):
        sc = atol[i] + rtol * max(abs(x0[i]), abs(x1[i]))
        s += (err[i] / sc) ** 2
    return np.sqrt(s / err.size)


@kernel
def check_state(S, x):
    """OK, NOT_FINITE, or DIVERGED when a modal coordinate exceeds its bound S.eta_max (the
    amplitude at which the mode alone deflects its body by the body's size). A kernel: the
    integrators call it after every step, and under numba's runtime each read of a System array
    takes a reference count."""
    for v in x:
        if not np.isfinite(v):
            return NOT_FINITE
    for b in range(S.nb):
        for k in range(S.nm[b]):
            if abs(x[S.eq[b] + k]) > S.eta_max[b, k]:
                return DIVERGED
    return OK


@kernel(inline=True)
def rhs_status(S, W, t, x, inputs, out):
    """The right-hand side (kernels/dynamics.rhs) with the status as an int, for the
    integrators' kernels."""
    return OK if rhs(S, W, t, x, inputs, out) else SINGULAR


@njit(**JIT)
def f_eval(S, W, t, x, inputs, out):
    """rhs_status for Python (compiled with numba's runtime)."""
    return rhs_status(S, W, t, x, inputs, out)


@njit(**JIT)
def jacobian_fd(S, W, t, x, f0, inputs, scale, Jac, xp, fp):
    """Forward-difference Jacobian Jac = df/dx at (t, x) [1/s for the rate rows], f0 = f(t, x),
    for Python (jacobian_columns, which the implicit method's kernels call)."""
    return jacobian_columns(S, W, t, x, f0, inputs, scale, Jac, xp, fp)


@kernel
def jacobian_columns(S, W, t, x, f0, inputs, scale, Jac, xp, fp):
    """Forward-difference Jacobian Jac = df/dx at (t, x) [1/s for the rate rows], f0 = f(t, x).

    The increment of state j is sqrt(machine eps) max(|x_j|, scale_j) (scale: the typical
    magnitude of each state, stepper.state_scales), balancing truncation against round-off.
    xp, fp (nx) are scratch. Returns a status code."""
    nx = x.size
    for i in range(nx):
        xp[i] = x[i]
    for j in range(nx):
        dx = 1.5e-8 * max(abs(x[j]), scale[j])
        xp[j] = x[j] + dx
        st = rhs_status(S, W, t, xp, inputs, fp)
        xp[j] = x[j]
        if st != OK:
            return st
        for i in range(nx):
            Jac[i, j] = (fp[i] - f0[i]) / dx
    return OK


@kernel
def project(S, x):
    """The state x back onto its manifold after a step: unit quaternions."""
    normalize_quaternions(S, x)


@kernel
def onto_manifold(S, W, x, weight, stepped):
    """The state x back onto its manifold after an implicit method's step: unit
    quaternions and, with closed loops, the loop constraints (_onto_loops; weight:
    loops.projection_weights, empty without loops). Projecting every step keeps the index-1
    equations' drift off g = 0 from adding up between output points: on the crank-rocker
    stepping past its samples (radau, rtol 1e-4), unprojected, the residual grew to 6e-7 m over
    0.5 s and 6e-4 m over 5 s. stepped: the step's result (a copy of x before this call)."""
    normalize_quaternions(S, x)
    _onto_loops(S, W, x, weight, stepped)


@kernel
def onto_sample(S, W, x, weight, scratch, opened):
    """An interpolated output sample x onto its manifold: unit quaternions and, with closed
    loops, the loop constraints (_onto_loops). The samples between projected steps leave the
    constraints by the interpolation's error; projected here, in the integrator's kernel, they
    cost no Python call each (on the crank-rocker at 1 ms samples that call was about a tenth of
    the run). scratch (nx): a copy of x to restore; opened (1): counts the samples left
    unprojected, which the Stepper then projects itself, with its rank-revealing fallback, or
    reports as an open loop."""
    normalize_quaternions(S, x)
    for i in range(x.size if weight.size > 0 else 0):   # a backup only where there are loops
        scratch[i] = x[i]
    if not _onto_loops(S, W, x, weight, scratch):
        opened[0] += 1


@kernel
def _project_or_restore(S, W, x, weight, backup):
    """The loop part of onto_manifold and onto_sample, for a System with loop rows: (q, u) onto
    the constraints (kernels/projection.onto_loops), the motion-driven coordinates held (weight
    0) at their integrated values, as at the end of a Stepper's call (an `input` profile's held
    q_ref is not where the coordinate is at the step's end: the next call's inputs are). It
    counts as projected as the Stepper's own projection does (Stepper._close_loops): the active
    rows within the tolerance and every row, the dropped ones too, within loops.OPEN. Where it
    is not (a singular pose), x is `backup` again, quaternions normalised, and it returns False:
    the Stepper's projection, with its rank-revealing fallback, decides there."""
    if weight.size == 0:
        return True
    nq = S.nq
    status, residual = onto_loops(S, W, x[:nq], x[nq:nq + weight.size], weight, LOOP_TOL, LOOP_ITER)
    if status == PROJECTED and residual <= LOOP_OPEN_RESIDUAL:
        return True
    for i in range(x.size):
        x[i] = backup[i]
    normalize_quaternions(S, x)
    return False


def _onto_loops(S, W, x, weight, backup):
    """_project_or_restore for a System with loop rows, True for a tree, which so never
    compiles the loop kernels (as kernels/dynamics._on_loops)."""
    raise TypeError("the loop projection of a state is called from numba kernels only")


@overload(_onto_loops, jit_options=KERNEL)
def _onto_loops_typed(S, W, x, weight, backup):
    if S.route.endswith("tree"):
        return lambda S, W, x, weight, backup: True
    return _project_or_restore.py_func
