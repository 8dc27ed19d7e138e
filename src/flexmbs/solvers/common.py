"""Shared pieces of the integrators: status codes, error norm, post-step projection."""

import numpy as np
from numba import njit

from ..kernels.dynamics import normalize_quaternions, rhs
from ..kernels.settings import JIT, kernel

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
