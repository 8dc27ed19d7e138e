"""Explicit integrators (numba): fixed-step classical RK4 and adaptive Dormand-Prince 5(4)."""

import numpy as np
from numba import njit

from ..kernels.settings import JIT
from .common import OK, STEP_TOO_SMALL, check_state, error_norm, f_eval, project

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
    n = int(np.ceil((t_end - t) / h - 1e-9))
    if n < 1:
        return OK, 0
    hh = (t_end - t) / n
    nx = x.size
    for k in range(n):
        tk = t + k * hh
        st = f_eval(S, W, tk, x, inputs, K[0])
        for i in range(nx):
            xs[i] = x[i] + 0.5 * hh * K[0, i]
        st |= f_eval(S, W, tk + 0.5 * hh, xs, inputs, K[1])
        for i in range(nx):
            xs[i] = x[i] + 0.5 * hh * K[1, i]
        st |= f_eval(S, W, tk + 0.5 * hh, xs, inputs, K[2])
        for i in range(nx):
            xs[i] = x[i] + hh * K[2, i]
        st |= f_eval(S, W, tk + hh, xs, inputs, K[3])
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
def dopri5_advance(S, W, t, x, t_end, h, h_max, h_min, rtol, atol, inputs, K, xs, err):
    """Adaptive Dormand-Prince 5(4) from t to t_end (lands exactly on t_end). K (7 x nx),
    xs, err (nx) scratch; K[0] must hold f(t, x) on entry (FSAL) and holds it on exit.
    Returns (status, h_next, nsteps, nrejected)."""
    nsteps = 0
    nrej = 0
    while t < t_end - 1e-12 * max(1.0, abs(t_end)):
        h = min(h, h_max, t_end - t)
        last = h >= t_end - t
        nx = x.size
        st = OK
        for s in range(1, 7):
            for i in range(nx):
                acc = x[i]
                for j in range(s):
                    acc += h * _A[s, j] * K[j, i]
                xs[i] = acc
            st = f_eval(S, W, t + _C[s] * h, xs, inputs, K[s])
            if st != OK:
                break
        if st == OK:
            for i in range(nx):
                acc = 0.0
                for j in range(7):
                    acc += h * _E[j] * K[j, i]
                err[i] = acc
            en = error_norm(err, x, xs, atol, rtol)
        if st != OK or not np.isfinite(en):
            # a trial stage left the valid region (e.g. an indefinite mass matrix): reject
            en = 1e10
        if en <= 1.0:
            t = t_end if last else t + h
            x[:] = xs
            project(S, x)
            st = check_state(S, x)
            if st != OK:
                return st, h, nsteps, nrej
            K[0] = K[6]
            nsteps += 1
            h = h * min(5.0, max(0.2, 0.9 * en ** -0.2)) if en > 0 else 5.0 * h
        else:
            nrej += 1
            h = h * max(0.2, 0.9 * en ** -0.2)
            if h < h_min:
                return (STEP_TOO_SMALL if st == OK else st), h, nsteps, nrej
    return OK, h, nsteps, nrej
