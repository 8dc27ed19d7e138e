"""Adaptive Radau IIA method of order 5 (numba) for stiff models that need a tight tolerance.

Method: the 3-stage Radau IIA collocation method (order 5, L-stable, stiffly accurate), solved
by simplified Newton iterations on the transformed stage equations with one real and one
complex linear system of the state's size, as in E. Hairer and G. Wanner, "Solving Ordinary
Differential Equations II", 2nd ed., Springer 1996, Sec. IV.8: the transformation T with
T^-1 A^-1 T = [[g, 0, 0], [0, a, -b], [0, b, a]] (eq. 8.16-8.17), the stopping criterion
eta_k |dW_k| <= kappa tol with eta_k = theta_k / (1 - theta_k) (eq. 8.10-8.13; eta of the
last step for the first iteration), starting values from the last step's collocation
polynomial (eq. 8.19), the embedded error estimate filtered by (I - h g^-1 J)^-1 with its
second evaluation after a rejection (eq. 8.19-8.20), and Gustafsson's predictive step control
(K. Gustafsson, "Control-theoretic techniques for stepsize selection in implicit Runge-Kutta
methods", ACM TOMS 20 (1994) 496-517).

Where the Rosenbrock-W method (implicit.py, order 3) needs many small steps for a tight joint
tolerance, this one reaches it with few: He's crank-rocker with interface modes (0.5 s) to
1e-5 rad (docs/work-precision.md). Its Jacobian (forward differences, nx right-hand sides) is
kept while the Newton iterations converge with it: the collocation equations are solved to the
tolerance whatever J is, and J shapes only the iterations' rate and the error estimate's filter.
It is renewed when an iteration diverges or contracts slower than THETA_JAC, and after two
rejections in a row; iterations that fail with a stale J go on with the renewed one from
where they got to (on the crank-rocker such failures are about one trial in six). The factors
of the two systems (g/h I - J and (a + i b)/h I - J) are kept while the step stays within HOLD
of theirs.
"""

import numpy as np
from numba import njit

from ..kernels.linalg import lu_factor, lu_solve
from ..kernels.settings import JIT, kernel
from .common import NEWTON_FAILED, OK, SINGULAR, STEP_TOO_SMALL, check_state, error_norm, jacobian_columns, \
    onto_manifold, onto_sample, rhs_status

_S6 = np.sqrt(6.0)
# the Butcher matrix and nodes of Radau IIA order 5 (Hairer & Wanner II, Table IV.5.6)
_A = np.array([[(88.0 - 7.0 * _S6) / 360.0, (296.0 - 169.0 * _S6) / 1800.0, (-2.0 + 3.0 * _S6) / 225.0],
               [(296.0 + 169.0 * _S6) / 1800.0, (88.0 + 7.0 * _S6) / 360.0, (-2.0 - 3.0 * _S6) / 225.0],
               [(16.0 - _S6) / 36.0, (16.0 + _S6) / 36.0, 1.0 / 9.0]])
C = np.array([(4.0 - _S6) / 10.0, (4.0 + _S6) / 10.0, 1.0])


def _transformation(A: np.ndarray) -> tuple[np.ndarray, float, float, float]:
    """T (columns: the real eigenvector of A^-1, then the real and imaginary parts of the one
    of eigenvalue a - i b) and g, a, b with T^-1 A^-1 T = [[g, 0, 0], [0, a, -b], [0, b, a]]."""
    Ai = np.linalg.inv(A)
    ev, V = np.linalg.eig(Ai)
    r = int(np.argmin(np.abs(ev.imag)))
    k = int(np.argmin(ev.imag))
    T = np.column_stack([V[:, r].real, V[:, k].real, V[:, k].imag])
    return T, float(ev[r].real), float(ev[k].real), float(-ev[k].imag)


TM, G_REAL, ALPHA, BETA = _transformation(_A)
TI = np.linalg.inv(TM)
# the embedded order-3 solution: an explicit stage f(t, x) of weight 1/G_REAL and weights bh on
# the collocation stages; its difference from the order-5 one is h/G_REAL f0 + e . Z with
# e = bh A^-1 - (0, 0, 1); DD = G_REAL e (Hairer & Wanner II, eq. 8.19)
_BH = np.linalg.solve(np.vstack([np.ones(3), C, C ** 2]), np.array([1.0 - 1.0 / G_REAL, 0.5, 1.0 / 3.0]))
DD = G_REAL * (_BH @ np.linalg.inv(_A) - np.array([0.0, 0.0, 1.0]))
ORDER = 5
MAXIT = 7          # Newton iterations per step
HOLD = 1.2         # keep the step (and the factors) when the controller proposes at most this increase
THETA_JAC = 0.3    # renew J after a step whose Newton iterations contracted slower than this
FAC_MIN, FAC_MAX = 0.2, 8.0   # the step changes by at most these factors
SAFE = 0.9                    # the controller's safety factor
# the Newton iterations stop at eta |dW| <= KAPPA in the error norm (Hairer & Wanner II, eq. 8.12,
# with kappa tol; at least 10 eps / rtol), far below the 1e-2 to 1e-1 they suggest: the iterations'
# residual is not in the error estimate, and on a turning crank it adds up step after step. The
# crank-rocker at rtol 1e-4 (0.5 s, 1 ms samples) ended 8.7e-4 rad off with min(0.01, sqrt(rtol)),
# 1.8e-6 rad with 1e-4, at the same CPU; Huang's arm took 10 % more CPU for 1.3e-6 instead of
# 6.0e-6 rad at rtol 1e-5
KAPPA = 1e-4
# the Jacobian / LU counters of `memo` (as implicit.py's)
JAC_OK, LU_OK, N_JAC, N_LU = 0, 1, 2, 3
# ctl: the last accepted step [s] (0: none), the Newton contraction estimate eta, and the step
# and error norm of the last accepted step for the predictive controller
H_OLD, ETA, H_ACC, ERR_ACC = 0, 1, 2, 3


@njit(**JIT)
def radau_advance(S, W, t, x, t_end, h, h_max, h_min, rtol, atol, scale, inputs, R, K, Jac, LU, piv, LU2, piv2,
                  cv, memo, hf, ctl, T, X, weight, opened):
    """Integrate x from t to t_end (landing exactly) with adaptive Radau IIA steps.

    T (increasing, in [t, t_end]) and X (T.size x nx): sample times [s] and their states, filled
    from each step's collocation polynomial as the steps pass them; empty T: none.
    R (11 x nx): the transformed stage increments W (rows 0-2), the stage increments Z (3-5),
    the last accepted step's Z (6-8), f(t, x) (9) and the last step's start state (10); rows 6-8
    persist between calls with ctl (4: H_OLD, ETA, H_ACC, ERR_ACC). K (7 x nx) scratch (the
    stage rates in rows 0-2). Jac, LU (nx x nx), piv, and LU2 (complex nx x nx), piv2, memo
    (Jacobian / LU valid, their counts) and hf (the step of the factors [s]) persist between
    calls; cv (complex nx) scratch. scale: state scales of the difference increments.
    weight: the loop projection's weights (common.onto_manifold; empty without loops); each
    step and each sample is projected with them, and opened (1) counts the samples that could
    not be (common.onto_sample). Returns (status, h_next, nsteps, nrejected, samples filled)."""
    W.rates_only[0] = 1.0   # its right-hand sides are read for their rates only (explicit.py)
    out = _radau(S, W, t, x, t_end, h, h_max, h_min, rtol, atol, scale, inputs, R, K, Jac, LU, piv, LU2, piv2, cv,
                 memo, hf, ctl, T, X, weight, opened)
    W.rates_only[0] = 0.0
    return out


@kernel
def _radau(S, W, t, x, t_end, h, h_max, h_min, rtol, atol, scale, inputs, R, K, Jac, LU, piv, LU2, piv2, cv, memo,
           hf, ctl, T, X, weight, opened):
    """radau_advance's steps."""
    nx = x.size
    f0 = R[9]
    xs = K[3]
    err = K[4]
    nsteps = 0
    nrej = 0
    have_f0 = False
    fresh = False     # the Jacobian was taken at the current x
    resume = False    # the next try goes on from the stages a stale Jacobian's iterations left
    reject = False    # the last trial was rejected
    nfail = 0         # ... and how many in a row
    fnewt = max(10.0 * 2.2e-16 / rtol, KAPPA)
    filled = 0
    while filled < T.size and T[filled] <= t + 1e-12 * max(1.0, abs(t)):
        for i in range(nx):
            X[filled, i] = x[i]
        filled += 1
    while t < t_end - 1e-12 * max(1.0, abs(t_end)):
        h_want = min(h, h_max)
        h = min(h_want, t_end - t)
        last = h >= t_end - t
        if not have_f0:
            st = rhs_status(S, W, t, x, inputs, f0)
            if st != OK:
                return st, h, nsteps, nrej, filled
            have_f0 = True
        if memo[JAC_OK] == 0:
            st = jacobian_columns(S, W, t, x, f0, inputs, scale, Jac, xs, err)
            if st != OK:
                return st, h, nsteps, nrej, filled
            memo[JAC_OK] = 1
            memo[LU_OK] = 0
            memo[N_JAC] += 1
            fresh = True
        st = _factor(h, Jac, LU, piv, LU2, piv2, memo, hf)
        if st != OK:
            # singular iteration matrices: a shorter step (and a Jacobian of this state)
            nrej += 1
            reject = True
            resume = False   # a failed iteration's stages belong to the longer step
            h *= 0.25
            if not fresh:
                memo[JAC_OK] = 0
            if h < h_min:
                return st, h, nsteps, nrej, filled
            continue
        if not resume:
            _start(R, h, ctl)
        resume = False
        st, newt, theta = _newton(S, W, t, x, h, inputs, R, K, LU, piv, LU2, piv2, cv, atol, rtol, ctl, fnewt)
        if newt < 0:
            # no convergence: a Jacobian from an earlier state is renewed first, a fresh one halves the step
            nrej += 1
            nfail += 1
            reject = True
            if fresh or st != OK:
                h *= 0.5
            else:
                memo[JAC_OK] = 0
                # the same step again: from where the iterations got to, unless they diverged
                resume = 0.0 < theta < 0.99
            if h < h_min:
                return (NEWTON_FAILED if st == OK else st), h, nsteps, nrej, filled
            continue
        en = _error(S, W, t, x, h, inputs, R, K, LU, piv, atol, rtol, reject or ctl[H_OLD] == 0.0)
        fac = min(SAFE, SAFE * (2 * MAXIT + 1) / (2 * MAXIT + newt))
        quot = max(1.0 / FAC_MAX, min(1.0 / FAC_MIN, en ** 0.25 / fac))
        if en < 1.0:
            # a step shortened to land on t_end says nothing of the step the error allows
            landed = last and h < h_want
            if ctl[H_ACC] > 0.0 and not landed:
                gus = ctl[H_ACC] / h * (en * en / ctl[ERR_ACC]) ** 0.25 / SAFE
                quot = max(quot, max(1.0 / FAC_MAX, min(1.0 / FAC_MIN, gus)))
            if not landed:
                ctl[H_ACC] = h
                ctl[ERR_ACC] = max(1e-2, en)
            ctl[H_OLD] = h
            t0 = t
            t = t_end if last else t + h
            for i in range(nx):
                R[10, i] = x[i]
                for s in range(3):
                    R[6 + s, i] = R[3 + s, i]
                x[i] = xs[i]
            onto_manifold(S, W, x, weight, xs)
            st = check_state(S, x)
            if st != OK:
                return st, h, nsteps, nrej, filled
            have_f0 = False
            filled = _samples(S, W, T, X, filled, t0, t, R, weight, K[5], opened)
            nsteps += 1
            fresh = False
            if theta > THETA_JAC:
                memo[JAC_OK] = 0
            h_new = h / quot
            if reject:
                h_new = min(h_new, h)   # no growth right after a rejection
            reject = False
            nfail = 0
            if landed:
                h_new = max(h_new, h_want)
            hold = memo[LU_OK] == 1 and memo[JAC_OK] == 1 and hf[0] <= h_new <= HOLD * hf[0]
            h = hf[0] if hold else h_new
        else:
            nrej += 1
            nfail += 1
            reject = True
            if nfail >= 2 and not fresh:
                memo[JAC_OK] = 0   # repeated failure with a Jacobian from an earlier state: renew it
            h = h / quot if ctl[H_OLD] > 0.0 else 0.1 * h
            if h < h_min:
                return STEP_TOO_SMALL, h, nsteps, nrej, filled
    return OK, h, nsteps, nrej, filled


@kernel
def _factor(h, Jac, LU, piv, LU2, piv2, memo, hf):
    """Factor G_REAL/h I - Jac into LU, piv and (ALPHA + i BETA)/h I - Jac into LU2, piv2,
    unless those of step hf[0] serve (to 1e-6 of it). Returns OK or SINGULAR."""
    if memo[LU_OK] != 0 and not abs(h - hf[0]) > 1e-6 * hf[0]:
        return OK
    nx = Jac.shape[0]
    d1 = G_REAL / h
    d2 = complex(ALPHA / h, BETA / h)
    for i in range(nx):
        for j in range(nx):
            LU[i, j] = -Jac[i, j]
            LU2[i, j] = -Jac[i, j]
        LU[i, i] += d1
        LU2[i, i] += d2
    memo[N_LU] += 1
    hf[0] = h
    if lu_factor(LU, piv) and lu_factor(LU2, piv2):
        memo[LU_OK] = 1
        return OK
    memo[LU_OK] = 0
    return SINGULAR


@kernel
def _lagrange(s, k):
    """The cubic Lagrange basis of node C[k-1] (k = 1, 2, 3) on the nodes 0, C[0], C[1], C[2]
    (the collocation polynomial, whose value at 0 is the step's start), at s (in steps)."""
    sk = C[k - 1]
    v = s / sk
    for j in range(3):
        if j != k - 1:
            v *= (s - C[j]) / (sk - C[j])
    return v


@kernel
def _start(R, h, ctl):
    """Starting stage increments Z (R[3:6]) and W (R[0:3]) of a step h: the last accepted
    step's collocation polynomial (its Z in R[6:9], its step ctl[H_OLD]) extrapolated, or zero
    for the first step and for a step more than FAC_MAX times the last (one shortened to land
    on a call's end: the polynomial's factors grow as the ratio^3 and would amplify the last
    step's Newton residual)."""
    nx = R.shape[1]
    if ctl[H_OLD] == 0.0 or h > FAC_MAX * ctl[H_OLD]:
        for s in range(6):
            for i in range(nx):
                R[s, i] = 0.0
        return
    r = h / ctl[H_OLD]
    for s in range(3):
        l1 = _lagrange(1.0 + C[s] * r, 1)
        l2 = _lagrange(1.0 + C[s] * r, 2)
        l3 = _lagrange(1.0 + C[s] * r, 3)
        for i in range(nx):
            R[3 + s, i] = l1 * R[6, i] + l2 * R[7, i] + l3 * R[8, i] - R[8, i]
    for s in range(3):
        for i in range(nx):
            R[s, i] = TI[s, 0] * R[3, i] + TI[s, 1] * R[4, i] + TI[s, 2] * R[5, i]


@kernel
def _newton(S, W, t, x, h, inputs, R, K, LU, piv, LU2, piv2, cv, atol, rtol, ctl, fnewt):
    """Simplified Newton iterations on the transformed stage equations from the starting values
    in R. Returns (status, iterations taken or -1 when they did not converge, the contraction
    estimate theta: 1 when they diverged); the stage rates are left in K[0:3]."""
    nx = x.size
    xs = K[3]
    # the contraction of the last step's iterations (Hairer & Wanner II, eq. 8.13); 1 on the first
    eta = max(ctl[ETA], 2.2e-16) ** 0.8 if ctl[H_OLD] > 0.0 else 1.0
    dyno_old = 1.0
    thq_old = 1.0
    theta = 0.0
    for newt in range(MAXIT):
        for s in range(3):
            for i in range(nx):
                xs[i] = x[i] + R[3 + s, i]
            st = rhs_status(S, W, t + C[s] * h, xs, inputs, K[s])
            if st != OK:
                ctl[ETA] = 1.0
                return st, -1, theta
        dyno = 0.0
        for i in range(nx):
            a1 = TI[0, 0] * K[0, i] + TI[0, 1] * K[1, i] + TI[0, 2] * K[2, i]
            a2 = TI[1, 0] * K[0, i] + TI[1, 1] * K[1, i] + TI[1, 2] * K[2, i]
            a3 = TI[2, 0] * K[0, i] + TI[2, 1] * K[1, i] + TI[2, 2] * K[2, i]
            xs[i] = a1 - G_REAL / h * R[0, i]
            cv[i] = complex(a2 - (ALPHA * R[1, i] - BETA * R[2, i]) / h, a3 - (BETA * R[1, i] + ALPHA * R[2, i]) / h)
        lu_solve(LU, piv, xs)
        lu_solve(LU2, piv2, cv)
        for i in range(nx):
            sc = atol[i] + rtol * abs(x[i])
            dyno += (xs[i] / sc) ** 2 + (cv[i].real / sc) ** 2 + (cv[i].imag / sc) ** 2
        dyno = np.sqrt(dyno / (3 * nx))
        if not np.isfinite(dyno):
            ctl[ETA] = 1.0
            return OK, -1, 1.0   # diverged: no resuming from these stages
        if newt > 0:
            thq = dyno / dyno_old
            theta = thq if newt == 1 else np.sqrt(thq * thq_old)
            thq_old = thq
            if theta >= 0.99:
                ctl[ETA] = 1.0   # the next try's first iteration does not trust the old rate
                return OK, -1, theta
            eta = theta / (1.0 - theta)
            if eta * dyno * theta ** (MAXIT - 1 - newt) > fnewt:
                ctl[ETA] = max(eta, 1.0)
                return OK, -1, theta   # would not converge within MAXIT
        dyno_old = max(dyno, 2.2e-16)
        for i in range(nx):
            R[0, i] += xs[i]
            R[1, i] += cv[i].real
            R[2, i] += cv[i].imag
            for s in range(3):
                R[3 + s, i] = TM[s, 0] * R[0, i] + TM[s, 1] * R[1, i] + TM[s, 2] * R[2, i]
        if eta * dyno <= fnewt:
            ctl[ETA] = eta
            return OK, newt + 1, theta
    ctl[ETA] = 1.0
    return OK, -1, theta


@kernel
def _error(S, W, t, x, h, inputs, R, K, LU, piv, atol, rtol, again):
    """The step's solution x + Z_3 into K[3] and the weighted norm of its error estimate
    (G_REAL/h I - J)^-1 (f0 + DD . Z / h) (K[4]); `again` (first step, after a rejection): when
    that is >= 1, once more with f at x + the estimate in place of f0, which removes the stiff
    components' overestimate (Hairer & Wanner II, eq. 8.20). 1e10 when not finite."""
    nx = x.size
    f0 = R[9]
    xs = K[3]
    err = K[4]
    fx = K[5]
    for i in range(nx):
        dz = (DD[0] * R[3, i] + DD[1] * R[4, i] + DD[2] * R[5, i]) / h
        K[6, i] = dz
        err[i] = f0[i] + dz
        xs[i] = x[i] + R[5, i]
    lu_solve(LU, piv, err)
    en = error_norm(err, x, xs, atol, rtol)
    if again and en >= 1.0 and np.isfinite(en):
        for i in range(nx):
            fx[i] = x[i] + err[i]
        if rhs_status(S, W, t, fx, inputs, err) != OK:
            return 1e10
        for i in range(nx):
            err[i] += K[6, i]
        lu_solve(LU, piv, err)
        en = error_norm(err, x, xs, atol, rtol)
    return en if np.isfinite(en) else 1e10


@kernel
def _samples(S, W, T, X, k, t0, t1, R, weight, scratch, opened):
    """X[k], X[k+1], ... at the sample times T[k], ... up to t1 [s] from the step of t0 to t1
    (its start state R[10], its stage increments R[6:9]): the collocation polynomial (order 3
    inside the step, exact at its end), onto the manifold (common.onto_sample: weight, scratch
    (nx), opened). Returns the index of the first sample past t1."""
    h = t1 - t0
    while k < T.size and T[k] <= t1 + 1e-12 * max(1.0, abs(t1)):
        s = min((T[k] - t0) / h, 1.0) if h > 0.0 else 1.0
        l1 = _lagrange(s, 1)
        l2 = _lagrange(s, 2)
        l3 = _lagrange(s, 3)
        for i in range(X.shape[1]):
            X[k, i] = R[10, i] + l1 * R[6, i] + l2 * R[7, i] + l3 * R[8, i]
        onto_sample(S, W, X[k], weight, scratch, opened)
        k += 1
    return k
