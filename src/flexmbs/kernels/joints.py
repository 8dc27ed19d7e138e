"""Joint kinematics in the parent-marker frame P (numba).

For each joint type: relative pose (p_J, R_J) of the child marker C in P, the motion subspaces
Sv, Sw (3 x nv) with pdot_J = Sv u_J and w_rel = Sw u_J (both in P), and the velocity-product
term c_w = d/dt(Sw) u_J. Velocity coordinates are coordinate rates, except for spherical and
free joints whose rotational velocities are the relative angular velocity in C (so a unit
quaternion never meets a singular map).
"""

from numba import njit

from .linalg import copy2, mm, mv
from .rotations import JIT, cross, quat_to_matrix, rot_axis

FIXED, REVOLUTE, PRISMATIC, CYLINDRICAL, UNIVERSAL, SPHERICAL, PLANAR, FREE = range(8)
# Joint type codes in flexmbs.model.JOINT_TYPES order.
CODE_OF = {"fixed": FIXED, "revolute": REVOLUTE, "prismatic": PRISMATIC, "cylindrical": CYLINDRICAL,
           "universal": UNIVERSAL, "spherical": SPHERICAL, "planar": PLANAR, "free": FREE}


@njit(**JIT)
def joint_kinematics(jt, a1, a2, q, u, p, R, Sv, Sw, cw, R1, R2, b):
    """Fill p (3), R (3x3), Sv, Sw (3 x nv, zeroed by caller), cw (3) for joint coordinates
    q, u. R1, R2 (3x3) and b (3) are scratch."""
    for k in range(3):
        cw[k] = 0.0
        p[k] = 0.0
    if jt == REVOLUTE:
        rot_axis(a1, q[0], R)
        _set_col(Sw, 0, a1)
    elif jt == PRISMATIC:
        _identity(R)
        for k in range(3):
            p[k] = a1[k] * q[0]
            Sv[k, 0] = a1[k]
    elif jt == CYLINDRICAL:
        rot_axis(a1, q[1], R)
        for k in range(3):
            p[k] = a1[k] * q[0]
            Sv[k, 0] = a1[k]
            Sw[k, 1] = a1[k]
    elif jt == UNIVERSAL:
        rot_axis(a1, q[0], R1)
        rot_axis(a2, q[1], R2)
        mm(R1, R2, R)
        mv(R1, a2, b)
        _set_col(Sw, 0, a1)
        _set_col(Sw, 1, b)
        cross(a1, b, cw)
        for k in range(3):
            cw[k] *= u[0] * u[1]
    elif jt == SPHERICAL:
        quat_to_matrix(q[0:4], R)
        copy2(R, Sw)
    elif jt == PLANAR:
        cross(a1, a2, b)
        rot_axis(a1, q[2], R)
        for k in range(3):
            p[k] = a2[k] * q[0] + b[k] * q[1]
            Sv[k, 0] = a2[k]
            Sv[k, 1] = b[k]
            Sw[k, 2] = a1[k]
    elif jt == FREE:
        quat_to_matrix(q[3:7], R)
        for k in range(3):
            p[k] = q[k]
            Sv[k, k] = 1.0
        copy2(R, Sw[:, 3:6])
    else:
        _identity(R)


@njit(**JIT)
def _identity(R):
    for i in range(3):
        for j in range(3):
            R[i, j] = 1.0 if i == j else 0.0


@njit(**JIT)
def _set_col(A, c, v):
    for i in range(3):
        A[i, c] = v[i]
