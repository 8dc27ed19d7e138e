"""Output sampling (numba): accelerations, drive torques, energies and sensor frames."""

import numpy as np
from numba import njit

from .drives import MOTION, MOTOR, SERVO, TORQUE, apply_prescribed, drive_profile
from .dynamics import accelerations
from .energy import energies
from .kinematics import forward, marker_world
from .linalg import copy1, fill1
from .motor import motor_torque
from .settings import JIT, kernel


@kernel
def drive_torques(S, W, t, q, u, inputs, tau):
    """Torque [N m] (force [N]) each drive applies on its coordinate; NaN where no drive."""
    for c in range(S.nv):
        d = S.drive[c]
        if d == MOTION:
            tau[c] = W.tau_drive[c]
        elif d == TORQUE:
            tau[c] = inputs[S.drive_in[c]]
        elif d == SERVO:
            qr, qdr, _ = drive_profile(S, c, inputs, t)
            tau[c] = S.kp[c] * (qr - q[S.uq[c]]) + S.kd[c] * (qdr - u[c])
        elif d == MOTOR:
            tau[c] = motor_torque(S, c, u, W.xi)
        else:
            tau[c] = np.nan


@kernel
def modal_signals(xo, y, lin, coef, quad, hess):
    """The signals linear in the modal coordinates, with a quadratic term on some: for each row
    (slot, e0, m, off) of lin, y[slot] = coef[off:off + m] . xo[e0:e0 + m]; then for each row of
    quad, y[slot] -= 1/2 eta^T H eta with eta = xo[e0:e0 + m] and H = hess[off:off + m*m]
    row-major. Tip deflections [m] (the rows of Phi, minus the axial foreshortening) and strain
    gauges and section forces (Evaluator)."""
    for r in range(lin.shape[0]):
        slot, e0, m, off = lin[r, 0], lin[r, 1], lin[r, 2], lin[r, 3]
        acc = 0.0
        for i in range(m):
            acc += coef[off + i] * xo[e0 + i]
        y[slot] = acc
    for r in range(quad.shape[0]):
        slot, e0, m, off = quad[r, 0], quad[r, 1], quad[r, 2], quad[r, 3]
        acc = 0.0
        for i in range(m):
            row = 0.0
            for j in range(m):
                row += hess[off + i * m + j] * xo[e0 + j]
            acc += xo[e0 + i] * row
        y[slot] -= 0.5 * acc


@njit(**JIT)
def state_outputs(S, t, x, inputs, y, udot, lin, coef, quad, hess, i_current):
    """The outputs that follow from the state x = [q; u; i] at time t [s] without the dynamics:
    y[:nq + nv] = q and u with the motion-driven coordinates and rates at their profile values
    (as `sample` gives them), the modal signals (modal_signals), and y[i_current:] = the motor
    currents i [A]. udot (nv) is scratch for the profile accelerations."""
    nq, nu = S.nq, S.nq + S.nv
    for i in range(nu):
        y[i] = x[i]
    apply_prescribed(S, t, y[:nq], y[nq:nu], inputs, udot)
    modal_signals(y, y, lin, coef, quad, hess)
    for i in range(x.size - nu):
        y[i_current + i] = x[nu + i]


@njit(**JIT)
def modal_rows(Xo, Y, lin, coef, quad, hess):
    """modal_signals for each row k: Y[k] from the states Xo[k]."""
    for k in range(Xo.shape[0]):
        modal_signals(Xo[k], Y[k], lin, coef, quad, hess)


@njit(**JIT)
def sample(S, W, sensors, t, X, inputs, Xout, Ud, Tau, En, Sens, Loop):
    """For each time t[k] and state X[k] = [q; u; i]: Xout[k] = state with exact prescribed values,
    Ud[k] = udot, Tau[k] = drive torques, En[k] = energies, Sens[k, s] = sensor s as
    [r (3), v (3), R row-major (9), w (3)] in the world frame, Loop[k, r] = loop constraint row r
    as [residual, multiplier, reaction direction (3, world)]. The rows are filled by a kernel
    (_sample_rows): under numba's runtime each row's views and field reads took reference
    counts."""
    _sample_rows(S, W, sensors, t, X, inputs, Xout, Ud, Tau, En, Sens, Loop)


@kernel
def _sample_rows(S, W, sensors, t, X, inputs, Xout, Ud, Tau, En, Sens, Loop):
    """sample's rows."""
    W.rates_only[0] = 0.0   # the energies and sensors read the world motion (an integrator's mark undone)
    W.sampling[0] = 1.0     # ... and the bodies' kinetic energies
    nq, nu = S.nq, S.nq + S.nv
    for k in range(t.size):
        q = Xout[k, :nq]
        u = Xout[k, nq:nu]
        copy1(X[k, :nq], q)
        copy1(X[k, nq:nu], u)
        copy1(X[k, nu:], Xout[k, nu:])
        copy1(X[k, nu:], W.xi)
        # the accelerations leave the bodies' world motion in W, which the energies and sensors read
        ok = accelerations(S, W, t[k], q, u, inputs[k], Ud[k])
        drive_torques(S, W, t[k], q, u, inputs[k], Tau[k])
        energies(S, W, t[k], q, u, inputs[k], En[k])
        for row in range(S.cr_a.shape[0]):   # element by element: a kernel has no runtime for slice copies
            Loop[k, row, 0] = W.c_g[row]
            Loop[k, row, 1] = W.c_lam[row] if ok else np.nan
            for j in range(3):
                Loop[k, row, 2 + j] = W.c_dir[row, j]
        if not ok:     # no accelerations at this state: say so rather than show stale numbers
            fill1(Ud[k], np.nan)
            fill1(Tau[k], np.nan)
        sensor_rows(S, W, sensors, q, u, Sens[k])
    W.sampling[0] = 0.0


@njit(**JIT)
def sample_poses(S, W, sensors, t, X, inputs, Xout, Sens, udot):
    """What `sample` gives without the dynamics: Xout[k] (the state with exact prescribed
    values) and the sensors Sens[k], the bodies' world motion from kinematics.forward; udot (nv)
    is scratch for the profile accelerations. The rows are filled by a kernel, as sample's."""
    _pose_rows(S, W, sensors, t, X, inputs, Xout, Sens, udot)


@kernel
def _pose_rows(S, W, sensors, t, X, inputs, Xout, Sens, udot):
    """sample_poses' rows."""
    nq, nu = S.nq, S.nq + S.nv
    for k in range(t.size):
        q = Xout[k, :nq]
        u = Xout[k, nq:nu]
        copy1(X[k], Xout[k])
        apply_prescribed(S, t[k], q, u, inputs[k], udot)
        forward(S, W, q, u)
        sensor_rows(S, W, sensors, q, u, Sens[k])


@kernel
def sensor_rows(S, W, sensors, q, u, rows):
    """rows[s] = sensor s as [r (3), v (3), R row-major (9), w (3)] in the world frame, from the
    bodies' world motion in W at (q, u)."""
    r, A, v, w = W.o_r, W.o_A, W.o_v, W.o_w
    for s in range(sensors.size):
        marker_world(S, W, sensors[s], q, u, r, A, v, w, W.o_Jv, W.o_Jw, W.o_a, W.o_al, False)
        for i in range(3):   # element by element: a kernel has no runtime for slice copies
            rows[s, i] = r[i]
            rows[s, 3 + i] = v[i]
            rows[s, 15 + i] = w[i]
            for j in range(3):
                rows[s, 6 + 3 * i + j] = A[i, j]
