"""Prescribed motion profiles q(t), qd(t), qdd(t) with exact derivatives (numba).

CODE_OF maps the profile types of the model (flexmbs.model.PROFILES) to the codes evaluate
branches on. Parameters live in a fixed-width row `par`, in the order of the type's fields in
PROFILES; tables are cubic-spline coefficient rows (t_k, c0..c3 for t in [t_k, t_k+1]).
"""

import numpy as np

from .settings import kernel

CONSTANT, RAMP, SINE, TABLE, SPIN_UP, INPUT, CYCLOIDAL = 0, 1, 2, 3, 4, 5, 6
CODE_OF = {"constant": CONSTANT, "ramp": RAMP, "sine": SINE, "table": TABLE, "spin_up": SPIN_UP, "input": INPUT,
           "cycloidal": CYCLOIDAL}
NPAR = 6


@kernel
def _quintic(s):
    """Smooth step 10s^3 - 15s^4 + 6s^5 on [0, 1] and its first two derivatives."""
    s2 = s * s
    return s2 * s * (10.0 - 15.0 * s + 6.0 * s2), 30.0 * s2 * (1.0 - 2.0 * s + s2), 60.0 * s * (1.0 - 3.0 * s + 2.0 * s2)


@kernel
def _cycloid(s):
    """Cycloidal step s - sin(2 pi s)/(2 pi) on [0, 1] and its first two derivatives."""
    w = 2.0 * np.pi
    return s - np.sin(w * s) / w, 1.0 - np.cos(w * s), w * np.sin(w * s)


@kernel
def _segment(tab_t, ntab, t):
    """The spline segment k with tab_t[k] < t <= tab_t[k + 1], for tab_t[0] < t < tab_t[ntab - 1]
    (what searchsorted(tab_t[:ntab], t) - 1 gives, by bisection: numba's searchsorted of a scalar
    allocates before version 0.60, and these kernels run without numba's runtime)."""
    lo, hi = 0, ntab - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if tab_t[mid] < t:
            lo = mid
        else:
            hi = mid
    return lo


@kernel
def evaluate(code, par, tab_t, tab_c, ntab, inputs, t):
    """Return (q, qd, qdd) of one profile at time t [s]."""
    if code == CONSTANT:
        return par[0] + par[1] * t, par[1], 0.0
    if code == RAMP or code == CYCLOIDAL:
        q0, q1, t0, t1 = par[0], par[1], par[2], par[3]
        if t <= t0:
            return q0, 0.0, 0.0
        if t >= t1:
            return q1, 0.0, 0.0
        d = t1 - t0
        if code == RAMP:
            p, dp, ddp = _quintic((t - t0) / d)
        else:
            p, dp, ddp = _cycloid((t - t0) / d)
        return q0 + (q1 - q0) * p, (q1 - q0) * dp / d, (q1 - q0) * ddp / (d * d)
    if code == SINE:
        off, amp, f, ph = par[0], par[1], par[2], par[3]
        w = 2.0 * np.pi * f
        arg = w * t + ph
        return off + amp * np.sin(arg), amp * w * np.cos(arg), -amp * w * w * np.sin(arg)
    if code == TABLE:
        if t <= tab_t[0]:
            return tab_c[0, 0], 0.0, 0.0
        if t >= tab_t[ntab - 1]:
            return tab_c[ntab - 1, 0], 0.0, 0.0
        k = _segment(tab_t, ntab, t)
        s = t - tab_t[k]
        c0, c1, c2, c3 = tab_c[k, 0], tab_c[k, 1], tab_c[k, 2], tab_c[k, 3]
        return c0 + s * (c1 + s * (c2 + s * c3)), c1 + s * (2.0 * c2 + 3.0 * s * c3), 2.0 * c2 + 6.0 * s * c3
    if code == SPIN_UP:
        ws, ts = par[0], par[1]
        if t >= ts:
            return ws * (t - 0.5 * ts), ws, 0.0
        w = 2.0 * np.pi / ts
        q = ws / ts * (0.5 * t * t + (np.cos(w * t) - 1.0) / (w * w))
        qd = ws / ts * (t - np.sin(w * t) / w)
        qdd = ws / ts * (1.0 - np.cos(w * t))
        return q, qd, qdd
    i = int(par[0])
    return inputs[i], inputs[i + 1], inputs[i + 2]
