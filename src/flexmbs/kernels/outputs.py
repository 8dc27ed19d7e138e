"""Output sampling (numba): accelerations, drive torques, energies and sensor frames."""

import numpy as np
from numba import njit

from .drives import MOTION, MOTOR, SERVO, TORQUE, apply_prescribed, drive_profile
from .dynamics import accelerations
from .energy import energies
from .kinematics import marker_world
from .linalg import copy1
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


@njit(**JIT)
def state_outputs(S, t, x, inputs, y, udot):
    """y[:nx] = the state x = [q; u; i] at time t [s] with the motion-driven coordinates and
    rates at their profile values (as `sample` gives them), without the dynamics. udot (nv) is
    scratch for the profile accelerations."""
    nq = S.nq
    for i in range(x.size):
        y[i] = x[i]
    apply_prescribed(S, t, y[:nq], y[nq:nq + S.nv], inputs, udot)


@njit(**JIT)
def sample(S, W, sensors, t, X, inputs, Xout, Ud, Tau, En, Sens, Loop):
    """For each time t[k] and state X[k] = [q; u; i]: Xout[k] = state with exact prescribed values,
    Ud[k] = udot, Tau[k] = drive torques, En[k] = energies, Sens[k, s] = sensor s as
    [r (3), v (3), R row-major (9), w (3)] in the world frame, Loop[k, r] = loop constraint row r
    as [residual, multiplier, reaction direction (3, world)]."""
    nq, nu = S.nq, S.nq + S.nv
    r, A, v, w = W.o_r, W.o_A, W.o_v, W.o_w
    for k in range(t.size):
        q = Xout[k, :nq]
        u = Xout[k, nq:nu]
        copy1(X[k, :nq], q)
        copy1(X[k, nq:nu], u)
        copy1(X[k, nu:], Xout[k, nu:])
        copy1(X[k, nu:], W.xi)
        ok = accelerations(S, W, t[k], q, u, inputs[k], Ud[k])
        drive_torques(S, W, t[k], q, u, inputs[k], Tau[k])
        energies(S, W, t[k], q, u, inputs[k], En[k])
        for row in range(S.cr_a.shape[0]):
            Loop[k, row, 0] = W.c_g[row]
            Loop[k, row, 1] = W.c_lam[row]
            Loop[k, row, 2:5] = W.c_dir[row]
        if not ok:     # no accelerations at this state: say so rather than show stale numbers
            Ud[k, :] = np.nan
            Tau[k, :] = np.nan
            Loop[k, :, 1] = np.nan
        for s in range(sensors.size):
            marker_world(S, W, sensors[s], q, u, r, A, v, w, W.o_Jv, W.o_Jw, W.o_a, W.o_al, False)
            Sens[k, s, 0:3] = r
            Sens[k, s, 3:6] = v
            for i in range(3):
                Sens[k, s, 6 + 3 * i:9 + 3 * i] = A[i]
            Sens[k, s, 15:18] = w
