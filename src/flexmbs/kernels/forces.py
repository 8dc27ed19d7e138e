"""Applied forces shared by both forward-dynamics routes (numba): drive profiles and prescribed
motion, joint springs/dampers/torque inputs/servos, and the world force of point loads and
spring-dampers. The composite route maps them through world Jacobians, the recursive one
through each marker's local Jacobian onto its body's extended coordinates.
"""

import numpy as np
from numba import njit

from . import profiles
from .linalg import copy1, dot, mv
from .rotations import JIT

PASSIVE, TORQUE, MOTION, SERVO = 0, 1, 2, 3


@njit(**JIT)
def drive_profile(S, c, inputs, t):
    """(q, qd, qdd) of the profile driving velocity coordinate c at time t [s]."""
    p = S.drive_prof[c]
    return profiles.evaluate(S.prof_code[p], S.prof_par[p], S.prof_t[p], S.prof_c[p], S.prof_n[p], inputs, t)


@njit(**JIT)
def apply_prescribed(S, t, q, u, inputs, udot):
    """Overwrite the motion-driven coordinates and their rates with their profile values at
    time t, and put the profile accelerations into udot."""
    drive, uq = S.drive, S.uq
    for c in range(S.nv):
        if drive[c] == MOTION:
            q[uq[c]], u[c], udot[c] = drive_profile(S, c, inputs, t)


@njit(**JIT)
def joint_torques(S, t, q, u, inputs, Q):
    """Q[c] += joint spring/damper, torque input and PD servo force of each joint coordinate c
    [N m or N] (coordinates without a scalar position, i.e. quaternion rates, get none)."""
    uq, k_spring, c_spring, q_preload, drive = S.uq, S.k_spring, S.c_spring, S.q_preload, S.drive
    for c in range(S.nv):
        qc = uq[c]
        if qc < 0:
            continue
        Q[c] -= k_spring[c] * (q[qc] - q_preload[c]) + c_spring[c] * u[c]
        d = drive[c]
        if d == TORQUE:
            Q[c] += inputs[S.drive_in[c]]
        elif d == SERVO:
            qr, qdr, _ = drive_profile(S, c, inputs, t)
            Q[c] += S.kp[c] * (qr - q[qc]) + S.kd[c] * (qdr - u[c])


@njit(**JIT)
def point_load(S, f, inputs, A, F, T, tmp):
    """World force F [N] and torque T [N m] of point load f; A: its marker's world rotation
    (a body-fixed load is given in marker axes). tmp: 3-vector scratch."""
    i0 = S.pf_input[f]
    for k in range(3):
        F[k] = S.pf_force[f, k] + (inputs[i0 + k] if i0 >= 0 else 0.0)
        T[k] = S.pf_torque[f, k] + (inputs[i0 + 3 + k] if i0 >= 0 else 0.0)
    if S.pf_frame[f] == 1:
        mv(A, F, tmp)
        copy1(tmp, F)
        mv(A, T, tmp)
        copy1(tmp, T)


@njit(**JIT)
def spring_damper_force(S, s, ra, rb, va, vb, F):
    """World force F [N] that spring-damper s applies on its first marker (the second gets -F),
    from the markers' world positions ra, rb [m] and velocities va, vb [m/s]. A zero rest length
    is an isotropic bushing F = k d + c d' (no direction to lose); otherwise the force acts along
    the line between the markers (none when they coincide)."""
    for k in range(3):
        F[k] = rb[k] - ra[k]
    if S.sd_l0[s] == 0.0:
        for k in range(3):
            F[k] = S.sd_k[s] * F[k] + S.sd_c[s] * (vb[k] - va[k])
        return
    ln = np.sqrt(dot(F, F))
    if ln < 1e-12:
        for k in range(3):
            F[k] = 0.0
        return
    ldot = 0.0
    for k in range(3):
        F[k] /= ln
        ldot += F[k] * (vb[k] - va[k])
    f_ = S.sd_k[s] * (ln - S.sd_l0[s]) + S.sd_c[s] * ldot
    for k in range(3):
        F[k] *= f_
