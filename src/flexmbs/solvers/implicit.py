"""Adaptive linearly implicit Rosenbrock-W method ROS34PW2 (numba) for stiff models.

Method: G. Rang and L. Angermann, "New Rosenbrock W-methods of order 3 for partial
differential algebraic equations of index 1", BIT Numerical Mathematics 45 (2005) 761-787,
method ROS34PW2: 4 stages, order 3 with an embedded order-2 solution, L-stable (stiffly
accurate), and a W-method: it keeps order 3 for *any* matrix A in place of the Jacobian.

That last property is what lets a step reuse old work. Each stage solves
(I/(h gamma) - A) U_i = f(t + c_i h, x + sum_j a_ij U_j) + sum_j (C_ij / h) U_j
(the transformed form of Hairer & Wanner, Solving ODEs II, 2nd ed., Springer 1996, Sec. IV.7,
eq. 7.25, which needs no Jacobian-vector product), with A = J, a Jacobian taken at some
earlier state: the order is unaffected, only (for a far-off J) the damping of the stiff
modes, which the error estimate sees. Hence:
- J (forward differences, nx right-hand sides) is recomputed only when a step is rejected twice
  in a row (or a stage evaluation fails) with a Jacobian from an earlier state, or when a
  position state has moved by more than JAC_MOVE of its scale since (0.05 rad for a joint
  angle) and the model's response has changed: the order survives an old J, but on stiff
  models (static modes) the stiff coupling of a J from another pose leaves an error the
  embedded estimate does not see (measured on the crank-rocker with static modes: 1.1e-5 rad
  with J kept for the whole run, 4e-7 with a fresh one); J is kept across calls;
- "changed" is asked of the model at one right-hand side's cost before nx are spent on a new J
  (`_still_valid`): the rates' response to one small state change along a fixed pattern of
  signs, by a difference, against J's prediction of it; within JAC_DRIFT J is kept and its
  pose moved on. A joint whose angle the dynamics do not depend on (a hub spinning a beam
  without gravity, a robot's base axis in a horizontal plane) thus costs no Jacobians: the
  3-segment spin-up beam took 1,226 Jacobians of 34 right-hand sides in 2,002 steps (85 % of
  its right-hand sides, 72 % of its CPU), and takes 9. JAC_DRIFT = 1 % renews on the
  crank-rocker exactly as the move test alone did (183 and 199 Jacobians, errors 8.5e-5 and
  2.7e-5 rad at rtol 1e-5 and 1e-6, 0.5 s);
  at 5 % it kept 15 % of them longer and its error grew 4 times;
- the LU factors of I/(h_f gamma) - J (no allocation) are kept while the step h stays at the
  step h_f of the factorisation (to 1e-6: a step shortened by round-off to land on an output
  time keeps them, as the W-matrix of A = J + (1/(h gamma) - 1/(h_f gamma)) I); the controller
  holds h when it would grow by less than HOLD, and refactors otherwise.
The time derivative df/dt is not used (the W-method's A has a zero time column).
"""

import numpy as np
from numba import njit

from ..kernels.linalg import lu_factor, lu_solve
from ..kernels.settings import JIT, kernel
from .common import OK, SINGULAR, STEP_TOO_SMALL, check_state, error_norm, jacobian_columns, onto_manifold, \
    onto_sample, rhs_status

# ROS34PW2 as given by Rang & Angermann (2005): alpha (stage abscissae weights),
# Gamma (lower triangular, diagonal gamma), b (order 3) and bhat (embedded order 2)
GAMMA = 0.435866521508459
_ALPHA = np.array([[0.0, 0.0, 0.0, 0.0],
                   [0.87173304301691801, 0.0, 0.0, 0.0],
                   [0.84457060015369423, -0.11299064236484185, 0.0, 0.0],
                   [0.0, 0.0, 1.0, 0.0]])
_GAMMA = np.array([[GAMMA, 0.0, 0.0, 0.0],
                   [-0.87173304301691801, GAMMA, 0.0, 0.0],
                   [-0.90338057013044082, 0.054180672388095326, GAMMA, 0.0],
                   [0.24212380706095346, -1.2232505839045147, 0.54526025533510214, GAMMA]])
_B = np.array([0.24212380706095346, -1.2232505839045147, 1.5452602553351020, GAMMA])
_BHAT = np.array([0.37810903145819369, -0.096042292212423178, 0.5, 0.2179332607542295])
# transformed coefficients (Hairer & Wanner IV.7): a = alpha Gamma^-1, C = diag(1/gamma) -
# Gamma^-1, m = b Gamma^-1; c_i = sum_j alpha_ij
_GI = np.linalg.inv(_GAMMA)
A_T = _ALPHA @ _GI
C_T = np.diag(1.0 / np.diag(_GAMMA)) - _GI
M_T = _B @ _GI
E_T = (_B - _BHAT) @ _GI
C_STAGE = _ALPHA.sum(axis=1)
NSTAGE = 4
ORDER = 3
# keep the step of the factorisation when the controller proposes at most this increase
HOLD = 1.2
# renew the Jacobian when a position state moved by more than this times its scale since (the
# default of Stepper.jac_move)
JAC_MOVE = 0.05
# keep the Jacobian when the rates' response to a probe step differs from its prediction by at
# most this fraction (2-norm over the rate rows; _still_valid)
JAC_DRIFT = 0.01
# counters in the int64 array `memo` carried across calls
JAC_OK, LU_OK, N_JAC, N_LU = 0, 1, 2, 3


@njit(**JIT)
def ros_advance(S, W, t, x, t_end, h, h_max, h_min, rtol, atol, scale, jac_move, jac_drift, inputs, K, Jac, LU,
                piv, xs, err, memo, hf, T, X, P, weight, opened):
    """Integrate x from t to t_end (landing exactly) with adaptive ROS34PW2 steps.

    T (increasing, in [t, t_end]) and X (T.size x nx): sample times [s] and their states, filled
    as the steps pass them (_hermite), so that the steps need not land on them; empty T: none.
    P (2 x nx): the start state and rate of the last accepted step, for the interpolation.
    weight: the loop projection's weights (common.onto_manifold; empty without loops); each
    step and each sample is projected with them, and opened (1) counts the samples that could
    not be (common.onto_sample).

    K (7 x nx): stages U_0..U_3, f(t, x), a right-hand-side scratch, and the pose of the
    Jacobian: the state where it was taken or last confirmed (_still_valid), kept between calls;
    xs, err (nx) scratch.
    Jac, LU (nx x nx), piv (nx, int) and memo (4, int: Jacobian valid, LU valid, counts of
    Jacobians and factorisations), hf (1: step of the factorisation [s]) persist between calls.
    scale: state scales for the difference increments and the move test; jac_move: JAC_MOVE (a
    larger value keeps the Jacobian longer); jac_drift: JAC_DRIFT (the same).
    Returns (status, h_next, nsteps, nrejected, samples filled): on failure X[:filled] are good.

    The integrator's memory comes as plain arrays, not in a box: the Stepper saves and restores
    them (an FMU's state). The steps run in a kernel (_ros), without numba's runtime and so
    without reference counts on the arrays they read.
    """
    W.rates_only[0] = 1.0   # its right-hand sides are read for their rates only (explicit.py)
    out = _ros(S, W, t, x, t_end, h, h_max, h_min, rtol, atol, scale, jac_move, jac_drift, inputs, K, Jac, LU,
               piv, xs, err, memo, hf, T, X, P, weight, opened)
    W.rates_only[0] = 0.0
    return out


@kernel
def _ros(S, W, t, x, t_end, h, h_max, h_min, rtol, atol, scale, jac_move, jac_drift, inputs, K, Jac, LU, piv, xs,
         err, memo, hf, T, X, P, weight, opened):
    """ros_advance's steps."""
    nsteps = 0
    nrej = 0
    f0 = K[4]
    have_f0 = False
    fresh = False  # the Jacobian was taken at the current x
    nfail = 0      # consecutive rejections
    filled = _hermite(S, W, T, X, 0, t, t, P, x, f0, weight, err, opened)   # samples at t itself
    while t < t_end - 1e-12 * max(1.0, abs(t_end)):
        h_want = min(h, h_max)
        h = min(h_want, t_end - t)
        last = h >= t_end - t
        if not have_f0:
            st = rhs_status(S, W, t, x, inputs, f0)
            if st != OK:
                return st, h, nsteps, nrej, filled
            have_f0 = True
        st, renewed = _jacobian(S, W, t, x, inputs, scale, jac_move, jac_drift, K, Jac, xs, memo)
        if st != OK:
            return st, h, nsteps, nrej, filled
        fresh = fresh or renewed
        st = _factor(h, Jac, LU, piv, memo, hf)
        if st == OK:
            st = _stages(S, W, t, x, h, inputs, K, LU, piv, xs)
        en = _error(x, K, xs, err, atol, rtol) if st == OK else 1e10
        if en <= 1.0:
            t0 = t
            t = t_end if last else t + h
            if T.size > 0:
                for i in range(x.size):
                    P[0, i] = x[i]
                    P[1, i] = f0[i]
            for i in range(x.size):
                x[i] = xs[i]
            onto_manifold(S, W, x, weight, xs)
            st = check_state(S, x)
            if st != OK:
                return st, h, nsteps, nrej, filled
            have_f0 = False
            if filled < T.size and T[filled] < t:
                # the rate at the step's end, for the samples inside it: the next step's first stage
                st = rhs_status(S, W, t, x, inputs, f0)
                if st != OK:
                    return st, h, nsteps, nrej, filled
                have_f0 = True
            filled = _hermite(S, W, T, X, filled, t0, t, P, x, f0, weight, err, opened)
            fresh = False
            nsteps += 1
            # no growth right after a rejection (avoids reject/accept cycles)
            grow = 1.0 if nfail > 0 else 4.0
            nfail = 0
            h_new = h * min(grow, max(0.2, 0.9 * en ** (-1.0 / ORDER))) if en > 0 else grow * h
            if last and h < h_want:
                # a step shortened to land on t_end says nothing against the wanted step
                h_new = max(h_new, h_want)
            # hold the step (and the factorisation) under a small increase
            h = hf[0] if hf[0] <= h_new <= HOLD * hf[0] else h_new
        else:
            nrej += 1
            nfail += 1
            if not fresh and (nfail >= 2 or st != OK):
                # repeated failure with a Jacobian from an earlier state: renew it
                memo[JAC_OK] = 0
            h = h * (0.25 if st != OK else max(0.2, 0.9 * en ** (-1.0 / ORDER)))
            if h < h_min:
                return (STEP_TOO_SMALL if st == OK else st), h, nsteps, nrej, filled
    return OK, h, nsteps, nrej, filled


@kernel
def _hermite(S, W, T, X, k, t0, t1, P, x1, f1, weight, scratch, opened):
    """X[k], X[k+1], ... at the sample times T[k], ... up to t1 [s], from the step of t0 to t1
    (start state and rate P[0], P[1], end state x1 and rate f1): cubic Hermite interpolation,
    of the method's order 3 (its error, at most h^4 max|x^(4)| / 384, is of the size of the
    local error the step was accepted with), onto the manifold (common.onto_sample: weight,
    scratch (nx), opened); a sample at t1 is x1, projected again (where the step's projection
    failed, x1 is the step's result, which this one then counts). Returns the index of the first
    sample past t1."""
    h = t1 - t0
    while k < T.size and T[k] <= t1 + 1e-12 * max(1.0, abs(t1)):
        s = (T[k] - t0) / h if h > 0.0 else 1.0
        if s >= 1.0:
            for i in range(x1.size):
                X[k, i] = x1[i]
        else:
            a0 = (1.0 + 2.0 * s) * (1.0 - s) ** 2
            b0 = s * (1.0 - s) ** 2 * h
            a1 = s * s * (3.0 - 2.0 * s)
            b1 = s * s * (s - 1.0) * h
            for i in range(x1.size):
                X[k, i] = a0 * P[0, i] + b0 * P[1, i] + a1 * x1[i] + b1 * f1[i]
        onto_sample(S, W, X[k], weight, scratch, opened)
        k += 1
    return k


@kernel
def _jacobian(S, W, t, x, inputs, scale, jac_move, jac_drift, K, Jac, xs, memo):
    """Renew the Jacobian Jac at (t, x) (f(t, x) in K[4]) when it is not valid, or when a
    position state moved by more than jac_move times its scale since its pose K[6] and the
    model's response changed (_still_valid; else the pose moves on to x).
    Returns (status, whether it was renewed)."""
    f0 = K[4]
    fx = K[5]
    xj = K[6]
    if memo[JAC_OK] == 1:
        for i in range(S.nq):
            if abs(x[i] - xj[i]) > jac_move * scale[i]:
                st, kept = _still_valid(S, W, t, x, inputs, scale, jac_drift, f0, Jac, xs, fx)
                if st != OK:
                    return st, False
                if kept:
                    for k in range(x.size):
                        xj[k] = x[k]
                else:
                    memo[JAC_OK] = 0
                break
    if memo[JAC_OK] == 1:
        return OK, False
    st = jacobian_columns(S, W, t, x, f0, inputs, scale, Jac, xs, fx)
    if st != OK:
        return st, False
    memo[JAC_OK] = 1
    memo[LU_OK] = 0
    for i in range(x.size):
        xj[i] = x[i]
    memo[N_JAC] += 1
    return OK, True


@kernel
def _still_valid(S, W, t, x, inputs, scale, drift, f0, Jac, xp, fp):
    """Whether Jac still describes the model at (t, x) (f0 = f(t, x)): the change of the rates
    (rows nq on: the velocities' and motor currents' derivatives) under the probe step d_j = +-1.5e-8
    max(|x_j|, scale_j) (signs in a fixed irregular pattern, so no column's change cancels
    another's by design), f(x + d) - f(x), against Jac d, within `drift` (JAC_DRIFT) of |Jac d|.
    The 2-norm is unweighted on purpose: the stiff rows (fast modes, motor currents) dominate
    it, and they are what the W-method needs J for (its order holds with any matrix; its
    damping of stiff modes does not). Weighted by the state scales as the error norm is, the
    probe also renews for slow drift in the soft rows: the 3-segment spin-up beam then took 196
    Jacobians instead of 9 and 1.8 times the CPU, for states within 3e-7 instead of 4e-6 of a
    run renewing at every move (relative; its rtol is 1e-6), and the crank-rocker renewed
    exactly as before (2026-11-27). The position rows are left out: joint coordinates' rates are
    the velocities, linear in x; a quaternion's rate changes with the pose, but not stiffly.
    One right-hand side; xp, fp (nx) scratch. Returns (status, kept)."""
    nx = x.size
    for j in range(nx):
        sign = 1.0 if (j * j + 3 * j) % 5 < 3 else -1.0
        xp[j] = x[j] + sign * 1.5e-8 * max(abs(x[j]), scale[j])
    st = rhs_status(S, W, t, xp, inputs, fp)
    if st != OK:
        return st, False
    diff = 0.0
    pred = 0.0
    for i in range(S.nq, nx):
        p = 0.0
        for j in range(nx):
            p += Jac[i, j] * (xp[j] - x[j])
        diff += (fp[i] - f0[i] - p) ** 2
        pred += p * p
    return OK, diff <= drift * drift * pred


@kernel
def _factor(h, Jac, LU, piv, memo, hf):
    """Factor I/(h gamma) - Jac into LU, piv unless the factors of step hf[0] serve (to 1e-6 of
    it). Returns OK or SINGULAR."""
    if memo[LU_OK] != 0 and not abs(h - hf[0]) > 1e-6 * hf[0]:
        return OK
    nx = Jac.shape[0]
    d = 1.0 / (h * GAMMA)
    for i in range(nx):
        for j in range(nx):
            LU[i, j] = -Jac[i, j]
        LU[i, i] += d
    memo[N_LU] += 1
    hf[0] = h
    if lu_factor(LU, piv):
        memo[LU_OK] = 1
        return OK
    memo[LU_OK] = 0
    return SINGULAR


@kernel
def _stages(S, W, t, x, h, inputs, K, LU, piv, xs):
    """The stages U_0..U_3 of a step h from (t, x) into K[0..3] (f(t, x) in K[4], K[5] scratch).
    Returns the status of the right-hand sides."""
    nx = x.size
    f0 = K[4]
    fx = K[5]
    for s in range(NSTAGE):
        if s == 0:
            for i in range(nx):
                fx[i] = f0[i]
        else:
            for i in range(nx):
                acc = x[i]
                for j in range(s):
                    acc += A_T[s, j] * K[j, i]
                xs[i] = acc
            st = rhs_status(S, W, t + C_STAGE[s] * h, xs, inputs, fx)
            if st != OK:
                return st
        for i in range(nx):
            acc = fx[i]
            for j in range(s):
                acc += (C_T[s, j] / h) * K[j, i]
            K[s, i] = acc
        lu_solve(LU, piv, K[s])
    return OK


@kernel
def _error(x, K, xs, err, atol, rtol):
    """The step's solution into xs, its error estimate into err, and the weighted norm of the
    error (1e10 when not finite)."""
    for i in range(x.size):
        acc = x[i]
        e = 0.0
        for j in range(NSTAGE):
            acc += M_T[j] * K[j, i]
            e += E_T[j] * K[j, i]
        xs[i] = acc
        err[i] = e
    en = error_norm(err, x, xs, atol, rtol)
    return en if np.isfinite(en) else 1e10
