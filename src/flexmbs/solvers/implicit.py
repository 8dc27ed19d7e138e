"""Adaptive TR-BDF2 (numba): an L-stable, one-step, second-order implicit method for stiff
flexible models (Bank et al. 1985; error estimate of Hosea & Shampine 1996).

A step: trapezoidal stage to t + gamma h, then BDF2 through (t, t + gamma h, t + h). Both
stages solve X = rhs_const + d h f(X) by simplified Newton with the iteration matrix
I - d h J (J = df/dx by finite differences, refreshed each step); d = gamma/2.
"""

import numpy as np
from numba import njit

from ..kernels.rotations import JIT
from .common import NEWTON_FAILED, NOT_FINITE, OK, STEP_TOO_SMALL, check_state, error_norm, f_eval, project

GAMMA = 2.0 - np.sqrt(2.0)
D = GAMMA / 2.0
_W = np.sqrt(2.0) / 4.0
# b - bhat for the three stage derivatives (f_n, f_gamma, f_n+1)
_E1 = (1.0 / (2.0 * (2.0 - GAMMA))) - (1.0 - _W) / 3.0
_E2 = (1.0 / (2.0 * (2.0 - GAMMA))) - (3.0 * _W + 1.0) / 3.0
_E3 = D - D / 3.0
_BDF_A = 1.0 / (GAMMA * (2.0 - GAMMA))
_BDF_B = (1.0 - GAMMA) ** 2 / (GAMMA * (2.0 - GAMMA))


@njit(**JIT)
def _jacobian(S, W, t, x, f0, inputs, atol, Jac, xp, fp):
    """Forward-difference Jacobian df/dx with increments scaled to each state's tolerance."""
    nx = x.size
    for j in range(nx):
        dx = max(1e-7 * abs(x[j]), np.sqrt(atol[j]) * 1e-4, 1e-10)
        xp[:] = x
        xp[j] += dx
        st = f_eval(S, W, t, xp, inputs, fp)
        if st != OK:
            return st
        Jac[:, j] = (fp - f0) / dx
    return OK


@njit(**JIT)
def _newton(S, W, t, X, base, hd, Ninv, inputs, atol, rtol, fX, dX):
    """Solve X = base + hd f(t, X) by simplified Newton; X holds the predictor on entry."""
    prev = 1e300
    for it in range(8):
        st = f_eval(S, W, t, X, inputs, fX)
        if st != OK:
            return st
        dX[:] = Ninv @ (base + hd * fX - X)
        X += dX
        nrm = error_norm(dX, X, X, atol, rtol)
        if not np.isfinite(nrm):
            return NOT_FINITE
        if nrm < 0.03:
            return f_eval(S, W, t, X, inputs, fX)
        if it > 0 and nrm > 0.9 * prev:
            return NEWTON_FAILED
        prev = nrm
    return NEWTON_FAILED


@njit(**JIT)
def trbdf2_advance(S, W, t, x, t_end, h, h_max, h_min, rtol, atol, inputs, K, Jac, Ninv, xs):
    """Integrate x from t to t_end (landing exactly). K (6 x nx) and xs scratch; Jac, Ninv
    (nx x nx) scratch. Returns (status, h_next, nsteps, nrejected)."""
    nx = x.size
    f0, fg, f1, tmp, base, err = K[0], K[1], K[2], K[3], K[4], K[5]
    Xg = xs
    X1 = np.empty(nx)
    nsteps = 0
    nrej = 0
    eye = np.eye(nx)
    while t < t_end - 1e-12 * max(1.0, abs(t_end)):
        h = min(h, h_max, t_end - t)
        last = h >= t_end - t
        st = f_eval(S, W, t, x, inputs, f0)
        if st == OK:
            st = _jacobian(S, W, t, x, f0, inputs, atol, Jac, X1, tmp)
        if st != OK:
            return st, h, nsteps, nrej
        accepted = False
        while not accepted:
            Ninv[:, :] = np.linalg.inv(eye - (D * h) * Jac)
            # trapezoidal stage
            Xg[:] = x + (GAMMA * h) * f0
            base[:] = x + (D * h) * f0
            st = _newton(S, W, t + GAMMA * h, Xg, base, D * h, Ninv, inputs, atol, rtol, fg, tmp)
            if st == OK:
                X1[:] = Xg + (h * (1.0 - GAMMA)) * fg
                base[:] = _BDF_A * Xg - _BDF_B * x
                st = _newton(S, W, t + h, X1, base, D * h, Ninv, inputs, atol, rtol, f1, tmp)
            if st == OK:
                err[:] = Ninv @ (h * (_E1 * f0 + _E2 * fg + _E3 * f1))
                en = error_norm(err, x, X1, atol, rtol)
                if not np.isfinite(en):
                    en = 1e10
            else:
                en = 1e10
            if en <= 1.0:
                accepted = True
                t = t_end if last else t + h
                x[:] = X1
                project(S, x)
                st = check_state(S, x)
                if st != OK:
                    return st, h, nsteps, nrej
                nsteps += 1
                h = h * min(4.0, max(0.2, 0.9 * en ** (-1.0 / 3.0))) if en > 0 else 4.0 * h
            else:
                nrej += 1
                h = h * (0.25 if st != OK else max(0.2, 0.9 * en ** (-1.0 / 3.0)))
                last = h >= t_end - t
                if h < h_min:
                    return (STEP_TOO_SMALL if st == OK else st), h, nsteps, nrej
    return OK, h, nsteps, nrej
