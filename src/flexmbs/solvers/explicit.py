"""Explicit integrators (numba): fixed-step classical RK4 and adaptive Dormand-Prince 5(4).

Python calls the entry points rk4_advance, rk4_samples and dopri5_advance, compiled with
numba's runtime (settings.JIT); each hands its work to a kernel (settings.KERNEL), so that
the steps and right-hand sides run without reference counts on the boxes' and K's arrays. The
entry points mark the workspace (W.rates_only) while their kernels run: those read the
right-hand sides' rates only, so the recursion skips the bodies' world motion where nothing
in the right-hand side reads it."""

import numpy as np
from numba import njit

from ..kernels.settings import JIT, kernel
from .common import OK, STEP_TOO_SMALL, check_state, error_norm, project, rhs_status

# Dormand-Prince 5(4) tableau
_C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
_A = np.zeros((7, 7))
_A[1, 0] = 1 / 5
_A[2, :2] = 3 / 40, 9 / 40
_A[3, :3] = 44 / 45, -56 / 15, 32 / 9
_A[4, :4] = 19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729
_A[5, :5] = 9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656
_A[6, :6] = 35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84
_E = np.array([71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40])


@njit(**JIT)
def rk4_advance(S, W, t, x, t_end, h, inputs, K, xs):
    """Integrate x from t to t_end with equal classical RK4 steps of at most h (rounded so
    they land on t_end). K (4 x nx) and xs (nx) are scratch. Returns (status, nsteps)."""
    W.rates_only[0] = 1.0
    out = _rk4(S, W, t, x, t_end, h, inputs, K, xs)
    W.rates_only[0] = 0.0
    return out


@kernel
def _rk4(S, W, t, x, t_end, h, inputs, K, xs):
    """rk4_advance's steps."""
    n = int(np.ceil((t_end - t) / h - 1e-9))
    if n < 1:
        return OK, 0
    hh = (t_end - t) / n
    nx = x.size
    for k in range(n):
        tk = t + k * hh
        st = rhs_status(S, W, tk, x, inputs, K[0])
        for i in range(nx):
            xs[i] = x[i] + 0.5 * hh * K[0, i]
        st |= rhs_status(S, W, tk + 0.5 * hh, xs, inputs, K[1])
        for i in range(nx):
            xs[i] = x[i] + 0.5 * hh * K[1, i]
        st |= rhs_status(S, W, tk + 0.5 * hh, xs, inputs, K[2])
        for i in range(nx):
            xs[i] = x[i] + hh * K[2, i]
        st |= rhs_status(S, W, tk + hh, xs, inputs, K[3])
        if st != OK:
            return st, k
        for i in range(nx):
            x[i] += (hh / 6.0) * (K[0, i] + 2.0 * K[1, i] + 2.0 * K[2, i] + K[3, i])
        project(S, x)
        st = check_state(S, x)
        if st != OK:
            return st, k
    return OK, n


@njit(**JIT)
def rk4_samples(S, W, t, X, h, inputs, K, xs, x):
    """rk4_advance through the sample times t [s] from the state X[0], each sample's state into
    X[k]; x (nx) is scratch. Returns (status, samples filled, steps): on failure X[:filled] hold
    the samples reached."""
    x[:] = X[0]
    status, filled, steps = OK, t.size, 0
    W.rates_only[0] = 1.0
    for k in range(1, t.size):
        st, n = _rk4(S, W, t[k - 1], x, t[k], h, inputs, K, xs)
        steps += n
        if st != OK:
            status, filled = st, k
            break
        X[k, :] = x
    W.rates_only[0] = 0.0
    return status, filled, steps


# Dense output of Dormand-Prince (Hairer, Norsett & Wanner, Solving ODEs I, 2nd ed., Springer
# 1993, Sec. II.6, the continuous extension of order 4 as their code DOPRI5 writes it, CONTD5)
_D = np.array([-12715105075 / 11282082432, 0.0, 87487479700 / 32700410799, -10690763975 / 1880347072,
               701980252875 / 199316789632, -1453857185 / 822651844, 69997945 / 29380423])
# Step-size control: the largest growth and shrinking of the step in one step, the safety
# factor, and the PI controller's exponents (Gustafsson's stabilised control as Hairer's DOPRI5
# writes it: h_new = h * SAFETY * err^-ALPHA * err_prev^BETA; E. Hairer, G. Wanner, Solving
# Ordinary Differential Equations II, 2nd ed., Springer 1996, Sec. IV.2, "stabilized step size
# control"; K. Gustafsson, "Control theoretic techniques for stepsize selection in explicit
# Runge-Kutta methods", ACM TOMS 17 (1991) 533-554), with Gustafsson's beta = 0.4 / k for
# k = 5 (alpha = 0.7 / k = 0.14) rather than the 0.04 of Hairer's code: a flexible model whose
# fast mode holds dopri5 near its stability bound rejected one trial in seven at 0.04, one in
# sixty at 0.08, and reaches the same error with 12 % fewer right-hand sides at twice the rtol
# (docs/work-precision.md, "Step-size control"). ERR_FLOOR: the previous error norm before the
# first accepted step, and its least value.
_GROW, _SHRINK, _SAFETY = 5.0, 0.2, 0.9
_BETA = 0.08
_ALPHA = 0.2 - 0.75 * _BETA
ERR_FLOOR = 1e-4


@kernel
def _next_step(h, en, ctl):
    """The next step [s] after a trial of step h with error norm en, and the controller's memory
    ctl updated: ctl[0] the error norm of the last accepted step, ctl[1] 1.0 while the last
    trial was rejected. After a rejection the step shrinks by the I part alone, and the next
    accepted step does not grow (no reject/accept cycles)."""
    if not en <= 1.0:
        ctl[1] = 1.0
        return h * max(_SHRINK, _SAFETY * en ** -0.2)
    factor = _SAFETY * max(en, 1e-10) ** -_ALPHA * ctl[0] ** _BETA
    grow = 1.0 if ctl[1] != 0.0 else _GROW
    ctl[0] = max(en, ERR_FLOOR)
    ctl[1] = 0.0
    return h * min(grow, max(_SHRINK, factor))


@kernel
def _after_landing(h, planned, en):
    """The next step [s] after an accepted step h shortened from the planned one to land on
    t_end: the planned step, shrunk (by at most _SHRINK) as far as the short step's error en,
    scaled up by the local error's h^5 to the planned step, says it would fail. Judging the
    short step as a step of its own shrank every call's first steps; this rule is continuous in
    h, so the steps do not depend on how the last bits of t_end fall, and the controller's
    memory stays that of the last full step."""
    if en <= 0.0:
        return planned
    return planned * max(_SHRINK, min(1.0, _SAFETY * (en * (planned / h) ** 5) ** -0.2))


@njit(**JIT)
def dopri5_advance(S, W, t, x, t_end, h, h_max, h_min, rtol, atol, inputs, K, xs, err, dense, D, span, xo, ctl):
    """Adaptive Dormand-Prince 5(4) from t towards t_end [s]. K (7 x nx), xs, err (nx) scratch;
    K[0] must hold f(t, x) on entry (FSAL) and holds f at the returned t on exit. ctl: the step
    controller's memory (_next_step), carried from call to call.

    dense False: land exactly on t_end (x ends there).
    dense True: x and t are the integrator's own state, which steps past t_end, and xo receives
    x(t_end) from the dense output of the step that spans t_end, whose coefficients D (5 x nx)
    and span (its start and length [s]) are kept, so a later t_end inside that step takes no
    step at all.
    Returns (status, t, h_next, nsteps, nrejected)."""
    W.rates_only[0] = 1.0
    out = _dopri5(S, W, t, x, t_end, h, h_max, h_min, rtol, atol, inputs, K, xs, err, dense, D, span, xo, ctl)
    W.rates_only[0] = 0.0
    return out


@kernel
def _dopri5(S, W, t, x, t_end, h, h_max, h_min, rtol, atol, inputs, K, xs, err, dense, D, span, xo, ctl):
    """dopri5_advance's steps."""
    nsteps = 0
    nrej = 0
    t_near = t_end - 1e-12 * max(1.0, abs(t_end))
    while t < t_near:
        planned = min(h, h_max)
        h = planned if dense else min(planned, t_end - t)
        last = not dense and h >= t_end - t
        st, en = _dp_trial(S, W, t, x, h, inputs, K, xs, err, atol, rtol)
        if en <= 1.0:
            if dense and t + h >= t_near:
                _dense_coefficients(x, xs, h, K, D)
                span[0], span[1] = t, h
            t = t_end if last else t + h
            for i in range(x.size):   # element by element: a kernel has no runtime for slice copies
                x[i] = xs[i]
                K[0, i] = K[6, i]
            project(S, x)
            st = check_state(S, x)
            if st != OK:
                return st, t, h, nsteps, nrej
            nsteps += 1
            h = _after_landing(h, planned, en) if last and h < planned else _next_step(h, en, ctl)
        else:
            nrej += 1
            h = _next_step(h, en, ctl)
            if h < h_min:
                return (STEP_TOO_SMALL if st == OK else st), t, h, nsteps, nrej
    if dense:
        _interpolate(t_end, x, D, span, xo)
        project(S, xo)
    return OK, t, h, nsteps, nrej


@kernel
def _dp_trial(S, W, t, x, h, inputs, K, xs, err, atol, rtol):
    """Stages 1..6 of a step h from (t, x) into K (K[0] = f(t, x)), the solution into xs and
    the error estimate into err. Returns (status, weighted error norm; 1e10 when a stage failed
    or the norm is not finite)."""
    nx = x.size
    st = OK
    for s in range(1, 7):
        for i in range(nx):
            acc = x[i]
            for j in range(s):
                acc += h * _A[s, j] * K[j, i]
            xs[i] = acc
        st = rhs_status(S, W, t + _C[s] * h, xs, inputs, K[s])
        if st != OK:
            # a trial stage left the valid region (e.g. an indefinite mass matrix): reject
            return st, 1e10
    for i in range(nx):
        acc = 0.0
        for j in range(7):
            acc += h * _E[j] * K[j, i]
        err[i] = acc
    en = error_norm(err, x, xs, atol, rtol)
    return st, (en if np.isfinite(en) else 1e10)


@kernel
def _dense_coefficients(x, xs, h, K, D):
    """The coefficients D (5 x nx) of the dense output of the accepted step h from x to xs
    (stages in K, K[6] = f at xs)."""
    for i in range(x.size):
        dx = xs[i] - x[i]
        D[0, i] = x[i]
        D[1, i] = dx
        D[2, i] = h * K[0, i] - dx
        D[3, i] = dx - h * K[6, i] - D[2, i]
        acc = 0.0
        for j in range(7):
            acc += _D[j] * K[j, i]
        D[4, i] = h * acc


@kernel
def _interpolate(t, x, D, span, xo):
    """x(t) into xo by the dense output D of the step span = (start, length) [s]; x itself when
    no step was taken (length 0)."""
    if span[1] <= 0.0:
        for i in range(x.size):
            xo[i] = x[i]
        return
    th = (t - span[0]) / span[1]
    th1 = 1.0 - th
    for i in range(x.size):
        xo[i] = D[0, i] + th * (D[1, i] + th1 * (D[2, i] + th * (D[3, i] + th1 * D[4, i])))
