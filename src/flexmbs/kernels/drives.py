"""Drives and joint forces per velocity coordinate (numba): prescribed motion, torque inputs,
PD servos, joint springs and dampers.

Drive codes (SystemArrays.drive): PASSIVE, TORQUE (an input), MOTION (a prescribed profile,
its torque an output), SERVO (PD on a profile), MOTOR (a geared DC motor, its voltage an input
and its current a state: kernels/motor.py). Only the first coordinate of a joint is driven.
"""


from . import profiles
from .motor import motor_torque
from .settings import kernel

PASSIVE, TORQUE, MOTION, SERVO, MOTOR = 0, 1, 2, 3, 4


@kernel
def drive_profile(S, c, inputs, t):
    """(q, qd, qdd) of the profile driving velocity coordinate c at time t [s]."""
    p = S.drive_prof[c]
    return profiles.evaluate(S.prof_code[p], S.prof_par[p], S.prof_t[p], S.prof_c[p], S.prof_n[p], inputs, t)


@kernel
def apply_prescribed(S, t, q, u, inputs, udot):
    """Overwrite the motion-driven coordinates and their rates with their profile values at
    time t, and put the profile accelerations into udot."""
    drive = S.drive
    for c in range(S.nv):
        if drive[c] == MOTION:
            q[S.uq[c]], u[c], udot[c] = drive_profile(S, c, inputs, t)


@kernel
def joint_forces(S, t, q, u, cur, inputs, Q):
    """Q += joint spring/damper forces -k (q - q_preload) - c qd, torque inputs, PD servo
    torques kp (q_ref - q) + kd (qd_ref - qd) and the motors' torques at currents cur [A], per
    joint coordinate [N m or N]."""
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
        elif d == MOTOR:
            Q[c] += motor_torque(S, c, u, cur)
